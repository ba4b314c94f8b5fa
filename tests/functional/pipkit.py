"""Building blocks shared by the pip_constrained functional tests.

Projects with an in-tree PEP 517 backend, target venvs (one template per session, copied per test),
and a runner for playbooks of pip_constrained tasks: one ansible-playbook process per call, the
module run by the controller's python, each task result recorded by the test callback as JSON.
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PY312 = os.environ.get("PRIMUS_TEST_PYTHON312") or "/root/.pyenv/versions/3.12.1/bin/python3.12"
PY310 = os.environ.get("PRIMUS_TEST_PYTHON310") or "/root/.pyenv/versions/3.10.13/bin/python3.10"
CONTROLLER_BIN = os.path.dirname(sys.executable)
ROCM = "2.12.0+rocm7.15.0a20260720"
CALLBACK_PLUGINS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "callback_plugins")

# A PEP 517 backend kept inside the project (backend-path), so builds need no setuptools and no
# network. It records the MARK environment variable it saw, to prove `environment` reaches builds.
BACKEND = '''
import base64, hashlib, json, os, zipfile

def _project():
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "project.json")) as handle:
        return json.load(handle)

def _dist(p):
    return "%s-%s" % (p["name"].replace("-", "_"), p["version"])

def _metadata(p):
    lines = ["Metadata-Version: 2.1", "Name: %s" % p["name"], "Version: %s" % p["version"]]
    lines += ["Requires-Dist: %s" % r for r in p.get("requires", [])]
    return "\\n".join(lines) + "\\n"

def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    p = _project()
    info = _dist(p) + ".dist-info"
    os.makedirs(os.path.join(metadata_directory, info))
    with open(os.path.join(metadata_directory, info, "METADATA"), "w") as handle:
        handle.write(_metadata(p))
    return info

def _wheel(wheel_directory, p, files):
    info = _dist(p) + ".dist-info"
    files = dict(files)
    files[info + "/METADATA"] = _metadata(p)
    files[info + "/WHEEL"] = "Wheel-Version: 1.0\\nGenerator: test-backend\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"
    record = []
    for path, text in files.items():
        data = text.encode()
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append("%s,sha256=%s,%d" % (path, digest, len(data)))
    record.append(info + "/RECORD,,")
    name = _dist(p) + "-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as zf:
        for path, text in files.items():
            zf.writestr(path, text)
        zf.writestr(info + "/RECORD", "\\n".join(record) + "\\n")
    return name

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    p = _project()
    return _wheel(wheel_directory, p, {p["module"] + "/__init__.py": "BUILT_WITH_MARK = %r\\n" % os.environ.get("MARK")})

# PEP 660: an editable install is a .pth file pointing at the project.
prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel

def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    p = _project()
    here = os.path.dirname(os.path.abspath(__file__))
    return _wheel(wheel_directory, p, {"_%s_editable.pth" % p["module"]: here + "\\n"})
'''


def project_files(name, version, static=True, requires=()):
    """{file: text} of a project whose build needs no setuptools and no network (backend-path).

    static: a [project] table with name, version and dependencies; else everything comes from the backend.
    """
    project = {"name": name, "version": version, "module": name.replace("-", "_"), "requires": list(requires)}
    pyproject = '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n'
    if static:
        pyproject += '\n[project]\nname = "%s"\nversion = "%s"\ndependencies = %s\n' % (
            name, version, json.dumps(list(requires)))
    return {"project.json": json.dumps(project), "backend.py": BACKEND, "pyproject.toml": pyproject}


def make_project(path, name, version, static=True, requires=()):
    """Write project_files() into the directory `path` (created) and return it."""
    path = pathlib.Path(path)
    path.mkdir(parents=True)
    for rel, text in project_files(name, version, static, requires).items():
        (path / rel).write_text(text)
    return path


@pytest.fixture(scope="session")
def template_venv(tmp_path_factory):
    path = tmp_path_factory.mktemp("pipc-template") / "venv"
    subprocess.run([PY312, "-m", "venv", str(path)], check=True, env=clean_env())
    return path


@pytest.fixture
def venv(template_venv, tmp_path):
    path = tmp_path / "venv"
    shutil.copytree(str(template_venv), str(path), symlinks=True)
    return path


@pytest.fixture(scope="session")
def ansible_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("pipc-ansible")
    (root / "ansible.cfg").write_text("[defaults]\n")
    return root


def clean_env(**extra):
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "PRIMUS_")))
    env.update(extra)
    return env


def installed(venv):
    """The installed set, read independently of the module."""
    code = ("import json, importlib.metadata as m; "
            "print(json.dumps(sorted([d.metadata['Name'].lower(), d.version] for d in m.distributions())))")
    out = subprocess.run([str(venv / "bin" / "python"), "-I", "-c", code], check=True, capture_output=True,
                         text=True).stdout
    return [tuple(x) for x in json.loads(out)]


def pip_direct(venv, *args):
    """Prepare a venv state with plain pip (isolated), not through the module."""
    env = clean_env(PIP_CONFIG_FILE=os.devnull)
    env = dict((k, v) for k, v in env.items() if not k.startswith("PIP_") or k == "PIP_CONFIG_FILE")
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
                   + list(args), check=True, env=env)


def task(args, check=False, diff=False):
    return {"primus.trainenv.pip_constrained": args, "check_mode": check, "diff": diff}


class Runner(object):
    """Runs a playbook of pip_constrained tasks (one ansible-playbook process per call)."""

    def __init__(self, ansible_dir, tmp_path):
        self.dir = ansible_dir
        self.tmp = tmp_path
        self.count = 0
        self.stdout = ""

    def play(self, tasks, interpreter=None, env=None, verbosity=0):
        """Return [(result dict, failed)] for the tasks that ran (a failed task ends the play)."""
        self.count += 1
        playbook = self.tmp / ("play%d.yml" % self.count)
        playbook.write_text(json.dumps([{"hosts": "localhost", "gather_facts": False, "tasks": tasks}]))
        results = self.tmp / ("play%d.jsonl" % self.count)
        cmd = [os.path.join(CONTROLLER_BIN, "ansible-playbook"), "-i", "localhost,", "-c", "local",
               "-e", "ansible_python_interpreter=%s" % (interpreter or sys.executable), str(playbook)]
        cmd += ["-v"] * verbosity
        run_env = clean_env(ANSIBLE_CONFIG=str(self.dir / "ansible.cfg"),
                            ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".collections"),
                            ANSIBLE_CALLBACK_PLUGINS=CALLBACK_PLUGINS,
                            ANSIBLE_CALLBACKS_ENABLED="primus_test_results", PRIMUS_TEST_RESULTS=str(results),
                            ANSIBLE_LOCAL_TEMP=str(self.tmp / "ansible-local"),
                            ANSIBLE_REMOTE_TMP=str(self.tmp / "ansible-remote"), ANSIBLE_NOCOLOR="1",
                            ANSIBLE_DEPRECATION_WARNINGS="0")
        run_env.update(env or {})
        proc = subprocess.run(cmd, cwd=str(self.tmp), env=run_env, capture_output=True, text=True, timeout=300,
                              check=False)
        self.stdout = proc.stdout
        assert results.exists(), "no task result (rc=%d):\n%s\n%s" % (proc.returncode, proc.stdout, proc.stderr)
        records = [json.loads(line) for line in results.read_text().splitlines()]
        return [(r["result"], r["status"] == "failed") for r in records]

    def __call__(self, args, check=False, diff=False, interpreter=None, env=None):
        """One task; return (result dict, failed)."""
        return self.play([task(args, check, diff)], interpreter, env)[0]


@pytest.fixture
def run(ansible_dir, tmp_path):
    return Runner(ansible_dir, tmp_path)


class FaultyIndex(object):
    """A static PEP 503 index on 127.0.0.1 that fails on purpose.

    fail(kind, times): the next `times` requests fail - kind "503" (an HTTP 503 answer) or "reset"
    (the connection is closed with a TCP RST before any answer). `seen` lists (path, outcome).
    """

    def __init__(self, root):
        import functools
        import http.server
        import socket
        import struct
        import threading
        index = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - name fixed by the base class
                with index.lock:
                    kind = index.failures.pop(0) if index.failures else None
                index.seen.append((self.path, kind or "ok"))
                if kind == "503":
                    self.send_response(503)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                elif kind == "reset":
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.connection.close()
                else:
                    super().do_GET()

            def log_message(self, format, *args):  # noqa: A002 - signature fixed by the base class
                pass

        self.lock = threading.Lock()
        self.failures = []
        self.seen = []
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(root)))
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.host = "127.0.0.1:%d" % self.httpd.server_address[1]

    def fail(self, kind, times):
        with self.lock:
            self.failures = [kind] * times

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
