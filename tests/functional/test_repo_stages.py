"""Stages primus, aiter and turbo (issue 12), run by the unprivileged user against the simulated world:
one base converged with --tags venv,torch,primus,aiter,turbo and run again.

Before the first run the target user has a seed-style workspace clone (`git clone --recurse-submodules`
of Primus's default branch: Megatron bumped and the Automodel submodule the pin does not have), a
checkout at the pin given with ~ (as primus-cli's ~/.cache/Primus is), and a checkout of their own holding a stale
helpers_cpp that cannot load.

The ~ checkout is not ~/.cache/Primus itself: the default primus_megatron_checkouts of every other scenario that runs
the primus stage as the same user names ~/.cache/Primus, and a run beside this one built helpers_cpp there first (its
status was then "current", not "built")."""
import collections
import json
import os
import re
import shutil

import pytest

from harness import installed, record_timing

pytestmark = pytest.mark.functional
Converged = collections.namedtuple("Converged", "base user_checkout cache_checkout first second stale")
STAGES = "venv,torch,primus,aiter,turbo"
DATASETS = os.path.join("third_party", "Megatron-LM", "megatron", "core", "datasets")
LOAD = ("import importlib.util, sys\n"
        "spec = importlib.util.spec_from_file_location('helpers_cpp', sys.argv[1])\n"
        "spec.loader.exec_module(importlib.util.module_from_spec(spec))\n")


def git(target, *argv):
    proc = target.run(["env", "GIT_TERMINAL_PROMPT=0", "HOME=%s" % target.home, "git"] + list(argv))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def python(base):
    return os.path.join(base, "venv", "bin", "python")


def ext_suffix(target, base):
    proc = target.run([python(base), "-c", "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))"])
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


@pytest.fixture(scope="module")
def converged(playbook, target, world, golden):
    primus = world["repos"]["Primus"]
    base = golden("repos")   # venv,torch converged (tests/functional/bases.py): this module's subject is what follows
    workspace = os.path.join(base, "workspace", "Primus")
    tilde = "~/cache-%s/Primus" % os.path.basename(base)
    cache_checkout = os.path.join(target.home, tilde[2:])
    user_checkout = os.path.join(target.home, "src-%s" % os.path.basename(base), "Primus")
    assert not os.path.exists(cache_checkout), cache_checkout
    # The seed's clone: the default branch's submodules, then the pin checked out over them.
    git(target, "clone", "-q", "--recurse-submodules", primus["url"], workspace)
    git(target, "-C", workspace, "checkout", "-q", primus["commits"]["pinned"])
    git(target, "-C", workspace, "submodule", "update", "-q", "--init", "--recursive")
    assert os.path.isdir(os.path.join(workspace, "third_party", "Automodel", "nemo_automodel"))
    for checkout in (cache_checkout, user_checkout):
        git(target, "clone", "-q", primus["url"], checkout)
        git(target, "-C", checkout, "checkout", "-q", primus["commits"]["pinned"])
        git(target, "-C", checkout, "submodule", "update", "-q", "--init", "--recursive")
    # A stale extension under the 3.12 name that cannot load (another OS's build, say), newer than helpers.cpp.
    stale = os.path.join(user_checkout, DATASETS, "helpers_cpp.cpython-312-x86_64-linux-gnu.so")
    assert target.run(["sh", "-c", 'printf "not an ELF" > "$1"', "sh", stale]).returncode == 0
    try:
        first = playbook(STAGES, base, extra={"primus_megatron_checkouts": [
            workspace, tilde, user_checkout]})
        assert first.rc == 0, first
        record_timing("venv,torch,primus,aiter,turbo on a copy of a venv,torch base (unprivileged, SSH)", first.seconds)
        after_first = installed(target, base)
        second = playbook(STAGES, base, extra={"primus_megatron_checkouts": [
            workspace, tilde, user_checkout]})
        assert second.rc == 0, second
        yield Converged(base, user_checkout, cache_checkout, first, second, dict(path=stale, after_first=after_first))
    finally:
        shutil.rmtree(os.path.dirname(cache_checkout), ignore_errors=True)
        shutil.rmtree(os.path.dirname(user_checkout), ignore_errors=True)


def test_helpers_cpp_carries_the_venv_suffix_and_loads_in_all_three_checkouts(converged, target):
    ext = ext_suffix(target, converged.base)
    assert ext.startswith(".cpython-312-")
    checkouts = [os.path.join(converged.base, "workspace", "Primus"), converged.cache_checkout, converged.user_checkout]
    for checkout in checkouts:
        built = os.path.join(checkout, DATASETS, "helpers_cpp" + ext)
        assert os.path.isfile(built), checkout
        proc = target.run([python(converged.base), "-c", LOAD, built])
        assert proc.returncode == 0, (checkout, proc.stderr)
    result = converged.first.task("Build Megatron's helpers_cpp in every Primus checkout")["result"]
    assert [c["status"] for c in result["checkouts"]] == ["built", "built", "built"]


