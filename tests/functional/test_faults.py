"""The fault matrix (docs/reliability.md; `make test-faults` runs this file alone): the real playbook, run by the
unprivileged target user against the simulated world, disturbed on purpose at named points of every stage kind.

- kill -9 of the run and of every process it started (the controller's process group, then every process on the node
  that carries the run's id: the held module, pip, git, the async build) at a point reached deterministically: a hold
  that signals readiness through a file - the modules' test hook (modes.hold_point: an atomic write with the new
  bytes written but not in place, pip's install done but not recorded, helpers_cpp built but not load-tested), the
  world server holding a request (tests/world/lib/server.py: a download, a clone, a submodule fetch in transfer), the
  world's setup.py holding a build (tests/world/README.md). Each kill is followed by a re-run that takes the dead run's
  lock over and converges to the manifest of an undisturbed run of the same stage list (timestamps and durations
  left out), and a further run with changed=0. One undisturbed reference per stage list; the points of the build list
  share its converged base, each first putting the base where the point is reached (a stage's stamp removed, its
  cached wheel, its installed distribution or its checkout gone).
- 503 twice then 200 on each index kind (the world's PyPI, ROCm nightly and TE staging indexes, through
  pip_constrained) and on a git remote (through the playbook): each succeeds; a remote that stays down fails naming
  its URL, and the next run converges.
- A disk that fills during a build: the stage fails naming ENOSPC, the venv is left as it was, the next run converges.
- Two runs started 0-10 s apart on one empty base: exactly one works, the other is refused naming it, before any stage.
"""
# pytest finds the imported fixtures by name:
# pylint: disable=unused-import,redefined-outer-name
import json
import os
import pwd
import re
import signal
import subprocess
import sys
import time

import pytest

from harness import REPO, processes_with, record_timing
from pipkit import ansible_dir, installed, run, template_venv, venv  # noqa: F401  (fixtures)

sys.path.insert(0, os.path.join(REPO, ".collections"))
from ansible_collections.primus.trainenv.plugins.module_utils import base_lock  # noqa: E402
from ansible_collections.primus.trainenv.plugins.plugin_utils import source_build  # noqa: E402

pytestmark = [pytest.mark.functional, pytest.mark.faults]

LOCK = ".primus.lock"
# The smallest stage lists that reach every point, each with the manifest stage (the record compared).
# (--tags is a set: the order of the names does not matter.)
LISTS = {"venv": "venv,manifest"}
LISTS["torch"] = LISTS["venv"] + ",torch"
LISTS["builds"] = LISTS["torch"] + ",causal_conv1d,torchtune,primus"   # a build from git, a patched one, submodules
# Manifest keys that differ between two runs that built the same thing (when, how long, where).
VOLATILE = {"timings", "seconds", "generated", "written", "time", "date", "since", "started", "finished", "run_id",
            "build_seconds", "id"}

# (point, stage list, how it is reached, what holds it, how the shared base is prepared)
# kinds: module - modes.hold_point's pattern; http - the world server holds the first request matching the regex;
# build - the world's setup.py holds the stage's build; venv - the venv's ensurepip is running.
POINTS = [
    ("venv-creation", "venv", "venv", None, ()),
    ("pip-download", "venv", "http", r"^/pypi/.*files/[0-9a-f]{16}/wheel-0\.45\.1-", ()),
    ("stamp-write", "venv", "module", "write:venv.json", ()),
    ("manifest-write", "venv", "module", "write:manifest.json", ()),
    ("pip-install", "torch", "http", r"^/rocm/.*files/[0-9a-f]{16}/torch-2\.12\.0", ()),
    ("env-sh-and-modulefile-write", "torch", "module", "write:env.sh", ()),
    ("git-clone", "builds", "http", r"^/git/causal-conv1d\.git/objects/", ("stamp:causal_conv1d", "wheel:causal_conv1d")),
    ("wheel-build", "builds", "build", "causal_conv1d", ("stamp:causal_conv1d", "wheel:causal_conv1d")),
    ("cached-wheel-install", "builds", "module", "pip-installed:causal_conv1d-*",
     ("stamp:causal_conv1d", "uninstall:causal-conv1d")),
    ("build-stamp-write", "builds", "module", "write:causal_conv1d.json", ("stamp:causal_conv1d",)),
    ("patch", "builds", "module", "write:utils.py", ("stamp:torchtune", "wheel:torchtune")),
    ("submodule-update", "builds", "http", r"^/git/Megatron-LM\.git/", ("stamp:primus", "checkout:Primus")),
    ("helpers-cpp-build", "builds", "module", "helpers_cpp-built:*", ("stamp:primus", "helpers")),
]


