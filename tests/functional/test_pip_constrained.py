"""primus.trainenv.pip_constrained for real: ansible-playbook, the venv's own pip, a loopback index.

The tests build tiny deterministic stand-in wheels (tests/world/lib/wheel.py), write a PEP 503
index (tests/world/lib/index.py) and serve it on 127.0.0.1 (tests/world/lib/server.py). Target venvs
come from PRIMUS_TEST_PYTHON312 (default pyenv's 3.12.1) with the pip that venv bundles; one
template venv is made per session and copied per test. The module runs through ansible-playbook
with the controller's python; the test callback in tests/functional/callback_plugins records each
task result as JSON. This machine's own PIP_* variables are deliberately left in the environment: the
module must not see them (use_pip_config defaults to false).
"""
# pytest finds the imported fixtures by name:
# pylint: disable=unused-import,redefined-outer-name
import json
import os
import re
import subprocess
import sys
import time
import urllib.parse
import zipfile

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tests"))
sys.path.insert(0, os.path.join(REPO, ".collections"))

from world.lib import downloads, packages  # noqa: E402
from world.lib.index import publish, write_simple_index  # noqa: E402
from world.lib.server import serve  # noqa: E402
from world.lib.wheel import build_wheel  # noqa: E402
from ansible_collections.primus.trainenv.plugins.module_utils._pip.probe import RACY_SECONDS  # noqa: E402
from pipkit import (  # noqa: E402,F401  (fixtures: ansible_dir, run, template_venv, venv)
    PY310, ROCM, Runner, ansible_dir, installed, make_project, pip_direct, run, task, template_venv, venv)

pytestmark = pytest.mark.functional


# ---- the world ------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("pipc-world")
    files = root / "files"
    empty = ""
    build_wheel(str(files), "torch", ROCM, files={"torch/__init__.py": "BUILD = 'rocm'\n"})
    build_wheel(str(files), "torch", "2.12.0+cpu", files={"torch/__init__.py": "BUILD = 'cpu'\n"})
    # The trap: an upstream torch that is newer and drags CUDA wheels in.
    build_wheel(str(files), "torch", "2.13.0", requires=["nvidia-cublas-cu12==12.1"],
                files={"torch/__init__.py": "BUILD = 'cuda'\n"})
    build_wheel(str(files), "nvidia-cublas-cu12", "12.1", files={"nvidia_cublas/__init__.py": empty})
    build_wheel(str(files), "needs-new-torch", "1.0", requires=["torch>=2.13"], files={"nnt/__init__.py": empty})
    build_wheel(str(files), "cuda-app", "1.0", requires=["torch"], files={"cuda_app/__init__.py": empty})
    build_wheel(str(files), "einops", "0.8.1", files={"einops/__init__.py": empty})
    build_wheel(str(files), "tqdm", "4.67.3", files={"tqdm/__init__.py": empty})
    build_wheel(str(files), "tilelang", "0.1.8", files={"tilelang/__init__.py": empty})
    build_wheel(str(files), "quack-kernels", "0.3.1", files={"quack/__init__.py": empty})
    build_wheel(str(files), "nvidia-cutlass-dsl", "4.6.0", files={"cutlass/__init__.py": empty})
    write_simple_index(str(files), str(root / "simple"), "/files")
    trap = root / "trap-links"  # what this machine's PIP_FIND_LINKS-like config could inject
    build_wheel(str(trap), "einops", "9.9.9", files={"einops/__init__.py": "TRAP = True\n"})
    return root


@pytest.fixture(scope="session")
def index(world):
    with serve(str(world)) as base:
        yield base + "/simple"


# ---- 1: converged re-run: no pip, no network -------------------------------------------------

