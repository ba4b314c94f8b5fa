"""One run per PRIMUS_BASE, interruptions that recover, stage prerequisites: the real playbook, run by the
unprivileged target user against the simulated world (see harness.py for how the target is reached).

Kept lean: `--tags venv` on small bases; several cases share one base in order."""
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest

from harness import REPO, processes_with, record_timing, tree_state
from harness import installed as venv_installed

sys.path.insert(0, os.path.join(REPO, ".collections"))
from ansible_collections.primus.trainenv.plugins.module_utils import base_lock  # noqa: E402
from ansible_collections.primus.trainenv.plugins.plugin_utils import source_build  # noqa: E402

pytestmark = pytest.mark.functional

LOCK = ".primus.lock"
VENV_PINS = {"pip": "26.3", "wheel": "0.45.1", "cmake": "3.31.6", "ninja": "1.11.1.3", "packaging": "25.0",
             "setuptools": "75.1.0"}
INSTALLED = (
    "import json\n"
    "from importlib import metadata\n"
    "print(json.dumps({d.metadata['Name'].lower(): d.version for d in metadata.distributions()}))\n"
)


def as_target(target, script):
    proc = target.run(["bash", "-c", script])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def installed(target, base):
    proc = target.run([os.path.join(base, "venv", "bin", "python"), "-c", INSTALLED])
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def marker(base):
    path = os.path.join(base, "venv", "primus-trainenv.cfg")
    if not os.path.exists(path):
        return None
    with open(path) as handle:
        return dict(line.split(" = ", 1) for line in handle.read().splitlines()[1:] if " = " in line).get("state")


def plant_lock(target, base, **fields):
    """A lock file written as the target user would have it, with the given controller fields."""
    record = {"format": 1, "run_id": "0123456789ab", "inventory_host": "node1", "node_host": socket.gethostname(),
              "user": target.user, "since": "2026-12-02T08:00:00Z", "base": base, "controller_user": target.user}
    record.update(fields)
    path = os.path.join(base, LOCK)
    with open(path, "w") as handle:
        json.dump(record, handle)
    if os.getuid() == 0:
        shutil.chown(path, target.user)
    return record


def this_controller():
    me = base_lock.controller_identity(os.getpid(), socket.gethostname(), "x")
    return {k: me[k] for k in ("controller_host", "controller_machine_id", "controller_boot_id")}


def dead_pid():
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def failure(run):
    failed = run.failed()
    assert failed, run
    return failed[0]


