"""The source-built stages and TransformerEngine (issue 11), run by the unprivileged user against
the simulated world: one base converged with every build stage, then changed inputs on it.

The tests share one module-scoped base and run in file order: the last ones leave it broken on
purpose (the unpinned CUTLASS DSL)."""
import collections
import contextlib
import hashlib
import json
import os
import re
import shutil
import sys

import pytest
import yaml

from harness import REPO, installed, record_timing, tree_state

sys.path.insert(0, os.path.join(REPO, "tests"))
from world import branch as world_branch  # noqa: E402
from world.lib import repos as world_repos  # noqa: E402

pytestmark = pytest.mark.functional

import stage_registry  # noqa: E402

# The stages of the registry built from the pins' sources (aiter and turbo, which need more, are test_repo_stages'),
# each with the package its build installs (the import name is the distribution's).
_SOURCES = stage_registry.pins()["sources"]
BUILT = tuple(s for s in stage_registry.views()["order"]
              if "build" in _SOURCES.get(s, {}) and s not in ("aiter", "turbo"))
STAGES = ",".join(("venv", "torch") + BUILT)
PACKAGE = dict((s, _SOURCES[s]["build"]["distribution"]) for s in BUILT)
ARCH_DEPENDENT = set(BUILT) - {"torchtune"}
CK_JIT_BEFORE = '    mv -n "$_TMP_SO" "$OUTPUT"'
CK_JIT_AFTER = '    mv -n "$_TMP_SO" "$OUTPUT" 2>/dev/null || true'
Converged = collections.namedtuple("Converged", "base cache build first second logs_before logs_after requests")


def site(base):
    return os.path.join(base, "venv", "lib", "python3.12", "site-packages")


def build_record(base, stage):
    with open(os.path.join(site(base), PACKAGE[stage], "world_build.json")) as handle:
        return json.load(handle)


def stamp(base, stage):
    with open(os.path.join(base, "state", stage + ".json")) as handle:
        return json.load(handle)


def task_name(result):
    """A task's own name ('role : name' for a task of a role)."""
    return result["task"].split(" : ", 1)[-1]


def statuses(run, prefix):
    """{task name: status} of the tasks whose own name starts with prefix."""
    return {task_name(r): r["status"] for r in run.results if task_name(r).startswith(prefix)}


def built_in(run):
    """The components whose wheel this run built (not taken from the wheel cache)."""
    return {task.rsplit(" - ", 1)[1] for task, status in statuses(run, "Build the wheel - ").items() if status == "ok"}


def failure(run):
    """The failure that stopped the run (a rescued task's failure comes before it)."""
    failed = run.failed()
    assert failed, run
    return failed[-1]


def pins_variant(world, tmp_path, name, change):
    """A copy of the world's pins file with change(pins) applied."""
    with open(world["pins"]) as handle:
        data = yaml.safe_load(handle)
    change(data["primus_pins"])
    path = tmp_path / ("pins-%s.yml" % name)
    path.write_text(yaml.safe_dump(data))
    os.chmod(str(path), 0o644)
    return str(path)


@contextlib.contextmanager
def server_log(world):
    """The world server's log lines written inside the block (a one-item list, filled when it ends)."""
    path = os.path.join(world["root"], "server.log")
    start = os.path.getsize(path) if os.path.exists(path) else 0
    found = []
    yield found
    with open(path, errors="replace") as handle:
        handle.seek(start)
        found.append(handle.read())


@pytest.fixture(scope="module")
def dirs(golden):
    """A base (a copy of one converged with venv,torch: the builds are the subject) and this module's own build and
    cache directories (an earlier session's wheel cache must not turn these builds into cache hits)."""
    base = golden("sources")
    return base, base + "-cache", base + "-build"


@pytest.fixture(scope="module")
def run(playbook, dirs):
    """playbook() on this module's base, cache and build directories."""
    def run_here(tags, extra=None, **kwargs):
        extra = dict({"primus_cache_dir": dirs[1], "primus_build_dir": dirs[2]}, **(extra or {}))
        return playbook(tags, dirs[0], extra=extra, **kwargs)
    return run_here


