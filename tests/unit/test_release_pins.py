"""The release pins file: shape, and the internal consistency rules the seed depends on."""
import os
import re

import pytest
import yaml

import stage_registry

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RELEASES = os.path.join(REPO, "roles", "primus", "vars", "releases")


def load(name="v26.5"):
    with open(os.path.join(RELEASES, name + ".yml")) as handle:
        return yaml.safe_load(handle)["primus_pins"]


@pytest.fixture(scope="module")
def pins():
    return load()


def test_release_identity(pins):
    assert pins["release"] == "v26.5"
    assert pins["derived_from"] == "Dockerfile.primus-v26.5"
    assert pins["python_version"] == "3.12"


def test_rocm_index_is_the_only_source_of_the_gpu_stack(pins):
    assert pins["indexes"]["torch"] == "https://rocm.nightlies.amd.com/whl-multi-arch"
    assert pins["indexes"]["te"] == "https://rocm.frameworks-nightlies.amd.com/whl-staging/device-all/"


def test_rocm_stack_comes_from_one_nightly(pins):
    nightly = "7.15.0a20260720"
    for req in pins["torch"]["packages"] + pins["torch"]["device_packages"]:
        assert req.endswith(nightly) or req.endswith("+rocm" + nightly), req
    assert "torch==2.12.0+rocm7.15.0a20260720" in pins["torch"]["packages"]
    assert pins["versions"]["torch"] == "2.12.0+rocm7.15.0a20260720"


def test_every_device_package_is_per_arch(pins):
    templates = pins["torch"]["device_packages"]
    assert len(templates) == 3
    assert all("{arch}" in t for t in templates)
    assert set(pins["torch"]["device_archs"]) == {"gfx942", "gfx950"}


def test_every_pin_is_exact_where_it_has_a_version(pins):
    groups = [pins["venv"]["packages"], pins["torch"]["pre_packages"], pins["torch"]["packages"],
              pins["te"]["deps"], pins["pydeps"]["packages"], pins["boto"]["packages"]]
    for group in groups:
        for req in group:
            assert not re.search(r"[<>~!]=?|===", req), "only == pins or bare names: %s" % req


def test_sources_are_commits_or_declared_floating_branches(pins):
    # Every component is a stage of the registry (whose stage it is built for).
    assert set(pins["sources"]) <= set(stage_registry.views()["order"])
    for name, src in pins["sources"].items():
        assert src["repo"].startswith("https://"), name
        if src["ref_kind"] == "commit":
            assert re.fullmatch(r"[0-9a-f]{40}", src["ref"]), name
        else:
            assert src["ref_kind"] == "branch", name
    assert {n for n, s in pins["sources"].items() if s["ref_kind"] == "branch"} == {"grouped_gemm", "mamba"}


def test_te_wheel_is_the_commit_built_from_source(pins):
    short = pins["sources"]["te"]["ref"][:7]
    assert pins["te"]["wheel"].endswith("." + short)
    assert pins["te"]["min_glibc_for_wheel"] == "2.38"


def test_patches_name_their_exact_before_and_after_text(pins):
    patches = [p for s in pins["sources"].values() for p in s.get("patches", [])]
    assert {(p["before"], p["after"]) for p in patches} == {
        ("use_grouped_mm = True", "use_grouped_mm = False"),
        ("pad_inner_dim: bool = False", "pad_inner_dim: bool = True"),
        ("if defined(HIPBLASLT_VEC_EXT)", "if false"),
    }
