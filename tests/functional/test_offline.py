"""Site mirrors and the offline wheelhouse (docs/mirrors.md, docs/offline.md), against a world of this
module's own.

1. The world is served a second time, on another port, as the site's "mirror" of every index and git remote; the
   mapping (primus_mirrors) is set and the original server stopped, and a listener on the original's port counts
   every connection: the converge succeeds and the listener counts nothing. The run records pip's plans.
   Its source builds go into a wheel store (primus_wheel_store), as a fleet's would.
2. From those plans, the lock (tools/release_lock.py) and a wheelhouse (tools/wheelhouse.py: PEP 503 indexes and git
   bundles, and with --store the wheel store's built wheels) are made; then the mirror is stopped too, with listeners
   on both ports: a converge of an empty base with primus_wheelhouse alone succeeds, the source stages built from the
   bundles, and no connection reaches either port.
3. A converge of another empty base with the wheelhouse's store (primus_wheel_store=<wheelhouse>/store) compiles
   nothing: the world's build records of its packages are those of the mirrored converge's compiles.

Every default stage runs (no --tags), as a user's first converge does: the venv and torch stages (PyPI and ROCm
indexes), every source stage cloned with its submodules (whose .gitmodules name the original remote), the floating
branches resolved with git ls-remote, the isolated builds' build requirements from the index, pydeps' sdist build,
Primus and its submodules. The TE index is used by TE wheel mode only, which needs glibc 2.38: not on this machine
(TE builds from its git source here)."""
import contextlib
import glob
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time

import pytest
import yaml

from harness import REPO, installed_from_indexes, private_world, record_timing, world_serve

sys.path.insert(0, os.path.join(REPO, "tests"))
from world.lib import server  # noqa: E402

pytestmark = pytest.mark.functional
STAGES = None   # every default stage
STAGES_NAME = "every default stage"
GIT_PATHS = ("/git/flash-attention.git/", "/git/composable_kernel.git/", "/git/torchtune.git/", "/git/grouped_gemm.git/",
             "/git/cutlass.git/")


class Sentinel:
    """Listens on 127.0.0.1:port and counts the connections made to it (each closed at once)."""

    def __init__(self, port):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.count = 0
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        while not self.stopped.is_set():
            try:
                conn = self.sock.accept()[0]
            except OSError:
                continue
            self.count += 1
            conn.close()

    def close(self):
        self.stopped.set()
        self.thread.join(timeout=5)
        self.sock.close()


@pytest.fixture(scope="module")
def own_world(tmp_path_factory):
    """A world of this module only: its server is stopped by the tests."""
    with private_world(tmp_path_factory, "offline-world") as info:
        yield info


@pytest.fixture(scope="module")
def mirrored(own_world, playbook, target, tmp_path_factory):
    """The converge through the mirror, the original stopped; the mirror stays up until a test calls stop(). Its source
    builds go into a wheel store on the controller (this machine's test user), as a fleet's would."""
    log = io.StringIO()
    original = own_world["base_url"]
    stack = contextlib.ExitStack()
    mirror = stack.enter_context(server.serve(own_world["root"], port=0, access_log=log))
    try:
        assert world_serve.main(["stop", "--root", own_world["root"]]) == 0
        sentinel = Sentinel(own_world["port"])
        # The index mirrors as http://127.1:<port>: the same loopback address, but a host name pip does not count as
        # this machine's, so pip ignores it as "not a trusted or secure host" - like a plain-http mirror on another
        # host - unless the run makes it a trusted host (it does for an http index mirror).
        index_mirror = mirror.replace("://127.0.0.1:", "://127.1:")
        assert index_mirror != mirror
        mirrors = {"indexes": dict((n, u.replace(original, index_mirror)) for n, u in own_world["indexes"].items()),
                   "git": {original + "/git/": mirror + "/git/"}}
        base = target.base("mirrors")
        record = base + "-plans.jsonl"
        store = str(tmp_path_factory.mktemp("offline") / "wheel-store")
        try:
            run = playbook(STAGES, base, extra={"primus_release_file": own_world["pins"], "primus_mirrors": mirrors,
                                                "primus_cache_dir": base + "-cache", "primus_lock_record": record,
                                                "primus_wheel_store": store, "primus_wheel_store_enabled": True})
        finally:
            sentinel.close()
        yield {"run": run, "base": base, "record": record, "mirror": mirror, "mirrors": mirrors, "log": log,
               "original_hits": sentinel.count, "stop": stack.close, "store": store}
    finally:
        stack.close()