@pytest.fixture(scope="module")
def converged(run, dirs, world):
    base, cache, build = dirs
    with server_log(world) as requests:
        first = run(STAGES)
    assert first.rc == 0, first
    record_timing("the 7 source-built stages on a venv,torch copy (unprivileged, SSH)", first.seconds)
    logs_before = tree_state(os.path.join(base, "logs"))
    # With role variables private to their roles: every role reads the published primus_settings.
    second = run(STAGES, env={"ANSIBLE_PRIVATE_ROLE_VARS": "True"})
    record_timing("venv,torch + the 7 source-built stages, converged re-run", second.seconds)
    return Converged(base, cache, build, first, second, logs_before, tree_state(os.path.join(base, "logs")),
                     requests[0])


def test_every_build_stage_converges_with_its_arch_list_flags_and_patches(converged, target, world):
    base = converged.base
    assert built_in(converged.first) == set(BUILT)
    for stage in BUILT:
        record = build_record(base, stage)
        recorded = stamp(base, stage)["outputs"]
        assert record["git_head"] == recorded.get("commit", stamp(base, stage)["key"]["commit"]), stage
        if stage in ARCH_DEPENDENT:
            assert record["offload_arch"] == ["gfx942"], (stage, record)
        # MAX_JOBS is how the build ran, not what it produced: recorded beside the key's variables, not in them.
        assert record["env"]["MAX_JOBS"] == recorded["max_jobs"] and "MAX_JOBS" not in recorded["build_env"], stage
    # The arch list in the form each build reads; env.sh keeps GPU_ARCHS=native for aiter's JIT.
    assert stamp(base, "flash_attn")["outputs"]["build_env"]["GPU_ARCHS"] == "gfx942"
    te = stamp(base, "te")
    assert te["outputs"]["mode"] == "source"   # glibc 2.36 here: auto chooses a source build
    assert {k: te["outputs"]["build_env"][k] for k in ("NVTE_FRAMEWORK", "NVTE_USE_ROCM", "NVTE_USE_HIPBLASLT",
                                                       "NVTE_ROCM_ARCH", "GPU_ARCHS")} == {
        "NVTE_FRAMEWORK": "pytorch", "NVTE_USE_ROCM": "1", "NVTE_USE_HIPBLASLT": "1", "NVTE_ROCM_ARCH": "gfx942",
        "GPU_ARCHS": "gfx942"}
    assert build_record(base, "te")["nvte"]["NVTE_ROCM_ARCH"] == "gfx942"
    conv = build_record(base, "causal_conv1d")["env"]
    assert (conv["HIP_ARCHITECTURES"], conv["CAUSAL_CONV1D_FORCE_BUILD"]) == ("gfx942", "TRUE")
    assert build_record(base, "causal_conv1d")["prebuilt_attempted"] is False
    assert build_record(base, "mamba")["env"]["MAMBA_FORCE_BUILD"] == "TRUE"
    # No NVTE build switch leaks into another build (env.sh does not export them either).
    assert "NVTE_FRAMEWORK" not in build_record(base, "flash_attn")["nvte"]
    # The patched files hold the patched text.
    with open(os.path.join(site(base), "torchtune", "modules", "moe", "utils.py")) as handle:
        moe = handle.read()
    assert "use_grouped_mm = False" in moe and "use_grouped_mm = True" not in moe
    with open(os.path.join(site(base), "torchao", "float8", "config.py")) as handle:
        assert "pad_inner_dim: bool = True" in handle.read()
    swizzle = world_repos.TORCHAO_SWIZZLE.replace("if defined(HIPBLASLT_VEC_EXT)", "if false")
    assert build_record(base, "torchao")["files"]["torchao/csrc/rocm/swizzle/swizzle.cpp"] == \
        hashlib.sha256(swizzle.encode()).hexdigest()
    # ck_jit_compile.sh: the seed's line, patched exactly once.
    with open(os.path.join(site(base), "transformer_engine", "lib", "ck_jit", "ck_jit_compile.sh")) as handle:
        lines = handle.read().splitlines()
    assert lines.count(CK_JIT_AFTER) == 1 and CK_JIT_BEFORE not in lines
    assert te["outputs"]["ck_jit"] == "patched"
    # mamba built with nvidia-cutlass-dsl pinned to 4.5.3 first (no CUDA wheel of 4.6 fetched), then the CUTLASS DSL
    # stack removed again, as upstream does (primus_mamba_cutlass: purge, the default).
    have = installed(target, base)
    assert have["apache-tvm-ffi"] == "0.1.11" and stamp(base, "mamba")["outputs"]["cutlass"] == "purge"
    assert not [n for n in have if n.startswith(("quack-kernels", "nvidia-cutlass-dsl"))], sorted(have)
    assert not [n for n in have if n.startswith("nvidia-") and n.endswith(("-cu12", "-cu13"))]
    # The environment as a user gets it: env.sh, then the imports.
    proc = target.bash("export PRIMUS_BASE='%s' && source \"$PRIMUS_BASE/env.sh\" && python -c 'import transformer_engine, flash_attn, mamba_ssm, "
                       "torchao, torchtune, grouped_gemm, causal_conv1d; print(\"ok\")'" % base)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stdout + proc.stderr
    # Transient trees are gone; the wheels stay in the per-user cache, one per build key.
    assert not [name for name in os.listdir(converged.build) if name != "wheels"], os.listdir(converged.build)
    for stage in BUILT:
        keys = os.listdir(os.path.join(converged.cache, "wheels", stage))
        assert len(keys) == 1, (stage, keys)
        wheels = os.listdir(os.path.join(converged.cache, "wheels", stage, keys[0]))
        assert len(wheels) == 1 and wheels[0].endswith(".whl"), (stage, wheels)