def as_target(target, script):
    proc = target.run(["bash", "-c", script])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def wait_for(what, predicate, run=None, timeout=1800, interval=0.05):
    """Wait until predicate() is true; fails at once when the run ended first (the point was never reached). The
    timeout only guards against a hang: reaching a point is an event, not a duration."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        if run is not None and run.proc.poll() is not None:
            raise AssertionError("the run ended before %s: %r" % (what, run.finish()))
        time.sleep(interval)
    raise AssertionError("timed out waiting for %s" % what)


def normalised(value, base):
    """A manifest without what differs between two runs of the same build: volatile keys, the base's path."""
    if isinstance(value, dict):
        return {k: normalised(v, base) for k, v in value.items() if k not in VOLATILE and "sha256" not in k}
    if isinstance(value, list):
        return [normalised(v, base) for v in value]
    if isinstance(value, str):
        return value.replace(base, "<base>").replace(source_build.tree_tag(base), "<tag>")
    return value


def manifest(base):
    with open(os.path.join(base, "manifest", "manifest.json")) as handle:
        return normalised(json.load(handle), base)


def run_id_of(base):
    try:
        with open(os.path.join(base, LOCK)) as handle:
            return json.load(handle)["run_id"]
    except (OSError, ValueError, KeyError):
        return None


def kill_9(running, run_id, uid):
    """kill -9 of the run: the controller's process group, then every process on the node carrying its run id."""
    os.killpg(running.proc.pid, signal.SIGKILL)
    for _attempt in range(200):
        left = base_lock.run_processes(run_id, uid=uid)
        if not left:
            break
        for pid, _start, _command in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.05)
    killed = running.finish()
    assert killed.rc == -signal.SIGKILL, killed
    assert base_lock.run_processes(run_id, uid=uid) == [], "a process of the killed run is left"
    return killed


class Holds(object):
    """Hold files of one test: the modules' (target.faults) and the world server's (<world>/.world-faults)."""

    def __init__(self, target, world):
        self.module_dir = target.faults
        self.http_dir = os.path.join(world["root"], ".world-faults")
        os.makedirs(self.http_dir, exist_ok=True)
        self.made = []

    def module(self, pattern):
        hold = os.path.join(self.module_dir, pattern + ".hold")
        open(hold, "w").close()
        self.made.append(hold)
        return os.path.join(self.module_dir, pattern + ".at")

    def http(self, name, match, action="hold", times=1):
        rule = os.path.join(self.http_dir, name + ".json")
        with open(rule + ".tmp", "w") as handle:
            json.dump({"match": match, "action": action, "times": times}, handle)
        os.rename(rule + ".tmp", rule)
        self.made.append(rule)
        return os.path.join(self.http_dir, name + ".at")

    def release(self):
        for path in self.made:
            for leftover in (path, re.sub(r"\.(hold|json)$", ".at", path)):
                if os.path.exists(leftover):
                    os.unlink(leftover)
        self.made = []


@pytest.fixture
def holds(target, world):
    made = Holds(target, world)
    try:
        yield made
    finally:
        made.release()


@pytest.fixture(scope="module")
def dirs(target):
    """The build and cache directories of this module's runs (their own: no other test's cached wheel)."""
    build = os.path.join(target.home, "faults-build-%d" % os.getpid())   # each pytest worker its own
    as_target(target, "rm -rf '{0}' '{0}-cache' && mkdir -m 700 '{0}' '{0}-cache'".format(build))
    yield {"primus_build_dir": build, "primus_cache_dir": build + "-cache"}
    subprocess.run(["rm", "-rf", build, build + "-cache"], check=False)


