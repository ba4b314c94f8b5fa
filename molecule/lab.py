# SPDX-License-Identifier: GPL-3.0-or-later
"""The molecule scenarios' instance: the simulated world and an unprivileged target user.

    lab.py create STATE_DIR    build the world into STATE_DIR/world on a free port and serve it; as root,
                               make the target user (tests' primus-ci) reachable over a private loopback
                               sshd, else the calling user over the local connection; write STATE_DIR/lab.json
    lab.py destroy STATE_DIR   stop the sshd and the world, remove the base and the shared directory
    lab.py create-fleet STATE_DIR    the same world and three nodes for the fleet scenario: as root, three
                               unprivileged users (primus-fleet-1..3), each reached over SSH on its own loopback
                               address (127.0.0.2-4) of one private sshd, each with its own base, build and cache
                               directories and GPU host (two MI300X, one MI355X); else three local nodes of the
                               calling user; and the controller's wheel store in STATE_DIR/wheel-store
    lab.py destroy-fleet STATE_DIR   stop them, remove the nodes' directories and the wheel store

The pieces are the functional tests' own (tests/functional/harness.py, tests/world): molecule runs
the same target the pytest scenarios run, across separate processes, so the sshd runs as a daemon
here (its pid file in STATE_DIR) instead of a fixture's child.
"""
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests", "functional"))

import harness  # noqa: E402  (also puts tests/ on sys.path for the world package)
from world import build as world_build  # noqa: E402
from world import serve as world_serve  # noqa: E402


# The fleet scenario's nodes: inventory name, loopback address, GPU host of tests/world/hosts.
FLEET = (("fleet-1", "127.0.0.2", "mi300x"), ("fleet-2", "127.0.0.3", "mi300x"), ("fleet-3", "127.0.0.4", "mi355x"))
FLEET_DIR = "molecule-fleet"   # under each node user's home: base, build and cache (a fresh wheel cache each time)


def serve_world(state):
    world = os.path.join(state, "world")
    if not os.path.exists(os.path.join(world, "world.json")):
        world_build.main(["--dest", world, "--port", str(harness.free_port())])
    if world_serve.main(["status", "--root", world]) != 0 and world_serve.main(["start", "--root", world]) != 0:
        raise SystemExit("lab: the world at %s could not be served (see above)" % world)
    return world


def shared_hosts():
    """A directory of this lab, world-readable, with the recorded GPU hosts (what the target users read)."""
    shared = tempfile.mkdtemp(prefix="primus-molecule-")
    os.chmod(shared, 0o755)
    shutil.copytree(os.path.join(REPO, "tests", "world", "hosts"), os.path.join(shared, "hosts"), symlinks=True)
    return shared