def test_each_stage_log_holds_its_clone_and_submodules_output_before_its_build(converged):
    """git's own output (the clone, the checkout, each submodule's clone) goes into logs/<stage>.log as it runs,
    like pip's: a user who tails the log during a long clone sees it, and finds it there afterwards."""
    for stage in BUILT:
        with open(os.path.join(converged.base, "logs", "%s.log" % stage)) as handle:
            text = handle.read()
        clone = text.find(" git_checkout: git clone --progress --no-checkout --origin origin -- ")
        assert clone > 0 and "Cloning into '" in text, (stage, text[:2000])
        assert clone < text.index(" pip_constrained: ", clone), (stage, "the clone comes before the build")
        if _SOURCES[stage].get("submodules"):
            assert " git_checkout: git -C " in text and " submodule update --init --recursive --force --progress\n" in text
            assert re.search(r"^Submodule path '[^']+': checked out '[0-9a-f]{40}'$", text, re.M), (stage, text[:3000])


def test_the_re_run_changes_nothing_and_clones_builds_and_resolves_nothing(converged):
    second = converged.second
    assert second.rc == 0, second
    assert second.stats["node1"]["changed"] == 0, second.changed_tasks()
    for prefix in ("Clone at the planned commit", "Build the wheel", "Install the wheel", "Resolve the floating"):
        ran = [t for t, s in statuses(second, prefix).items() if s != "skipped"]
        assert not ran, (prefix, ran)
    assert converged.logs_after == converged.logs_before, "the re-run wrote to the logs"


