"""Stages venv and torch, the constraints guard and env.sh, run by an unprivileged user against
the simulated world (see conftest.py for how the target is reached)."""
import collections
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys

import pytest

from harness import REPO, installed, record_timing, tree_state

sys.path.insert(0, os.path.join(REPO, "tests"))
from world.lib import index as world_index  # noqa: E402
from world.lib.wheel import build_wheel  # noqa: E402

sys.path.insert(0, os.path.join(REPO, ".collections"))
from ansible_collections.primus.trainenv.plugins.filter.stages import stage_key_id  # noqa: E402

pytestmark = pytest.mark.functional
Converged = collections.namedtuple("Converged", "base first second stamps")

ROCM = "2.12.0+rocm7.15.0a20260720"
EXPECTED = {
    "torch": ROCM,
    "torchaudio": "2.11.0+rocm7.15.0a20260720",
    "torchvision": "0.27.0+rocm7.15.0a20260720",
    "apex": "1.12.0+rocm7.15.0a20260720",
    "rocm-sdk-devel": "7.15.0a20260720",
    "amd-torch-device-gfx942": ROCM,
    "rocm-sdk-device-gfx942": "7.15.0a20260720",
    "amd-torchvision-device-gfx942": "0.27.0+rocm7.15.0a20260720",
    "wheel": "0.45.1", "cmake": "3.31.6", "ninja": "1.11.1.3", "packaging": "25.0", "setuptools": "75.1.0",
    "cxxfilt": "0.3.0", "pytest": "9.0.3", "build": "1.5.0",
}


@pytest.fixture(scope="module")
def converged(playbook, target):
    """An empty base converged with --tags venv,torch, then run again."""
    base = target.base("venv-torch")
    first = playbook("venv,torch", base)
    assert first.rc == 0, first
    record_timing("venv,torch on an empty base (unprivileged, SSH)", first.seconds)
    stamps = {name: os.stat(os.path.join(base, "state", name)) for name in os.listdir(os.path.join(base, "state"))}
    second = playbook("venv,torch", base)
    record_timing("venv,torch converged re-run (unprivileged, SSH)", second.seconds)
    return Converged(base, first, second, stamps)


