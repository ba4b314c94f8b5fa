"""pip_constrained under attack and under a failing network, for real (ansible-playbook, the venv's pip).

- Option injection, state=absent guards and a non-venv prefix are refused before pip runs, and
  nothing is written outside the venv.
- A token in an index URL appears nowhere: task output (-vvv), return values (invocation included),
  the log file; the log file is not readable by others.
- An index that is down, a host that does not resolve, 503s and connection resets each fail with a
  message naming the class and the host; 503 twice then 200 succeeds, the retries in the log.
The failing index is a loopback server that fails on purpose (pipkit.FaultyIndex).
"""
# pytest finds the imported fixtures by name:
# pylint: disable=unused-import,redefined-outer-name
import json
import os
import socket
import stat
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tests"))

from world.lib.index import write_simple_index  # noqa: E402
from world.lib.wheel import build_wheel  # noqa: E402
from pipkit import (  # noqa: E402,F401  (fixtures: ansible_dir, run, template_venv, venv)
    FaultyIndex, ansible_dir, installed, run, task, template_venv, venv)

pytestmark = pytest.mark.functional

TOKEN = "tok-9f2c1e77b3d0a4"
FAST = {"retry_delay": 0.1}


@pytest.fixture(scope="module")
def faulty(tmp_path_factory):
    root = tmp_path_factory.mktemp("faulty-index")
    build_wheel(str(root / "files"), "einops", "0.8.1", files={"einops/__init__.py": ""})
    write_simple_index(str(root / "files"), str(root / "simple"), "/files")
    index = FaultyIndex(root)
    yield index
    index.close()


def closed_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def ignoring(args, **kw):
    item = task(args, **kw)
    item["ignore_errors"] = True
    return item


# ---- Must show 2: refused before pip runs, nothing written outside the venv ------------------------

def test_injection_absent_guards_and_a_non_venv_are_refused_before_pip_runs(venv, run, tmp_path):
    outside = tmp_path / "outside"
    evil = ["--target=%s" % outside, "-r/etc/passwd", "--index-url=http://127.0.0.1:9/simple", "--user",
            "einops\n--target=%s" % outside, "file:///etc/passwd"]
    prefix = tmp_path / "prefix"            # a directory that is not a venv: its "python" records being run
    (prefix / "bin").mkdir(parents=True)
    (prefix / "bin" / "python").write_text("#!/bin/sh\ntouch %s/ran\n" % prefix)
    os.chmod(str(prefix / "bin" / "python"), 0o755)
    before = installed(venv)
    tasks = [ignoring({"venv": str(venv), "name": [text]}) for text in evil]
    tasks += [ignoring({"venv": str(venv), "name": ["einops"], "extra_args": ["--target=%s" % outside]}),
              ignoring({"venv": str(venv), "name": ["einops"], "extra_args": ["einops", "--no-cache-dir"]})]
    guarded = (["*"], ["p*"], ["pip"], ["setup?ools"])
    tasks += [ignoring({"venv": str(venv), "name": names, "state": "absent"}) for names in guarded]
    tasks += [ignoring({"venv": str(prefix), "name": ["einops"]}),
              ignoring({"venv": str(prefix), "name": ["einops"]}, check=True),
              ignoring({"venv": str(prefix), "name": ["einops"], "state": "absent"})]
    results = run.play(tasks)
    assert len(results) == len(tasks)
    for (result, failed), item in zip(results, tasks):
        args = item["primus.trainenv.pip_constrained"]
        assert failed, args
        assert result["commands"] == [], (args, result["commands"])
        assert result["failure"] in ("bad_request", "not_a_venv"), (args, result["msg"])
    messages = [r["msg"] for r, _f in results]
    assert 'starts with "-": a name is a requirement, a path or a URL, never a pip option' in messages[0]
    assert "line break" in messages[4]
    assert "file:///etc/passwd is a local file that is neither a wheel, an sdist archive" in messages[5]
    assert "root:" not in messages[5]
    assert "extra_args[0]: '--target=%s' is refused" % outside in messages[6]
    assert "extra_args[0]: 'einops' is not an option" in messages[7]
    assert "matches pip, setuptools, wheel" in messages[8] and "matches pip" in messages[9]
    assert "state=absent of pip is refused" in messages[10] and "matches setuptools" in messages[11]
    assert "is not a virtual environment (it has no pyvenv.cfg)" in messages[12]
    assert not outside.exists() and not (prefix / "ran").exists()
    assert installed(venv) == before


