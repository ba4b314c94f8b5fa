"""Source-build plans of the release's own repos entries (primus, aiter, turbo): checkouts without a
build, no_deps, per-node build variables, the checkout's directory name."""
import os

import pytest
import yaml

from ansible_collections.primus.trainenv.plugins.plugin_utils import source_build

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
COMMIT = "a" * 40
CONTEXT = {"python_tag": "cp312", "torch": "2.12.0+rocm7.15.0a20260720", "glibc": "2.36", "archs": ["gfx950", "gfx942"],
           "build_dir": "/tmp/primus-build-me", "cache_dir": "/tmp/primus-cache-me", "workspace": "/home/me/env/workspace",
           "base": "/home/me/env"}


@pytest.fixture(scope="module")
def sources():
    with open(os.path.join(REPO, "roles", "primus", "vars", "releases", "v26.5.yml")) as handle:
        return yaml.safe_load(handle)["primus_pins"]["sources"]


def plan(sources, name, **context):
    return source_build.source_plan(name, sources[name], sources[name]["ref"], dict(CONTEXT, **context))


def test_primus_is_a_kept_checkout_without_a_distribution_or_arch_list(sources):
    result = plan(sources, "primus")
    assert result["src"] == "/home/me/env/workspace/Primus"
    assert result["keep"] and result["submodules"]
    assert result["distribution"] == ""
    assert result["key"]["archs"] == [] and result["env"] == {}
    # Another arch list leaves the checkout's key alone.
    assert plan(sources, "primus", archs=["gfx942"])["key_id"] == result["key_id"]


def test_aiter_is_kept_and_builds_with_prebuild_kernels_and_the_arch_list(sources):
    result = plan(sources, "aiter")
    assert result["src"] == "/home/me/env/workspace/aiter"
    assert result["distribution"] == "amd-aiter"
    assert result["env"] == {"GPU_ARCHS": "gfx942;gfx950", "PREBUILD_KERNELS": "3", "AITER_USE_SYSTEM_TRITON": "1"}
    # Both distribution names are removed before the build, from the pins' data.
    assert result["uninstall"] == ["aiter", "amd-aiter"]
    assert result["key"]["isolation"] is True and "no_deps" not in result["key"]
    assert plan(sources, "aiter", archs=["gfx942"])["key_id"] != result["key_id"]


def test_turbo_no_deps_and_the_nodes_rocshmem_home_are_part_of_the_key(sources):
    placeholder = plan(sources, "turbo", env={"turbo": {"ROCSHMEM_HOME": "/b/.rocshmem-not-installed"}})
    real = plan(sources, "turbo", env={"turbo": {"ROCSHMEM_HOME": "/opt/rocshmem"}})
    assert placeholder["src"] == "/tmp/primus-build-me/turbo-%s" % source_build.tree_tag("/home/me/env")
    assert not placeholder["keep"]
    assert placeholder["key"]["no_deps"] is True
    assert placeholder["env"] == {"GPU_ARCHS": "gfx942;gfx950", "ROCSHMEM_HOME": "/b/.rocshmem-not-installed"}
    assert real["env"]["ROCSHMEM_HOME"] == "/opt/rocshmem"
    assert placeholder["key_id"] != real["key_id"]
    assert placeholder["wheel_dir"] != real["wheel_dir"]


def test_the_rocshmem_placeholder_under_each_node_s_own_base_is_one_key(sources):
    """A fleet whose nodes have bases at different paths shares Primus-Turbo's build: the placeholder is keyed
    relative to the base; the build itself still sees the node's own path."""
    one = plan(sources, "turbo", base="/home/a/env", env={"turbo": {"ROCSHMEM_HOME": "/home/a/env/.rocshmem-not-installed"}})
    two = plan(sources, "turbo", base="/home/b/env", env={"turbo": {"ROCSHMEM_HOME": "/home/b/env/.rocshmem-not-installed"}})
    assert one["key_id"] == two["key_id"]
    assert one["key"]["env"]["ROCSHMEM_HOME"] == "$PRIMUS_BASE/.rocshmem-not-installed"
    assert two["env"]["ROCSHMEM_HOME"] == "/home/b/env/.rocshmem-not-installed"
    # A path that only starts like the base is not under it.
    other = plan(sources, "turbo", base="/home/a/env", env={"turbo": {"ROCSHMEM_HOME": "/home/a/env2/rocshmem"}})
    assert other["key"]["env"]["ROCSHMEM_HOME"] == "/home/a/env2/rocshmem"


def test_node_variables_of_another_component_do_not_change_a_key(sources):
    assert (plan(sources, "flash_attn", env={"turbo": {"ROCSHMEM_HOME": "/x"}})["key_id"]
            == plan(sources, "flash_attn")["key_id"])


def test_bad_fields_are_named(sources):
    bad = dict(sources["turbo"], dir="../elsewhere", build=dict(sources["turbo"]["build"], no_deps="yes"))
    problems = source_build.check_source("turbo", bad)
    assert "sources.turbo.dir '../elsewhere' is not a directory name" in problems
    assert "sources.turbo.build.no_deps must be true or false, got 'yes'" in problems
    with pytest.raises(source_build.SourceError, match="not a variable name"):
        plan(sources, "turbo", env={"turbo": {"rocshmem home": "/x"}})


def test_a_transient_tree_is_per_base_and_a_kept_one_in_the_base_s_workspace(sources):
    """One user building two bases at once: two trees; the key (and the cached wheel) stays the same."""
    one, other = plan(sources, "flash_attn"), plan(sources, "flash_attn", base="/home/me/env2")
    assert one["src"] != other["src"] and one["key_id"] == other["key_id"]
    assert os.path.dirname(one["src"]) == "/tmp/primus-build-me"
    assert os.path.basename(one["src"]) == "flash_attn-" + source_build.tree_tag("/home/me/env")
    assert source_build.tree_tag("/home/me/env") != source_build.tree_tag("/home/me/env2")
    assert len(source_build.tree_tag("/x")) == 8


