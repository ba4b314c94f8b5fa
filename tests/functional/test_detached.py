"""Detached runs (scripts/detached_run.py, ansible-runner): the real playbook started detached on two inventory
hosts of the target (each its own PRIMUS_BASE), its client killed with SIGKILL and re-attached, and a stop
in the middle that leaves a base the next ordinary run takes over and converges."""
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from harness import REPO, installed, record_timing

pytestmark = pytest.mark.functional

SCRIPT = os.path.join(REPO, "scripts", "detached_run.py")
TAGS = "venv,torch"


def running(pid, wait=30):
    """Whether pid still runs after up to `wait` seconds (a zombie does not: this machine's init may not reap it)."""
    deadline = time.monotonic() + wait
    while True:
        try:
            with open("/proc/%d/stat" % pid) as handle:
                state = handle.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            state = "gone"
        if state in ("Z", "X", "gone") or time.monotonic() > deadline:
            return state not in ("Z", "X", "gone")
        time.sleep(0.2)


@pytest.fixture
def detached(tmp_path, target, world, python312):
    """run(*argv) -> CompletedProcess of detached_run.py; write_inventory(bases) -> path of an inventory whose
    hosts node1.. are the target, each with its own primus_base, the world's pins and a recorded GPU host."""
    runs = tmp_path / "runs"
    host_dir = os.path.join(target.hosts_dir, "mi300x")
    common = {
        "primus_release_file": world["pins"], "primus_python": python312,
        "primus_rocminfo": os.path.join(host_dir, "bin", "rocminfo"),
        "primus_kfd_nodes_path": os.path.join(host_dir, "sys", "class", "kfd", "kfd", "topology", "nodes"),
        "primus_min_free_gib": 1,
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "PIP_"))}
    env["PIP_CONFIG_FILE"] = os.devnull
    env["ANSIBLE_NOCOLOR"] = "1"

    class Detached:
        def cmd(self, *argv):
            return [sys.executable, SCRIPT, "--runs-dir", str(runs)] + list(argv)

        def run(self, *argv, timeout=120):
            return subprocess.run(self.cmd(*argv), env=env, capture_output=True, text=True, timeout=timeout, check=False)

        def popen(self, *argv):
            return subprocess.Popen(self.cmd(*argv), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

        def inventory(self, bases):
            path = tmp_path / "inventory.json"
            path.write_text(json.dumps({"all": {"vars": common, "hosts": {
                name: dict(target.host, primus_base=base) for name, base in bases.items()}}}))
            return str(path)

        def wait_for(self, name, pattern, timeout=600):
            """The status output once it matches pattern (a host reached a stage), else fail."""
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                out = self.run("status", name).stdout
                if re.search(pattern, out, re.M):
                    return out
                assert "running" in out or "starting" in out, out
                time.sleep(1)
            pytest.fail("%s did not show %r in %d s: %s" % (name, pattern, timeout, out))

        def pid(self, name):
            with open(runs / name / "pid") as handle:
                return int(handle.read())

    return Detached()


def test_a_detached_run_survives_its_client_and_is_reattached(detached, target):
    bases = {"node1": target.base("detached1"), "node2": target.base("detached2")}
    start = time.monotonic()
    started = detached.run("start", "fleet", "-i", detached.inventory(bases), "--tags", TAGS)
    assert started.returncode == 0, started.stdout + started.stderr
    daemon = detached.pid("fleet")

    # A client follows it; once both hosts are past preflight it is killed as a dropped session would kill it.
    client = detached.popen("attach", "fleet", "--interval", "1")
    seen = ""
    for line in client.stdout:
        seen += line
        if re.search(r"^  node1\s+stage (venv|torch)", seen, re.M) and re.search(r"^  node2\s+stage (venv|torch)", seen, re.M):
            break
    os.kill(client.pid, signal.SIGKILL)
    client.wait(timeout=30)
    assert client.returncode == -signal.SIGKILL
    assert running(daemon, wait=0)   # the run goes on
    status = detached.run("status", "fleet")
    assert "running" in status.stdout, status.stdout

    # Re-attached: it reads the events from where the run is and follows it to the end.
    again = detached.run("attach", "fleet", "--interval", "1", timeout=1800)
    record_timing("detached run, 2 hosts, %s" % TAGS, time.monotonic() - start)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "run fleet: successful (rc 0), 2 host(s)" in again.stdout, again.stdout
    for host in bases:
        assert re.search(r"^  %s\s+stage torch\s+done \d+\s+changed [1-9]\d*\s+failed 0 " % host, again.stdout, re.M), again.stdout
        assert installed(target, bases[host])["torch"].startswith("2."), host
    # The stage lines the clients printed came from ansible-runner's events, per host.
    assert re.search(r"^  node1\s+stage preflight", seen, re.M), seen
    assert not running(daemon)


def test_a_stopped_run_leaves_a_base_the_next_run_converges(detached, target, playbook):
    base = target.base("detached-stop")
    inventory = detached.inventory({"node1": base})
    started = detached.run("start", "halted", "-i", inventory, "--tags", TAGS)
    assert started.returncode == 0, started.stdout + started.stderr
    daemon = detached.pid("halted")
    detached.wait_for("halted", r"^  node1\s+stage torch")
    begin = time.monotonic()
    stopped = detached.run("stop", "halted")
    record_timing("detached run stopped", time.monotonic() - begin)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert "node1: stage torch" in stopped.stdout
    assert not running(daemon)
    status = detached.run("status", "halted")
    assert re.search(r"^run halted: stopped at ", status.stdout, re.M), status.stdout
    assert detached.run("stop", "halted").stdout.startswith("run halted is not running (stopped")
    # No process of the stopped run is left on the controller (its ansible-playbook and workers).
    leftover = subprocess.run(["pgrep", "-f", inventory], capture_output=True, text=True, check=False)
    assert leftover.stdout.strip() == "", leftover.stdout
    with open(os.path.join(base, ".primus.lock")) as handle:
        held = json.load(handle)   # still locked by the run that is gone

    # The next ordinary run takes the stale lock over and converges the base.
    after = playbook(tags=TAGS, base=base)
    assert after.rc == 0, after
    assert "took the lock over" in after.output, after.output[-3000:]
    assert held["run_id"] in after.output
    assert installed(target, base)["torch"].startswith("2.")
    assert not os.path.exists(os.path.join(base, ".primus.lock"))
