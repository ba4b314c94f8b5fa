"""prior_plan entries: what earlier tasks of the run would have installed."""
import pytest

from ansible_collections.primus.trainenv.plugins.module_utils._pip.plan import prior_entries


def test_prior_entries_skip_wheel_builds_and_inexact_entries(pk):
    entries = ["einops==0.8.1",
               {"name": "torch", "version": "2.12.0+rocm7.15.0a20260720", "action": "install"},
               {"name": None, "version": None, "action": "build", "src": "/s", "wheel_dir": "/w"},
               {"name": "tinymark", "version": "1.0.0", "action": "build", "src": "/s", "wheel_dir": "/w"},
               {"name": "tqdm", "version": None, "action": "install"}]
    assert prior_entries(pk, entries) == [("einops", "0.8.1"), ("torch", "2.12.0+rocm7.15.0a20260720")]


def test_prior_entries_refuse_an_entry_without_a_name(pk):
    with pytest.raises(ValueError, match=r"prior_plan\[0\].*has no name"):
        prior_entries(pk, [{"name": None, "version": "1.0", "action": "install"}])
