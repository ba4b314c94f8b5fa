# SPDX-License-Identifier: GPL-3.0-or-later
"""The molecule scenarios' instance: the simulated world and an unprivileged target user.

    lab.py create STATE_DIR    build the world into STATE_DIR/world on a free port and serve it; as root,
                               make the target user (tests' primus-ci) reachable over a private loopback
                               sshd, else the calling user over the local connection; write STATE_DIR/lab.json
    lab.py destroy STATE_DIR   stop the sshd and the world, remove the base and the shared directory

The pieces are the functional tests' own (tests/functional/harness.py, tests/world): molecule runs
the same target the pytest scenarios run, across separate processes, so the sshd runs as a daemon
here (its pid file in STATE_DIR) instead of a fixture's child.
"""
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests", "functional"))

import harness  # noqa: E402  (also puts tests/ on sys.path for the world package)
from world import build as world_build  # noqa: E402
from world import serve as world_serve  # noqa: E402


def create(state):
    os.makedirs(state, exist_ok=True)
    world = os.path.join(state, "world")
    if not os.path.exists(os.path.join(world, "world.json")):
        world_build.main(["--dest", world, "--port", str(harness.free_port())])
    if world_serve.main(["status", "--root", world]) != 0 and world_serve.main(["start", "--root", world]) != 0:
        raise SystemExit("lab: the world at %s could not be served (see above)" % world)
    python312 = harness.shared_python(harness.PY312, "python3.12")
    # What the target user reads: the recorded GPU hosts (a directory of this lab, world-readable).
    shared = tempfile.mkdtemp(prefix="primus-molecule-")
    os.chmod(shared, 0o755)
    hosts_dir = os.path.join(shared, "hosts")
    shutil.copytree(os.path.join(REPO, "tests", "world", "hosts"), hosts_dir, symlinks=True)
    lab = {"world": world, "pins": os.path.join(world, "pins-v26.5.yml"), "python312": python312,
           "hosts_dir": hosts_dir, "shared": shared}
    if os.getuid() != 0:
        entry = pwd.getpwuid(os.getuid())
        lab.update(user=entry.pw_name, home=entry.pw_dir, interpreter=sys.executable,
                   instance={"instance": "instance", "connection": "local", "address": "localhost",
                             "user": entry.pw_name})
    else:
        entry = harness.ensure_user(harness.TEST_USER)
        key = os.path.join(state, "id_ed25519")
        for path in (key, os.path.join(state, "host_key")):
            if not os.path.exists(path):
                subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", path], check=True)
        keys = os.path.join(shared, "authorized_keys")
        os.makedirs(keys, mode=0o755)
        shutil.copyfile(key + ".pub", os.path.join(keys, harness.TEST_USER))
        os.chmod(os.path.join(keys, harness.TEST_USER), 0o644)
        port = harness.free_port()
        config = os.path.join(state, "sshd_config")
        with open(config, "w") as handle:
            handle.write(harness.sshd_config(port, state, keys, python312))
        os.makedirs("/run/sshd", exist_ok=True)
        subprocess.run(["/usr/sbin/sshd", "-f", config], check=True)   # daemonizes; pid in state/sshd.pid
        if not harness.wait_for_port(port):
            raise SystemExit("lab: the sshd on 127.0.0.1:%d did not start (config %s)" % (port, config))
        lab.update(user=harness.TEST_USER, home=entry.pw_dir, interpreter="/usr/bin/python3",
                   instance={"instance": "instance", "address": "127.0.0.1", "port": port,
                             "user": harness.TEST_USER, "identity_file": key})
    lab["base"] = os.path.join(lab["home"], "bases", "molecule-default")
    with open(os.path.join(state, "lab.json"), "w") as handle:
        json.dump(lab, handle, indent=1)
    print(json.dumps(lab, indent=1))


def destroy(state):
    path = os.path.join(state, "lab.json")
    lab = {}
    if os.path.exists(path):
        with open(path) as handle:
            lab = json.load(handle)
    pidfile = os.path.join(state, "sshd.pid")
    if os.path.exists(pidfile):
        with open(pidfile) as handle:
            pid = int(handle.read().strip() or 0)
        if pid:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        os.unlink(pidfile)
    world = lab.get("world") or os.path.join(state, "world")
    if os.path.exists(os.path.join(world, "world.json")) and world_serve.main(["status", "--root", world]) == 0:
        world_serve.main(["stop", "--root", world])
    for directory in (lab.get("base"), lab.get("shared")):
        if directory:
            shutil.rmtree(directory, ignore_errors=True)
    if os.path.exists(path):
        os.unlink(path)


def main(argv):
    if len(argv) != 3 or argv[1] not in ("create", "destroy"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    (create if argv[1] == "create" else destroy)(os.path.abspath(argv[2]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
