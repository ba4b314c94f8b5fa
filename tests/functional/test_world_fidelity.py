"""The world's PyPI against a real node: a v26.5 base converged with every default stage (no --tags, as a user's first
converge) on the world ends with what real PyPI gave the same pip calls in the same order.

tests/world/pypi-snapshot.json records, per release, each pip call of a converge resolved against pypi.org on top of
what the calls before it installed (tests/world/snapshot_metadata.py, "stages"): the real node's outcome. There,
pydeps' datasets==3.6.0 holds through Primus's requirements: megatron-energon==7.3.2 brings s3fs at the fsspec datasets
3.6.0 allows (2025.3.0), aiobotocore 2.26.0, and takes wrapt back to 1.17.3. The node converged here by the real
playbook, pip and git on the world must end with exactly those versions, its turbo stage with Primus-Turbo's real
requirements.txt (edc8d2cc), and verify and the drift report (which holds the host to pydeps' datasets==3.6.0: it is
not among the release's drift_superseded pins) must pass."""
import json
import os
import sys

import pytest
import yaml

from harness import REPO, installed, installed_from_indexes, record_timing

sys.path.insert(0, os.path.join(REPO, "tests"))
from world.lib import packages, stages  # noqa: E402

pytestmark = pytest.mark.functional
RELEASE = "v26.5"


@pytest.fixture(scope="module")
def converged(playbook, target, world, tmp_path_factory):
    """Every default stage on an empty base of the MI300X host (gfx942), its report on the controller."""
    report = str(tmp_path_factory.mktemp("fidelity") / "report")
    base = target.base("fidelity")
    run = playbook(None, base, extra={"primus_report_dir": report, "primus_release_file": world["pins_by_release"][RELEASE]})
    record_timing("every default stage of v26.5 on an empty base (world fidelity)", run.seconds)
    if run.rc != 0:
        pytest.fail(repr(run), pytrace=False)
    return {"run": run, "base": base, "report": report}


def expected_state(node_archs):
    """({name: version} a real node has from the indexes after the default stages, {name: version} of the rest) from
    the snapshot's stages up to cleanup. The rest is what the node builds or clones itself: the source builds, the git
    requirements and pydeps' build_from_sdist wheels (installed from files: they carry a direct_url.json). Device
    wheels of the node's archs only (the snapshot resolves every arch of the pins)."""
    recorded = packages.load_snapshot()["stages"][RELEASE]
    state = stages.final_state(recorded, upto="cleanup")
    pins = yaml.safe_load(open(os.path.join(REPO, "roles", "primus", "vars", "releases", RELEASE + ".yml")))
    own = set(normalize(world["name"]) for _stage, world in stages.SOURCE_BUILDS)
    own |= set(normalize(name) for name, _version in stages.GIT_STAND_INS.values())
    own |= set(normalize(pin.split("==")[0]) for pin in pins["primus_pins"]["pydeps"]["build_from_sdist"])
    state = dict((n, v) for n, v in state.items() if "-device-" not in n or n.rsplit("-", 1)[-1] in node_archs)
    indexes = dict((n, v) for n, v in state.items() if n not in own)
    indexes["pip"] = pins["primus_pins"]["venv"]["bootstrap"][0].split("==")[1]  # the venv's own pip, not a step's
    return indexes, dict((n, v) for n, v in state.items() if n in own)


def normalize(name):
    return name.lower().replace("_", "-").replace(".", "-")


def test_the_node_ends_with_what_real_pypi_gave_the_same_stages(converged, target):
    node = dict(installed_from_indexes(converged["base"]))
    assert len(node) == len(installed_from_indexes(converged["base"]))  # one version per name
    expected, built = expected_state(["gfx942"])
    assert dict((n, (node.get(n), expected.get(n))) for n in set(node) | set(expected)
                if node.get(n) != expected.get(n)) == {}
    # what the node built: the sdist-only pin at its version; the source builds and git requirements by name (the
    # world's builds carry their commit in the version: TE's 2.15.0.dev0+<commit>, mlperf_logging's of its tag)
    everything = installed(target, converged["base"])
    assert set(built) <= set(everything) and not set(built) & set(node), sorted(set(built) - set(everything))
    assert everything["tensorstore"] == built["tensorstore"] == "0.1.45"
    # the outcome that differs from each group resolved alone: pydeps' datasets holds, Primus's energon adapts to it
    assert (node["datasets"], node["s3fs"], node["fsspec"]) == ("3.6.0", "2025.3.0", "2025.3.0")
    assert (node["aiobotocore"], node["multidict"], node["wrapt"]) == ("2.26.0", "6.9.1", "1.17.3")


def test_turbo_installed_primus_turbos_real_requirements(converged):
    node = dict(installed_from_indexes(converged["base"]))
    assert (node["pre-commit"], node["ruff"], node["clang-format"]) == ("4.5.1", "0.15.12", "20.1.6")
    for name in ("twine", "pytest-xdist", "pytest-timeout", "setuptools-scm", "expecttest", "build"):
        assert name in node, name
    assert node["setuptools"] == "75.1.0"   # requirements_skip: Turbo's setuptools==69.5.1 left out
    assert node["flydsl"] == "0.2.4"


def test_verify_and_the_drift_report_pass_with_datasets_held_to_its_pin(converged):
    run = converged["run"]
    summary = json.load(open(os.path.join(converged["report"], "summary.json")))
    (name, record), = summary["hosts"].items()
    statuses = dict((e["stage"], e["status"]) for e in record["stages"])
    assert record["result"] == "ok" and statuses["verify"] == "ran" and statuses["primus"] == "built", record
    drift = json.load(open(os.path.join(converged["report"], "drift.json")))
    assert drift["errors"] == [] and drift["drift"] == [] and drift["no_manifest"] == []
    manifest = json.load(open(os.path.join(converged["report"], "manifests", name + ".json")))
    assert manifest["distributions"]["datasets"] == "3.6.0"
    pins = yaml.safe_load(open(os.path.join(REPO, "roles", "primus", "vars", "releases", RELEASE + ".yml")))
    assert "datasets" not in pins["primus_pins"]["drift_superseded"] and "datasets==3.6.0" in \
        pins["primus_pins"]["pydeps"]["packages"]
    assert "drift: " in run.stdout
