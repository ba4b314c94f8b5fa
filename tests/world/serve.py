"""Serve a built world on its fixed loopback address (127.0.0.1 only).

    python3 tests/world/serve.py start  --root .world   # returns once the server answers
    python3 tests/world/serve.py status --root .world   # exit 0 when running, 3 when not
    python3 tests/world/serve.py stop   --root .world   # leaves no process behind

The port is the one the world was built for (world.json), since its URLs and commits contain
it. The pid file and log live in the root (server.pid, server.log: one line per request). Static
files only: the git remotes use git's dumb HTTP protocol, so a user who cannot read the
directory still clones.

`start` succeeds only when the server that answers is the one it started: each start gives its
server a fresh nonce, which the server returns at /.world-server. A port that another process
holds (another world's server, anything else) is an error naming that process, never a success.
"""
import argparse
import errno
import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from world.lib.server import IDENTITY_PATH, port_holder  # noqa: E402

EXIT_PORT_TAKEN = 98  # the server's exit status when its port is in use (EADDRINUSE)


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
    """(pid, nonce) from the pid file; (0, None) when there is none."""
    try:
        with open(pidfile) as handle:
            fields = handle.read().split()
        return int(fields[0]), (fields[1] if len(fields) > 1 else None)
    except (OSError, ValueError, IndexError):
        return 0, None


_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never a proxy


def _answers_as(url, pid, nonce, timeout=1.0):
    """True when the server answering at url is the process pid started with nonce."""
    try:
        with _OPENER.open(url + IDENTITY_PATH, timeout=timeout) as response:
            answer = json.loads(response.read().decode())
    except (OSError, ValueError):
        return False
    return bool(nonce) and answer.get("pid") == pid and answer.get("nonce") == nonce


def running(root):
    """pid of the world's server, or 0."""
    _root, pidfile, _log = _paths(root)
    pid = _read_pid(pidfile)[0]
    return pid if pid and _alive(pid) and _is_ours(pid) else 0


def _port_taken_message(port, root):
    holder, cmdline = port_holder(port)
    args = (cmdline or "").split()
    if "serve.py" in cmdline and "--root" in args[:-1]:
        other = args[args.index("--root") + 1]
        fix = "It is the world server of %s: stop it (python3 tests/world/serve.py stop --root %s)" % (other, other)
    else:
        fix = "Stop it"
    return ("world server for %s cannot listen on 127.0.0.1:%d: the port is taken by %s. %s, or build this "
            "world for a free port (make world WORLD_PORT=<port>, or build.py --port <port>)."
            % (root, port, "pid %d (%s)" % (holder, cmdline) if holder else "a process this user cannot see", fix))


def start(root, timeout=60.0):
    root, pidfile, logfile = _paths(root)
    port = _port(root)
    url = "http://127.0.0.1:%d" % port
    pid, nonce = _read_pid(pidfile)
    if running(root):
        if _answers_as(url, pid, nonce):
            print("world already served at %s (pid %d)" % (url, pid))
            return 0
        stop(root)  # ours, but not (or no longer) the one answering on the port
    nonce = secrets.token_hex(16)
    env = dict(os.environ, WORLD_SERVER_NONCE=nonce)
    with open(logfile, "ab") as log:
        proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "run", "--root", root],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                                close_fds=True, env=env)
    with open(pidfile, "w") as handle:
        handle.write("%d %s\n" % (proc.pid, nonce))
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            os.unlink(pidfile)
            if proc.returncode == EXIT_PORT_TAKEN:
                print(_port_taken_message(port, root), file=sys.stderr)
                return 1
            with open(logfile) as handle:
                tail = handle.read()[-2000:]
            print("world server exited with %s:\n%s" % (proc.returncode, tail), file=sys.stderr)
            return 1
        if _answers_as(url, proc.pid, nonce):
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
    pid, nonce = _read_pid(_paths(root)[1])
    url = "http://127.0.0.1:%d" % _port(root)
    if running(root):
        if _answers_as(url, pid, nonce):
            print("running: %s (pid %d)" % (url, pid))
            return 0
        print("pid %d is running but does not answer at %s" % (pid, url))
        return 3
    print("stopped")
    return 3


def run(root):
    """The server process itself (started detached by `start`)."""
    from world.lib.server import serve
    stop_requested = []
    signal.signal(signal.SIGTERM, lambda *_: stop_requested.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop_requested.append(1))
    port = _port(root)
    try:
        with serve(os.path.abspath(root), port, nonce=os.environ.get("WORLD_SERVER_NONCE"),
                   access_log=sys.stderr) as url:
            sys.stderr.write("serving %s on %s\n" % (root, url))
            while not stop_requested:
                time.sleep(0.2)
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            raise
        sys.stderr.write("127.0.0.1:%d is already in use (%s)\n" % (port, exc))
        return EXIT_PORT_TAKEN
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("action", choices=("start", "stop", "status", "run"))
    parser.add_argument("--root", default=os.path.join(os.path.dirname(os.path.dirname(HERE)), ".world"))
    args = parser.parse_args(argv)
    return {"start": start, "stop": stop, "status": status, "run": run}[args.action](args.root)


if __name__ == "__main__":
    sys.exit(main())