def wait_for(what, predicate, timeout=120, interval=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(interval)
    raise AssertionError("timed out waiting for %s" % what)


# --------------------------------------------------------------------------- prerequisites, no lock left

def test_a_stage_stops_at_once_naming_what_to_run_first_and_leaves_no_lock(playbook, target):
    base = target.base("prereq")
    run = playbook("flash_attn", base)
    assert run.rc != 0
    failed = failure(run)
    assert failed["task"].endswith("Start stage flash_attn")
    assert failed["result"]["msg"].startswith(
        "[flash_attn] flash_attn needs venv and torch: run --tags venv,torch first, or --tags venv,torch,flash_attn. "
        "On this base: venv: there is no venv at %s/venv; torch: not done on this base." % base), failed
    # The run took the lock (it may change the base), then released it although it failed.
    assert run.task("Lock PRIMUS_BASE")["status"] == "ok"
    assert run.task("Release the lock")["status"] == "ok" and run.task("Release the lock")["result"]["released"]
    # Only the base itself was made (by the lock), and it is removed again: the run leaves nothing behind.
    assert not os.path.exists(base), os.listdir(base)


def test_a_run_that_preflight_stops_after_the_lock_reports_no_change_and_leaves_nothing(playbook, target):
    """Issue 25: the lock made the empty base (changed=1), preflight then stopped the run and the base went again."""
    base = target.base("preflight-after-lock")
    run = playbook("venv", base, extra={"primus_arch_override": "gfx90a"})
    assert run.rc != 0
    assert "has no device wheels" in failure(run)["result"]["msg"], failure(run)
    lock = run.task("Lock PRIMUS_BASE")
    assert lock["status"] == "ok" and base in lock["result"]["created"], lock
    assert run.stats["node1"]["changed"] == 0, run.changed_tasks()
    assert not os.path.lexists(base)


@pytest.mark.parametrize("stage, needs, tags", [
    ("pydeps", "venv and torch", "venv,torch"),
    ("boto", "venv and torch", "venv,torch"),
    ("torchrec", "venv and torch", "venv,torch"),
    # cleanup needs only a venv: it removes tilelang whatever installed it.
    ("cleanup", "venv", "venv"),
])
def test_a_pip_stage_without_its_prerequisites_names_the_tags(playbook, target, stage, needs, tags):
    base = target.base("prereq-" + stage)
    run = playbook(stage, base)
    assert run.rc != 0
    failed = failure(run)
    assert failed["task"].endswith("Start stage %s" % stage)
    assert failed["result"]["msg"].startswith(
        "[%s] %s needs %s: run --tags %s first, or --tags %s,%s. On this base: venv: there is no venv at %s/venv"
        % (stage, stage, needs, tags, tags, stage, base)), failed
    assert not os.path.exists(base), "the base the lock made is removed again: nothing is left behind"


def test_check_mode_and_preflight_take_no_lock_and_create_nothing(playbook, target):
    base = target.base("nolock")
    check = playbook("venv", base, check=True)
    assert check.rc == 0, check
    assert check.task("Lock PRIMUS_BASE")["status"] == "skipped"
    preflight = playbook("preflight", base)
    assert preflight.rc == 0, preflight
    assert preflight.task("Lock PRIMUS_BASE")["status"] == "skipped"
    run_facts = preflight.task("Check the directory and interpreter settings")["result"]["ansible_facts"]["primus_run"]
    assert run_facts["stages"] == [] and run_facts["lock"] is False
    assert not os.path.lexists(base)


# --------------------------------------------------------------------------- the lock, on one base

@pytest.fixture(scope="module")
def seed_base(target, python312):
    """A base whose venv was made the seed's way (python3.12 -m venv, ensurepip's pip, no marker)."""
    base = target.base("seed")
    as_target(target, "mkdir -p '%s' && '%s' -m venv '%s/venv'" % (base, python312, base))
    return base


def test_two_runs_on_one_base_the_second_is_refused_naming_the_first(playbook, target):
    base = target.base("two-runs")
    # The first run creates the venv and installs torch on an empty base: it holds the lock while the second run
    # is tried beside it.
    first = playbook("venv,torch", base, background=True)
    try:
        wait_for("the first run's lock", lambda: os.path.exists(os.path.join(base, LOCK)))
        with open(os.path.join(base, LOCK)) as handle:
            holder = json.load(handle)
        assert holder["controller_pid"] == first.proc.pid, "the lock names the first ansible-playbook"
        started = time.time()
        second = playbook("venv", base)
        first_running = first.proc.poll() is None
        held_after = None
        if os.path.exists(os.path.join(base, LOCK)):
            with open(os.path.join(base, LOCK)) as handle:
                held_after = json.load(handle)
    finally:
        first_run = first.finish()
    here = socket.gethostname()
    assert second.rc != 0
    refused = failure(second)
    # Refused by the early check, from the lock record node_info read, before any other check: the lock step
    # never ran.
    assert refused["task"].endswith("Stop - PRIMUS_BASE is in use by another run"), refused["task"]
    message = refused["result"]["msg"]
    assert message.startswith("PRIMUS_BASE %s is in use by another run: user %s on node %s (inventory host node1), "
                              "ansible-playbook pid %d on controller %s"
                              % (base, target.user, here, first.proc.pid, here)), message
    assert "since %s" % holder["since"] in message and "kill %d" % first.proc.pid in message
    # Before any work: the refusal comes right after the core role's look at the node, which read the first run's
    # lock record; before it only the hosts play (skipped here), the core role's argument and settings checks and the
    # pins (read on the controller) ran, nothing changed, and nothing ran after it - no lock taken or released, no stage started.
    before = second.results[:second.results.index(refused)]
    spec = "Validating arguments against arg spec"   # the core role's argument check, which Ansible adds
    assert [(spec if spec in r["task"] else r["task"].split(" : ")[-1], r["status"]) for r in before] == [
        ("Build on localhost - no inventory was given", "skipped"),
        ("Stop - the inventory holds no host", "skipped"), ("Check the report directory and the drift fields on the controller", "ok"),
        (spec, "ok"), ("Check the directory and interpreter settings, decide the stages of this run", "ok"),
        ("Check the release and its pins file", "ok"), ("Load the release pins", "ok"),
        ("Use the TE commit given for an abbreviated one", "skipped"),
        ("Look at the node - user, PRIMUS_BASE, interpreters, build tools, build and cache directories, glibc, GPUs", "ok")], \
        [(r["task"], r["status"]) for r in before]
    assert before[-1]["result"]["lock"]["run_id"] == holder["run_id"], before[-1]["result"]["lock"]
    assert second.changed_tasks() == [] and second.stats["node1"]["changed"] == 0
    # After it only the run summary on the controller (roles/report), which fails the host again with the same message;
    # the block's always tasks (the lock's release, its directories' removal) are skipped: this run took no lock.
    after = second.results[second.results.index(refused) + 1:]
    assert after and all(r["task"].startswith("primus.trainenv.report : ") or r["status"] == "skipped" for r in after), \
        [(r["task"], r["status"]) for r in after]
    assert after[-1]["status"] == "failed" and after[-1]["result"]["msg"] == refused["result"]["msg"], after[-1]
    assert not [r for r in second.results if r["status"] != "skipped" and (
        "Lock PRIMUS_BASE" in r["task"] or "Release the lock" in r["task"] or "Start stage" in r["task"])]
    # While the first run held the lock and was still building: it had not ended when the second run returned, its
    # lock was still the same record, and it released that lock only after the refusal (the callback's times, one
    # clock on one machine: an order, not a duration).
    assert first_running, "the second run was refused while the first one was still building"
    assert held_after == holder, "the first run's lock, unchanged by the refused run"
    released = first_run.task("Release the lock")
    assert released["result"]["released"] and refused["time"] < released["time"]
    # The seconds are measured, not bounded (a loaded machine makes them what it makes them; docs/benchmarks.md).
    record_timing("second run on a locked base: refused after (from its launch)", refused["time"] - started)
    record_timing("second run on a locked base: refused after (from its first task)",
                  refused["time"] - second.results[0]["time"])
    # The first run was not disturbed: it made the venv, installed torch and finished.
    assert first_run.rc == 0, first_run
    record_timing("venv,torch on an empty base, beside the refused run (unprivileged, SSH)", first_run.seconds)
    assert marker(base) == "complete"
    have = installed(target, base)
    assert {name: have.get(name) for name in VENV_PINS} == VENV_PINS
    assert "torch" in have
    assert not os.path.exists(os.path.join(base, LOCK)), "the first run released its lock"


def test_a_seed_built_venv_is_adopted(playbook, target, seed_base):
    run = playbook("venv", seed_base)
    assert run.rc == 0, run
    record_timing("venv: adopt a seed-built venv (unprivileged, SSH)", run.seconds)
    assert "was not made by this collection but is a Python venv with a working pip: it is adopted" in run.output
    assert marker(seed_base) == "complete"
    have = installed(target, seed_base)
    assert {name: have.get(name) for name in VENV_PINS} == VENV_PINS
    assert not os.path.exists(os.path.join(seed_base, LOCK))


def test_a_stale_lock_is_taken_over_and_pip_debris_removed(playbook, target, seed_base):
    base = seed_base
    stale = plant_lock(target, base, controller_pid=dead_pid(), controller_pid_start="", **this_controller())
    site = os.path.join(base, "venv", "lib", "python3.12", "site-packages")
    pip_info = [d for d in os.listdir(site) if d.startswith("pip-") and d.endswith(".dist-info")][0]
    debris = [os.path.join(site, "~orch"), os.path.join(site, pip_info, "RECORDk3j2h1.tmp")]
    as_target(target, "mkdir '%s' && touch '%s/__init__.py' '%s'" % (debris[0], debris[0], debris[1]))
    run = playbook("venv", base)
    assert run.rc == 0, run
    lock = run.task("Lock PRIMUS_BASE")["result"]
    assert lock["taken_over"]["run_id"] == stale["run_id"]
    output = " ".join(run.output.split())
    assert "was locked by a run that no longer exists (user %s on node %s" % (target.user, socket.gethostname()) in output
    assert "ansible-playbook pid %d is no longer running); this run took the lock over." % stale["controller_pid"] in output
    removed = run.task("Start stage venv")["result"]
    assert removed["changed"] and sorted(removed["removed"]) == sorted(debris)
    assert not any(os.path.lexists(d) for d in debris)
    assert not os.path.exists(os.path.join(base, LOCK))
    assert run.stats["node1"]["changed"] == 1, run.changed_tasks()


def test_a_lock_from_another_host_is_reported_never_taken(playbook, target, seed_base):
    base = seed_base
    plant_lock(target, base, controller_host="gpu-login-07", controller_machine_id="0" * 32, controller_pid=4242,
               controller_pid_start="99", controller_boot_id="b")
    with open(os.path.join(base, LOCK)) as handle:
        before = handle.read()
    state = tree_state(os.path.join(base, "venv"))
    run = playbook("venv", base)
    assert run.rc != 0
    message = failure(run)["result"]["msg"]
    assert message.startswith("PRIMUS_BASE %s is locked by a run from another controller host: user %s on node %s "
                              "(inventory host node1), ansible-playbook pid 4242 on controller gpu-login-07"
                              % (base, target.user, socket.gethostname()))
    assert "since 2026-12-02T08:00:00Z" in message
    assert "cannot be checked from %s, so the lock is not taken over" % socket.gethostname() in message
    assert "remove the lock on %s: rm '%s/%s'" % (socket.gethostname(), base, LOCK) in message
    with open(os.path.join(base, LOCK)) as handle:
        assert handle.read() == before, "the other host's lock is untouched"
    assert tree_state(os.path.join(base, "venv")) == state
    os.unlink(os.path.join(base, LOCK))


# --------------------------------------------------------------------------- interrupted and foreign venvs

def test_kill_9_while_the_venv_is_created_then_a_rerun_converges(playbook, target):
    base = target.base("killed")
    venv = os.path.join(base, "venv")
    first = playbook("venv", base, background=True)
    try:
        # The moment the venv exists but is incomplete: pyvenv.cfg written and ensurepip running in it.
        ensurepip = wait_for("ensurepip in the new venv", lambda: os.path.exists(os.path.join(venv, "pyvenv.cfg"))
                             and [p for p in processes_with("ensurepip") if p in processes_with(venv)])
        groups = {os.getpgid(pid) for pid in processes_with(venv) + ensurepip}
        # The node's process groups (python -m venv with its ensurepip child; over SSH they are the target
        # user's), then the controller's whole group.
        for group in groups | {first.proc.pid}:
            try:
                os.killpg(group, signal.SIGKILL)
            except ProcessLookupError:
                pass
    finally:
        killed = first.finish()
    assert killed.rc == -signal.SIGKILL
    wait_for("the killed processes to go", lambda: not processes_with(venv), timeout=30)
    assert marker(base) == "creating", "the run was killed before the venv was complete"
    assert os.path.exists(os.path.join(base, LOCK)), "a killed run leaves its lock"
    rerun = playbook("venv", base)
    assert rerun.rc == 0, rerun
    record_timing("venv after kill -9 during its creation (re-run)", rerun.seconds)
    assert rerun.task("Lock PRIMUS_BASE")["result"]["taken_over"]["controller_pid"] == first.proc.pid
    assert "was being created by an earlier run that did not finish" in rerun.output
    assert "it was made by this collection, so it is removed and created again" in rerun.output
    assert marker(base) == "complete"
    have = installed(target, base)
    assert {name: have.get(name) for name in VENV_PINS} == VENV_PINS
    with open(os.path.join(base, "state", "venv.json")) as handle:
        assert json.load(handle)["outputs"]["distributions"]["pip"] == "26.3"
    assert not os.path.exists(os.path.join(base, LOCK))


def test_kill_9_during_a_source_build_the_rerun_stops_the_orphaned_build_then_converges(playbook, target, golden):
    """ansible-playbook killed (kill -9, or Ctrl-C) while a source build runs: the build is an async task, which
    goes on without its controller on the node. The re-run takes the dead run's lock over, stops that build
    (found by the run id every task passes on), then builds the stage itself."""
    base = golden("killed-build")   # venv,torch converged: the build killed is the subject
    build = os.path.join(target.home, "killed-build-src")
    tree = "causal_conv1d-" + source_build.tree_tag(base)   # the run's source tree in the build directory
    hold, holding = (os.path.join(build, ".world-%s-%s" % (what, tree)) for what in ("hold", "holding"))
    as_target(target, "rm -rf '%s' && mkdir -m 700 '%s' && touch '%s'" % (build, build, hold))
    # Its own build and cache directories: an earlier session's cached wheel would make the build a cache hit.
    stages, extra = "venv,torch,causal_conv1d", {"primus_build_dir": build, "primus_cache_dir": build + "-cache"}
    uid = pwd.getpwnam(target.user).pw_uid
    first = playbook(stages, base, extra=extra, background=True)
    try:
        wait_for("the causal_conv1d build to start",
                 lambda: os.path.exists(holding) or first.proc.poll() is not None, timeout=600, interval=0.5)
        assert first.proc.poll() is None, "the run ended before its build: %r" % first.finish()
        with open(os.path.join(base, LOCK)) as handle:
            run_id = json.load(handle)["run_id"]
        orphans = wait_for("the build's processes", lambda: base_lock.run_processes(run_id, uid=uid))
        os.killpg(first.proc.pid, signal.SIGKILL)   # the controller only, as a user's kill or Ctrl-C does
    finally:
        killed = first.finish()
    assert killed.rc == -signal.SIGKILL
    with open(holding) as handle:
        builder = int(handle.read())
    assert builder in [pid for pid, _start, _cmd in orphans], "the build carries its run's id"
    time.sleep(2)
    assert base_lock.process_start(builder), "the build goes on after its controller was killed"

    rerun = playbook(stages, base, extra=extra)
    assert rerun.rc == 0, rerun
    record_timing("causal_conv1d after kill -9 during its build (re-run)", rerun.seconds)
    lock = rerun.task("Lock PRIMUS_BASE")["result"]
    assert lock["taken_over"]["run_id"] == run_id
    assert builder in [p["pid"] for p in lock["stopped"]], lock["stopped"]
    assert "stopped the %d process(es) that run had left running on the node" % len(lock["stopped"]) in rerun.output
    assert base_lock.run_processes(run_id, uid=uid) == [], "nothing of the killed run is left"
    assert not base_lock.process_start(builder)
    assert rerun.task("Build the wheel - causal_conv1d")["status"] == "ok"
    with open(os.path.join(base, "state", "causal_conv1d.json")) as handle:
        assert json.load(handle)["outputs"]["commit"]
    assert "causal-conv1d" in venv_installed(target, base)
    assert not os.path.exists(os.path.join(base, LOCK))
    subprocess.run(["rm", "-rf", build, build + "-cache"], check=False)


def test_a_directory_that_is_not_a_venv_is_refused_and_nothing_installed(playbook, target, python312):
    """Before: the run installed into whatever interpreter venv/bin/python pointed at."""
    base = target.base("foreign")
    venv = os.path.join(base, "venv")
    as_target(target, "mkdir -p '%s/bin' '%s/lib/python3.12/site-packages' && ln -s '%s' '%s/bin/python'"
              % (venv, venv, python312, venv))
    interpreter = os.path.dirname(os.path.dirname(os.path.realpath(python312)))
    before, interpreter_before = tree_state(base), tree_state(interpreter)
    run = playbook("venv", base)
    assert run.rc != 0
    message = failure(run)["result"]["msg"]
    assert message.startswith("[venv] %s is not a venv (it has no pyvenv.cfg; it holds bin, lib) and was not made by "
                              "primus.trainenv. Nothing was installed into it, nor into any interpreter it points at."
                              % venv), message
    assert "rm -rf '%s'" % venv in message and "primus_venv_dir" in message
    assert tree_state(base) == before and tree_state(interpreter) == interpreter_before
    assert run.stats["node1"]["changed"] == 0
