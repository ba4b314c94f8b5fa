"""Source-build plans of the release's own repos entries (primus, aiter, turbo): checkouts without a
build, no_deps, per-node build variables, the checkout's directory name."""
import os

import pytest
import yaml

from ansible_collections.primus.trainenv.plugins.module_utils import source_build

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
    assert result["env"] == {"GPU_ARCHS": "gfx942;gfx950", "PREBUILD_KERNELS": "3"}
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