@pytest.fixture(scope="module")
def reference(playbook, target, dirs, golden):
    """One undisturbed run per stage list: {list: (base, manifest)}. The venv and torch lists start from an empty base
    (their points are in those stages); the build list's base is a copy of one converged with venv,manifest,torch
    (tests/functional/bases.py), shared by its points (each point's re-run converges it back)."""
    made = {}

    def get(name):
        if name not in made:
            if name == "builds":
                base = golden("faults-ref-builds", LISTS["torch"])
            else:
                base = target.base("faults-ref-" + name)
            first = playbook(LISTS[name], base, extra=dirs)
            assert first.rc == 0, str(first)
            record_timing("fault matrix: undisturbed %s on %s" % (
                LISTS[name], "a venv,manifest,torch copy" if name == "builds" else "an empty base"), first.seconds)
            made[name] = (base, manifest(base))
        return made[name]
    return get


def prepare(target, base, dirs, steps):
    """Put the shared converged base where a point is reached again (as the target user)."""
    for step in steps:
        kind, _sep, what = step.partition(":")
        if kind == "stamp":
            as_target(target, "rm -f '%s/state/%s.json'" % (base, what))
        elif kind == "wheel":
            as_target(target, "rm -rf '%s/wheels/%s'" % (dirs["primus_cache_dir"], what))
        elif kind == "uninstall":
            as_target(target, "'%s/venv/bin/python' -m pip uninstall -q -y '%s'" % (base, what))
        elif kind == "checkout":
            as_target(target, "rm -rf '%s/workspace/%s'" % (base, what))
        elif kind == "helpers":
            as_target(target, "find '%s/workspace' -name 'helpers_cpp*.so' -delete" % base)


def reach(kind, what, holds, base, dirs, running):
    """Wait until the run is held at the point (or is at it, for the venv's creation)."""
    if kind == "venv":
        venv = os.path.join(base, "venv")
        return wait_for("ensurepip in the new venv", lambda: os.path.exists(os.path.join(venv, "pyvenv.cfg")) and [
            p for p in processes_with("ensurepip") if p in processes_with(venv)], running)
    if kind == "build":
        tree = "%s-%s" % (what, source_build.tree_tag(base))
        holding = os.path.join(dirs["primus_build_dir"], ".world-holding-" + tree)
        return wait_for("the %s build to be held" % what, lambda: os.path.exists(holding), running)
    return wait_for("the hold at %s" % what, lambda: os.path.exists(holds.at), running)


# Each group runs whole in one pytest-xdist worker (make test-faults): the build list's points share its base.
BUILDS = pytest.mark.xdist_group("faults-builds")
LIGHT = pytest.mark.xdist_group("faults-light")


@pytest.mark.parametrize("point, stages, kind, what, steps", [
    pytest.param(*p, id=p[0], marks=BUILDS if p[1] == "builds" else LIGHT) for p in POINTS])
def test_kill_9_at_a_point_then_the_rerun_converges_and_the_next_changes_nothing(
        point, stages, kind, what, steps, playbook, target, holds, reference, dirs):
    ref_base, ref_manifest = reference(stages)
    base = ref_base if stages == "builds" else target.base("faults-" + point)
    prepare(target, base, dirs, steps)
    if kind == "module":
        holds.at = holds.module(what)
    elif kind == "http":
        holds.at = holds.http(point, what)
    elif kind == "build":
        tree = "%s-%s" % (what, source_build.tree_tag(base))
        hold = os.path.join(dirs["primus_build_dir"], ".world-hold-" + tree)
        as_target(target, "touch '%s'" % hold)
    uid = pwd.getpwnam(target.user).pw_uid
    running = playbook(LISTS[stages], base, extra=dirs, background=True)
    try:
        reach(kind, what, holds, base, dirs, running)
        run_id = run_id_of(base)
        assert run_id, "the run holds the base's lock at %s" % point
        kill_9(running, run_id, uid)
    finally:
        if running.proc.poll() is None:
            os.killpg(running.proc.pid, signal.SIGKILL)
            running.finish()
        holds.release()
        if kind == "build":
            tree = "%s-%s" % (what, source_build.tree_tag(base))
            as_target(target, "rm -f '%s/.world-hold-%s'" % (dirs["primus_build_dir"], tree))
    assert os.path.exists(os.path.join(base, LOCK)), "a killed run leaves its lock"

    rerun = playbook(LISTS[stages], base, extra=dirs)
    assert rerun.rc == 0, str(rerun)
    record_timing("fault matrix: re-run after kill -9 at %s" % point, rerun.seconds)
    assert rerun.task("Lock PRIMUS_BASE")["result"]["taken_over"]["run_id"] == run_id
    assert manifest(base) == ref_manifest
    again = playbook(LISTS[stages], base, extra=dirs)
    assert again.rc == 0, str(again)
    assert again.stats["node1"]["changed"] == 0, again.changed_tasks()
    assert not os.path.exists(os.path.join(base, LOCK))


