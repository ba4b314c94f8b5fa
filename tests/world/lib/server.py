"""A static file server bound to 127.0.0.1 only (indexes and dumb-HTTP git remotes).

Caching headers follow PyPI: distribution files under a content-addressed path
(`.../files/<sha256 prefix>/<file>`, see index.py) never change, so they are served with
`Cache-Control: max-age=365000000, immutable, public` like files.pythonhosted.org; index pages
get `max-age=600, public` like pypi.org/simple (pip revalidates them anyway, with
If-Modified-Since); everything else (git refs that tests move, world.json) `no-cache`.
`GET /.world-server` answers with this process's identity (pid and the nonce it was started
with), so a starter can prove that the server answering on a port is the one it started.

Faults on purpose (the fault matrix, tests/functional/test_faults.py): each `<root>/.world-faults/<name>.json`,
`{"match": <regex on the request path>, "action": "503" | "hold", "times": <n, default 1>}`, applies to the first
`times` requests whose path matches it (counted per version of the file): "503" answers 503 Service Unavailable,
"hold" writes `<name>.at` (the path) and keeps the request waiting while `<name>.json` exists, then serves it.
"""
import contextlib
import functools
import http.server
import json
import os
import re
import threading
import time

IDENTITY_PATH = "/.world-server"
FAULTS_DIR = ".world-faults"
IMMUTABLE = "max-age=365000000, immutable, public"
INDEX_PAGE = "max-age=600, public"
_CONTENT_ADDRESSED = re.compile(r"/files/[0-9a-f]{16}/[^/]+$")


def cache_control(path):
    """The Cache-Control value for a request path."""
    path = path.split("?", 1)[0].split("#", 1)[0]
    if _CONTENT_ADDRESSED.search(path):
        return IMMUTABLE
    if not path.startswith("/git/") and (path.endswith("/") or path.endswith("/index.html")):
        return INDEX_PAGE
    return "no-cache"


class Faults(object):
    """The rules of <root>/.world-faults/ (module docstring), read at every request."""

    def __init__(self, root):
        self.dir = os.path.join(root, FAULTS_DIR)
        self.lock = threading.Lock()
        self.counts = {}

    def match(self, path):
        """(action, rule file) of the first rule that applies to a request path, or None."""
        try:
            names = sorted(n for n in os.listdir(self.dir) if n.endswith(".json"))
        except OSError:
            return None
        for name in names:
            rule_path = os.path.join(self.dir, name)
            try:
                version = os.stat(rule_path)
                with open(rule_path) as handle:
                    rule = json.load(handle)
            except (OSError, ValueError):
                continue
            if not re.search(rule["match"], path):
                continue
            key = (name, version.st_ino, version.st_mtime_ns)
            with self.lock:
                if self.counts.get(key, 0) >= int(rule.get("times", 1)):
                    continue
                self.counts[key] = self.counts.get(key, 0) + 1
            return rule["action"], rule_path
        return None


class _Handler(http.server.SimpleHTTPRequestHandler):
    identity = None     # bytes served at IDENTITY_PATH
    access_log = None   # a text stream, or None for a quiet server
    faults = None       # a Faults, or None
    disable_nagle_algorithm = True  # headers and body go out at once (no 40 ms delayed-ACK stall per request)

    def end_headers(self):
        self.send_header("Cache-Control", cache_control(self.path))
        super().end_headers()

    def do_GET(self):  # noqa: N802 - name fixed by the base class
        if self.path.split("?", 1)[0] == IDENTITY_PATH and self.identity is not None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(self.identity)))
            self.end_headers()
            self.wfile.write(self.identity)
            return
        fault = self.faults.match(self.path.split("?", 1)[0]) if self.faults is not None else None
        if fault is not None and fault[0] == "503":
            self.send_error(503, "world fault: %s" % os.path.basename(fault[1]))
            return
        if fault is not None and fault[0] == "hold":
            at = fault[1][:-len(".json")] + ".at"
            with open(at + ".tmp", "w") as handle:
                handle.write(self.path + "\n")
            os.rename(at + ".tmp", at)
            while os.path.exists(fault[1]):
                time.sleep(0.05)
        super().do_GET()

    def log_message(self, format, *args):  # noqa: A002 - signature fixed by the base class
        if self.access_log is not None:
            self.access_log.write("%s [%s] %s\n" % (self.address_string(), self.log_date_time_string(), format % args))
            self.access_log.flush()


@contextlib.contextmanager
def serve(root, port=0, nonce=None, access_log=None):
    """Serve root on 127.0.0.1:port (0 = any free port); yields the base URL.

    nonce: served (with the pid) at /.world-server. access_log: a stream that gets one line per
    request (e.g. sys.stderr); default quiet. Raises OSError (EADDRINUSE) when the port is taken.
    """
    identity = json.dumps({"pid": os.getpid(), "nonce": nonce, "root": os.path.abspath(root)}).encode()
    handler = functools.partial(type("Handler", (_Handler,), {"identity": identity, "access_log": access_log,
                                                              "faults": Faults(root)}),
                                directory=root)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield "http://127.0.0.1:%d" % httpd.server_address[1]
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def port_holder(port):
    """(pid, command line) of the process listening on 127.0.0.1/0.0.0.0:port, as far as /proc shows it."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as handle:
                lines = handle.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add("socket:[%s]" % fields[9])
    if not inodes:
        return None, None
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fds = os.listdir("/proc/%s/fd" % pid)
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink("/proc/%s/fd/%s" % (pid, fd)) in inodes:
                    with open("/proc/%s/cmdline" % pid, "rb") as handle:
                        return int(pid), handle.read().replace(b"\0", b" ").decode(errors="replace").strip()
            except OSError:
                continue
    return None, None