ENVIRONMENT = {"PRIMUS_BASE": "/home/me/env", "MAX_JOBS": "16", "PIP_CACHE_DIR": "/tmp/primus-cache-me/pip",
               "PATH": "/home/me/env/venv/bin:/usr/bin", "ROCM_PATH": "/home/me/env/venv/lib/_rocm_sdk_devel",
               "CK_TILE_FLOAT_TO_BFLOAT16_DEFAULT": "2", "NVTE_CK_USES_BWD_V3": "1",
               "PYTORCH_ROCM_ARCH": "gfx942;gfx950", "GPU_ARCHS": "native", "HIP_ARCHITECTURES": "gfx942,gfx950"}


def test_a_value_of_the_build_environment_that_changes_the_result_changes_the_key(sources):
    """flash-attention compiles CK_TILE_FLOAT_TO_BFLOAT16_DEFAULT in: two bases that differ in it do not share a
    wheel; the build sees the whole environment, its own variables on top."""
    one = plan(sources, "flash_attn", environment=ENVIRONMENT)
    other = plan(sources, "flash_attn", environment=dict(ENVIRONMENT, CK_TILE_FLOAT_TO_BFLOAT16_DEFAULT="1"))
    assert one["key_id"] != other["key_id"]
    assert one["key"]["env"]["CK_TILE_FLOAT_TO_BFLOAT16_DEFAULT"] == "2"
    assert one["environment"]["GPU_ARCHS"] == "gfx942;gfx950" and one["environment"]["MAX_JOBS"] == "16"
    assert one["environment"]["FLASH_ATTENTION_FORCE_BUILD"] == "TRUE"


@pytest.mark.parametrize("variable, value", [
    ("MAX_JOBS", "1"), ("PIP_CACHE_DIR", "/tmp/other/pip"), ("PRIMUS_BASE", "/scratch/other"),
    ("PATH", "/opt/x/bin:/usr/bin"), ("ROCM_PATH", "/scratch/other/venv/lib/_rocm_sdk_devel"),
])
def test_parallelism_caches_and_locations_do_not_change_the_key(sources, variable, value):
    """Two bases (or nodes) that differ only in MAX_JOBS, a cache or a location share one wheel."""
    one = plan(sources, "flash_attn", environment=ENVIRONMENT)
    other = plan(sources, "flash_attn", environment=dict(ENVIRONMENT, **{variable: value}))
    assert one["key_id"] == other["key_id"]
    assert variable not in one["key"]["env"] and variable in source_build.NOT_IN_KEY


def test_an_arch_independent_build_ignores_the_arch_variables(sources):
    """torchtune is declared arch-independent (build.archs false): one wheel for every arch of a fleet."""
    one = plan(sources, "torchtune", environment=ENVIRONMENT)
    other = plan(sources, "torchtune", archs=["gfx942"],
                 environment=dict(ENVIRONMENT, PYTORCH_ROCM_ARCH="gfx942", HIP_ARCHITECTURES="gfx942"))
    assert one["key_id"] == other["key_id"] and "PYTORCH_ROCM_ARCH" not in one["key"]["env"]
    # ... while an arch-dependent one records them.
    assert plan(sources, "torchao", environment=ENVIRONMENT)["key"]["env"]["PYTORCH_ROCM_ARCH"] == "gfx942;gfx950"


def test_build_uninstall_must_name_distributions(sources):
    bad = dict(sources["aiter"], build=dict(sources["aiter"]["build"], uninstall=["-r x"]))
    with pytest.raises(source_build.SourceError) as err:
        source_build.source_plan("aiter", bad, bad["ref"], CONTEXT)
    assert "build.uninstall must be a list of distribution names" in str(err.value)


def test_stage_keys_and_own_distributions():
    plans = {"flash_attn": {"key": {"commit": "c"}, "distribution": "flash_attn"},
             "turbo": {"key": {"commit": "t"}, "distribution": "primus_turbo"}}
    keys = source_build.stage_keys(plans, {"boto": {"packages": ["boto3==1"]}}, {"turbo": {"packages": ["flydsl==0.2.4"]}},
                                   {"te": {"mode": "wheel"}})
    assert keys == {"boto": {"packages": ["boto3==1"]}, "flash_attn": {"commit": "c"},
                    "turbo": {"commit": "t", "packages": ["flydsl==0.2.4"]}, "te": {"mode": "wheel"}}
    own = source_build.own_distributions(plans, {"torchrec": ["torchrec", "git+https://x/y.git", "iopath>=1"]},
                                         {"turbo": ["flydsl==0.2.4"]}, {"te": ["transformer_engine_rocm_torch==2"]})
    assert own == {"torchrec": ["torchrec", "iopath"], "flash_attn": ["flash_attn"], "turbo": ["primus_turbo", "flydsl"],
                   "te": ["transformer_engine_rocm_torch"]}


def test_an_sdist_plan_is_keyed_by_pin_python_and_glibc():
    one = source_build.sdist_plan("tensorstore==0.1.45", CONTEXT)
    assert one["wheel_dir"] == "/tmp/primus-cache-me/wheels/tensorstore/" + one["key_id"]
    assert source_build.sdist_plan("tensorstore==0.1.45", dict(CONTEXT, glibc="2.35"))["key_id"] != one["key_id"]
    with pytest.raises(source_build.SourceError):
        source_build.sdist_plan("tensorstore>=0.1", CONTEXT)
