"""Self-test of the simulated world: each trap is real when driven with plain pip and git.

The world is built once into a temporary directory (on a free loopback port) and served; set
PRIMUS_WORLD_DIR to reuse an already built world instead. Target venvs are made from
PRIMUS_TEST_PYTHON312 (default: pyenv's 3.12.1) without pip; pip runs from the world's own
pip wheel, isolated from this machine's pip configuration.
"""
import base64
import csv
import email.parser
import fnmatch
import glob
import hashlib
import html
import io
import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
import zipfile

import pytest
import yaml
from packaging import tags
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))

from world import branch as world_branch  # noqa: E402
from world import build as world_build  # noqa: E402
from world import serve as world_serve  # noqa: E402
from world import snapshot_metadata  # noqa: E402
from world import trixie  # noqa: E402
from world.lib import checks, downloads, gitrepo, index, overlay, packages, stages  # noqa: E402
from world.lib import server as world_server  # noqa: E402
from world.lib.wheel import normalize  # noqa: E402

PY312 = os.environ.get("PRIMUS_TEST_PYTHON312") or "/root/.pyenv/versions/3.12.1/bin/python3.12"
CACHE = os.environ.get("WORLD_DOWNLOAD_CACHE") or os.path.join(REPO_ROOT, ".cache", "world-downloads")
HOST = os.path.join(HERE, "hosts", "mi300x")
PINNED = packages.TORCH
SNAPSHOT = packages.load_snapshot()


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _tree_hashes(root):
    out = {}
    for dirpath, _dirnames, filenames in os.walk(root):
        for name in filenames:
            if name in world_build.KEEP:
                continue
            path = os.path.join(dirpath, name)
            with open(path, "rb") as handle:
                out[os.path.relpath(path, root)] = hashlib.sha256(handle.read()).hexdigest()
    return out


def pip_env(**extra):
    """pip isolated from this machine's configuration and from caches of earlier sessions."""
    env = downloads.isolated_pip_env()
    env["PIP_CACHE_DIR"] = _PIP_CACHE
    env.update(extra)
    return env


def run(args, check=True, **kwargs):
    kwargs.setdefault("env", pip_env())
    proc = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                          check=False, **kwargs)
    if check and proc.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s" % (" ".join(args), proc.returncode, proc.stdout[-4000:]))
    return proc


# --- fixtures -----------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def world(tmp_path_factory):
    given = os.environ.get("PRIMUS_WORLD_DIR")
    if given and os.path.isfile(os.path.join(given, "world.json")):
        root = os.path.abspath(given)
    else:
        root = str(tmp_path_factory.mktemp("world") / "w")
        world_build.build(root, _free_port(), CACHE, log=lambda *_: None)
    with open(os.path.join(root, "world.json")) as handle:
        info = json.load(handle)
    info["root"] = root
    return info


@pytest.fixture(scope="session")
def served(world):
    root = world["root"]
    ours = not world_serve.running(root)
    if ours:
        assert world_serve.start(root) == 0
    pid = world_serve.running(root)
    yield dict(world, pid=pid)
    if ours:
        world_serve.stop(root)
        assert not world_serve._alive(pid), "the world server is still running"


_PIP = []
_PIP_CACHE = tempfile.mkdtemp(prefix="world-pip-cache-")  # this session's: pip's wheel cache keys are URLs


def _pip_main():
    """pip/ of the world's pip wheel, unpacked once (so its bytecode is cached between calls)."""
    if not _PIP:
        where = tempfile.mkdtemp(prefix="world-pip-")
        with zipfile.ZipFile(glob.glob(os.path.join(CACHE, "pip-*.whl"))[0]) as wheel:
            wheel.extractall(where)
        _PIP.append(where)
    return os.path.join(_PIP[0], "pip")


@pytest.fixture(scope="session", autouse=True)
def _pip_cleanup():
    yield
    for where in _PIP + [_PIP_CACHE]:
        shutil.rmtree(where, ignore_errors=True)


class Venv(object):
    """A 3.12 venv without pip; pip runs from the world's pip wheel (isolated from site config)."""

    def __init__(self, path, world):
        self.path = str(path)
        self.world = world
        self.python = os.path.join(self.path, "bin", "python")
        run([PY312, "-m", "venv", "--without-pip", self.path])
        self.pip_main = _pip_main()

    def env(self, **extra):
        return pip_env(**extra)

    def pip(self, *args, index="pypi", check=True, env=None):
        cmd = [self.python, self.pip_main] + list(args)
        if index:
            cmd[3:3] = ["--index-url", self.world["indexes"][index]]
        return run(cmd, check=check, env=env or self.env())

    def dry_run(self, *reqs, index="pypi", extra=()):
        """{normalized name: version} that pip would install."""
        proc = run([self.python, self.pip_main, "install", "--dry-run", "--quiet", "--report", "-",
                    "--index-url", self.world["indexes"][index]] + list(extra) + list(reqs), env=self.env())
        report = json.loads(proc.stdout[proc.stdout.index("{"):])
        return dict((i["metadata"]["name"].lower().replace("_", "-"), i["metadata"]["version"])
                    for i in report["install"])

    def py(self, code, check=True, env=None):
        return run([self.python, "-c", code], check=check, env=env or self.env())

    @property
    def site(self):
        return os.path.join(self.path, "lib", "python3.12", "site-packages")


@pytest.fixture
def venv(served, tmp_path):
    return Venv(tmp_path / "venv", served)


@pytest.fixture(scope="module")
def rocm_venv(served, tmp_path_factory):
    """A venv converged like the seed's venv + torch stages (gfx942 and gfx950)."""
    pins = yaml.safe_load(open(os.path.join(served["root"], "pins-v26.5.yml")))["primus_pins"]
    v = Venv(tmp_path_factory.mktemp("rocm") / "venv", served)
    v.pip("install", "--quiet", *(pins["venv"]["bootstrap"] + pins["venv"]["packages"]))
    v.pip("install", "--quiet", *pins["torch"]["pre_packages"])
    device = [r.replace("{arch}", a) for a in ("gfx942", "gfx950") for r in pins["torch"]["device_packages"]]
    v.pip("install", "--quiet", "--pre", *(pins["torch"]["packages"] + device), index="torch")
    run([os.path.join(v.path, "bin", "rocm-sdk"), "init"])
    v.rocm = os.path.join(v.site, "_rocm_sdk_devel")
    v.build_env = dict(ROCM_PATH=v.rocm,
                       PATH="%s:%s:/usr/bin:/bin" % (os.path.join(v.rocm, "bin"), os.path.join(v.path, "bin")))
    return v


def clone(world, name, dest, *flags):
    url = world["repos"][name]["url"]
    run(["git", "clone", "--quiet"] + list(flags) + [url, str(dest)], env=gitrepo.git_env())
    return str(dest)


def git(cwd, *args):
    return run(["git"] + list(args), cwd=cwd, env=gitrepo.git_env()).stdout


# --- the world itself ---------------------------------------------------------------------------

def test_build_is_deterministic(world, tmp_path):
    again = str(tmp_path / "again")
    world_build.build(again, world["port"], CACHE, log=lambda *_: None)
    first, second = _tree_hashes(world["root"]), _tree_hashes(again)
    assert sorted(first) == sorted(second)
    assert [p for p in first if first[p] != second[p]] == []
    with open(os.path.join(again, "world.json")) as handle:
        assert json.load(handle)["repos"] == world["repos"]


RELEASES = sorted(world_build.release_files())


@pytest.mark.parametrize("release", RELEASES)
def test_overlay_is_the_real_file_with_world_urls_and_commits(world, release):
    real = open(world_build.release_files()[release]).read()
    built = world["releases"][release]
    assert built["pins"] == "pins-%s.yml" % release
    text = open(os.path.join(world["root"], built["pins"])).read()
    assert overlay.verify(real, text)
    pins, real_pins = yaml.safe_load(text)["primus_pins"], yaml.safe_load(real)["primus_pins"]
    assert pins["release"] == release
    assert pins["indexes"] == world["indexes"]
    assert pins["versions"] == real_pins["versions"] and pins["torch"] == real_pins["torch"]
    for component, source in pins["sources"].items():
        recorded = built["sources"][component]
        assert source["repo"] == recorded["repo"] and recorded["ref_kind"] == real_pins["sources"][component]["ref_kind"]
        if recorded["ref_kind"] == "branch":
            assert source["ref"] == real_pins["sources"][component]["ref"] and recorded["ref"] is None
            assert recorded["pinned"] is None
            continue
        if recorded["ref_kind"] == "short_commit":
            # the release knows an abbreviated commit only: so does the overlay (git's 7 hex); world.json has the full one
            assert isinstance(source["ref"], str) and re.match("^[0-9a-f]{7}$", source["ref"])
            assert source["ref"] == recorded["ref"] == recorded["pinned"][:7]
        else:
            assert re.match("^[0-9a-f]{40}$", source["ref"])
            assert source["ref"] == recorded["ref"] == recorded["pinned"]
        assert recorded["pinned"] in world["repos"][recorded["repo_name"]]["commits"].values()
    if release == world["default_release"]:
        assert dict((c, s["pinned"]) for c, s in built["sources"].items()) == dict(
            (c, s["pinned"]) for c, s in world["sources"].items())
    assert checks.unserved_pins(yaml.safe_load(text), dict(
        (key, world_build._served(os.path.join(world["root"], d))) for key, (d, _index) in world_build.INDEXES.items())) == []


def test_v2651_pins_other_te_and_primus_commits_than_v265(world):
    old, new = world["releases"]["v26.5"]["sources"], world["releases"]["v26.5.1"]["sources"]
    assert sorted(c for c in old if old[c]["pinned"] != new[c]["pinned"]) == ["primus", "te"]
    assert (old["te"]["ref_kind"], new["te"]["ref_kind"]) == ("commit", "short_commit")


def test_a_release_pin_the_world_does_not_serve_fails_the_build(world, tmp_path):
    """Each release file's pins must be served: a pin of v26.5.1 no index has stops the build, naming it."""
    pins = tmp_path / "v26.5.1.yml"
    pins.write_text(open(world_build.release_files()["v26.5.1"]).read().replace(
        "rocm-sdk-libraries==7.15.0a20260727", "rocm-sdk-libraries==7.15.0a20260728"))
    with pytest.raises(SystemExit) as failed:
        world_build.build(str(tmp_path / "w"), world["port"], CACHE, [world_build.default_pins(), str(pins)],
                          log=lambda *_: None)
    assert "pins of v26.5.1 not served by the world" in str(failed.value)
    assert "torch: rocm-sdk-libraries==7.15.0a20260728" in str(failed.value)