def test_first_run_builds_the_venv_with_the_exact_pins(converged, target):
    base, first = converged.base, converged.first
    assert first.stats["node1"]["changed"] > 0
    venv_python = os.path.join(base, "venv", "bin", "python")
    version = target.run([venv_python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
    assert version.stdout.strip() == "3.12"
    have = installed(target, base)
    for name, version in EXPECTED.items():
        assert have.get(name) == version, "%s: %s" % (name, have.get(name))
    # Only the detected arch (mi300x: gfx942) gets device wheels.
    assert not [n for n in have if n.endswith("gfx950")]
    assert not [n for n in have if n.startswith("nvidia-")]
    owner = os.stat(base).st_uid
    assert owner == os.stat(target.home).st_uid, "the base belongs to the unprivileged user"


def test_constraints_pin_the_labelled_torch_and_triton(converged, target):
    base = converged.base
    with open(os.path.join(base, "pip-constraints.txt")) as handle:
        lines = [line.strip() for line in handle if line.strip() and not line.startswith("#")]
    have = installed(target, base)
    assert lines == ["torch==%s" % ROCM, "triton==%s" % have["triton"]]
    assert "+" in have["triton"] and "rocm" in have["triton"].split("+", 1)[1]


def test_rocm_sdk_initialised_and_recorded_in_env_sh(converged):
    base = converged.base
    rocm = os.path.join(base, "venv", "lib", "python3.12", "site-packages", "_rocm_sdk_devel")
    assert os.path.isfile(os.path.join(rocm, "bin", "hipcc"))
    with open(os.path.join(base, "env.sh")) as handle:
        assert "export ROCM_PATH='%s'" % rocm in handle.read()


def test_second_run_changes_nothing_and_is_quick(converged):
    second = converged.second
    assert second.rc == 0, second
    assert second.stats["node1"]["changed"] == 0, second.changed_tasks()
    # Both stages are settled (done, with nothing else to do): each include is one skipped task, and no task of
    # their roles runs - no pip, no probe, no file written.
    assert [second.task("Stage " + stage)["status"] for stage in ("venv", "torch")] == ["skipped", "skipped"]
    assert not [r["task"] for r in second.results if r["task"].startswith(("primus.trainenv.venv", "primus.trainenv.torch"))]


def test_stage_stamps_record_the_key_and_what_was_installed(converged, target):
    base = converged.base
    assert sorted(converged.stamps) == ["torch.json", "venv.json"]
    have = installed(target, base)
    keys = converged.first.task("Decide which stages are done")["result"]["ansible_facts"]["preflight_stages"]["stage_keys"]
    for stage in ("venv", "torch"):
        path = os.path.join(base, "state", stage + ".json")
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
        with open(path) as handle:
            stamp = json.load(handle)
        assert sorted(stamp) == ["finished", "format", "host", "key", "key_id", "outputs", "release", "stage"]
        assert (stamp["format"], stamp["stage"], stamp["release"]) == (1, stage, "v26.5")
        assert stamp["key"] == keys[stage] and stamp["key_id"] == stage_key_id(keys[stage])
        for name, version in stamp["outputs"]["distributions"].items():
            assert have[name] == version, name
    with open(os.path.join(base, "state", "torch.json")) as handle:
        torch = json.load(handle)
    assert torch["key"]["archs"] == ["gfx942"] and torch["key"]["python"] == "3.12"
    assert torch["outputs"]["distributions"]["torch"] == ROCM
    assert "amd-torch-device-gfx942==%s" % ROCM in torch["key"]["device_packages"]
    assert not [v for v in json.dumps(torch["key"]).split('"') if v.startswith("http")], "no index URL in a key"


def test_a_converged_run_writes_no_stamp(converged):
    for name, before in converged.stamps.items():
        after = os.stat(os.path.join(converged.base, "state", name))
        assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns), name
    # torch is settled (done, its distributions, the SDK and the generated files as they should be): skipped as a whole.
    assert converged.second.task("Stage torch")["status"] == "skipped"
    assert not [r for r in converged.second.results if "primus.trainenv.torch" in r["task"]]


def test_a_stage_whose_prerequisites_are_done_runs_after_the_check(converged, playbook):
    """torchtune needs venv and torch: done on this base (their stamps), so it gets past its check and is built."""
    run = playbook("torchtune", converged.base)
    assert run.rc == 0, run
    assert run.task("Start stage torchtune")["status"] == "ok"
    assert os.path.exists(os.path.join(converged.base, "state", "torchtune.json"))
    assert not os.path.exists(os.path.join(converged.base, ".primus.lock"))


def test_a_trailing_slash_or_a_double_slash_names_the_same_base(converged, playbook):
    """PRIMUS_BASE is normalised once: the same base spelled differently changes nothing."""
    base = converged.base
    again = playbook("venv,torch", base.replace("/bases/", "//bases/") + "/")
    assert again.rc == 0, again
    assert again.stats["node1"]["changed"] == 0, again.changed_tasks()
    with open(os.path.join(base, "env.sh")) as handle:
        assert "_primus_built_for='%s'\n" % base in handle.read()


def test_env_sh_passes_shellcheck(converged):
    base = converged.base
    proc = subprocess.run(["shellcheck", "-s", "bash", os.path.join(base, "env.sh")], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stdout


# --------------------------------------------------------------------------- env.sh in bash

def source_and_print(target, base, script, **env):
    return target.bash('source "%s/env.sh"; rc=$?; %s' % (base, script), env=env)


@pytest.mark.parametrize("how", ["sourced", "executed"])
def test_env_sh_with_primus_base_unset_uses_its_own_base(converged, target, how):
    """Issue 25: `source env.sh` with PRIMUS_BASE unset works for a generated base."""
    base = converged.base
    if how == "executed":
        proc = target.bash('bash "%s/env.sh"; echo "after=$?"' % base)
        assert "after=0" in proc.stdout, proc.stderr
        return
    proc = target.bash('source "%s/env.sh"; echo "rc=$? base=$PRIMUS_BASE venv=$VIRTUAL_ENV"; '
                       'python -c "import sys, torch; print(sys.prefix, torch.__version__)"' % base)
    assert "rc=0 base=%s venv=%s/venv" % (base, base) in proc.stdout, proc.stderr
    assert "%s/venv %s" % (base, ROCM) in proc.stdout, (proc.stdout, proc.stderr)
    assert "ERROR" not in proc.stderr, proc.stderr


@pytest.mark.parametrize("how", ["sourced", "executed"])
def test_env_sh_refuses_a_relative_primus_base(converged, target, how):
    base = converged.base
    run = "source" if how == "sourced" else "bash"
    proc = target.bash('%s "%s/env.sh"; echo "after=$?"' % (run, base), env={"PRIMUS_BASE": "envs/primus"})
    assert "[env] ERROR: PRIMUS_BASE must be an absolute path, got 'envs/primus'." in proc.stderr
    assert "after=1" in proc.stdout


def test_env_sh_refuses_another_base(converged, target):
    base = converged.base
    proc = source_and_print(target, base, 'echo "rc=$rc"', PRIMUS_BASE="/tmp")
    assert "rc=1" in proc.stdout
    assert "belongs to PRIMUS_BASE=%s" % base in proc.stderr


@pytest.mark.parametrize("host, atomic, archs", [
    ("mi300x", "1", "gfx942"),
    ("mi355x", "0", "gfx950"),
    ("mixed", "1", "gfx942;gfx950"),
])
def test_atomic_fp32_follows_the_gpus_of_the_node(converged, target, host, atomic, archs):
    base = converged.base
    kfd = os.path.join(target.hosts_dir, host, "sys", "class", "kfd", "kfd", "topology", "nodes")
    proc = source_and_print(target, base, 'echo "rc=$rc arch=$PYTORCH_ROCM_ARCH atomic=$NVTE_CK_IS_V3_ATOMIC_FP32"',
                            PRIMUS_BASE=base, PRIMUS_KFD_NODES=kfd)
    assert "rc=0 arch=%s atomic=%s" % (archs, atomic) in proc.stdout, proc.stderr


def test_portable_arch_list_still_follows_the_node(converged, target):
    """PYTORCH_ROCM_ARCH=gfx942;gfx950 exported for a portable env: a gfx950 node gets 0, not the seed's 1."""
    base = converged.base
    for host, atomic in (("mi355x", "0"), ("mi300x", "1")):
        kfd = os.path.join(target.hosts_dir, host, "sys", "class", "kfd", "kfd", "topology", "nodes")
        proc = source_and_print(target, base, 'echo "atomic=$NVTE_CK_IS_V3_ATOMIC_FP32 targets=$HIP_ARCHITECTURES"',
                                PRIMUS_BASE=base, PRIMUS_KFD_NODES=kfd, PYTORCH_ROCM_ARCH="gfx942;gfx950")
        assert "atomic=%s targets=gfx942,gfx950" % atomic in proc.stdout, proc.stderr


def test_sourcing_twice_does_not_grow_paths_and_runs_no_python(converged, target):
    base = converged.base
    kfd = os.path.join(target.hosts_dir, "mi300x", "sys", "class", "kfd", "kfd", "topology", "nodes")
    # A `python` on PATH that records being run: sourcing must never start it.
    trap = os.path.join(target.home, "python-trap")
    shutil.rmtree(trap, ignore_errors=True)
    os.makedirs(trap)
    for name in ("python", "python3"):
        with open(os.path.join(trap, name), "w") as handle:
            handle.write("#!/bin/sh\ntouch %s/ran\n" % trap)
        os.chmod(os.path.join(trap, name), 0o755)
    shutil.chown(trap, target.user)
    proc = target.bash(
        'source "$PRIMUS_BASE/env.sh" 2>/dev/null; p1=$PATH; l1=$LD_LIBRARY_PATH; c1=$PIP_CONSTRAINT; '
        'source "$PRIMUS_BASE/env.sh" 2>/dev/null; '
        '[ "$p1" = "$PATH" ] && [ "$l1" = "$LD_LIBRARY_PATH" ] && [ "$c1" = "$PIP_CONSTRAINT" ] && echo same; '
        'echo "PATH=$PATH"; command -v python',
        env={"PRIMUS_BASE": base, "PRIMUS_KFD_NODES": kfd, "PATH": trap + ":/usr/bin:/bin"})
    assert "same" in proc.stdout, proc.stdout + proc.stderr
    path = proc.stdout.split("PATH=", 1)[1].splitlines()[0].split(":")
    assert len(path) == len(set(path))
    assert proc.stdout.strip().endswith(os.path.join(base, "venv", "bin", "python"))
    assert not os.path.exists(os.path.join(trap, "ran")), "sourcing env.sh started python"


def test_pip_constraint_guards_later_user_installs(converged, target, world, tmp_path):
    """Inside the sourced env, a package that needs torch>=2.13 cannot replace the pinned torch."""
    base = converged.base
    wheels = os.path.join(target.home, "wheels-needs-new-torch")
    shutil.rmtree(wheels, ignore_errors=True)
    build_wheel(wheels, "needs-new-torch", "1.0", requires=["torch>=2.13"], files={"needs_new_torch/__init__.py": ""})
    shutil.chown(wheels, target.user)
    before = installed(target, base)
    proc = source_and_print(
        target, base,
        'echo "PIP_CONSTRAINT=$PIP_CONSTRAINT"; pip install --index-url %s --find-links %s needs-new-torch; echo "pip=$?"'
        % (world["indexes"]["pypi"], wheels),
        PRIMUS_BASE=base, PIP_CONFIG_FILE="/dev/null")
    assert "PIP_CONSTRAINT=%s/pip-constraints.txt" % base in proc.stdout
    assert "pip=1" in proc.stdout, proc.stdout + proc.stderr
    assert "torch==%s" % ROCM in proc.stdout + proc.stderr
    assert installed(target, base) == before


def test_modulefile_has_the_same_effect_as_env_sh(converged, target):
    base = converged.base
    kfd = os.path.join(target.hosts_dir, "mi355x", "sys", "class", "kfd", "kfd", "topology", "nodes")
    names = ("VIRTUAL_ENV ROCM_PATH ROCM_HOME HIP_PATH HIP_CLANG_PATH HIP_DEVICE_LIB_PATH PYTORCH_ROCM_ARCH "
             "HIP_ARCHITECTURES GPU_ARCHS PIP_CONSTRAINT PRIMUS_PIP_CONSTRAINTS NVTE_CK_IS_V3_ATOMIC_FP32 "
             "NVTE_FLASH_ATTN NVTE_FUSED_ATTN HSA_NO_SCRATCH_RECLAIM MAX_JOBS CPATH LIBRARY_PATH PKG_CONFIG_PATH "
             "PIP_CACHE_DIR TRITON_CACHE_DIR").split()
    show = "; ".join('echo "%s=${%s:-}"' % (n, n) for n in names) + '; echo "PATH=$PATH"; echo "LD=$LD_LIBRARY_PATH"'
    sourced = target.bash('source "$PRIMUS_BASE/env.sh" 2>/dev/null; ' + show,
                          env={"PRIMUS_BASE": base, "PRIMUS_KFD_NODES": kfd})
    loaded = target.bash('eval "$(modulecmd bash use %s/modulefiles)"; eval "$(modulecmd bash load primus/v26.5)"; %s'
                         % (base, show), env={"PRIMUS_KFD_NODES": kfd})
    assert loaded.returncode == 0, loaded.stderr

    def parse(text):
        return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)

    env_sh, module = parse(sourced.stdout), parse(loaded.stdout)
    for name in names:
        assert module[name] == env_sh[name], "%s: module %r, env.sh %r" % (name, module[name], env_sh[name])
    assert env_sh["NVTE_CK_IS_V3_ATOMIC_FP32"] == "0"
    for key in ("PATH", "LD"):
        assert module[key].split(":")[:4] == env_sh[key].split(":")[:4], key


# --------------------------------------------------------------------------- refusals

def test_an_old_python310_venv_stops_the_run_before_any_change(playbook, target, python310):
    base = target.base("old-venv")
    made = target.run(["bash", "-c", "mkdir -p %s && %s -m venv --without-pip %s/venv" % (base, python310, base)])
    assert made.returncode == 0, made.stderr
    before = tree_state(base)
    run = playbook("venv,torch", base)
    assert run.rc != 0
    assert "is Python 3.10, but v26.5 requires 3.12" in run.output, run
    assert "rm -rf '%s/venv'" % base in run.output
    assert tree_state(base) == before, "the old venv and the base are untouched"
    assert run.stats["node1"]["changed"] == 0


def test_without_python312_uv_comes_from_pypi_without_pip_or_venv(playbook, target, world, python310_bare):
    """The node's only Python is a 3.10 without ensurepip, venv and pip (a stock Ubuntu 22.04 without
    python3.10-venv; no sudo to add it) and there is no Python 3.12: uv's binary is unpacked from its wheel
    on the (world's) PyPI into $PRIMUS_BASE/bin - no pip, no venv, no curl | sh - and the 3.12 it provides
    builds the venv. Leftovers of an earlier failed attempt (the old .uv-venv helper, a partial download,
    a dangling bin/uv link) do not block; the re-run changes nothing."""
    for module in ("ensurepip", "venv", "pip"):
        assert target.run([python310_bare, "-c", "import " + module]).returncode != 0, module
    base = target.base("uv")
    bindir = os.path.join(base, "bin")
    made = target.bash('mkdir -p "$BIN/.uv-venv/bin" && ln -s /nonexistent/python3.10 "$BIN/.uv-venv/bin/python" '
                       '&& printf "PK\\003\\004half" > "$BIN/.uv-fetch-k3j2x.whl" && ln -s .uv-venv/bin/uv "$BIN/uv"',
                       env={"BIN": bindir})
    assert made.returncode == 0, made.stderr
    bare = {"primus_python": "", "ansible_python_interpreter": python310_bare}

    run = playbook("venv", base, extra=bare, env={"PATH": "/usr/bin:/bin"})
    assert run.rc == 0, run
    fetched = run.task("Unpack uv from its wheel")["result"]
    wheel = "uv-0.13.9-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
    served = dict((os.path.basename(rel), path) for rel, path in
                  world_index.distribution_files(os.path.join(world["root"], "pypi", "files")).items())
    with open(served[wheel], "rb") as handle:
        assert fetched["sha256"] == hashlib.sha256(handle.read()).hexdigest()
    assert (fetched["filename"], fetched["platform_tag"], fetched["version"]) == (
        wheel, "manylinux_2_17_x86_64", "uv 0.13.9")
    assert sorted(os.path.basename(p) for p in fetched["removed"]) == [".uv-fetch-k3j2x.whl", ".uv-venv"]
    uv = os.path.join(bindir, "uv")
    assert not os.path.islink(uv) and stat.S_IMODE(os.stat(uv).st_mode) == 0o755
    assert sorted(os.listdir(bindir)) == ["uv"]
    assert target.run([uv, "--version"]).stdout.strip() == "uv 0.13.9"
    with open(os.path.join(base, "venv", "pyvenv.cfg")) as handle:
        home = [line.split("=", 1)[1].strip() for line in handle if line.startswith("home")][0]
    assert home.startswith(os.path.join(base, "python", "cpython-3.12")), home
    assert "Provision CPython with uv" in " ".join(run.changed_tasks())
    record_timing("venv via uv from PyPI, node python without pip/venv (unprivileged, SSH)", run.seconds)

    again = playbook("venv", base, extra=bare, env={"PATH": "/usr/bin:/bin"})
    assert again.rc == 0 and again.stats["node1"]["changed"] == 0, again


def test_primus_python_of_another_version_is_named(playbook, target):
    base = target.base("py311")
    run = playbook("venv", base, extra={"primus_python": "/usr/bin/python3.11"})
    assert run.rc != 0
    assert "3.11" in run.output and "PRIMUS_PYTHON" in run.output, run
    assert not os.path.exists(base)