def test_install_then_rerun_without_index_server_and_without_pip(world, ansible_dir, venv, tmp_path):
    run = Runner(ansible_dir, tmp_path)
    log = tmp_path / "logs" / "torch.log"
    with serve(str(world)) as base:
        args = {"venv": str(venv), "name": ["torch==%s" % ROCM], "index_url": base + "/simple", "pre": True,
                "forbid": ["nvidia-*"], "log_path": str(log)}
        result, failed = run(args)
    assert not failed and result["changed"] is True
    assert result["added"] == [{"name": "torch", "version": ROCM}]
    assert ("torch", ROCM) in installed(venv)
    log_before = log.read_text()
    assert "--dry-run" in log_before and "Successfully installed torch" in log_before

    # The server is stopped now; and pip itself is made unrunnable: if the module started pip,
    # `python -m pip` would fail with "No module named pip".
    site = next((venv / "lib").glob("python3*/site-packages"))
    os.rename(str(site / "pip"), str(site / "pip.disabled"))
    try:
        result, failed = run(args)
    finally:
        os.rename(str(site / "pip.disabled"), str(site / "pip"))
    assert not failed, result.get("msg")
    assert result["changed"] is False and result["satisfied"] is True
    assert result["commands"] == [] and result["reasons"] == []
    assert log.read_text() == log_before


# ---- 2: a CPU torch is replaced by the pinned ROCm build ---------------------------------------