def test_a_moved_floating_branch_is_kept_until_asked_then_reported_and_built_once(converged, run, world, target):
    base = converged.base
    recorded = stamp(base, "grouped_gemm")["outputs"]["commit"]
    head = world_branch.move(world["root"], "grouped_gemm", "rocm")
    try:
        assert head != recorded
        kept = run("grouped_gemm")
        assert kept.rc == 0 and kept.stats["node1"]["changed"] == 0, kept
        assert stamp(base, "grouped_gemm")["outputs"]["commit"] == recorded
        # Asked again: the move is reported and the new head is built (one ls-remote for the whole run).
        refreshed = run("grouped_gemm", extra={"primus_refresh_floating": True})
        assert refreshed.rc == 0, refreshed
        assert "branch rocm moved from %s to %s" % (recorded[:12], head[:12]) in refreshed.output
        assert built_in(refreshed) == {"grouped_gemm"}
        assert stamp(base, "grouped_gemm")["outputs"]["commit"] == head
        assert build_record(base, "grouped_gemm")["git_head"] == head
        resolve = [r for r in refreshed.results if task_name(r).startswith("Resolve the floating")]
        assert len(resolve) == 1 and [i["item"] for i in resolve[0]["result"]["results"]] == ["grouped_gemm"]
    finally:
        world_branch.reset(world["root"], "grouped_gemm", "rocm")
    # Force-pushed back: the recorded commit is gone from the repository. A build of it says so and how to go on.
    assert stamp(base, "grouped_gemm")["outputs"]["commit"] == head
    # Its build is needed again (the package uninstalled by hand, the cached wheel removed).
    key_dir = os.path.join(converged.cache, "wheels", "grouped_gemm", stamp(base, "grouped_gemm")["key_id"])
    assert os.path.isdir(key_dir)
    shutil.rmtree(key_dir)
    drop = target.run([os.path.join(base, "venv", "bin", "python"), "-m", "pip", "uninstall", "-y", "-q", "grouped_gemm"])
    assert drop.returncode == 0, drop.stderr
    gone = run("grouped_gemm")
    assert gone.rc != 0
    message = failure(gone)["result"]["msg"]
    assert "cannot clone" in message and head in message and "primus_refresh_floating=true" in message, message
    # Asked again, the branch is back at the recorded first commit, whose wheel is still in the cache: no build.
    back = run("grouped_gemm", extra={"primus_refresh_floating": True})
    assert back.rc == 0, back
    assert "branch rocm moved from %s to %s" % (head[:12], recorded[:12]) in back.output
    assert built_in(back) == set()
    assert stamp(base, "grouped_gemm")["outputs"]["commit"] == recorded


def test_an_arch_change_rebuilds_only_the_arch_dependent_wheels_and_going_back_reuses_the_cache(converged, run):
    base = converged.base
    keys = {stage: stamp(base, stage)["key_id"] for stage in BUILT}
    both = run(STAGES, extra={"primus_arch_override": "gfx942;gfx950"})
    assert both.rc == 0, both
    record_timing("arch change gfx942 -> gfx942;gfx950: the arch-dependent rebuilds", both.seconds)
    assert built_in(both) == ARCH_DEPENDENT
    for stage in ARCH_DEPENDENT:
        assert build_record(base, stage)["offload_arch"] == ["gfx942", "gfx950"], stage
    assert stamp(base, "torchtune")["key_id"] == keys["torchtune"]
    assert stamp(base, "flash_attn")["outputs"]["build_env"]["GPU_ARCHS"] == "gfx942;gfx950"
    assert build_record(base, "causal_conv1d")["env"]["HIP_ARCHITECTURES"] == "gfx942,gfx950"
    back = run(STAGES)
    assert back.rc == 0, back
    assert built_in(back) == set(), "going back built wheels instead of reusing the cached ones"
    assert not [t for t, s in statuses(back, "Clone at the planned commit").items() if s != "skipped"]
    for stage in ARCH_DEPENDENT:
        assert build_record(base, stage)["offload_arch"] == ["gfx942"], stage
    assert {stage: stamp(base, stage)["key_id"] for stage in BUILT} == keys


def test_forced_wheel_mode_here_fails_with_the_loader_error_and_the_advice(converged, run):
    base = converged.base
    forced = run("te", extra={"primus_te_mode": "wheel"})
    assert forced.rc != 0
    failed = failure(forced)
    assert task_name(failed) == "Stop - TransformerEngine cannot be imported"
    message = failed["result"]["msg"]
    assert "version `GLIBC_2.38' not found" in message, message
    assert "PRIMUS_TE_MODE=source" in message
    # Back to source mode: the cached source build is reinstalled, nothing is compiled.
    back = run("te")
    assert back.rc == 0, back
    assert built_in(back) == set()
    assert stamp(base, "te")["outputs"]["mode"] == "source"


