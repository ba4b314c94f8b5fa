"""Serve a built world on its fixed loopback address (127.0.0.1 only).

    python3 tests/world/serve.py start  --root .world   # returns once the server answers
    python3 tests/world/serve.py status --root .world   # exit 0 when running, 3 when not
    python3 tests/world/serve.py stop   --root .world   # leaves no process behind

The port is the one the world was built for (world.json), since its URLs and commits contain
it. The pid file and log live in the root (server.pid, server.log). Static files only: the git
remotes use git's dumb HTTP protocol, so a user who cannot read the directory still clones.
"""
import argparse
import errno
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))


def _paths(root):
    root = os.path.abspath(root)
    return root, os.path.join(root, "server.pid"), os.path.join(root, "server.log")


def _port(root):
    with open(os.path.join(root, "world.json")) as handle:
        return int(json.load(handle)["port"])


def _alive(pid):
    try:
        os.kill(pid, 0)
    except OSError as exc:
        return exc.errno == errno.EPERM
    try:  # a zombie child is not alive
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def _is_ours(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            return b"serve.py" in handle.read()
    except OSError:
        return False


def _read_pid(pidfile):
    try:
        with open(pidfile) as handle:
            return int(handle.read().strip() or 0)
    except (OSError, ValueError):
        return 0


def _answers(url, timeout=1.0):
    try:
        with urllib.request.urlopen(url + "/world.json", timeout=timeout) as response:
            return response.status == 200
    except OSError:
        return False


def running(root):
    """pid of the world's server, or 0."""
    _root, pidfile, _log = _paths(root)
    pid = _read_pid(pidfile)
    return pid if pid and _alive(pid) and _is_ours(pid) else 0


def start(root, timeout=15.0):
    root, pidfile, logfile = _paths(root)
    port = _port(root)
    url = "http://127.0.0.1:%d" % port
    if running(root):
        print("world already served at %s (pid %d)" % (url, running(root)))
        return 0
    with open(logfile, "ab") as log:
        proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "run", "--root", root],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                                close_fds=True)
    with open(pidfile, "w") as handle:
        handle.write("%d\n" % proc.pid)
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            os.unlink(pidfile)
            with open(logfile) as handle:
                tail = handle.read()[-2000:]
            print("world server exited with %s:\n%s" % (proc.returncode, tail), file=sys.stderr)
            return 1
        if _answers(url):
            print("world served at %s (pid %d)" % (url, proc.pid))
            return 0
        time.sleep(0.1)
    stop(root)
    print("world server did not answer at %s within %.0f s" % (url, timeout), file=sys.stderr)
    return 1


def stop(root, timeout=10.0):
    root, pidfile, _log = _paths(root)
    pid = running(root)
    if pid:
        os.kill(pid, signal.SIGTERM)
        deadline = time.time() + timeout
        while _alive(pid) and time.time() < deadline:
            time.sleep(0.05)
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
            while _alive(pid):
                time.sleep(0.05)
        print("world server stopped (pid %d)" % pid)
    if os.path.exists(pidfile):
        os.unlink(pidfile)
    return 0


def status(root):
    pid = running(root)
    if pid:
        print("running: http://127.0.0.1:%d (pid %d)" % (_port(root), pid))
        return 0
    print("stopped")
    return 3


def run(root):
    """The server process itself (started detached by `start`)."""
    from world.lib.server import serve
    stop_requested = []
    signal.signal(signal.SIGTERM, lambda *_: stop_requested.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop_requested.append(1))
    with serve(os.path.abspath(root), _port(root)) as url:
        sys.stdout.write("serving %s on %s\n" % (root, url))
        sys.stdout.flush()
        while not stop_requested:
            time.sleep(0.2)
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("action", choices=("start", "stop", "status", "run"))
    parser.add_argument("--root", default=os.path.join(os.path.dirname(os.path.dirname(HERE)), ".world"))
    args = parser.parse_args(argv)
    return {"start": start, "stop": stop, "status": status, "run": run}[args.action](args.root)


if __name__ == "__main__":
    sys.exit(main())