def test_server_binds_loopback_only_and_stops_cleanly(served, tmp_path):
    port_hex = ":%04X" % served["port"]
    listening = [line.split()[1] for line in open("/proc/net/tcp").read().splitlines()[1:]
                 if line.split()[1].endswith(port_hex) and line.split()[3] == "0A"]
    assert listening == ["0100007F" + port_hex]
    assert not any(line.split()[1].endswith(port_hex) and line.split()[3] == "0A"
                   for line in open("/proc/net/tcp6").read().splitlines()[1:])
    # a second root: start, status, stop leaves no process and no pid file
    root = tmp_path / "mini"
    root.mkdir()
    (root / "world.json").write_text(json.dumps({"port": _free_port()}))
    assert world_serve.start(str(root)) == 0
    pid = world_serve.running(str(root))
    assert pid and world_serve.status(str(root)) == 0
    assert world_serve.stop(str(root)) == 0
    assert not world_serve._alive(pid) and not (root / "server.pid").exists()
    assert world_serve.status(str(root)) == 3


def _mini_root(path, port):
    path.mkdir()
    (path / "world.json").write_text(json.dumps({"port": port}))
    return str(path)


@pytest.mark.parametrize("bind", ["127.0.0.1", "0.0.0.0"])
def test_start_refuses_a_port_that_another_server_holds(tmp_path, capsys, bind):
    """A taken port is a clear error naming the holder, even when the holder serves a world.json."""
    port = _free_port()
    root = _mini_root(tmp_path / "ours", port)
    other = _mini_root(tmp_path / "other", port)  # what the holder serves: a world.json, like a world
    holder = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", bind, "--directory", other],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # The holder listens before ours starts (a wait for its start only: a loaded machine may take seconds).
        deadline = time.monotonic() + 120
        while holder.poll() is None and time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        else:
            pytest.fail("the holder (python -m http.server on port %d) did not listen (rc %s)" % (port, holder.poll()))
        assert world_serve.start(root) == 1
        err = capsys.readouterr().err
        assert "cannot listen on 127.0.0.1:%d: the port is taken by pid %d (" % (port, holder.pid) in err, err
        assert "http.server" in err and "WORLD_PORT=<port>" in err
        assert not os.path.exists(os.path.join(root, "server.pid")) and world_serve.status(root) == 3
        assert holder.poll() is None  # the other process is left alone
    finally:
        world_serve.stop(root)  # (only if a broken start left a server behind)
        holder.terminate()
        holder.wait(timeout=10)


def test_start_names_another_world_server_on_the_port(tmp_path, capsys):
    port = _free_port()
    first, second = _mini_root(tmp_path / "first", port), _mini_root(tmp_path / "second", port)
    assert world_serve.start(first) == 0
    try:
        assert world_serve.start(second) == 1
        err = capsys.readouterr().err
        assert "It is the world server of %s: stop it (python3 tests/world/serve.py stop --root %s)" % (first, first) in err
        assert world_serve.status(first) == 0 and world_serve.status(second) == 3
    finally:
        world_serve.stop(second)
        world_serve.stop(first)


def test_status_proves_the_answering_server_is_ours(tmp_path):
    """A pid file of a live serve.py whose port is answered by someone else is not "running"."""
    root = _mini_root(tmp_path / "w", _free_port())
    assert world_serve.start(root) == 0
    pid, nonce = world_serve._read_pid(os.path.join(root, "server.pid"))
    try:
        with open(os.path.join(root, "server.pid"), "w") as handle:
            handle.write("%d %s\n" % (pid, "0" * 32))  # another start's nonce
        assert world_serve.status(root) == 3
        with open(os.path.join(root, "server.pid"), "w") as handle:
            handle.write("%d %s\n" % (pid, nonce))
        assert world_serve.status(root) == 0
    finally:
        world_serve.stop(root)


def test_te_index_serves_only_te(served):
    root = os.path.join(served["root"], "te", "whl-staging", "device-all")
    assert sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d))) == [
        "transformer-engine-rocm-torch", "transformer-engine-rocm7"]


_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never a proxy


def _get(url):
    """(headers, body) of a GET on the loopback world."""
    with _OPENER.open(url, timeout=10) as response:
        return response.headers, response.read()


_LINK = re.compile(r'<a href="(?P<url>[^"#]+)#sha256=(?P<sha>[0-9a-f]{64})"(?P<attrs>[^>]*)>')


def test_indexes_serve_pep658_metadata_and_pypi_cache_headers(served):
    """Every link is checked against the file on disk; one wheel per index also over HTTP."""
    base, links = served["base_url"], 0
    for files_dir, index_dir in world_build.INDEXES.values():
        page_url = "%s/%s/" % (base, index_dir.rstrip("/"))
        headers, body = _get(page_url)
        assert headers["Cache-Control"] == "max-age=600, public"
        fetched = False
        for project in re.findall(r'href="([^"/]+)/"', body.decode()):
            for link in _LINK.finditer(_get(page_url + project + "/")[1].decode()):
                attrs = dict(re.findall(r'(data-[a-z-]+)="([^"]*)"', link.group("attrs")))
                url = html.unescape(link.group("url"))
                path = os.path.join(served["root"], urllib.parse.unquote(url).lstrip("/"))
                with open(path, "rb") as handle:
                    assert hashlib.sha256(handle.read()).hexdigest() == link.group("sha")
                core = index.core_metadata(path)
                requires_python = email.parser.BytesParser().parsebytes(core).get("Requires-Python")
                assert html.unescape(attrs.get("data-requires-python", "")) == (requires_python or "")
                if path.endswith(".whl"):
                    with open(path + ".metadata", "rb") as handle:
                        assert handle.read() == core  # PEP 658: the wheel's own METADATA, with its hash
                    assert attrs["data-core-metadata"] == attrs["data-dist-info-metadata"] == \
                        "sha256=" + hashlib.sha256(core).hexdigest()
                    if not fetched:
                        for suffix in ("", ".metadata"):
                            headers, data = _get(base + url + suffix)
                            assert headers["Cache-Control"] == "max-age=365000000, immutable, public"
                        assert data == core
                        fetched = True
                else:
                    assert "data-core-metadata" not in attrs  # PyPI has none for sdists either
                links += 1
        assert fetched
    assert links == sum(len(index.distribution_files(os.path.join(served["root"], files_dir)))
                        for files_dir, _index_dir in world_build.INDEXES.values())
    for path in ("/world.json", "/git/grouped_gemm.git/info/refs"):
        assert _get(base + path)[0]["Cache-Control"] == "no-cache"  # refs move (branch.py)


def _log_since(root, offset):
    with open(os.path.join(root, "server.log")) as handle:
        handle.seek(offset)
        return handle.read()


def _large_pinned_set(root):
    pins = yaml.safe_load(open(os.path.join(root, "pins-v26.5.yml")))["primus_pins"]
    reqs = pins["torch"]["pre_packages"] + pins["te"]["deps"] + pins["pydeps"]["packages"] + pins["boto"]["packages"]
    return [r for r in reqs if r != "tensorstore==0.1.45"]  # sdist only: pip builds its metadata


def test_dry_run_resolves_from_metadata_without_downloading_wheels(served, venv, tmp_path):
    reqs = _large_pinned_set(served["root"])
    offset = os.path.getsize(os.path.join(served["root"], "server.log"))
    picked = venv.dry_run(*reqs, extra=["--no-cache-dir", "--ignore-installed"])
    log = _log_since(served["root"], offset)
    assert len(picked) > 120
    assert re.findall(r'"GET \S+\.whl HTTP', log) == []
    assert len(re.findall(r'"GET \S+\.whl\.metadata HTTP', log)) >= len(picked)
    # control: the same files behind an index without PEP 658 attributes make pip fetch every wheel
    control = tmp_path / "control"
    (control / "pypi").mkdir(parents=True)
    os.symlink(os.path.join(served["root"], "pypi", "files"), str(control / "pypi" / "files"))
    index.write_simple_index(str(control / "pypi" / "files"), str(control / "pypi" / "simple"), "/pypi/files",
                             metadata=False)
    log = io.StringIO()
    with world_server.serve(str(control), access_log=log) as url:
        proc = run([venv.python, venv.pip_main, "install", "--dry-run", "--quiet", "--no-cache-dir",
                    "--ignore-installed", "--index-url", url + "/pypi/simple"] + reqs, env=venv.env())
    assert proc.returncode == 0
    assert len(re.findall(r'"GET \S+\.whl HTTP', log.getvalue())) >= len(picked)


def test_pip_http_cache_reuses_files(served, venv, tmp_path):
    """PyPI's caching headers at work: files are immutable, index pages fresh for 10 minutes.

    (pip caches plain-http indexes only for trusted hosts; PyPI is https.)
    """
    fetched = []
    for attempt, extra in (("first", []), ("second", []), ("refresh", ["--refresh-package", "einops"])):
        offset = os.path.getsize(os.path.join(served["root"], "server.log"))
        venv.pip("download", "--quiet", "--no-deps", "--cache-dir", str(tmp_path / "cache"), "--trusted-host",
                 "127.0.0.1", "-d", str(tmp_path / attempt), "einops", *extra)
        assert os.listdir(str(tmp_path / attempt))
        fetched.append(re.findall(r'"GET (\S+) HTTP/1.1" (\d+)', _log_since(served["root"], offset)))
    first, second, refresh = fetched
    assert [p for p, status in first if p.endswith(".whl")] and second == []
    assert [status for p, status in refresh if p.endswith("/simple/einops/")] == ["304"]
    assert [p for p, status in refresh if "/files/" in p] == []