def test_a_patch_that_no_longer_matches_fails_naming_the_file(converged, run, world, tmp_path, target):
    before = installed(target, converged.base)

    def change(pins):
        pins["sources"]["torchtune"]["patches"][0]["before"] = "use_grouped_mm = Maybe"
        pins["sources"]["torchtune"]["patches"][0]["after"] = "use_grouped_mm = Never"
    mismatch = run("torchtune", extra={"primus_release_file": pins_variant(world, tmp_path, "patch", change)})
    assert mismatch.rc != 0
    failed = failure(mismatch)
    assert task_name(failed) == "Apply and verify the patches - torchtune"
    assert "torchtune/modules/moe/utils.py" in failed["result"]["msg"]
    assert "use_grouped_mm = Maybe" in failed["result"]["msg"]
    assert installed(target, converged.base) == before


def test_unpinned_cutlass_is_refused_by_the_forbid_list_then_breaks_mamba_with_thrcopy(converged, run, world,
                                                                                       tmp_path, target):
    base = converged.base
    # As on a fresh venv: no CUTLASS DSL installed yet, so nothing holds it at 4.5.3.
    drop = target.run([os.path.join(base, "venv", "bin", "python"), "-m", "pip", "uninstall", "-y", "-q",
                       "nvidia-cutlass-dsl", "nvidia-cutlass-dsl-libs-base", "quack-kernels"])
    assert drop.returncode == 0, drop.stderr
    before = installed(target, base)

    def unpin(pins):
        pins["mamba"]["pre_packages"] = [p for p in pins["mamba"]["pre_packages"] if "cutlass" not in p]
    unpinned = pins_variant(world, tmp_path, "unpinned", unpin)
    refused = run("mamba", extra={"primus_release_file": unpinned})
    assert refused.rc != 0
    message = failure(refused)["result"]["msg"]
    assert "nvidia-cutlass-dsl-libs-cu12" in message or "nvidia-cuda-nvdisasm" in message, message
    assert installed(target, base) == before, "something was installed before the forbid list refused"

    def unpin_unforbid(pins):
        unpin(pins)
        pins["pip_forbid"] = []
    # Kept (primus_mamba_cutlass: pin), the unpinned CUTLASS DSL 4.6 breaks quack-kernels' import.
    broken = run("mamba", extra={"primus_release_file": pins_variant(world, tmp_path, "open", unpin_unforbid),
                                 "primus_mamba_cutlass": "pin"})
    assert broken.rc != 0
    failed = failure(broken)
    assert task_name(failed) == "Stop - mamba_ssm cannot be imported"
    assert "ThrCopy" in failed["result"]["msg"] and "4.5.3" in failed["result"]["msg"]
    have = installed(target, base)
    assert have["nvidia-cutlass-dsl"] != "4.5.3"
    # What the open pins let in goes again (the later tests need a venv the forbid list accepts).
    extra = [n for n in have if n.startswith(("nvidia-", "quack-kernels"))]
    drop = target.run([os.path.join(base, "venv", "bin", "python"), "-m", "pip", "uninstall", "-y", "-q"] + extra)
    assert drop.returncode == 0, drop.stderr


def test_te_wheel_mode_imports_in_the_glibc_2_41_root(trixie_playbook, trixie_target):
    base = trixie_target.base("te-wheel")
    run = trixie_playbook("venv,torch,flash_attn,te", base)
    assert run.rc == 0, run
    record_timing("venv,torch,flash_attn,te in the trixie root (TE wheel mode)", run.seconds)
    with open(trixie_target.path(os.path.join(base, "state", "te.json"))) as handle:
        te = json.load(handle)
    assert te["outputs"]["mode"] == "wheel"
    assert "transformer-engine-rocm-torch" in te["outputs"]["distributions"]
    proc = trixie_target.run([base + "/venv/bin/python", "-c", "import transformer_engine; print('ok')"])
    assert proc.returncode == 0 and "ok" in proc.stdout, proc


GITHUB_WHEEL = "GET /github/Dao-AILab/flash-attention/releases/download/"