def test_a_stale_extension_is_replaced(converged):
    with open(converged.stale["path"], "rb") as handle:
        assert handle.read(4) == b"\x7fELF"


def test_the_workspace_checkout_is_at_the_pin_without_other_commits_submodules(converged, target, world):
    workspace = os.path.join(converged.base, "workspace", "Primus")
    assert git(target, "-C", workspace, "rev-parse", "HEAD") == world["repos"]["Primus"]["commits"]["pinned"]
    assert not os.path.exists(os.path.join(workspace, "third_party", "Automodel"))
    megatron = world["repos"]["Megatron-LM"]["commits"]["pinned"]
    assert git(target, "-C", os.path.join(workspace, "third_party", "Megatron-LM"), "rev-parse", "HEAD") == megatron
    removed = converged.first.task("Remove submodule directories the commit does not have - primus")
    assert [r["item"]["item"] for r in removed["result"]["results"]] == ["third_party/Automodel/"]


def test_aiter_checkout_is_kept_at_the_pin(converged, target, world):
    aiter = os.path.join(converged.base, "workspace", "aiter")
    assert git(target, "-C", aiter, "rev-parse", "HEAD") == world["repos"]["aiter"]["commits"]["pinned"]
    record = os.path.join(converged.base, "venv", "lib", "python3.12", "site-packages", "aiter", "world_build.json")
    with open(record) as handle:
        built = json.load(handle)
    assert built["env"]["PREBUILD_KERNELS"] == "3" and built["env"]["GPU_ARCHS"] == "gfx942"


def test_turbo_built_with_the_rocshmem_placeholder_and_warned(converged):
    record = os.path.join(converged.base, "venv", "lib", "python3.12", "site-packages", "primus_turbo",
                          "world_build.json")
    with open(record) as handle:
        built = json.load(handle)
    placeholder = os.path.join(converged.base, ".rocshmem-not-installed")
    assert built["env"]["ROCSHMEM_HOME"] == placeholder and not os.path.exists(placeholder)
    assert "internode DeepEP is off" in converged.first.output


def test_installed_set_flydsl_turbo_and_setuptools_not_downgraded(converged, target):
    now = installed(target, converged.base)
    assert now["flydsl"] == "0.2.4"
    assert "primus-turbo" in now and "amd-aiter" in now
    assert "triton" not in now or "rocm" in now["triton"]
    assert converged.stale["after_first"]["setuptools"] == "75.1.0"
    assert now["setuptools"] == "75.1.0"


def test_turbo_installs_the_pinned_flydsl_directly(converged):
    """Issue 25: Primus-Turbo's flydsl>=0.2.0 installed the newest flydsl, the next task downgraded it to 0.2.4."""
    with open(os.path.join(converged.base, "logs", "turbo.log")) as handle:
        log = handle.read()
    # pip's resolver reads the metadata of newer flydsl releases; only 0.2.4's wheel is fetched and installed.
    downloaded = set(re.findall(r"Downloading flydsl-([^-\s]+)-\S+\.whl \(", log))
    installed_versions = set(re.findall(r"Successfully installed .*?\bflydsl-(\S+)", log))
    assert downloaded <= {"0.2.4"} and installed_versions == {"0.2.4"}, re.findall(r".*flydsl.*", log)


def test_the_expected_flydsl_warning_is_explained_once_when_the_stage_runs(converged):
    words = "[turbo] Expected: pip may report that amd-aiter (the pinned aiter) requires flydsl==0.1.7 but flydsl 0.2.4"
    assert converged.first.output.count(words) == 1, words
    # Never a raw Ansible warning (the install of the exact plan runs no conflict check; a full resolve would report
    # it, and the task's expected_conflicts keeps it out of the warnings: test_pip_constrained.py).
    line = re.compile(r"amd-aiter \S+ requires flydsl==0\.1\.7, but you have flydsl 0\.2\.4 which is incompatible")
    assert not line.search(converged.first.output), [w for w in converged.first.output.splitlines() if "flydsl" in w]
    assert words not in converged.second.output, "a stage that is done explains nothing"


def test_rerun_changes_nothing_in_the_repo_stages(converged):
    ours = ("primus.trainenv.primus_repo", "primus.trainenv.aiter", "primus.trainenv.turbo",
            "primus.trainenv.source_build")
    assert [t for t in converged.second.changed_tasks() if t.startswith(ours)] == []
    assert not [r for r in converged.second.results if r["task"].startswith(ours) and "Clone at" in r["task"]
                and r["status"] != "skipped"]


def test_rerun_changed_nothing(converged):
    # The venv stage installs its front-end pins only while it is not done: Primus's requirements move packaging
    # to 26.x (pre-commit -> virtualenv, which needs packaging>=26.3), and a re-run must not move it back.
    assert converged.second.stats["node1"]["changed"] == 0, converged.second.changed_tasks()