# ---- Must show 3: a token in an index URL appears nowhere ----------------------------------------

def test_a_token_in_an_index_url_appears_nowhere(faulty, venv, run, tmp_path):
    log = tmp_path / "logs" / "pydeps.log"
    index = "http://ci-user:%s@%s/simple" % (TOKEN, faulty.host)
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("--extra-index-url http://other:%s@%s/simple\neinops\n" % (TOKEN, faulty.host))
    ok = {"venv": str(venv), "name": ["einops==0.8.1"], "index_url": index, "log_path": str(log)}
    failing = {"venv": str(venv), "index_url": index, "log_path": str(log), "retries": 1, "name": ["einops==9.9"]}
    # An index line in a requirements file is refused; the refusal names it without the token.
    refused = {"venv": str(venv), "requirements": str(requirements), "index_url": index, "log_path": str(log)}
    faulty.fail("503", 0)
    results = run.play([task(ok, diff=True), ignoring(failing, diff=True), ignoring(refused, diff=True)], verbosity=3)
    (installed_ok, failed_ok), (result_fail, failed_fail), (result_refused, failed_refused) = results
    assert not failed_ok and installed_ok["added"] == [{"name": "einops", "version": "0.8.1"}]
    assert failed_fail and result_fail["failure"] == "not_found"
    assert failed_refused and result_refused["failure"] == "bad_request" and result_refused["commands"] == []
    assert "--extra-index-url=http://other:****@%s/simple is refused" % faulty.host in result_refused["msg"]
    assert "ci-user:****@%s" % faulty.host in " ".join(installed_ok["cmd"])
    everything = json.dumps([r for r, _f in results]) + run.stdout + log.read_text()
    assert TOKEN not in everything
    assert stat.S_IMODE(os.stat(str(log)).st_mode) == 0o640
    assert stat.S_IMODE(os.stat(str(log.parent)).st_mode) == 0o750


# ---- Must show 4: failures that name their cause ------------------------------------------------------

def test_503_twice_then_200_succeeds_with_the_retries_in_the_log(faulty, venv, run, tmp_path):
    log = tmp_path / "pip.log"
    faulty.fail("503", 2)
    seen = len(faulty.seen)
    result, failed = run(dict(FAST, venv=str(venv), name=["einops"], index_url="http://%s/simple" % faulty.host,
                              log_path=str(log)))
    assert not failed, result.get("msg")
    assert result["added"] == [{"name": "einops", "version": "0.8.1"}]
    assert [(r["class"], r["status"], r["host"]) for r in result["retried"]] == [("http", 503, faulty.host)] * 2
    assert [r["delay"] for r in result["retried"]] == [0.1, 0.2]
    assert [o for _p, o in faulty.seen[seen:]][:3] == ["503", "503", "ok"]
    text = log.read_text()
    assert "pip install: attempt 1 of 4 failed [http 503] %s; retrying in 0.1 s" % faulty.host in text
    assert "pip install: attempt 2 of 4 failed [http 503] %s; retrying in 0.2 s" % faulty.host in text
    assert "(attempt 3 of 4)" in text and "Successfully installed einops-0.8.1" in text


@pytest.mark.parametrize("case", ["refused", "dns", "503", "reset"])
def test_each_failure_names_its_class_and_host(faulty, venv, run, case):
    faulty.fail("503" if case == "503" else "reset", 50 if case in ("503", "reset") else 0)
    host = {"refused": "127.0.0.1:%d" % closed_port(), "dns": "nonexistent.invalid"}.get(case, faulty.host)
    scheme = "https" if case == "dns" else "http"
    result, failed = run(dict(FAST, venv=str(venv), name=["einops"], index_url="%s://%s/simple" % (scheme, host),
                              retries=1))
    faulty.fail("503", 0)
    assert failed
    label = {"refused": "refused", "dns": "dns", "503": "http 503", "reset": "reset"}[case]
    first, second = result["msg"].splitlines()[:2]
    assert first.startswith("pip install failed: [%s] %s" % (label, host)), first
    if case in ("refused", "dns"):
        assert "primus_pip_use_config: true" in first and result["retried"] == []   # not transient
    else:
        assert "(2 attempts)" in first and len(result["retried"]) == 1               # transient: retried
    assert second.startswith("pip: ") and host.split(":")[0] in second
    assert result["failure"] == label.split()[0] and result["failure_detail"]["host"] == host
    assert len(result["msg"]) < 1500 and "No matching distribution" not in first