def test_pypi_standins_carry_the_snapshot_metadata(world):
    """Each PyPI file is the snapshot's: real files by sha256, stand-ins with the real metadata."""
    files = index.distribution_files(os.path.join(world["root"], "pypi", "files"))
    served = dict((os.path.basename(rel), path) for rel, path in files.items())
    expected = dict((d["file"], d) for d in SNAPSHOT["distributions"])
    # uv is published as PyPI publishes it, one wheel per platform (packages.uv_wheels), of which the
    # snapshot's manylinux x86_64 file is one.
    uv = sorted("uv-%s-%s.whl" % (p.version, p.tag) for p in packages.uv_wheels())
    assert [f for f in expected if f.startswith("uv-")] == [f for f in uv if "manylinux_2_17_x86_64" in f and "0.13.9" in f]
    assert sorted(served) == sorted(set(expected) | set(uv))
    for name, dist in expected.items():
        if name.startswith("uv-"):
            continue
        if normalize(dist["name"]) in packages.REAL:
            with open(served[name], "rb") as handle:
                assert hashlib.sha256(handle.read()).hexdigest() == dist["sha256"], name
            continue
        meta = email.parser.BytesParser().parsebytes(index.core_metadata(served[name]))
        assert (meta["Name"], meta["Version"]) == (dist["name"], dist["version"])
        assert (meta.get_all("Requires-Dist") or []) == dist["requires_dist"], name
        assert meta.get("Requires-Python") == dist["requires_python"], name
        assert (meta.get_all("Provides-Extra") or []) == dist["provides_extra"], name


def test_snapshot_wheels_install_on_cpython_312_manylinux_2_28():
    platforms = ["manylinux_2_%d_x86_64" % minor for minor in range(28, 4, -1)]
    platforms += ["manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64", "linux_x86_64"]
    supported = set(tags.cpython_tags((3, 12), platforms=platforms)) | set(
        tags.compatible_tags((3, 12), "cp312", platforms=platforms))
    for dist in SNAPSHOT["distributions"]:
        if dist["kind"] == "wheel":
            name, version, _build, wheel_tags = parse_wheel_filename(dist["file"])
            assert (name, str(version)) == (canonicalize_name(dist["name"]), dist["version"])
            assert wheel_tags & supported, dist["file"]
        else:
            assert dist["file"].endswith(".tar.gz"), dist["file"]


def test_snapshot_records_the_current_roots():
    """The snapshot was taken from what the pins and stand-in repositories name today."""
    pins = dict((r, yaml.safe_load(open(path))) for r, path in world_build.release_files().items())
    recorded = dict((name, (g["requires"], g["no_deps"])) for name, g in SNAPSHOT["groups"].items())
    assert snapshot_metadata.all_groups(pins) == recorded, "re-run python3 tests/world/snapshot_metadata.py"
    assert sorted(SNAPSHOT["stages"]) == sorted(pins)
    for release, steps in SNAPSHOT["stages"].items():
        keys = ("step", "stage", "index", "requires", "stand_ins", "no_deps", "constrained", "remove")
        assert [dict((k, s[k]) for k in keys) for s in steps] == stages.steps(pins[release]), \
            "re-run python3 tests/world/snapshot_metadata.py (the stages of %s changed)" % release
    assert SNAPSHOT["resolved_for"] == {"python": SNAPSHOT["resolved_for"]["python"], "pip": "26.3",
                                        "platform": "manylinux_2_28_x86_64"}


# the real Requires-Dist of PyPI (without extras, checked 2026-12-02), as PyPI serves them
FACTS_16 = {
    ("quack-kernels", "0.3.1"): ["nvidia-cutlass-dsl>=4.4.1", "torch", "apache-tvm-ffi<0.2,>=0.1.6",
                                 "torch-c-dlpack-ext"],
    ("nvidia-cutlass-dsl", "4.5.3"): ["nvidia-cutlass-dsl-libs-base==4.5.3"],
    ("nvidia-cutlass-dsl-libs-base", "4.5.3"): ["numpy", "typing-extensions", "cuda-python>=12.8"],
    ("nvidia-cutlass-dsl", "4.6.0"): ["nvidia-cutlass-dsl-libs-base==4.6.0", "nvidia-cutlass-dsl-libs-cu12==4.6.0"],
    ("nvidia-cutlass-dsl-libs-base", "4.6.0"): ["numpy", "typing-extensions>=4.10.0", "cuda-python>=12.8",
                                                "protobuf<7,>=6.30.2", "nvidia-cuda-nvdisasm<14,>=13.3",
                                                "nvidia-cutlass-dsl-libs-core==4.6.0"],
    ("cuda-python", "13.4.4"): ["cuda-bindings~=13.4.4", "cuda-core~=1.2.0", "cuda-pathfinder~=1.1"],
    ("cuda-bindings", "13.4.4"): ["cuda-pathfinder>=1.4.2"],
    ("torch-c-dlpack-ext", "0.1.5"): ["torch"],
}


def test_mamba_chain_metadata_is_upstream_facts_16(served):
    pages = {}
    for (project, version), requires in FACTS_16.items():
        pages.setdefault(project, _get("%s/%s/" % (served["indexes"]["pypi"], project))[1].decode())
        urls = [html.unescape(link.group("url")) for link in _LINK.finditer(pages[project])
                if "-%s-" % version in link.group("url")]
        assert len(urls) == 1, (project, version, urls)
        meta = email.parser.BytesParser().parsebytes(_get(served["base_url"] + urls[0] + ".metadata")[1])
        assert [r for r in meta.get_all("Requires-Dist") if "extra ==" not in r] == requires, project


def test_mamba_chain_resolves_like_pypi(rocm_venv, tmp_path):
    """The seed's cutlass pin pulls the harmless cuda-python bindings; unpinned or 4.6 pull CUDA wheels."""
    v = rocm_venv
    constraints = tmp_path / "c.txt"
    constraints.write_text("torch==%s\ntriton==%s\n" % (PINNED, packages.TRITON_ROCM))
    pinned = v.dry_run("quack-kernels==0.3.1", "nvidia-cutlass-dsl==4.5.3", extra=["-c", str(constraints)])
    assert {"cuda-python", "cuda-bindings", "cuda-core", "cuda-pathfinder", "torch-c-dlpack-ext",
            "nvidia-cutlass-dsl-libs-base"} <= set(pinned) and "torch" not in pinned
    assert Version(pinned["apache-tvm-ffi"]) < Version("0.2") and pinned["nvidia-cutlass-dsl-libs-base"] == "4.5.3"
    assert [n for n in pinned if n.startswith("nvidia-cuda") or n.endswith(("-cu12", "-cu13"))] == []
    unpinned = v.dry_run("quack-kernels==0.3.1", extra=["-c", str(constraints)])
    assert Version(unpinned["nvidia-cutlass-dsl"]) >= Version("4.6") and "nvidia-cutlass-dsl-libs-cu12" in unpinned
    old = v.dry_run("nvidia-cutlass-dsl==4.6.0", extra=["-c", str(constraints)])
    assert {"nvidia-cuda-nvdisasm", "nvidia-cutlass-dsl-libs-cu12", "nvidia-cutlass-dsl-libs-core"} <= set(old)