# --------------------------------------------------------------------------- 503s and a remote that stays down

INDEXES = [
    # (index kind, its path in the world, a distribution it serves, installed without its dependencies)
    ("pypi", "/pypi/simple", "einops"),
    ("rocm-nightly", "/rocm/whl-multi-arch", "filelock"),
    ("te-staging", "/te/whl-staging/device-all", "transformer-engine-rocm7"),
]


def log_since(world, offset):
    with open(os.path.join(world["root"], "server.log")) as handle:
        handle.seek(offset)
        return handle.read()


def log_size(world):
    return os.path.getsize(os.path.join(world["root"], "server.log"))


def statuses(text, path_regex):
    return [int(m.group(1)) for m in re.finditer(r'"GET (?:%s)\S* HTTP/1\.[01]" (\d{3})' % path_regex, text)]


@LIGHT
@pytest.mark.parametrize("kind, path, name", INDEXES, ids=[i[0] for i in INDEXES])
def test_503_twice_then_200_on_each_index_kind(kind, path, name, world, holds, venv, run):
    page = "%s/%s/" % (path, name)
    holds.http("503-" + kind, "^%s$" % re.escape(page), action="503", times=2)
    offset = log_size(world)
    result, failed = run({"venv": str(venv), "name": [name], "index_url": "http://127.0.0.1:%d%s/" % (world["port"], path),
                          "no_deps": True, "pre": True, "retry_delay": 0.1})
    assert not failed, result
    assert statuses(log_since(world, offset), re.escape(page))[:3] == [503, 503, 200], log_since(world, offset)[-3000:]
    assert name in [n.replace("_", "-") for n, _v in installed(venv)]


@BUILDS
def test_503_twice_then_200_on_a_git_remote(playbook, target, holds, world, reference, dirs):
    base, ref_manifest = reference("builds")
    prepare(target, base, dirs, ("stamp:causal_conv1d", "wheel:causal_conv1d"))
    refs = r"/git/causal-conv1d\.git/info/refs"
    holds.http("503-git", "^%s$" % refs, action="503", times=2)
    offset = log_size(world)
    done = playbook(LISTS["builds"], base, extra=dirs)
    assert done.rc == 0, str(done)
    assert statuses(log_since(world, offset), refs)[:3] == [503, 503, 200], log_since(world, offset)[-3000:]
    assert done.task("Clone at the planned commit, with that commit's submodules - causal_conv1d")["result"][
        "attempts"] == 3
    assert manifest(base) == ref_manifest


@BUILDS
def test_a_git_remote_that_stays_down_fails_naming_its_url_then_the_next_run_converges(
        playbook, target, holds, world, reference, dirs):
    base, ref_manifest = reference("builds")
    prepare(target, base, dirs, ("stamp:causal_conv1d", "wheel:causal_conv1d"))
    holds.http("down-git", r"^/git/causal-conv1d\.git/", action="503", times=10 ** 6)
    failed = playbook(LISTS["builds"], base, extra=dirs)
    assert failed.rc != 0
    # The clone was tried 3 times (its retries), then the stage stopped with its message.
    assert failed.task("Clone at the planned commit, with that commit's submodules - causal_conv1d")["result"][
        "attempts"] == 3
    message = failed.task("Stop - the checkout failed - causal_conv1d")["result"]["msg"]
    url = "http://127.0.0.1:%d/git/causal-conv1d.git" % world["port"]
    assert message.startswith("[causal_conv1d] cannot clone %s at " % url), message
    assert "503" in message and "Fix: check the network" in message, message
    assert not os.path.exists(os.path.join(base, LOCK)), "the failed run released its lock"
    holds.release()
    again = playbook(LISTS["builds"], base, extra=dirs)
    assert again.rc == 0, str(again)
    assert manifest(base) == ref_manifest


# --------------------------------------------------------------------------- a disk that fills during a build

