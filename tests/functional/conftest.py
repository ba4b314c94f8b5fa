"""Fixtures of the functional scenarios; they live in harness.py so tests can import its helpers.
pytest finds fixtures by name, so the imports below are used although nothing references them."""
# pylint: disable=unused-import
import pytest

from harness import (  # noqa: F401
    playbook, python310, python310_bare, python310_no_ensurepip, python312, shared_dir, target, trixie_playbook,
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