def test_a_converge_through_mirrors_never_reaches_the_original(mirrored):
    run = mirrored["run"]
    record_timing("%s on an empty base through site mirrors (unprivileged, SSH)" % STAGES_NAME, run.seconds)
    assert run.rc == 0, run
    assert mirrored["original_hits"] == 0, "%d connections reached the original's port" % mirrored["original_hits"]
    requests = mirrored["log"].getvalue()
    for path in ("/pypi/simple/", "/rocm/whl-multi-arch/") + GIT_PATHS:
        assert path in requests, "the mirror served no %s" % path


@pytest.fixture(scope="module")
def offline(mirrored, own_world, target):
    """The lock and the wheelhouse (with the wheels the mirrored converge stored) made from the mirror; then the mirror
    is stopped too: from here on nothing serves the world."""
    assert mirrored["run"].rc == 0, "the mirrored converge failed"
    work = os.path.join(target.home, "wheelhouse-test-%d" % os.getpid())
    os.makedirs(work, exist_ok=True)
    # the lock beside a copy of the world's pins file: the offline converge is hash-checked by it
    pins = os.path.join(work, "pins-v26.5.yml")
    shutil.copyfile(own_world["pins"], pins)
    index_args = sum((["--index", "%s=%s" % kv] for kv in sorted(mirrored["mirrors"]["indexes"].items())), [])
    proc = subprocess.run([sys.executable, os.path.join(REPO, "tools", "release_lock.py"), "--pins", pins,
                           "--record", mirrored["record"]] + index_args, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    wheelhouse = os.path.join(work, "wheelhouse")
    (git_prefix, git_mirror), = mirrored["mirrors"]["git"].items()
    start = time.monotonic()
    proc = subprocess.run([sys.executable, os.path.join(REPO, "tools", "wheelhouse.py"), "--pins", pins,
                           "--dest", wheelhouse, "--git", "%s=%s" % (git_prefix, git_mirror), "--store", mirrored["store"]]
                          + index_args, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    record_timing("the wheelhouse of %s made from the mirror and the wheel store" % STAGES_NAME, time.monotonic() - start)
    subprocess.run(["chmod", "-R", "a+rX", work], check=True)
    mirror_port = int(mirrored["mirror"].rsplit(":", 1)[1])
    mirrored["stop"]()   # from here on nothing serves the world
    yield {"pins": pins, "lock": os.path.splitext(pins)[0] + ".lock.json", "wheelhouse": wheelhouse,
           "ports": (own_world["port"], mirror_port), "output": proc.stdout}
    shutil.rmtree(work, ignore_errors=True)


def test_the_lock_covers_every_file_installed_from_an_index(mirrored, offline, own_world):
    """The lock made from the mirrored converge of every default stage: every distribution the venv holds from an
    index, and the sdist pydeps builds tensorstore's wheel from (an index file, though its wheel is built here)."""
    with open(offline["lock"]) as handle:
        files = json.load(handle)["files"]
    names = set((f["name"].lower().replace("_", "-").replace(".", "-"), f["version"]) for f in files)
    missing = installed_from_indexes(mirrored["base"]) - names
    assert not missing, "installed but not locked: %s" % sorted(missing)
    with open(own_world["pins"]) as handle:
        (sdist,) = yaml.safe_load(handle)["primus_pins"]["pydeps"]["build_from_sdist"]
    name, version = sdist.split("==")
    assert [f["filename"] for f in files if f["filename"].startswith("%s-%s." % (name, version))] == [
        "%s-%s.tar.gz" % (name, version)], [f["filename"] for f in files if f["name"].lower() == name]


def converge_offline(playbook, target, offline, name, **extra):
    """A converge of a fresh empty base from the wheelhouse, with listeners on the world's and the mirror's ports:
    (run, base, connections counted on each port)."""
    sentinels = [Sentinel(port) for port in offline["ports"]]
    base = target.base(name)
    try:
        run = playbook(STAGES, base, extra=dict({"primus_release_file": offline["pins"], "primus_wheelhouse": offline["wheelhouse"],
                                                 "primus_cache_dir": base + "-cache"}, **extra))
    finally:
        for sentinel in sentinels:
            sentinel.close()
    return run, base, [s.count for s in sentinels]


def source_builds(pins):
    """{stage: the world's component name} of the stages that build a wheel: the pins' sources with a build, and
    pydeps (its sdist builds; the pins name one, tensorstore)."""
    with open(pins) as handle:
        release = yaml.safe_load(handle)["primus_pins"]
    builds = dict((stage, source["build"]["distribution"]) for stage, source in release["sources"].items()
                  if source.get("build"))
    (sdist,) = release["pydeps"]["build_from_sdist"]
    builds["pydeps"] = sdist.split("==")[0]
    return builds


def build_ids(base):
    """{component: build id} of the world's build records the venv's packages carry (a fresh id per compile)."""
    site = os.path.join(base, "venv", "lib", "python3.12", "site-packages")
    records = [json.load(open(p)) for p in glob.glob(os.path.join(site, "*", "world_build.json"))]
    return dict((r["component"], r["build"]["id"]) for r in records if "build" in r)


def built(base, stage):
    with open(os.path.join(base, "state", "%s.json" % stage)) as handle:
        return json.load(handle)["outputs"]["built"]


@pytest.fixture(scope="module")
def from_bundles(offline, playbook, target):
    """The source stages built from the wheelhouse's git bundles (no wheel store)."""
    run, base, hits = converge_offline(playbook, target, offline, "wheelhouse")
    record_timing("%s on an empty base from the wheelhouse alone (unprivileged, SSH)" % STAGES_NAME, run.seconds)
    return run, base, hits


def test_a_wheelhouse_alone_converges_an_empty_base_with_no_network(from_bundles, own_world):
    run, base, hits = from_bundles
    assert run.rc == 0, run
    assert hits == [0, 0], "connections reached the world's or the mirror's port"
    logs = "".join(open(p, errors="replace").read() for p in glob.glob(os.path.join(base, "logs", "*.log")))
    assert "--require-hashes" in logs
    builds = source_builds(own_world["pins"])
    assert len(builds) == 10, builds
    for stage in builds:
        assert built(base, stage) not in (False, [], None), stage   # pydeps: the sdists it built


def test_with_the_wheelhouse_store_another_empty_base_compiles_nothing(from_bundles, mirrored, offline, playbook, target,
                                                                       own_world):
    """The wheels the mirrored converge built, carried by the wheelhouse (--store): an air-gapped node installs them."""
    assert from_bundles[0].rc == 0, from_bundles[0]
    builds = source_builds(own_world["pins"])
    store = os.path.join(offline["wheelhouse"], "store")
    listed = json.load(open(os.path.join(offline["wheelhouse"], "wheelhouse.json")))["store"]
    # the store's component directories: a source stage's name, an sdist build's project
    components = [stage for stage in builds if stage != "pydeps"] + [builds["pydeps"]]
    assert sorted(rel.split("/")[1] for rel in listed) == sorted(components), listed
    assert "%d built wheels" % len(builds) in offline["output"], offline["output"]
    run, base, hits = converge_offline(playbook, target, offline, "wheelhouse-store",
                                       primus_wheel_store=store, primus_wheel_store_enabled=True)
    record_timing("%s on an empty base from the wheelhouse and its store (unprivileged, SSH)" % STAGES_NAME, run.seconds)
    assert run.rc == 0, run
    assert hits == [0, 0], "connections reached the world's or the mirror's port"
    # Counted from the world's build records: each component's wheel is the one the mirrored converge compiled (the
    # converge from the bundles compiled its own, with other ids), and the stamps say nothing was built here.
    ids, mirrored_ids, bundle_ids = build_ids(base), build_ids(mirrored["base"]), build_ids(from_bundles[1])
    for stage, component in builds.items():
        assert ids[component] == mirrored_ids[component] != bundle_ids[component], (stage, ids, mirrored_ids, bundle_ids)
        assert built(base, stage) in (False, []), stage
    taken = [r for r in run.results if "Show where the wheel of this build key comes from" in r["task"]]
    assert len(taken) == len(builds) and all("installed from the wheel store, not built" in r["result"]["msg"]
                                             for r in taken), taken


def test_a_mirror_url_with_credentials_is_refused_and_redacted(playbook, target, world):
    secret = "s3cr3t-t0ken"
    run = playbook("preflight", target.base("mirror-creds"),
                   extra={"primus_mirrors": {"indexes": {"pypi": "https://ci:%s@mirror.example/simple" % secret}}})
    assert run.rc != 0
    assert "primus_mirrors.indexes.pypi" in run.output and "~/.netrc" in run.output, run.output[-3000:]
    assert secret not in run.output