@BUILDS
def test_a_disk_that_fills_during_a_build_fails_naming_enospc_then_the_next_run_converges(
        playbook, target, reference, dirs):
    base, ref_manifest = reference("builds")
    if os.getuid() != 0:
        pytest.skip("a small filesystem for the build directory needs root (mount -t tmpfs); `make test` runs as root")
    disk = os.path.join(target.home, "faults-small-disk")
    as_target(target, "mkdir -p '%s'" % disk)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1200m,mode=0700,uid=%d" % pwd.getpwnam(target.user).pw_uid,
                    "primus-faults", disk], check=True)
    try:
        extra = dict(dirs, primus_build_dir=disk)
        prepare(target, base, dirs, ("stamp:causal_conv1d", "wheel:causal_conv1d"))
        tree = "causal_conv1d-" + source_build.tree_tag(base)
        hold, holding = (os.path.join(disk, ".world-%s-%s" % (what, tree)) for what in ("hold", "holding"))
        as_target(target, "touch '%s'" % hold)
        before = installed_venv(target, base)
        running = playbook(LISTS["builds"], base, extra=extra, background=True)
        try:
            wait_for("the causal_conv1d build to be held", lambda: os.path.exists(holding), running)
            # The disk fills while the build runs: every byte left taken (as root, so the user cannot free it).
            subprocess.run(["dd", "if=/dev/zero", "of=%s/filler" % disk, "bs=1M", "status=none"], check=False)
            subprocess.run(["sync"], check=False)
            os.unlink(hold)
        finally:
            done = running.finish()
        assert done.rc != 0
        message = done.failed()[0]["result"]["msg"]
        assert "causal_conv1d" in message and "No space left on device" in message, message
        assert installed_venv(target, base) == before, "the failed build changed nothing in the venv"
        assert not os.path.exists(os.path.join(base, LOCK))
        os.unlink(os.path.join(disk, "filler"))
        again = playbook(LISTS["builds"], base, extra=extra)
        assert again.rc == 0, str(again)
        assert manifest(base) == ref_manifest
    finally:
        subprocess.run(["umount", "-l", disk], check=False)


def installed_venv(target, base):
    proc = target.run([os.path.join(base, "venv", "bin", "python"), "-c",
                       "import json; from importlib import metadata; "
                       "print(json.dumps(sorted((d.metadata['Name'], d.version) for d in metadata.distributions())))"])
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


# --------------------------------------------------------------------------- two runs racing for one base

@LIGHT
@pytest.mark.parametrize("offset", [0, 1, 3, 10])
def test_two_runs_racing_one_works_the_other_is_refused_naming_it_before_any_stage(offset, playbook, target, holds):
    base = target.base("faults-race-%d" % offset)
    # The run that wins is held at its venv stamp: it holds the lock, working, however late the other starts.
    at = holds.module("write:venv.json")
    first = playbook("venv", base, background=True)
    time.sleep(offset)   # the offset is the input of this case, not a wait for a point
    second = playbook("venv", base, background=True)
    runs = (first, second)
    try:
        wait_for("one run refused and the other held", lambda: os.path.exists(at) and any(
            r.proc.poll() is not None for r in runs))
        loser = [r for r in runs if r.proc.poll() is not None][0]
        winner = second if loser is first else first
        holds.release()
        lost, won = loser.finish(), winner.finish()
    finally:
        holds.release()
        for r in runs:
            if r.proc.poll() is None:
                r.finish()
    assert won.rc == 0, str(won)
    assert lost.rc != 0
    refused = lost.failed()[0]
    message = refused["result"]["msg"]
    assert "is in use by another run" in message and "ansible-playbook pid %d" % winner.proc.pid in message, message
    # Before any work: no stage started, nothing changed; refused by the early check or, when both passed it at
    # once, by the lock itself.
    assert refused["task"].endswith(("Stop - PRIMUS_BASE is in use by another run", "Lock PRIMUS_BASE for this run")), \
        refused["task"]
    assert not [r for r in lost.results if "Start stage" in r["task"]]
    assert lost.stats["node1"]["changed"] == 0, lost.changed_tasks()
    assert not os.path.exists(os.path.join(base, LOCK))
    record_timing("race at offset %d s: refused after (from its first task)" % offset,
                  refused["time"] - lost.results[0]["time"])