def test_floating_branch_moves_and_resets(world, tmp_path):
    """branch.move pushes onto a served branch (git ls-remote sees it at once); reset puts it back."""
    root = tmp_path / "w"
    shutil.copytree(os.path.join(world["root"], "git", "grouped_gemm.git"), str(root / "git" / "grouped_gemm.git"))
    shutil.copyfile(os.path.join(world["root"], "world.json"), str(root / "world.json"))
    built = world["repos"]["grouped_gemm"]["branches"]

    def heads(url):
        return dict((ref.split("/")[-1], sha) for sha, ref in
                    (line.split() for line in git(str(tmp_path), "ls-remote", "--heads", url).splitlines()))

    with world_server.serve(str(root)) as base:
        url = base + "/git/grouped_gemm.git"
        assert heads(url) == built
        moved = world_branch.move(str(root), "grouped_gemm", "rocm", "ROCm: fix tile sizes again")
        assert heads(url) == dict(built, rocm=moved) and moved != built["rocm"]
        gg = clone({"repos": {"grouped_gemm": {"url": url}}}, "grouped_gemm", tmp_path / "gg", "--branch", "rocm")
        assert git(gg, "rev-parse", "HEAD^").strip() == built["rocm"]  # one commit on top of the old head
        assert open(os.path.join(gg, "WORLD-MOVES.md")).read() == "ROCm: fix tile sizes again\n"
        assert world_branch.reset(str(root), "grouped_gemm", "rocm") == built["rocm"]
        assert heads(url) == built
        # Collected as after a force-push and a server's gc: the moved commit cannot be fetched by its id any more.
        gone = subprocess.run(["git", "-C", str(root / "git" / "grouped_gemm.git"), "cat-file", "-e", moved + "^{commit}"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
        assert gone.returncode != 0, gone.stderr
        cli = [sys.executable, os.path.join(HERE, "branch.py"), "--root", str(root)]
        again = run(cli[:2] + ["move"] + cli[2:] + ["grouped_gemm", "rocm", "--message", "ROCm: fix tile sizes again"])
        assert again.stdout.strip() == moved  # the same move on the same head is the same commit
        assert heads(url)["rocm"] == moved
        run(cli[:2] + ["reset"] + cli[2:] + ["grouped_gemm", "rocm"])
        assert heads(url) == built


# --- ROCm nightly index -------------------------------------------------------------------------

def test_torch_is_cp312_only(venv, tmp_path):
    for version, ok in (("3.12", True), ("3.11", False), ("3.10", False)):
        proc = venv.pip("download", "--quiet", "--no-deps", "--only-binary=:all:", "--python-version", version,
                        "-d", str(tmp_path / version), "torch==" + PINNED, index="torch", check=False)
        assert (proc.returncode == 0) == ok, proc.stdout


def test_torch_resolve_needs_the_pre_torch_pypi_step(venv):
    proc = venv.pip("install", "--dry-run", "--pre", "apex==1.12.0+rocm" + packages.ROCM, index="torch", check=False)
    assert proc.returncode != 0 and "cxxfilt" in proc.stdout


def test_unpinned_companions_pick_decoy_nightlies(venv):
    picked = venv.dry_run("torchvision", index="torch", extra=["--pre"])
    assert picked["torchvision"].startswith("0.27.0+") and picked["torchvision"] != "0.27.0+rocm" + packages.ROCM
    assert picked["torch"] != PINNED  # it drags a torch of another nightly with it
    assert venv.dry_run("rocm-sdk-devel", index="torch", extra=["--pre"])["rocm-sdk-devel"].startswith("10.0.0a")
    pinned = venv.dry_run("torch==" + PINNED, "torchvision==0.27.0+rocm" + packages.ROCM, index="torch", extra=["--pre"])
    assert pinned["torch"] == PINNED and pinned["triton"] == packages.TRITON_ROCM


def test_rocm_sdk_init_hipcc_and_rocminfo(rocm_venv, tmp_path):
    v = rocm_venv
    out = run([os.path.join(v.path, "bin", "rocm-sdk"), "init"]).stdout
    assert "already expanded" in out  # idempotent
    assert v.py("import os, _rocm_sdk_devel; print(os.path.dirname(_rocm_sdk_devel.__file__))").stdout.strip() == v.rocm
    for rel in ("bin/hipcc", "bin/rocminfo", "llvm/bin", "lib", "lib64", "include", "lib/llvm/amdgcn/bitcode",
                "lib/pkgconfig", "lib/host-math/lib", "lib/rocm_sysdeps/lib"):
        assert os.path.exists(os.path.join(v.rocm, rel)), rel
    src = tmp_path / "k.hip"
    src.write_text("#include <hip/hip_runtime.h>\n#include <cstdio>\nint main(){std::printf(\"hip %d\\n\", HIP_VERSION_MAJOR);}\n")
    hipcc = os.path.join(v.rocm, "bin", "hipcc")
    run([hipcc, "--offload-arch=gfx942", "--offload-arch=gfx950", "-x", "hip", str(src), "-o", str(tmp_path / "k")])
    assert run([str(tmp_path / "k")]).stdout == "hip 7\n"
    rocminfo = os.path.join(v.rocm, "bin", "rocminfo")
    proc = run([rocminfo], check=False)
    assert proc.returncode != 0 and "ROCk module is NOT loaded" in proc.stdout
    recorded = os.path.join(HOST, "rocminfo.txt")
    env = v.env(PRIMUS_WORLD_ROCMINFO=recorded)
    assert run([rocminfo], env=env).stdout == open(recorded).read()
    native = [hipcc, "--offload-arch=native", "-c", str(src), "-o", str(tmp_path / "n.o")]
    proc = run(native, check=False)
    assert proc.returncode != 0 and "cannot determine amdgcn architecture" in proc.stdout
    run(native, env=env)
    assert v.py("import torch; print(torch.version.hip, torch.cuda.get_arch_list())").stdout.split() == [
        "7.15.0", "['gfx942',", "'gfx950']"]


# --- ROCm nightly a20260727 (v26.5.1's: the SDK installed first) ----------------------------------

SDK_V2651 = packages.ROCM_V2651


def _arch_reqs(reqs, archs):
    return [r.replace("{arch}", a) for a in archs for r in reqs]


@pytest.fixture(scope="module")
def sdk_venv(served, tmp_path_factory):
    """A venv converged like v26.5.1's venv and torch stages: the SDK first (ROCm index, --pre), the pre-torch pins
    (PyPI), then torch, its companions and the device wheels (ROCm index), gfx942 and gfx950. No rocm-sdk init yet."""
    pins = yaml.safe_load(open(os.path.join(served["root"], "pins-v26.5.1.yml")))["primus_pins"]
    archs = pins["torch"]["device_archs"]
    v = Venv(tmp_path_factory.mktemp("sdk") / "venv", served)
    v.pip("install", "--quiet", *(pins["venv"]["bootstrap"] + pins["venv"]["packages"]))
    sdk = pins["torch"]["sdk_packages"] + _arch_reqs(pins["torch"]["sdk_device_packages"], archs)
    v.pip("install", "--quiet", "--pre", *sdk, index="torch")
    v.pip("install", "--quiet", *pins["torch"]["pre_packages"])
    v.pip("install", "--quiet", "--pre", *(pins["torch"]["packages"] + _arch_reqs(pins["torch"]["device_packages"], archs)),
          index="torch")
    v.pins = pins
    v.core_comgr = os.path.join(v.site, "_rocm_sdk_core", "lib", "libamd_comgr.so.3")
    v.devel_comgr = os.path.join(v.site, "_rocm_sdk_devel", "lib", "libamd_comgr.so.3")
    v.rocm = os.path.join(v.site, "_rocm_sdk_devel")
    v.build_env = dict(ROCM_PATH=v.rocm,
                       PATH="%s:%s:/usr/bin:/bin" % (os.path.join(v.rocm, "bin"), os.path.join(v.path, "bin")))
    return v


def _link_comgr(v):
    """The fix of Dockerfile.primus-v26.5.1: the core copy becomes a link to the devel copy (ln -sf)."""
    run([os.path.join(v.path, "bin", "rocm-sdk"), "init"])
    if not os.path.islink(v.core_comgr):
        if os.path.exists(v.core_comgr):
            os.unlink(v.core_comgr)
        os.symlink(v.devel_comgr, v.core_comgr)


LLVM_ABORT = ": CommandLine Error: Option 'spirv-expand-step' registered more than once!\n"


def test_a20260727_resolves_with_the_pins_and_torch_drags_its_own_sdk(venv, served):
    """The pins of v26.5.1 resolve to their exact builds; TheRock's torch requires rocm[libraries] of its nightly (so
    a torch alone brings that nightly's SDK runtime, never another's), while v26.5's torch stays as it was."""
    pins = yaml.safe_load(open(os.path.join(served["root"], "pins-v26.5.1.yml")))["primus_pins"]
    archs = pins["torch"]["device_archs"]
    sdk = pins["torch"]["sdk_packages"] + _arch_reqs(pins["torch"]["sdk_device_packages"], archs)
    picked = venv.dry_run(*sdk, index="torch", extra=["--pre"])
    for req in sdk:
        name, _sep, version = req.partition("==")
        assert picked[normalize(name)] == (version or picked[normalize(name)]), req
    # rocm-bootstrap is unpinned upstream: the index's newest public version wins, the rocm10 decoy's
    assert picked["rocm-bootstrap"].startswith("10.0.0a") and len(picked) == len(sdk)
    alone = venv.dry_run("torch==" + packages.TORCH_V2651, index="torch", extra=["--pre"])
    assert alone["triton"] == packages.TRITON_ROCM_V2651
    assert [alone[n] for n in ("rocm", "rocm-sdk-core", "rocm-sdk-libraries")] == [SDK_V2651] * 3
    assert "rocm-sdk-devel" not in alone  # the devel tree comes from the SDK step only
    old = venv.dry_run("torch==" + PINNED, index="torch", extra=["--pre"])
    assert old["torch"] == PINNED and [n for n in old if n.startswith("rocm")] == []


def test_two_comgr_files_abort_import_torch_and_a_link_does_not(sdk_venv, tmp_path):
    """rocm-sdk-core's lib/libamd_comgr.so.3 and the devel tree's are separate files: torch loads both and LLVM's
    options register twice (SIGABRT). The loader, not a name check, decides: through a symlink it maps one file once,
    and a separate copy with the same bytes aborts again."""
    v = sdk_venv
    probe = "import torch; print(torch.__version__)"
    assert os.path.isfile(v.core_comgr) and not os.path.islink(v.core_comgr)
    if not os.path.exists(v.devel_comgr):  # before rocm-sdk init only the core copy exists
        assert v.py(probe).stdout == packages.TORCH_V2651 + "\n"
    run([os.path.join(v.path, "bin", "rocm-sdk"), "init"])
    assert os.path.isfile(v.devel_comgr) and not os.path.samefile(v.core_comgr, v.devel_comgr)
    with open(v.core_comgr, "rb") as core, open(v.devel_comgr, "rb") as devel:
        assert core.read() == devel.read()  # one library, two files
    proc = v.py(probe, check=False)
    assert proc.returncode == -signal.SIGABRT, proc.stdout
    assert proc.stdout == LLVM_ABORT + "LLVM ERROR: inconsistency in registered CommandLine options\n", proc.stdout
    _link_comgr(v)
    assert os.path.samefile(v.core_comgr, v.devel_comgr)
    assert v.py(probe).stdout == packages.TORCH_V2651 + "\n"
    maps = v.py("import torch; print(sorted(set(l.split()[-1] for l in open('/proc/self/maps') "
                "if l.rstrip().endswith('libamd_comgr.so.3'))))").stdout
    assert maps == "[%r]\n" % os.path.realpath(v.devel_comgr)  # one file mapped, the link's target
    # a separate file again (a copy, the same bytes): the abort is back; a hard link is one file
    os.unlink(v.core_comgr)
    shutil.copyfile(v.devel_comgr, v.core_comgr)
    assert v.py(probe, check=False).returncode == -signal.SIGABRT
    os.unlink(v.core_comgr)
    os.link(v.devel_comgr, v.core_comgr)
    assert v.py(probe).returncode == 0
    os.unlink(v.core_comgr)
    _link_comgr(v)


def test_rocm_sdk_init_and_hipcc_of_a20260727(sdk_venv, tmp_path):
    v = sdk_venv
    run([os.path.join(v.path, "bin", "rocm-sdk"), "init"])
    assert run([os.path.join(v.path, "bin", "rocm-sdk"), "version"]).stdout == SDK_V2651 + "\n"
    for rel in ("bin/hipcc", "bin/rocminfo", "bin/rocprofv3", "llvm/bin/amdgpu-arch", "lib/libamd_comgr.so.3",
                "include/hip/hip_runtime.h", "lib/llvm/amdgcn/bitcode", "lib/host-math/lib", "lib/rocm_sysdeps/lib"):
        assert os.path.exists(os.path.join(v.rocm, rel)), rel
    hipcc = os.path.join(v.rocm, "bin", "hipcc")
    assert run([hipcc, "--version"]).stdout.startswith("HIP version: 7.15.0-a20260727 ")
    src = tmp_path / "k.hip"
    src.write_text("#include <hip/hip_runtime.h>\n#include <cstdio>\nint main(){std::printf(\"hip %d\\n\", HIP_VERSION_MAJOR);}\n")
    run([hipcc, "--offload-arch=gfx942", "-x", "hip", str(src), "-o", str(tmp_path / "k")])
    assert run([str(tmp_path / "k")]).stdout == "hip 7\n"


def test_rocprofv3_ships_the_library_ctor_line(sdk_venv):
    v = sdk_venv
    run([os.path.join(v.path, "bin", "rocm-sdk"), "init"])
    script = os.path.join(v.rocm, "bin", "rocprofv3")
    text = open(script).read()
    assert os.access(script, os.X_OK)
    assert text.count('update_env("ROCPROFILER_LIBRARY_CTOR", True)\n') == 1
    proc = run([script, "--version"], check=False)
    assert proc.returncode == 1 and "libamd_comgr.so.3" in proc.stdout
    try:
        with open(script, "w") as handle:  # the Dockerfile's sed
            handle.write(text.replace('update_env("ROCPROFILER_LIBRARY_CTOR", True)',
                                      'update_env("ROCPROFILER_LIBRARY_CTOR", False)'))
        assert run([script, "--version"]).stdout == "rocprofv3 (stand-in) of %s\n" % v.rocm
        assert run([script, "--", "/bin/echo", "profiled"]).stdout == "profiled\n"
    finally:
        with open(script, "w") as handle:
            handle.write(text)


def test_te_of_v2651_builds_against_torch_only_with_one_comgr(sdk_venv):
    """TE's torch glue imports torch in its build: with two comgr files the build aborts, with the link it builds."""
    v = sdk_venv
    te = v.pins["te"]["wheel"]
    assert te == "transformer_engine_rocm_torch==" + packages.TE_NEWER
    v.pip("install", "--quiet", *v.pins["te"]["deps"])
    env = v.env(GPU_ARCHS="gfx942", MAX_JOBS="2", **v.build_env)
    _link_comgr(v)
    os.unlink(v.core_comgr)
    shutil.copyfile(v.devel_comgr, v.core_comgr)
    proc = v.pip("install", "--pre", "--no-build-isolation", te, index="te", env=env, check=False)
    assert proc.returncode != 0 and "spirv-expand-step" in proc.stdout, proc.stdout[-2000:]
    _link_comgr(v)
    v.pip("install", "--quiet", "--pre", "--no-build-isolation", te, index="te", env=env)
    record = json.loads(v.py("import importlib.resources as r; print(r.files('transformer_engine_rocm_torch')"
                             ".joinpath('world_build.json').read_text())").stdout)
    assert record["torch"] == packages.TORCH_V2651
    assert v.py("import importlib.metadata as m; print(m.version('transformer_engine_rocm7'))").stdout.strip() == \
        packages.TE_NEWER


def _relock():
    import importlib.util
    spec = importlib.util.spec_from_file_location("relock_tool", os.path.join(REPO_ROOT, "tools", "relock.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_relock_sees_a20260727_as_the_newest_complete_nightly(served, tmp_path, capsys):
    """tools/relock.py's reading of the world's ROCm index: 7.15.0a20260805 lacks apex (incomplete), a20260727 is the
    newest date of the 7.15.0 line with the whole set; relocking v26.5 there gives v26.5.1's nightly versions."""
    relock = _relock()
    archs = ["gfx942", "gfx950"]
    projects = list(dict(relock.MAIN)) + [p.format(arch=a) for a in archs for p in dict(relock.DEVICE)]
    pages = dict((p, relock.fetch(served["indexes"]["torch"], p)) for p in projects)
    verdicts = relock.judge(pages, archs, "7.15.0")
    assert [(date, reasons) for date, _chosen, reasons in verdicts] == [
        ("20260805", ["apex: not published"]), ("20260727", []), ("20260720", [])]
    assert verdicts[1][1] == {"torch": packages.TORCH_V2651, "torchaudio": "2.11.0+rocm" + SDK_V2651,
                              "torchvision": "0.27.0+rocm" + SDK_V2651, "apex": "1.12.0+rocm" + SDK_V2651,
                              "rocm-sdk-devel": SDK_V2651}
    out = str(tmp_path / "relocked.yml")
    assert relock.main(["--pins", os.path.join(served["root"], "pins-v26.5.yml"), "--out", out]) == 0
    assert "20260805 incomplete: apex: not published" in capsys.readouterr().out
    relocked = yaml.safe_load(open(out))["primus_pins"]["versions"]
    v2651 = yaml.safe_load(open(os.path.join(served["root"], "pins-v26.5.1.yml")))["primus_pins"]["versions"]
    assert dict(relocked, transformer_engine=None) == dict(v2651, transformer_engine=None)
    assert relock.main(["--pins", os.path.join(served["root"], "pins-v26.5.1.yml"), "--out", out + ".2"]) == 2


def test_te_short_commit_resolves_to_the_full_commit_in_the_worlds_git(served, tmp_path):
    """v26.5.1 pins TE by an abbreviated commit (ref_kind short_commit); the world's TE repository resolves it
    to exactly one commit, the full one world.json records, which is on the default branch between v26.5's pin and
    the branch head."""
    te = served["releases"]["v26.5.1"]["sources"]["te"]
    pins = yaml.safe_load(open(os.path.join(served["root"], "pins-v26.5.1.yml")))["primus_pins"]
    assert pins["sources"]["te"]["ref"] == te["ref"] and te["ref_kind"] == "short_commit"
    repo = clone(served, "TransformerEngine", tmp_path / "te")
    assert git(repo, "rev-parse", "--verify", te["ref"] + "^{commit}").strip() == te["pinned"]
    assert git(repo, "rev-parse", "--short=7", te["pinned"]).strip() == te["ref"]  # git's own abbreviation
    old = served["releases"]["v26.5"]["sources"]["te"]["pinned"]
    assert git(repo, "rev-list", "--ancestry-path", "%s..origin/dev" % old).split()[-1] == te["pinned"]
    # ls-remote lists refs only: a resolver must fetch the history to expand an abbreviated commit
    assert te["ref"] not in git(repo, "ls-remote", "origin")
    bare = os.path.join(served["root"], "git", "TransformerEngine.git")
    assert gitrepo.resolve(bare, te["ref"]) == te["pinned"] and gitrepo.resolve(bare, "2a26bf8") is None


def test_primus_v2651_moves_only_third_party_maxtext(served, tmp_path):
    old = served["releases"]["v26.5"]["sources"]["primus"]["pinned"]
    new = served["releases"]["v26.5.1"]["sources"]["primus"]["pinned"]
    repo = clone(served, "Primus", tmp_path / "primus")
    git(repo, "fetch", "--quiet", "origin", new)
    assert git(repo, "diff", "--name-only", old, new).split() == ["third_party/maxtext"]
    for path in ("requirements.txt", "third_party/Megatron-LM"):
        assert git(repo, "rev-parse", "%s:%s" % (old, path)) == git(repo, "rev-parse", "%s:%s" % (new, path))
    git(repo, "checkout", "--quiet", new)
    git(repo, "submodule", "update", "--init", "--recursive")
    maxtext = served["repos"]["maxtext"]["commits"]
    assert git(os.path.join(repo, "third_party", "maxtext"), "rev-parse", "HEAD").strip() == maxtext["v26.5.1"]
    assert git(repo, "rev-parse", "%s:third_party/maxtext" % old).strip() == maxtext["v26.5"]


# --- PyPI stand-in traps ------------------------------------------------------------------------

def test_bare_torch_from_pypi_is_cuda_with_nvidia_wheels(venv):
    picked = venv.dry_run("torch")
    newest = max(Version(d["version"]) for d in SNAPSHOT["distributions"] if d["name"] == "torch")
    assert picked["torch"] == str(newest) and "+" not in picked["torch"]  # a CUDA build, not ROCm's
    assert "nvidia-cublas" in picked and [n for n in picked if re.match(r"^nvidia-.*-cu13$", n)]
    assert "+" not in picked["triton"]  # upstream triton
    forbid = yaml.safe_load(open(world_build.default_pins()))["primus_pins"]["pip_forbid"]
    assert [n for n in picked if any(fnmatch.fnmatch(n, pattern) for pattern in forbid)]


def test_upstream_triton_import_crashes(venv):
    venv.pip("install", "--quiet", "--no-deps", "triton==3.7.0")
    proc = venv.py("import triton", check=False)
    assert proc.returncode == -signal.SIGSEGV


def test_platformdirs_standin_serves_pkg_resources_and_the_xdg_api(venv, tmp_path):
    """setuptools' pkg_resources imports the installed platformdirs before its vendored copy (upstream's
    `setup.py install` path and every pkg_resources user): the stand-in answers as the real one does on Unix."""
    venv.pip("install", "--quiet", "--no-deps", "setuptools==81.0.0", "platformdirs==4.14.9")
    code = ("import warnings; warnings.simplefilter('ignore'); import pkg_resources, platformdirs, pathlib; "
            "assert pkg_resources.__file__ and platformdirs.__file__.startswith(%r); "
            "print(platformdirs.user_cache_dir('pip'), platformdirs.user_config_path('a', version='1'), "
            "platformdirs.PlatformDirs('b').user_log_dir, platformdirs.site_config_dir('c', multipath=True))"
            % venv.site)
    proc = venv.py(code, env=venv.env(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "cfg"),
                                      XDG_CONFIG_DIRS="/etc/xdg:/opt/xdg"))
    assert proc.stdout.split() == [str(tmp_path / ".cache" / "pip"), str(tmp_path / "cfg" / "a" / "1"),
                                   str(tmp_path / ".local" / "state" / "b" / "log"), "/etc/xdg/c:/opt/xdg/c"]


def test_setuptools_builds_beside_the_installed_more_itertools_and_jaraco(venv, tmp_path):
    """setuptools imports more_itertools and jaraco.functools from the venv before its vendored copies: with the
    ones Primus-Turbo's requirements install (through twine and keyring) a --no-build-isolation build in the venv
    runs them, so the world serves the real files, and the build works as on a node."""
    venv.pip("install", "--quiet", "setuptools==75.1.0", "wheel==0.45.1", "more-itertools", "jaraco.functools",
             "jaraco.context")
    origin = venv.py("import setuptools, more_itertools, jaraco.functools as f; "
                     "print(more_itertools.__file__.startswith(%r), f.__file__.startswith(%r))" % (venv.site, venv.site))
    assert origin.stdout == "True True\n"
    project = tmp_path / "tiny"
    project.mkdir()
    (project / "setup.py").write_text("from setuptools import setup\nsetup(name='tiny', version='1.0', py_modules=['tiny'])\n")
    (project / "tiny.py").write_text("")
    venv.pip("wheel", "--quiet", "--no-build-isolation", "--no-deps", "-w", str(tmp_path / "out"), str(project))
    assert os.listdir(str(tmp_path / "out")) == ["tiny-1.0-py3-none-any.whl"]


def test_flydsl_030_has_no_expr_vector(venv):
    check = "from flydsl.expr import vector"
    for version, ok in (("0.3.0", False), ("0.2.4", True), ("0.1.7", True)):
        venv.pip("install", "--quiet", "--no-deps", "flydsl==" + version)
        assert (venv.py(check, check=False).returncode == 0) == ok, version
    assert venv.dry_run("flydsl>=0.2.0")["flydsl"] not in ("0.2.4", "0.1.7")


def test_quack_needs_cutlass_453_and_nanobind_collides(venv):
    unpinned = venv.dry_run("quack-kernels==0.3.1")["nvidia-cutlass-dsl"]
    assert Version(unpinned) >= Version("4.6")
    venv.pip("install", "--quiet", "--no-deps", "quack-kernels==0.3.1", "nvidia-cutlass-dsl==" + unpinned)
    proc = venv.py("import quack", check=False)
    assert "AttributeError: module 'cutlass.cute.core' has no attribute 'ThrCopy'" in proc.stdout
    venv.pip("install", "--quiet", "--no-deps", "nvidia-cutlass-dsl==4.6.0")  # the first release without it
    assert "has no attribute 'ThrCopy'" in venv.py("import quack", check=False).stdout
    venv.pip("install", "--quiet", "--no-deps", "nvidia-cutlass-dsl==4.5.3")
    venv.py("import quack")
    venv.pip("install", "--quiet", "--no-deps", "flydsl==0.2.4")
    proc = venv.py("import flydsl, quack", check=False)
    assert proc.returncode == -signal.SIGABRT and "Critical nanobind error" in proc.stdout


NANOBIND_ABORT = 'Critical nanobind error: refusing to add duplicate key "ERROR" to enumeration "'


def _served_wheels(root, project):
    """{version: path} of the PyPI stand-in's wheels of project."""
    files = index.distribution_files(os.path.join(root, "pypi", "files"))
    return dict((index.parse_filename(os.path.basename(rel))[1], path) for rel, path in files.items()
                if rel.endswith(".whl") and index.parse_filename(os.path.basename(rel))[0] == project)


def test_nanobind_clash_aborts_whichever_of_flydsl_and_cutlass_loads_second(served, venv, tmp_path):
    """AMD-AGI/Primus#955: one process-wide nanobind registry; each flydsl x nvidia-cutlass-dsl pair, both orders."""
    flydsl, cutlass = _served_wheels(served["root"], "flydsl"), _served_wheels(served["root"], "nvidia-cutlass-dsl")
    assert len(flydsl) >= 4 and len(cutlass) >= 3
    trees = {}
    for project, wheels in (("flydsl", flydsl), ("cutlass", cutlass)):
        for version, path in wheels.items():
            trees[project, version] = str(tmp_path / ("%s-%s" % (project, version)))
            with zipfile.ZipFile(path) as wheel:
                wheel.extractall(trees[project, version])

    def load(first, second=None):
        code = "import sys; sys.path[:0] = sys.argv[1:]; import %s" % first[0]
        if second:
            code += "; print('%s loaded'); sys.stdout.flush(); import %s" % (first[0], second[0])
        return run([venv.python, "-c", code, trees[first]] + ([trees[second]] if second else []), check=False)

    for key in sorted(trees):
        assert load(key).returncode == 0, key  # alone, each version imports
    for fly in sorted(k for k in trees if k[0] == "flydsl"):
        for cut in sorted(k for k in trees if k[0] == "cutlass"):
            for first, second in ((fly, cut), (cut, fly)):
                proc = load(first, second)
                assert proc.returncode == -signal.SIGABRT, (first, second, proc.stdout)
                assert proc.stdout.startswith("%s loaded\n%s" % (first[0], NANOBIND_ABORT)), proc.stdout
    # as pip installs them, into one venv
    venv.pip("install", "--quiet", "--no-deps", "flydsl==0.2.4", "nvidia-cutlass-dsl==4.5.3")
    for order in ("flydsl, cutlass", "cutlass, flydsl"):
        proc = venv.py("import " + order, check=False)
        assert proc.returncode == -signal.SIGABRT and NANOBIND_ABORT in proc.stdout, (order, proc.stdout)
    assert venv.py("import flydsl.expr.vector").returncode == 0
    assert venv.py("import cutlass.cute; print(cutlass.cute.core.ThrCopy.__name__)").stdout == "ThrCopy\n"


def test_quack_imports_cutlass(venv):
    venv.pip("install", "--quiet", "--no-deps", "quack-kernels==0.3.1", "nvidia-cutlass-dsl==4.5.3", "flydsl==0.2.4")
    probe = "import sys, quack; print(sorted(m for m in sys.modules if m.split('.')[0] in ('cutlass', 'flydsl')))"
    assert venv.py(probe).stdout == "['cutlass', 'cutlass._mlir', 'cutlass.cute', 'cutlass.cute.core']\n"
    proc = venv.py("import quack, flydsl", check=False)  # cutlass first, through quack
    assert proc.returncode == -signal.SIGABRT and NANOBIND_ABORT in proc.stdout, proc.stdout
    venv.pip("uninstall", "--quiet", "--yes", "nvidia-cutlass-dsl", index=None)
    assert "ModuleNotFoundError: No module named 'cutlass'" in venv.py("import quack", check=False).stdout


def test_mamba_imports_quack_optionally(served, venv, tmp_path):
    """mamba_ssm's CuTe DSL step (modules.mamba3 -> ops.cute.mamba3 -> cutlass, quack) is optional: only an
    ImportError is tolerated. Imported from the checkout (its Python files are what the build installs)."""
    mamba = clone(served, "mamba", tmp_path / "mamba", "--branch", "enable-primus-hybrid-models")
    env = venv.env(PYTHONPATH=mamba)
    probe = ("import sys, mamba_ssm; print(mamba_ssm.modules.mamba3.mamba3_step_fn is not None, "
             "'cutlass._mlir' in sys.modules)")
    assert venv.py(probe, env=env).stdout == "False False\n"  # neither quack-kernels nor nvidia-cutlass-dsl
    venv.pip("install", "--quiet", "--no-deps", "quack-kernels==0.3.1")
    assert venv.py(probe, env=env).stdout == "False False\n"  # quack without cutlass: an ImportError
    venv.pip("install", "--quiet", "--no-deps", "nvidia-cutlass-dsl==4.5.3")
    assert venv.py(probe, env=env).stdout == "True True\n"
    venv.pip("install", "--quiet", "--no-deps", "nvidia-cutlass-dsl==4.6.0")
    proc = venv.py("import mamba_ssm", check=False, env=env)  # not an ImportError: it surfaces
    assert "AttributeError: module 'cutlass.cute.core' has no attribute 'ThrCopy'" in proc.stdout, proc.stdout
    venv.pip("uninstall", "--quiet", "--yes", "quack-kernels", index=None)
    assert venv.py(probe, env=env).stdout == "False True\n"  # cutlass is loaded before quack is missed
    venv.pip("install", "--quiet", "--no-deps", "flydsl==0.2.4")
    proc = venv.py("import flydsl, mamba_ssm", check=False, env=env)
    assert proc.returncode == -signal.SIGABRT and NANOBIND_ABORT in proc.stdout, proc.stdout
    venv.pip("uninstall", "--quiet", "--yes", "nvidia-cutlass-dsl", index=None)
    assert venv.py("import flydsl, mamba_ssm", env=env).returncode == 0


def _record(dist_info):
    with open(os.path.join(dist_info, "RECORD")) as handle:
        return dict((row[0], row[1]) for row in csv.reader(handle) if row and row[1])


def test_mlflow_distributions_share_files_byte_for_byte(served, venv):
    """Like the real 3.11.1 wheels: mlflow-tracing's files are a subset of mlflow-skinny's, those of mlflow's,
    and a file two of them ship (mlflow/__init__.py: all three) has the same bytes, so every RECORD that
    claims an installed file matches it."""
    wheels = {}
    for project in ("mlflow", "mlflow-skinny", "mlflow-tracing"):
        (version, path), = _served_wheels(served["root"], project).items()
        with zipfile.ZipFile(path) as wheel:
            wheels[project] = dict((n, wheel.read(n)) for n in wheel.namelist() if n.startswith("mlflow/"))
    assert set(wheels["mlflow-tracing"]) < set(wheels["mlflow-skinny"]) < set(wheels["mlflow"])
    assert all(wheels["mlflow"][n] == data for p in wheels for n, data in wheels[p].items())
    venv.pip("install", "--quiet", "--no-deps", "mlflow-tracing==3.11.1")
    flags = "import mlflow.version as v; print(v.IS_TRACING_SDK_ONLY, v.IS_MLFLOW_SKINNY, v.IS_FULL_MLFLOW)"
    assert venv.py(flags).stdout == "True False False\n"
    venv.pip("install", "--quiet", "--no-deps", "mlflow-skinny==3.11.1", "mlflow==3.11.1")
    assert venv.py(flags).stdout == "False False True\n"
    imported = venv.py("import mlflow; print(mlflow.__version__, mlflow.pyfunc.__name__)").stdout
    assert imported == "3.11.1 mlflow.pyfunc\n"
    claims = {}
    for dist_info in glob.glob(os.path.join(venv.site, "mlflow*.dist-info")):
        for path, digest in _record(dist_info).items():
            if path.startswith("mlflow/"):
                claims.setdefault(path, {})[os.path.basename(dist_info)] = digest
    assert sorted(claims["mlflow/__init__.py"]) == [
        "mlflow-3.11.1.dist-info", "mlflow_skinny-3.11.1.dist-info", "mlflow_tracing-3.11.1.dist-info"]
    for path, by_dist in claims.items():
        with open(os.path.join(venv.site, path), "rb") as handle:
            digest = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(handle.read()).digest()).rstrip(b"=").decode()
        assert set(by_dist.values()) == {digest}, (path, by_dist)


def test_tensorstore_0145_is_sdist_only(venv, tmp_path):
    proc = venv.pip("download", "--quiet", "--no-deps", "--only-binary=:all:", "-d", str(tmp_path),
                    "tensorstore==0.1.45", check=False)
    assert proc.returncode != 0
    # pip builds its metadata from the sdist (setup.py, in build isolation): the real Requires-Dist
    proc = run([venv.python, venv.pip_main, "install", "--dry-run", "--quiet", "--no-deps", "--report", "-",
                "--index-url", venv.world["indexes"]["pypi"], "tensorstore==0.1.45"], env=venv.env())
    meta = json.loads(proc.stdout[proc.stdout.index("{"):])["install"][0]["metadata"]
    real = [d for d in SNAPSHOT["distributions"] if d["file"] == "tensorstore-0.1.45.tar.gz"][0]
    assert meta["requires_dist"] == real["requires_dist"] and meta["requires_python"] == real["requires_python"]
    assert glob.glob(os.path.join(venv.world["root"], "pypi", "files", "*", "tensorstore-0.1.45.tar.gz"))


# --- TE staging index ---------------------------------------------------------------------------

def test_te_wheel_path(rocm_venv):
    v = rocm_venv
    pins = yaml.safe_load(open(os.path.join(v.world["root"], "pins-v26.5.yml")))["primus_pins"]
    v.pip("install", "--quiet", *pins["te"]["deps"])
    te = pins["te"]["wheel"]
    proc = v.pip("install", "--pre", te, index="te", check=False)
    assert proc.returncode != 0, proc.stdout  # with build isolation its setup.py cannot see the installed torch
    env = v.env(GPU_ARCHS="gfx942;gfx950", MAX_JOBS="3", **v.build_env)
    v.pip("install", "--quiet", "--pre", "--no-build-isolation", te, index="te", env=env)
    record = json.loads(v.py("import importlib.resources as r; print(r.files('transformer_engine_rocm_torch')"
                             ".joinpath('world_build.json').read_text())").stdout)
    assert record["env"]["GPU_ARCHS"] == "gfx942;gfx950" and record["env"]["MAX_JOBS"] == "3"
    assert record["compiler"] == "hipcc" and record["offload_arch"] == ["gfx942", "gfx950"]
    assert record["torch"] == PINNED
    script = os.path.join(v.site, "transformer_engine", "lib", "ck_jit", "ck_jit_compile.sh")
    assert '    mv -n "$_TMP_SO" "$OUTPUT"\n' in open(script).read().splitlines(True)
    proc = v.py("import transformer_engine", check=False)
    glibc = tuple(int(x) for x in os.confstr("CS_GNU_LIBC_VERSION").split()[1].split(".")[:2])
    if glibc < (2, 38):
        assert re.search(r"OSError: /\S*libc\.so\.6: version `GLIBC_2\.38' not found \(required by "
                         r"\S*/transformer_engine/lib/libtransformer_engine\.so\)", proc.stdout), proc.stdout
    else:
        assert "GLIBC_2.38" not in proc.stdout


def _host_glibc():
    return tuple(int(x) for x in os.confstr("CS_GNU_LIBC_VERSION").split()[1].split(".")[:2])


@pytest.mark.skipif(os.geteuid() != 0, reason="the trixie root needs root (debootstrap, chroot)")
def test_te_core_library_is_refused_here_and_loads_in_a_trixie_root(served, tmp_path):
    """The real loaders decide: this host's refuses the TE core library, trixie's (glibc 2.41) loads it."""
    te_files = index.distribution_files(os.path.join(served["root"], "te", "files"))
    core = [p for rel, p in te_files.items() if os.path.basename(rel).startswith(
        "transformer_engine_rocm7-%s-" % packages.TE_LABEL)]
    assert len(core) == 1
    lib = str(tmp_path / "libtransformer_engine.so")
    with zipfile.ZipFile(core[0]) as wheel, open(lib, "wb") as handle:
        handle.write(wheel.read("transformer_engine/lib/libtransformer_engine.so"))
    here = run([PY312, "-c", "import ctypes, sys; print(ctypes.CDLL(sys.argv[1]).nvte_get_version())", lib],
               check=False)
    if _host_glibc() < (2, 38):
        assert ("OSError: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.38' not found (required by %s)"
                % lib) in here.stdout, here.stdout
    root = trixie.build(log=lambda *_: None)
    assert trixie.glibc(root) == "2.41"
    with open(os.path.join(root, "usr/lib/x86_64-linux-gnu/libstdc++.so.6"), "rb") as handle:
        assert b"GLIBCXX_3.4.33\0" in handle.read()
    user = "primus-ci" if "primus-ci" in [e.pw_name for e in pwd.getpwall()] else "nobody"
    work = "/tmp/world-te-%d-%d" % (os.getpid(), int(time.time()))
    try:
        setup = "%s -m venv %s/venv && %s/venv/bin/pip install --quiet --no-deps --index-url %s %s" % (
            trixie.PYTHON, work, work, served["indexes"]["te"], "transformer_engine_rocm7==" + packages.TE_LABEL)
        proc = trixie.run(root, ["sh", "-c", setup], user=user)
        assert proc.returncode == 0, proc.stdout
        probe = ("import os, transformer_engine as te; "
                 "print(os.getuid(), os.confstr('CS_GNU_LIBC_VERSION'), te._lib.nvte_get_version())")
        proc = trixie.run(root, [work + "/venv/bin/python", "-c", probe], user=user)
        assert proc.returncode == 0, proc.stdout
        assert proc.stdout.split() == [str(pwd.getpwnam(user).pw_uid), "glibc", "2.41", "2150"]
    finally:
        shutil.rmtree(root + work, ignore_errors=True)


# --- git remotes --------------------------------------------------------------------------------

def test_remotes_carry_the_patched_files_at_the_pins(served, tmp_path):
    src = served["sources"]
    tt = clone(served, "torchtune", tmp_path / "tt")
    git(tt, "checkout", "--quiet", src["torchtune"]["pinned"])
    assert "use_grouped_mm = True\n" in open(os.path.join(tt, "torchtune/modules/moe/utils.py")).read()
    ao = clone(served, "ao", tmp_path / "ao")
    git(ao, "checkout", "--quiet", src["torchao"]["pinned"])
    assert "    pad_inner_dim: bool = False\n" in open(os.path.join(ao, "torchao/float8/config.py")).read()
    assert "#if defined(HIPBLASLT_VEC_EXT)\n" in open(os.path.join(ao, "torchao/csrc/rocm/swizzle/swizzle.cpp")).read()
    turbo = clone(served, "Primus-Turbo", tmp_path / "turbo", "--recursive")
    git(turbo, "checkout", "--quiet", src["turbo"]["pinned"])
    # AMD-AGI/Primus-Turbo requirements.txt at edc8d2cc, line for line; flydsl and triton are setup.py's
    assert open(os.path.join(turbo, "requirements.txt")).read().splitlines() == [
        "pre-commit==4.5.1", "ruff==0.15.12", "clang-format==20.1.6", "build", "ninja", "expecttest", "pytest",
        "pytest-xdist", "pytest-timeout", "setuptools==69.5.1", "setuptools_scm[toml]>=8", "wheel", "pyyaml", "twine"]
    setup_py = open(os.path.join(turbo, "setup.py")).read()
    assert "'triton==3.7.0'" in setup_py and "'flydsl>=0.2.0'" in setup_py
    for name in ("flash-attention", "TransformerEngine", "torchtune", "ao", "causal-conv1d", "aiter", "Primus-Turbo"):
        repo = served["repos"][name]
        assert repo["branches"][repo["default_branch"]] != repo["commits"]["pinned"], name


def test_floating_branches_and_submodules(served, tmp_path):
    gg = clone(served, "grouped_gemm", tmp_path / "gg")
    git(gg, "checkout", "--quiet", "rocm")
    git(gg, "submodule", "update", "--init", "--recursive")
    assert os.path.exists(os.path.join(gg, "third_party/cutlass/include/cutlass/cutlass.h"))
    assert git(gg, "rev-parse", "HEAD").strip() == served["repos"]["grouped_gemm"]["branches"]["rocm"]
    assert served["repos"]["grouped_gemm"]["branches"]["rocm"] != served["repos"]["grouped_gemm"]["branches"]["main"]
    mamba = clone(served, "mamba", tmp_path / "mamba", "--branch", "enable-primus-hybrid-models")
    assert os.path.exists(os.path.join(mamba, "HYBRID.md"))
    fa = clone(served, "flash-attention", tmp_path / "fa", "--recursive")
    git(fa, "checkout", "--quiet", served["sources"]["flash_attn"]["pinned"])
    git(fa, "submodule", "update", "--init", "--recursive")
    assert os.path.exists(os.path.join(fa, "csrc/composable_kernel/include/ck/ck.hpp"))
    # Primus: --recurse-submodules clones the default branch's submodules; the pin has fewer
    primus = clone(served, "Primus", tmp_path / "primus", "--recurse-submodules")
    git(primus, "checkout", "--quiet", served["sources"]["primus"]["pinned"])
    git(primus, "submodule", "update", "--init", "--recursive")
    status = git(primus, "status", "--porcelain")
    assert "?? third_party/Automodel/" in status
    megatron = git(primus, "submodule", "status").split()
    assert megatron[0].lstrip(" +-") == served["repos"]["Megatron-LM"]["commits"]["pinned"]


def test_megatron_helpers_makefile_trap(rocm_venv, tmp_path):
    v = rocm_venv
    v.pip("install", "--quiet", "pybind11==3.0.4")
    primus = clone(v.world, "Primus", tmp_path / "primus", "--recurse-submodules")
    git(primus, "checkout", "--quiet", v.world["sources"]["primus"]["pinned"])
    git(primus, "submodule", "update", "--init", "--recursive")
    datasets = os.path.join(primus, "third_party/Megatron-LM/megatron/core/datasets")
    env = v.env(PATH="%s:/usr/bin:/bin" % os.path.join(v.path, "bin"))  # an activated venv
    run(["make", "-C", datasets], env=env)
    ext = run([v.python, "-c", "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))"]).stdout.strip()
    built = sorted(f for f in os.listdir(datasets) if f.startswith("helpers_cpp"))
    assert built and "helpers_cpp" + ext not in built  # python3-config is not the venv's
    load = ("import importlib.util, sys; s = importlib.util.spec_from_file_location('helpers_cpp', sys.argv[1]); "
            "m = importlib.util.module_from_spec(s); s.loader.exec_module(m); "
            "print(m.build_exhaustive_blending_indices([2, 1]))")
    assert run([v.python, "-c", "import sys; sys.path.insert(0, sys.argv[1]); import helpers_cpp", datasets],
               check=False).returncode != 0
    # the binary itself is fine: under the venv's own suffix (what LIBEXT=<EXT_SUFFIX> names it) it loads
    os.rename(os.path.join(datasets, built[0]), os.path.join(datasets, "helpers_cpp" + ext))
    assert run([v.python, "-c", load, os.path.join(datasets, "helpers_cpp" + ext)]).stdout.strip() == "[0, 0, 1]"
    assert "-o helpers_cpp%s\n" % ext in run(["make", "-n", "-B", "-C", datasets, "LIBEXT=" + ext], env=env).stdout


def test_source_builds_record_env_and_fail_like_upstream(rocm_venv, tmp_path):
    v = rocm_venv
    turbo = clone(v.world, "Primus-Turbo", tmp_path / "turbo", "--recursive")
    git(turbo, "checkout", "--quiet", v.world["sources"]["turbo"]["pinned"])
    git(turbo, "submodule", "update", "--init", "--recursive")
    base = dict(v.build_env, GPU_ARCHS="gfx942;gfx950", MAX_JOBS="2")
    proc = v.pip("install", "--no-build-isolation", "--no-deps", turbo, env=v.env(**base), check=False)
    assert proc.returncode != 0 and "cannot find -lrocshmem" in proc.stdout  # probe fell back to the SDK
    placeholder = str(tmp_path / ".rocshmem-not-installed")
    v.pip("install", "--quiet", "--no-build-isolation", "--no-deps", turbo,
          env=v.env(ROCSHMEM_HOME=placeholder, **base))
    record = json.load(open(os.path.join(v.site, "primus_turbo", "world_build.json")))
    assert record["env"]["ROCSHMEM_HOME"] == placeholder and record["rocshmem"] is None
    assert record["offload_arch"] == ["gfx942", "gfx950"] and record["git_head"] == v.world["sources"]["turbo"]["pinned"]
    # GPU_ARCHS=native needs a GPU, like the real clang
    aiter = clone(v.world, "aiter", tmp_path / "aiter", "--recursive")
    git(aiter, "checkout", "--quiet", v.world["sources"]["aiter"]["pinned"])
    git(aiter, "submodule", "update", "--init", "--recursive")
    proc = v.pip("install", "--no-deps", aiter, env=v.env(GPU_ARCHS="native", **v.build_env), check=False)
    assert proc.returncode != 0 and "cannot determine amdgcn architecture" in proc.stdout
    cc = clone(v.world, "causal-conv1d", tmp_path / "cc")
    git(cc, "checkout", "--quiet", v.world["sources"]["causal_conv1d"]["pinned"])
    v.pip("install", "--quiet", "--no-build-isolation", "--no-deps", cc,
          env=v.env(HIP_ARCHITECTURES="gfx942", CAUSAL_CONV1D_FORCE_BUILD="TRUE", **v.build_env))
    record = json.load(open(os.path.join(v.site, "causal_conv1d", "world_build.json")))
    assert record["offload_arch"] == ["gfx942"] and record["prebuilt_attempted"] is False


def test_flash_attention_tries_a_prebuilt_wheel_unless_forced(rocm_venv, tmp_path):
    """ROCm/flash-attention setup.py: bdist_wheel first asks the GitHub release for a prebuilt wheel (here the
    world's URL, which answers 404: the request is in server.log), then builds; FLASH_ATTENTION_FORCE_BUILD=TRUE
    skips the request."""
    v = rocm_venv
    fa = clone(v.world, "flash-attention", tmp_path / "fa", "--recursive")
    git(fa, "checkout", "--quiet", v.world["sources"]["flash_attn"]["pinned"])
    git(fa, "submodule", "update", "--init", "--recursive")
    wheel = "flash_attn-2.8.3+rocm715torch2.12cxx11abiTRUE-cp312-cp312-linux_x86_64.whl"
    url = v.world["github_releases"] + "/Dao-AILab/flash-attention/releases/download/v2.8.3/" + wheel
    assert url.startswith(v.world["base_url"] + "/github/")
    requested = '"GET %s HTTP/1.1" 404 ' % url[len(v.world["base_url"]):]
    for force in (None, "TRUE"):
        git(fa, "clean", "-xdfq")  # pip builds in the tree: no build/ left from the first round
        offset = os.path.getsize(os.path.join(v.world["root"], "server.log"))
        env = dict(v.build_env, GPU_ARCHS="gfx942", **({"FLASH_ATTENTION_FORCE_BUILD": force} if force else {}))
        out = str(tmp_path / ("wheels-%s" % force))
        v.pip("wheel", "--quiet", "--no-build-isolation", "--no-deps", "-w", out, fa, env=v.env(**env))
        log = _log_since(v.world["root"], offset)
        with zipfile.ZipFile(glob.glob(os.path.join(out, "flash_attn-*.whl"))[0]) as built:
            record = json.loads(built.read("flash_attn/world_build.json"))
            assert [n for n in built.namelist() if n.startswith("flash_attn_2_cuda.")]  # compiled here
        assert record["env"]["FLASH_ATTENTION_FORCE_BUILD"] == force and record["offload_arch"] == ["gfx942"]
        if force:
            assert "/github/" not in log and record["prebuilt_attempted"] is False
            assert "prebuilt_error" not in record
        else:
            assert log.count(requested) == 1, log
            assert record["prebuilt_attempted"] is True and record["prebuilt_error"] == "HTTP Error 404: File not found"


def test_mamba_pulls_tilelang_and_quack(rocm_venv, tmp_path):
    v = rocm_venv
    mamba = clone(v.world, "mamba", tmp_path / "mamba", "--branch", "enable-primus-hybrid-models")
    constraints = tmp_path / "c.txt"
    constraints.write_text("torch==%s\ntriton==%s\n" % (PINNED, packages.TRITON_ROCM))
    picked = v.dry_run(mamba, extra=["--no-build-isolation", "-c", str(constraints)])
    assert "tilelang" in picked and picked["quack-kernels"] == "0.3.1"
    assert Version(picked["nvidia-cutlass-dsl"]) >= Version("4.6") and "torch" not in picked


# --- the stage order (the ordered snapshot) -------------------------------------------------------

def test_the_real_stage_order_keeps_pydeps_datasets_as_a_node_does():
    """What real PyPI did, stage after stage, for v26.5 (the snapshot's record): torchtune's unpinned datasets is
    taken back to pydeps' datasets==3.6.0, and Primus's megatron-energon==7.3.2 then brings s3fs at the fsspec that
    datasets 3.6.0 allows (2025.3.0) with aiobotocore 2.26.0, which takes multidict to 6.9.1 and wrapt back to
    1.17.3; datasets stays 3.6.0. Resolved alone, as each group is, Primus's requirements end with a datasets 5."""
    recorded = SNAPSHOT["stages"]["v26.5"]
    by_step = dict((s["step"].split("-", 1)[1], s) for s in recorded)
    assert Version(by_step["torchtune"]["installs"]["datasets"]) >= Version("5")
    assert by_step["pydeps"]["installs"]["datasets"] == "3.6.0"
    primus = by_step["primus"]["installs"]
    assert "datasets" not in primus
    assert (primus["s3fs"], primus["aiobotocore"], primus["multidict"], primus["wrapt"]) == (
        "2025.3.0", "2.26.0", "6.9.1", "1.17.3")
    assert Version(by_step["pydeps"]["installs"]["wrapt"]) >= Version("2")   # pydeps' unpinned wrapt, downgraded
    final = stages.final_state(recorded, upto="cleanup")
    assert (final["datasets"], final["fsspec"], final["s3fs"], final["wrapt"]) == ("3.6.0", "2025.3.0", "2025.3.0",
                                                                                   "1.17.3")
    alone = [d["version"] for d in SNAPSHOT["distributions"] if normalize(d["name"]) == "datasets"
             and "repo:Primus/requirements.txt" in d["groups"]]
    assert alone and all(Version(v) >= Version("5") for v in alone)
    # both releases' stages resolve the same from PyPI (only the ROCm steps differ)
    pypi = dict((r, [(s["step"].split("-", 1)[1], s["installs"]) for s in steps if s["index"] == "pypi"])
                for r, steps in SNAPSHOT["stages"].items())
    assert pypi["v26.5"] == pypi["v26.5.1"]


def _report(v, args):
    proc = run([v.python, v.pip_main, "install", "--dry-run", "--quiet", "--report", "-"] + args, env=v.env())
    return json.loads(proc.stdout[proc.stdout.index("{"):])["install"]


@pytest.mark.parametrize("release", RELEASES)
def test_the_world_resolves_each_stage_as_real_pypi_did(served, tmp_path, release):
    """Every recorded step replayed against the world, in order, on one metadata venv (the snapshot's method):
    the world's pip installs at each step exactly what real PyPI's did - every version, upgrades and downgrades."""
    recorded = SNAPSHOT["stages"][release]
    pins = yaml.safe_load(open(world_build.release_files()[release]))
    v = Venv(tmp_path / "venv", served)
    site = v.site
    pip = [d for d in SNAPSHOT["distributions"] if d["name"] == "pip"][0]
    snapshot_metadata.install_metadata(site, {"name": "pip", "version": pip["version"]})  # the venv's own pip
    wheels = snapshot_metadata._stand_in_wheels(pins, str(tmp_path / "stand-ins"))
    constraints = str(tmp_path / "pip-constraints.txt")
    last_torch = max(i for i, s in enumerate(recorded) if s["stage"] == "torch")
    wrong = []
    for position, step in enumerate(recorded):
        have = snapshot_metadata.installed(site)
        if step["remove"]:
            gone = stages.removed(step["remove"], have)
            for name in gone:
                snapshot_metadata.uninstall(site, name)
            if gone != step["removed"]:
                wrong.append((step["step"], "removed", gone, step["removed"]))
            continue
        args = ["--index-url", served["indexes"][step["index"]]] + (["--no-deps"] if step["no_deps"] else [])
        args += ["-c", constraints] if step["constrained"] else []
        if step["index"] == "torch":
            args += ["--pre"] + step["requires"]
        else:
            args += step["requires"] + [wheels[k] for k in step["stand_ins"]
                                        if have.get(k.split("==")[0], ("",))[0] != k.split("==", 1)[1]]
        installs, stand_ins = {}, {}
        own = set(k.split("==")[0] for k in step["stand_ins"])
        for item in _report(v, args):
            meta = item["metadata"]
            (stand_ins if normalize(meta["name"]) in own else installs)[normalize(meta["name"])] = meta["version"]
            snapshot_metadata.install_metadata(site, meta)
        if (installs, stand_ins) != (step["installs"], step["stand_ins_installed"]):
            wrong.append((step["step"], dict(set(installs.items()) ^ set(step["installs"].items())),
                          dict(set(stand_ins.items()) ^ set(step["stand_ins_installed"].items()))))
        if position == last_torch:
            have = snapshot_metadata.installed(site)
            with open(constraints, "w") as handle:
                handle.write("".join("%s==%s\n" % (n, have[n][0]) for n in stages.constraint_names(pins) if n in have))
    assert wrong == []
    final = dict((n, version) for n, (version, _path) in snapshot_metadata.installed(site).items() if n != "pip")
    assert final == stages.final_state(recorded)
