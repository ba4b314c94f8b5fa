"""The shipped release files against each other and against what docs/releases.md says of them: the keys that differ
between v26.5 and v26.5.1 are exactly those its table of differences names, and both files pass the one schema."""
import os
import re
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, ".collections"))
from ansible_collections.primus.trainenv.plugins.plugin_utils import release_schema  # noqa: E402

RELEASES = os.path.join(ROOT, "roles", "primus", "vars", "releases")
MARKER = "<!-- The v26.5.1 differences: tests/unit/test_release_files.py checks"


def pins(release):
    with open(os.path.join(RELEASES, release + ".yml")) as handle:
        return yaml.safe_load(handle)["primus_pins"]


def leaves(value, path=""):
    """{dotted key path: value} down to lists and scalars (a list is one value)."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            out.update(leaves(item, "%s.%s" % (path, key) if path else key))
        return out
    return {path: value}


def documented():
    """The key paths the table after MARKER names in its first column (several per row, each in backticks)."""
    with open(os.path.join(ROOT, "docs", "releases.md")) as handle:
        text = handle.read()
    assert MARKER in text, "docs/releases.md has no table of the v26.5.1 differences"
    rows = text.split(MARKER, 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    keys = set()
    for row in rows[2:]:
        keys.update(re.findall(r"`([a-z_.]+)`", row.split("|")[1]))
    return keys


def differing(old, new):
    """The key paths whose value differs, a key of one file only included."""
    a, b = leaves(old), leaves(new)
    return set(key for key in set(a) | set(b) if a.get(key) != b.get(key))


def test_the_keys_that_differ_are_exactly_those_the_docs_list():
    diff = differing(pins("v26.5"), pins("v26.5.1"))
    assert diff == documented(), "differ but undocumented: %s; documented but equal: %s" % (
        sorted(diff - documented()), sorted(documented() - diff))


def test_the_comparison_sees_a_changed_key():
    old, new = pins("v26.5"), pins("v26.5.1")
    new["pydeps"]["packages"] = new["pydeps"]["packages"] + ["extra==1"]
    assert "pydeps.packages" in differing(old, new) - documented()


def test_both_shipped_files_pass_the_schema():
    for release in ("v26.5", "v26.5.1"):
        assert release_schema.problems(pins(release)) == [], release