def wait_for(address, port, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection((address, port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.1)
    return False


def create_fleet(state):
    os.makedirs(state, exist_ok=True)
    world = serve_world(state)
    python312 = harness.shared_python(harness.PY312, "python3.12")
    shared = shared_hosts()
    lab = {"world": world, "pins": os.path.join(world, "pins-v26.5.yml"), "python312": python312,
           "pins_by_release": dict((r, os.path.join(world, "pins-%s.yml" % r)) for r in ("v26.5", "v26.5.1")),
           "hosts_dir": os.path.join(shared, "hosts"), "shared": shared, "store": os.path.join(state, "wheel-store"),
           "nodes": {}, "instances": []}
    shutil.rmtree(lab["store"], ignore_errors=True)
    if os.getuid() == 0:
        key = os.path.join(state, "id_ed25519")
        for path in (key, os.path.join(state, "host_key")):
            if not os.path.exists(path):
                subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", path], check=True)
        keys = os.path.join(shared, "authorized_keys")
        os.makedirs(keys, mode=0o755)
        port = harness.free_port()
        users = []
        for number, (name, address, gpu) in enumerate(FLEET, 1):
            user = "primus-fleet-%d" % number
            entry = harness.ensure_user(user)
            shutil.copyfile(key + ".pub", os.path.join(keys, user))
            os.chmod(os.path.join(keys, user), 0o644)
            users.append(user)
            lab["nodes"][name] = {"user": user, "home": entry.pw_dir, "gpu": gpu, "address": address}
            lab["instances"].append({"instance": name, "address": address, "port": port, "user": user,
                                     "identity_file": key})
        config = harness.sshd_config(port, state, keys, python312)
        config = config.replace("ListenAddress 127.0.0.1\n", "".join("ListenAddress %s\n" % a for _n, a, _g in FLEET))
        config = config.replace("AllowUsers %s\n" % harness.TEST_USER, "AllowUsers %s\n" % " ".join(users))
        with open(os.path.join(state, "sshd_config"), "w") as handle:
            handle.write(config)
        os.makedirs("/run/sshd", exist_ok=True)
        subprocess.run(["/usr/sbin/sshd", "-f", os.path.join(state, "sshd_config")], check=True)
        for _name, address, _gpu in FLEET:
            if not wait_for(address, port):
                raise SystemExit("lab: the sshd on %s:%d did not start (config %s)" % (address, port, config))
        lab["interpreter"] = "/usr/bin/python3"
    else:
        entry = pwd.getpwuid(os.getuid())
        for name, address, gpu in FLEET:
            lab["nodes"][name] = {"user": entry.pw_name, "home": os.path.join(entry.pw_dir, FLEET_DIR, name),
                                  "gpu": gpu, "address": address}
            lab["instances"].append({"instance": name, "connection": "local", "address": "localhost",
                                     "user": entry.pw_name})
        lab["interpreter"] = sys.executable
    for node in lab["nodes"].values():
        top = os.path.join(node["home"], FLEET_DIR)
        run_as(node["user"], ["rm", "-rf", top])
        run_as(node["user"], ["mkdir", "-p", top])
        node.update(base=os.path.join(top, "base"), build=os.path.join(top, "build"), cache=os.path.join(top, "cache"))
    with open(os.path.join(state, "lab.json"), "w") as handle:
        json.dump(lab, handle, indent=1)
    print(json.dumps(lab, indent=1))


def run_as(user, argv):
    if os.getuid() == 0:
        argv = ["runuser", "-u", user, "--"] + argv
    subprocess.run(argv, check=True)


def destroy_fleet(state):
    path = os.path.join(state, "lab.json")
    lab = {}
    if os.path.exists(path):
        with open(path) as handle:
            lab = json.load(handle)
    for node in (lab.get("nodes") or {}).values():
        # A failure scenario may have left a directory read-only: make it the user's to remove again.
        top = os.path.join(node["home"], FLEET_DIR)
        if os.path.exists(top):
            subprocess.run(["chmod", "-R", "u+w", top], check=False)
            shutil.rmtree(top, ignore_errors=True)
    destroy(state)
    shutil.rmtree(os.path.join(state, "wheel-store"), ignore_errors=True)


def create(state):
    os.makedirs(state, exist_ok=True)
    world = serve_world(state)
    python312 = harness.shared_python(harness.PY312, "python3.12")
    shared = shared_hosts()
    hosts_dir = os.path.join(shared, "hosts")
    lab = {"world": world, "pins": os.path.join(world, "pins-v26.5.yml"), "python312": python312,
           "pins_by_release": dict((r, os.path.join(world, "pins-%s.yml" % r)) for r in ("v26.5", "v26.5.1")),
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
        # sshd removes its own pid file when it exits on the signal: gone already is fine.
        try:
            os.unlink(pidfile)
        except FileNotFoundError:
            pass
    world = lab.get("world") or os.path.join(state, "world")
    if os.path.exists(os.path.join(world, "world.json")) and world_serve.main(["status", "--root", world]) == 0:
        world_serve.main(["stop", "--root", world])
    for directory in (lab.get("base"), lab.get("shared")):
        if directory:
            shutil.rmtree(directory, ignore_errors=True)
    if os.path.exists(path):
        os.unlink(path)


def main(argv):
    actions = {"create": create, "destroy": destroy, "create-fleet": create_fleet, "destroy-fleet": destroy_fleet}
    if len(argv) != 3 or argv[1] not in actions:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    actions[argv[1]](os.path.abspath(argv[2]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
