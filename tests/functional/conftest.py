"""Fixtures of the functional scenarios; they live in harness.py so tests can import its helpers.
pytest finds fixtures by name, so the imports below are used although nothing references them."""
# pylint: disable=unused-import
import pytest

from harness import (  # noqa: F401
    golden, playbook, python310, python310_bare, python310_no_ensurepip, python312, shared_dir, target, trixie_playbook,
    trixie_target, world)


# tryfirst: pytest-xdist's own hook (which turns the marker into the test's group) must see the marks added here.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """`--dist loadgroup` (make functional): a test file runs whole in one worker (its module-scoped base stays in one
    process), unless its tests name their own groups (test_faults.py: the points sharing one base per group), which
    lets the two halves of a long file run beside each other."""
    for item in items:
        if not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
    # The longest groups first (make functional passes --no-loadscope-reorder, so xdist hands the groups out in this
    # order): a long group started last would leave one worker running alone at the end.
    items.sort(key=lambda item: -LONGEST.get(group(item), 0))


# The groups that take longest, by their share of a `make test` run's functional wall time (tests/output/timings.txt
# and the JUnit report's durations); the rest keep the order pytest collected them in.
LONGEST = {"tests/functional/test_releases.py": 9, "tests/functional/test_offline.py": 8, "faults-builds": 7,
           "tests/functional/test_bad_inputs.py": 6, "tests/functional/test_source_builds.py": 5,
           "tests/functional/test_fleet_store.py": 4, "faults-light": 3, "tests/functional/test_runsafe.py": 2,
           "tests/functional/test_repo_stages.py": 1}


def group(item):
    marker = item.get_closest_marker("xdist_group")
    return marker.args[0] if marker.args else marker.kwargs.get("name", "")