def test_cpu_torch_replaced_by_the_rocm_pin(world, index, venv, run):
    pip_direct(venv, "--no-index", "--find-links", str(world / "files"), "torch==2.12.0+cpu")
    assert ("torch", "2.12.0+cpu") in installed(venv)
    result, failed = run({"venv": str(venv), "name": ["torch==%s" % ROCM], "index_url": index}, diff=True)
    assert not failed and result["changed"] is True
    assert result["replaced"] == [{"name": "torch", "before": "2.12.0+cpu", "after": ROCM}]
    assert result["diff"] == {"before": "torch==2.12.0+cpu\n", "after": "torch==%s\n" % ROCM}
    assert ("torch", ROCM) in installed(venv) and ("torch", "2.12.0+cpu") not in installed(venv)
    code = "import torch; print(torch.BUILD)"
    assert subprocess.run([str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "rocm"


# ---- 3: a constraints conflict fails, says why, and changes nothing -----------------------------

def test_constraint_conflict_names_the_pinned_torch_and_leaves_the_venv(world, index, venv, run, tmp_path):
    pip_direct(venv, "--no-index", "--find-links", str(world / "files"), "torch==%s" % ROCM, "einops")
    constraints = tmp_path / "pip-constraints.txt"
    constraints.write_text("# Generated by tools/installation/setup.sh.\n"
                           "# Keeps pip from replacing the ROCm GPU stack with upstream builds.\n"
                           "torch==%s\n" % ROCM)
    before = installed(venv)
    result, failed = run({"venv": str(venv), "name": ["needs-new-torch"], "index_url": index,
                          "constraints": [str(constraints)]})
    assert failed and result["failure"] == "conflict"
    assert "needs-new-torch 1.0 depends on torch>=2.13" in result["msg"]
    assert "The user requested (constraint) torch==%s" % ROCM in result["msg"]
    assert "would replace the pinned ROCm torch (torch==%s from %s)" % (ROCM, constraints) in result["msg"]
    assert result["msg"].endswith("The venv is unchanged.")
    assert "ResolutionImpossible" in result["stderr"]
    assert result["rc"] == 1 and "--constraint=%s" % constraints in result["cmd"]
    assert installed(venv) == before


def test_an_expected_conflict_is_returned_not_warned_and_any_other_still_warns(world, index, venv, run, tmp_path):
    """pip's own post-install conflict report (a full resolve: use_pip_config, no exact plan): the line of a
    distribution in expected_conflicts is returned and logged, not warned (stages turbo and boto)."""
    line = "needs-new-torch 1.0 requires torch>=2.13, but you have torch %s which is incompatible." % ROCM
    log = tmp_path / "logs" / "turbo.log"
    args = {"venv": str(venv), "name": ["torch==%s" % ROCM], "index_url": index, "use_pip_config": True,
            "environment": {"PIP_CONFIG_FILE": os.devnull}, "log_path": str(log)}
    for expected in (["Needs_New_Torch"], []):
        pip_direct(venv, "--no-index", "--find-links", str(world / "files"), "needs-new-torch")
        assert ("torch", "2.13.0") in installed(venv)
        result, failed = run(dict(args, expected_conflicts=expected))
        assert not failed and ("torch", ROCM) in installed(venv), result
        warned = [w for w in result.get("warnings", []) if "needs-new-torch" in w]
        if expected:
            assert result["expected_conflicts"] == [line] and warned == [], result
        else:
            assert "expected_conflicts" not in result and len(warned) == 1 and warned[0].endswith(line), result
    assert log.read_text().count(line) == 3, "pip's report twice, the expected line once more"


# ---- 4: check mode, and --diff ------------------------------------------------------------------

def test_check_mode_plans_then_converged_reports_nothing(index, venv, run):
    args = {"venv": str(venv), "name": ["torch==%s" % ROCM, "cuda-app"], "index_url": index,
            "forbid": ["nvidia-*"]}
    before = installed(venv)
    (plan, failed), = run.play([task(args, check=True, diff=True)])
    assert not failed and plan["changed"] is True
    assert [(p["name"], p["version"], p["action"]) for p in plan["plan"]] == [
        ("cuda-app", "1.0", "install"), ("torch", ROCM, "install")]
    assert plan["diff"] == {"before": "", "after": "cuda-app==1.0\ntorch==%s\n" % ROCM}
    assert "+cuda-app==1.0" in run.stdout and "+torch==%s" % ROCM in run.stdout  # what --diff prints
    assert installed(venv) == before

    (real, failed), (again, failed_again) = run.play([task(args, diff=True), task(args, check=True, diff=True)])
    assert not failed and real["changed"] is True
    assert sorted(a["name"] for a in real["added"]) == ["cuda-app", "torch"]
    assert not failed_again and again["changed"] is False and again["commands"] == []
    assert again["diff"] == {"before": "", "after": ""}


# ---- 5: forbid ------------------------------------------------------------------------------------

def test_forbid_fails_before_install_naming_the_distribution_and_its_requirer(index, venv, run):
    before = installed(venv)
    result, failed = run({"venv": str(venv), "name": ["cuda-app"], "index_url": index, "forbid": ["nvidia-*"]})
    assert failed and result["failure"] == "forbidden"
    assert result["forbidden"][0]["name"] == "nvidia-cublas-cu12"
    assert result["forbidden"][0]["required_by"] == ["torch 2.13.0"]
    assert ("nvidia-cublas-cu12 12.1 (forbidden by nvidia-*): required by torch 2.13.0, required by cuda-app 1.0, "
            "requested by this task") in result["msg"]
    assert [("--dry-run" in c) for c in result["commands"]] == [True]
    assert installed(venv) == before


# ---- 6: src, requirements, find_links + no_index, absent: each works and is idempotent ---------

@pytest.mark.parametrize("static", [True, False], ids=["static-pyproject", "dynamic-metadata"])
def test_src_no_build_isolation_no_deps_is_idempotent(venv, run, tmp_path, static):
    src = make_project(tmp_path / "turbo", "primus-turbo", "0.2.0+edc8d2c", static=static,
                       requires=["triton==3.7.0", "not-on-any-index"])
    args = {"venv": str(venv), "src": str(src), "no_deps": True, "no_build_isolation": True,
            "environment": {"MARK": "from-task"}}
    (result, failed), (again, failed_again) = run.play([task(args), task(args)])
    assert not failed, result.get("msg")
    assert result["changed"] is True and result["added"] == [{"name": "primus-turbo", "version": "0.2.0+edc8d2c"}]
    code = "import primus_turbo; print(primus_turbo.BUILT_WITH_MARK)"
    assert subprocess.run([str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "from-task"
    result, failed = again, failed_again
    assert not failed and result["changed"] is False
    if static:
        assert result["src_project"]["source"] == "pyproject.toml" and result["commands"] == []
    else:
        # Dynamic metadata: pip prepares it once, offline, and installs nothing.
        assert result["src_project"] == {"name": "primus-turbo", "version": "0.2.0+edc8d2c", "source": "pip-metadata"}
        (cmd,) = result["commands"]
        assert "--dry-run" in cmd and "--no-index" in cmd and "--no-deps" in cmd


def test_a_project_directory_over_a_same_version_wheel_install_runs_pip_then_is_satisfied(venv, run, tmp_path):
    # pip installs a directory over a same-version copy that came from elsewhere (here a wheel of that name and
    # version); only a copy installed from that very directory is "satisfied" offline.
    src = make_project(tmp_path / "proj", "dirproj", "1.0", requires=[])
    whl = build_wheel(str(tmp_path / "w"), "dirproj", "1.0", files={"dirproj/__init__.py": "BUILT_WITH_MARK = 'wheel'\n"})
    from_wheel = task({"venv": str(venv), "name": [whl]})
    from_dir = task({"venv": str(venv), "src": str(src), "no_build_isolation": True, "environment": {"MARK": "dir"}})
    (first, failed), (second, failed2), (third, failed3) = run.play([from_wheel, from_dir, from_dir])
    assert not (failed or failed2 or failed3), (first.get("msg"), second.get("msg"), third.get("msg"))
    assert second["satisfied"] is False and "was not installed from the directory" in second["reasons"][0]
    code = "import dirproj; print(dirproj.BUILT_WITH_MARK)"
    assert subprocess.run([str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "dir"
    assert third["changed"] is False and third["satisfied"] is True and third["commands"] == []


def test_requirements_file_with_constraints_is_idempotent(index, venv, run, tmp_path):
    (tmp_path / "pins.txt").write_text("torch==%s\n" % ROCM)
    req = tmp_path / "requirements.txt"
    req.write_text("# like Primus's requirements.txt\neinops\ntqdm==4.67.3  # pinned\ncuda-app\n"
                   "torch==%s\n-c pins.txt\n" % ROCM)
    args = {"venv": str(venv), "requirements": str(req), "index_url": index, "forbid": ["nvidia-*"]}
    (result, failed), (again, failed_again) = run.play([task(args), task(args)])
    assert not failed, result.get("msg")
    assert sorted(a["name"] for a in result["added"]) == ["cuda-app", "einops", "torch", "tqdm"]
    assert not failed_again and again["changed"] is False and again["commands"] == []


def test_find_links_no_index_is_idempotent(world, venv, run):
    args = {"venv": str(venv), "name": ["tqdm==4.67.3", "einops"], "find_links": [str(world / "files")],
            "no_index": True}
    (result, failed), (again, failed_again) = run.play([task(args), task(args)])
    assert not failed and result["changed"] is True
    assert "--no-index" in result["cmd"] and "--find-links=%s" % (world / "files") in result["cmd"]
    assert not failed_again and again["changed"] is False and again["commands"] == []


def test_absent_with_names_and_patterns_is_idempotent(world, venv, run):
    pip_direct(venv, "--no-index", "--find-links", str(world / "files"), "tilelang", "quack-kernels",
               "nvidia-cutlass-dsl", "einops")
    args = {"venv": str(venv), "name": ["tilelang", "quack-kernels*", "nvidia-cutlass-dsl*", "never-installed"],
            "state": "absent"}
    (plan, failed_plan), (result, failed), (again, failed_again) = run.play(
        [task(args, check=True), task(args, diff=True), task(args)])
    assert not failed_plan and plan["changed"] is True and plan["commands"] == []
    assert not failed and result["changed"] is True  # so the check-mode run removed nothing
    assert [r["name"] for r in result["removed"]] == ["nvidia-cutlass-dsl", "quack-kernels", "tilelang"]
    assert result["diff"]["after"] == "" and "tilelang==0.1.8" in result["diff"]["before"]
    names = [n for n, _v in installed(venv)]
    assert "einops" in names and "tilelang" not in names and "quack-kernels" not in names
    assert not failed_again and again["changed"] is False and again["commands"] == []


# ---- isolation, forcereinstall, VCS, a module python without packaging ----------------------

def test_machine_pip_config_is_ignored_unless_asked(world, index, venv, run):
    trap = {"PIP_FIND_LINKS": str(world / "trap-links"), "PIP_INDEX_URL": "http://127.0.0.1:9/simple"}
    args = {"venv": str(venv), "name": ["einops"], "index_url": index}
    results = run.play([task(args), task({"venv": str(venv), "name": ["einops"], "state": "absent"}),
                        dict(task(dict(args, use_pip_config=True)), ignore_errors=True)], env=trap)
    assert [failed for _r, failed in results] == [False, False, True]
    assert results[0][0]["added"] == [{"name": "einops", "version": "0.8.1"}]
    assert results[1][0]["removed"] == [{"name": "einops", "version": "0.8.1"}]
    # Asked for, the machine's configuration applies - but a variable that redirects the install is refused.
    refused = results[2][0]
    assert refused["failure"] == "bad_request" and refused["commands"] == [] and "PIP_FIND_LINKS" in refused["msg"]
    assert "use_pip_config: false" in refused["msg"] and "einops" not in [n for n, _v in installed(venv)]


def test_forcereinstall_reports_the_reinstall(world, venv, run):
    args = {"venv": str(venv), "name": ["einops==0.8.1"], "find_links": [str(world / "files")], "no_index": True}
    (_first, _failed), (result, failed) = run.play([task(args), task(dict(args, state="forcereinstall"))])
    assert not failed and result["changed"] is True and result["reinstalled"] == ["einops"]
    assert result["added"] == [] and "--force-reinstall" in result["cmd"]


def git_tagged(repo, tag):
    """Make the project directory `repo` a git repository of one commit tagged `tag`; returns the commit."""
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "init"], check=True)
    subprocess.run(git + ["tag", tag], check=True)
    return subprocess.run(git + ["rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()


def install_stage_pip(venv):
    """The venv's pip as the venv stage bootstraps it (the real pip wheel of the world's snapshot)."""
    real = [d for d in packages.load_snapshot(packages.SNAPSHOT)["distributions"] if d["file"] == PIP_WHEEL]
    (wheel,) = downloads.fetch(os.path.join(REPO, ".cache", "world-downloads"), real)
    pip_direct(venv, "--no-index", wheel)


def test_vcs_requirement_pinned_to_a_commit_is_decided_offline_a_tag_goes_to_pip(venv, run, tmp_path):
    repo = make_project(tmp_path / "logging", "mlperf-logging", "4.1.0", static=False)
    commit = git_tagged(repo, "6.0.0-rc5")
    pinned = {"venv": str(venv), "name": ["git+file://%s@%s" % (repo, commit)], "no_build_isolation": True}
    tagged = dict(pinned, name=["git+file://%s@6.0.0-rc5#egg=mlperf-logging" % repo])
    (result, failed), (again, failed_again), (tag, failed_tag) = run.play([task(pinned), task(pinned), task(tagged)])
    assert not failed, result.get("msg")
    assert result["added"] == [{"name": "mlperf-logging", "version": "4.1.0"}]
    assert not failed_again and again["changed"] is False and again["commands"] == []
    # A tag may have moved since: pip decides (and changes nothing, the version is the same).
    assert not failed_tag, tag["msg"]
    assert tag["changed"] is False and len(tag["commands"]) == 1
    assert any("may have moved" in r for r in tag["reasons"])


def test_module_on_a_python_without_packaging_uses_the_venvs_pip_copy(world, venv, run):
    probe = subprocess.run([PY310, "-c", "import packaging"], capture_output=True, check=False)
    assert probe.returncode != 0, "this test needs a python3.10 without `packaging`"
    pip_direct(venv, "--no-index", "--find-links", str(world / "files"), "torch==2.12.0+cpu")
    args = {"venv": str(venv), "name": ["torch==%s" % ROCM], "find_links": [str(world / "files")], "no_index": True}
    (result, failed), (again, failed_again) = run.play([task(args), task(args)], interpreter=PY310)
    assert not failed, result.get("msg")
    assert result["packaging_source"].endswith(os.path.join("pip", "_vendor", "packaging"))
    assert result["replaced"] == [{"name": "torch", "before": "2.12.0+cpu", "after": ROCM}]
    assert not failed_again and again["changed"] is False and again["commands"] == []


# ---- wheel_dir: a wheel of a source tree, built on the one pip path, nothing installed -----------

SETUPTOOLS = "setuptools-75.1.0-py3-none-any.whl"   # the venv stage's pin, the real file
# setup.py records MARK (from the task's environment) into the wheel; FAIL adds a C extension whose
# header does not exist, so gcc fails the way a missing SDK header fails a real build.
SETUP_PY = """import os
from setuptools import Extension, setup
from setuptools.command.build_py import build_py


class BuildPyWithMark(build_py):
    def run(self):
        super().run()
        with open(os.path.join(self.build_lib, "tinymark", "built.py"), "w") as handle:
            handle.write("MARK = %r\\n" % os.environ.get("MARK"))


ext = [Extension("tinymark._speed", ["tinymark/_speed.c"])] if os.path.exists("tinymark/_speed.c") else []
setup(name="tinymark", version="1.0.0", packages=["tinymark"], ext_modules=ext, cmdclass={"build_py": BuildPyWithMark})
"""


PIP_WHEEL = "pip-26.3-py3-none-any.whl"


@pytest.fixture(scope="session")
def build_index(tmp_path_factory):
    """An index serving the world's real setuptools wheel: what an isolated build fetches. Yields (url, wheel)."""
    root = tmp_path_factory.mktemp("pipc-build-index")
    real = [d for d in packages.load_snapshot(packages.SNAPSHOT)["distributions"] if d["file"] == SETUPTOOLS]
    (wheel,) = downloads.fetch(os.path.join(REPO, ".cache", "world-downloads"), real)
    publish(wheel, str(root / "files"))
    write_simple_index(str(root / "files"), str(root / "simple"), "/files")
    with serve(str(root)) as base:
        yield base + "/simple", wheel


def setuptools_project(path, broken=False):
    (path / "tinymark").mkdir(parents=True)
    (path / "tinymark" / "__init__.py").write_text("")
    (path / "setup.py").write_text(SETUP_PY)
    (path / "pyproject.toml").write_text('[build-system]\nrequires = ["setuptools>=61"]\n'
                                         'build-backend = "setuptools.build_meta"\n')
    if broken:
        (path / "tinymark" / "_speed.c").write_text('#include <Python.h>\n#include "rocshmem_missing.h"\n')
    return path


def wheel_text(path, member):
    with zipfile.ZipFile(str(path)) as wheel:
        return wheel.read(member).decode()


@pytest.mark.parametrize("isolated", [True, False], ids=["build-isolation", "no-build-isolation"])
def test_wheel_dir_builds_src_with_the_tasks_environment_and_installs_nothing(build_index, venv, run, tmp_path,
                                                                              isolated):
    url, setuptools_wheel = build_index
    src = setuptools_project(tmp_path / "tinymark")
    wheel_dir = tmp_path / "base" / "wheels"
    log = tmp_path / "logs" / "tinymark.log"
    constraints = tmp_path / "pip-constraints.txt"
    constraints.write_text("tinymark==1.0.0\n")
    args = {"venv": str(venv), "src": str(src), "wheel_dir": str(wheel_dir), "log_path": str(log),
            "environment": {"MARK": "gfx942;gfx950"}, "constraints": [str(constraints)]}
    if isolated:
        args["index_url"] = url   # setuptools for the isolated build env comes from the index
    else:
        pip_direct(venv, "--no-index", setuptools_wheel)   # the build uses the venv's own setuptools
        args.update(no_build_isolation=True, no_index=True)
    before = installed(venv)
    result, failed = run(args)
    assert not failed, result.get("msg")
    built = wheel_dir / "tinymark-1.0.0-py3-none-any.whl"
    assert result["changed"] is True and result["wheels"] == [str(built)]
    assert sorted(os.listdir(str(wheel_dir))) == [built.name]   # the scratch directory is gone
    assert wheel_text(built, "tinymark/built.py") == "MARK = 'gfx942;gfx950'\n"
    (cmd,) = result["commands"]
    assert cmd[1:4] == ["-m", "pip", "wheel"] and "--no-deps" in cmd and cmd[-2:] == ["--", str(src)]
    assert "--constraint=%s" % constraints in cmd
    assert ("--no-build-isolation" in cmd) is not isolated and ("--index-url=%s" % url in cmd) is isolated
    assert installed(venv) == before
    assert result["added"] == [] and result["removed"] == []
    text = log.read_text()
    assert "-m pip wheel" in text and "built %s" % built in text and "### rc=0" in text


def test_wheel_dir_check_mode_builds_nothing(venv, run, tmp_path):
    src = setuptools_project(tmp_path / "tinymark")
    wheel_dir = tmp_path / "wheels"
    before = installed(venv)
    result, failed = run({"venv": str(venv), "src": str(src), "wheel_dir": str(wheel_dir), "no_index": True},
                         check=True)
    assert not failed, result.get("msg")
    assert result["changed"] is True and result["commands"] == [] and result["wheels"] == []
    assert result["plan"] == [{"name": None, "version": None, "installed": None, "action": "build", "requested": True,
                               "src": str(src), "wheel_dir": str(wheel_dir)}]
    assert not wheel_dir.exists() and not (src / "build").exists()
    assert installed(venv) == before


def test_wheel_dir_failed_build_names_the_compiler_error_and_logs_everything(build_index, venv, run, tmp_path):
    url, _wheel = build_index
    src = setuptools_project(tmp_path / "tinymark", broken=True)
    wheel_dir = tmp_path / "wheels"
    log = tmp_path / "tinymark.log"
    before = installed(venv)
    result, failed = run({"venv": str(venv), "src": str(src), "wheel_dir": str(wheel_dir), "index_url": url,
                          "log_path": str(log), "retries": 0})
    assert failed and result["failure"] == "build_failed"
    first = result["msg"].splitlines()[0]
    assert first.startswith("pip wheel of %s failed (rc=1) [build_failed]: tinymark/_speed.c:2:10: fatal error: "
                            "rocshmem_missing.h: No such file or directory" % src), first
    assert result["failure_detail"]["decisive"].endswith("rocshmem_missing.h: No such file or directory")
    assert "The venv is unchanged." in result["msg"] and result["msg"].endswith("Full output: %s" % log)
    text = log.read_text()
    assert "running build_ext" in text and "gcc" in text and "rocshmem_missing.h" in text
    assert len(result["stderr"].splitlines()) <= 60 and len(result["output_tail"].splitlines()) <= 30
    assert os.listdir(str(wheel_dir)) == []   # no wheel, no scratch directory left behind
    assert installed(venv) == before


# ---- the snapshot of the installed set, and the install of a dry-run's exact plan -----------------

def test_the_next_task_reads_the_snapshot_and_a_change_between_tasks_invalidates_it(world, index, venv, run):
    pip_direct(venv, "--no-index", "--find-links", str(world / "files"), "einops==0.8.1")
    time.sleep(RACY_SECONDS + 0.5)   # what the probe reads is older than the window in which a change could hide
    args = {"venv": str(venv), "name": ["einops==0.8.1"], "index_url": index, "forbid": ["nvidia-*"],
            "environment": {"PIP_NO_CACHE_DIR": "1"}}
    (first, failed), (second, failed_second) = run.play([task(args), task(args)])
    assert not failed and first["satisfied"] and first["installed_from"] == "probe" and first["snapshot"] == "none; saved"
    assert not failed_second and second["satisfied"] and second["installed_from"] == "snapshot"
    assert second["commands"] == [] and second["changed"] is False

    # A hand edit between tasks: einops now requires tqdm, which is not installed.
    meta = next((venv / "lib").glob("python3*/site-packages")) / "einops-0.8.1.dist-info" / "METADATA"
    meta.write_text(meta.read_text().replace("Version: 0.8.1\n", "Version: 0.8.1\nRequires-Dist: tqdm\n", 1))
    (plan, failed), (real, failed_real), (after, failed_after) = run.play(
        [task(args, check=True), task(args), task(args)])
    assert not failed and plan["installed_from"] == "probe" and plan["satisfied"] is False
    assert plan["reasons"] == ["tqdm (required by einops 0.8.1) is not installed"] and plan["snapshot"].startswith("stale")
    assert [(p["name"], p["action"]) for p in plan["plan"]] == [("tqdm", "install")]
    # check mode stores nothing, so the real run reads the venv again
    assert not failed_real and real["installed_from"] == "probe"
    assert real["added"] == [{"name": "tqdm", "version": "4.67.3"}] and real["install_mode"] == "plan"
    # the install just changed the venv: the next task reads it again, and finds it satisfied
    assert not failed_after and after["installed_from"] == "probe" and after["satisfied"] is True


def test_an_install_after_a_dry_run_fetches_each_file_once(world, venv, run):
    # The venv's pip as the venv stage bootstraps it (pip 23's dry-run downloads each wheel it plans; 26.3 reads the
    # PEP 658 metadata only, so the install is the one download).
    install_stage_pip(venv)
    requests = RequestLog()
    with serve(str(world), access_log=requests) as base:
        args = {"venv": str(venv), "name": ["cuda-app", "torch==%s" % ROCM], "index_url": base + "/simple",
                "forbid": ["nvidia-*"], "environment": {"PIP_NO_CACHE_DIR": "1"}}
        result, failed = run(args)
    assert not failed, result.get("msg")
    assert sorted(a["name"] for a in result["added"]) == ["cuda-app", "torch"]
    assert result["install_mode"] == "plan" and len(result["commands"]) == 2
    install = result["commands"][1]
    assert "--no-index" in install and "--no-deps" in install
    assert sorted(install[-2:]) == ["cuda-app==1.0", "torch==%s" % ROCM]
    paths = requests.paths()
    assert sorted(paths) == sorted(set(paths)), "fetched more than once: %s" % sorted(
        p for p in set(paths) if paths.count(p) > 1)
    assert sorted(p for p in paths if p.startswith("/simple/")) == ["/simple/cuda-app/", "/simple/torch/"]
    assert sorted(os.path.basename(p) for p in paths if p.endswith(".whl")) == [
        "cuda_app-1.0-py3-none-any.whl", "torch-2.12.0+rocm7.15.0a20260720-py3-none-any.whl"]
    assert ("torch", ROCM) in installed(venv) and ("cuda-app", "1.0") in installed(venv)
    direct = subprocess.run([str(venv / "bin" / "python"), "-I", "-c", "import importlib.metadata as m; "
                             "print(m.distribution('torch').read_text('direct_url.json'))"],
                            capture_output=True, text=True, check=True).stdout.strip()
    assert direct == "None"   # recorded as installed from an index, as a full install records it


def test_a_plan_with_a_git_requirement_installs_its_files_and_the_commit_pip_resolved_without_a_second_resolve(
        world, venv, run, tmp_path):
    # Primus's requirements name a git checkout at a tag: before, the whole list was resolved a second time.
    repo = make_project(tmp_path / "logging", "mlperf-logging", "4.1.0", static=False, requires=["einops==0.8.1"])
    commit = git_tagged(repo, "6.0.0-rc5")
    install_stage_pip(venv)   # pip 23's dry-run downloads what it plans
    requests = RequestLog()
    with serve(str(world), access_log=requests) as base:
        args = {"venv": str(venv), "name": ["git+file://%s@6.0.0-rc5#egg=mlperf-logging" % repo],
                "index_url": base + "/simple", "forbid": ["nvidia-*"], "no_build_isolation": True,
                "environment": {"PIP_NO_CACHE_DIR": "1"}}
        result, failed = run(args)
    assert not failed, result.get("msg")
    assert result["install_mode"] == "plan" and len(result["commands"]) == 3
    files, checkout = result["commands"][1], result["commands"][2]
    assert "--no-index" in files and files[files.index("--") + 1:] == ["einops==0.8.1"]
    assert "--no-deps" in checkout and checkout[-1] == "git+file://%s@%s#egg=mlperf-logging" % (repo, commit)
    paths = requests.paths()
    assert sorted(paths) == sorted(set(paths)), "fetched more than once: %s" % sorted(
        p for p in set(paths) if paths.count(p) > 1)
    names = dict(installed(venv))
    assert names["mlperf-logging"] == "4.1.0" and names["einops"] == "0.8.1"
    direct = json.loads(subprocess.run(
        [str(venv / "bin" / "python"), "-I", "-c", "import importlib.metadata as m; "
         "print(m.distribution('mlperf-logging').read_text('direct_url.json'))"],
        capture_output=True, text=True, check=True).stdout)
    assert direct["vcs_info"]["commit_id"] == commit


class RequestLog(object):
    """The world server's access log (one line per request), kept in memory."""

    def __init__(self):
        self.lines = []

    def write(self, text):
        self.lines.append(text)

    def flush(self):
        pass

    def paths(self):
        out = []
        for line in "".join(self.lines).splitlines():
            match = re.search(r'"GET (\S+) HTTP', line)
            if match:
                out.append(urllib.parse.unquote(match.group(1)))
        return out