def test_flash_attention_fetches_no_prebuilt_wheel_unless_its_switch_is_removed(converged, run, world, tmp_path):
    """FLASH_ATTENTION_FORCE_BUILD=TRUE (the pins' build.env): no request for a prebuilt wheel; without it, flash-attention's
    setup.py asks GitHub releases first (the world answers 404 and the build goes on), so the switch is what stops it."""
    base = converged.base
    assert GITHUB_WHEEL not in converged.requests
    assert build_record(base, "flash_attn")["prebuilt_attempted"] is False

    def unforce(pins):
        del pins["sources"]["flash_attn"]["build"]["env"]["FLASH_ATTENTION_FORCE_BUILD"]
    with server_log(world) as requests:
        fetching = run("flash_attn", extra={"primus_release_file": pins_variant(world, tmp_path, "unforced", unforce)})
    assert fetching.rc == 0, fetching
    assert built_in(fetching) == {"flash_attn"}, "another build key: another wheel"
    assert GITHUB_WHEEL in requests[0] and build_record(base, "flash_attn")["prebuilt_attempted"] is True
    back = run("flash_attn")
    assert back.rc == 0 and built_in(back) == set(), back
    assert build_record(base, "flash_attn")["prebuilt_attempted"] is False


def env_table_with(name, value):
    with open(os.path.join(REPO, "roles", "primus", "vars", "env.yml")) as handle:
        table = yaml.safe_load(handle)["primus_env_table"]
    for entry in table["entries"]:
        if entry["name"] == name:
            entry["value"] = value
            return table
    raise AssertionError("no %s in the environment table" % name)


def test_a_build_environment_value_changes_the_build_key_and_max_jobs_does_not(converged, run):
    """flash-attention compiles CK_TILE_FLOAT_TO_BFLOAT16_DEFAULT in: a base whose table says otherwise needs another
    wheel (the check run names another key); a base that differs only in MAX_JOBS is done with the same wheel."""
    current = stamp(converged.base, "flash_attn")["key_id"]
    other = run("flash_attn", check=True, extra={"primus_env_table": env_table_with("CK_TILE_FLOAT_TO_BFLOAT16_DEFAULT", "1")})
    assert other.rc == 0, other
    message = other.task("Show what would be built - flash_attn")["result"]["msg"]
    assert "(build key " in message and current not in message, message
    jobs = run("flash_attn", check=True, extra={"primus_max_jobs": "1"})
    assert jobs.rc == 0, jobs
    assert not [r for r in jobs.results if task_name(r).startswith("Show what would be built") and r["status"] == "ok"]
    assert jobs.stats["node1"]["changed"] == 0


def launch(base):
    with open(os.path.join(base, "manifest", "manifest.json")) as handle:
        return dict((r["name"], r) for r in json.load(handle)["verify"])


def test_the_launch_check_passes_with_the_cutlass_purge_and_names_the_abort_with_the_pin(converged, run, target):
    """verify imports the stack in one process, as a job does: with the CUTLASS DSL stack removed (the default) it
    lives together; kept (primus_mamba_cutlass: pin), mamba_ssm loads cutlass after Primus-Turbo's FlyDSL and the
    process aborts - while every package still imports on its own."""
    base = converged.base
    full = run("mamba,primus,aiter,turbo")
    assert full.rc == 0, full
    purged = run("verify")
    results = launch(base)
    assert results["launch"]["status"] == "ok", results["launch"]
    assert results["mamba_ssm"]["status"] == "ok" and results["flydsl_vector"]["status"] == "ok"
    # verify fails only for the default stages this module does not build.
    assert "Not built on this base: pydeps" in purged.output
    assert not re.search(r"Check \w+ \(stage \w+\) failed", purged.output)
    pinned = run("mamba,verify", extra={"primus_mamba_cutlass": "pin"})
    assert pinned.rc != 0
    results = launch(base)
    assert results["launch"]["status"] == "failed"
    assert "SIGABRT" in results["launch"]["detail"] and "mamba_ssm" in results["launch"]["detail"], results["launch"]
    assert "nanobind" in results["launch"]["detail"]
    assert "Check launch (stage verify) failed" in pinned.output
    for name in ("mamba_ssm", "flydsl_vector", "primus_turbo", "aiter"):
        assert results[name]["status"] == "ok", results[name]
    assert installed(target, base)["nvidia-cutlass-dsl"] == "4.5.3"
    restored = run("mamba")
    assert restored.rc == 0, restored
    assert "nvidia-cutlass-dsl" not in installed(target, base)
