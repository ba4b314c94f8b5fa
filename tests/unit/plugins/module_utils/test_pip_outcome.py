"""Before/after differences, the diff, and pip's failures read from its real output."""
import json

import pytest

from ansible_collections.primus.trainenv.plugins.module_utils._pip.outcome import (
    any_change, build_output, compare, conflict_causes, diff_lines, explain_conflict, resolver_conflicts, resolver_warnings,
    subprocess_output,
    summary, tail)
from ansible_collections.primus.trainenv.plugins.module_utils._pip.probe import PROBE_MARKER, parse_probe
from ansible_collections.primus.trainenv.plugins.module_utils._pip.requirements import read_requirements_file

ROCM = "2.12.0+rocm7.15.0a20260720"

# Real output of `pip install -c c.txt needs-new-torch` (pip 23.2.1), c.txt pinning the ROCm torch.
CONFLICT_STDOUT_PIP23 = """Looking in indexes: http://127.0.0.1:8765/simple
Collecting needs-new-torch
  Downloading http://127.0.0.1:8765/files/needs_new_torch-1.0-py3-none-any.whl (984 bytes)
INFO: pip is looking at multiple versions of needs-new-torch to determine which version is compatible with other requirements. This could take a while.

The conflict is caused by:
    needs-new-torch 1.0 depends on torch>=2.13
    The user requested (constraint) torch==2.12.0+rocm7.15.0a20260720

To fix this you could try to:
1. loosen the range of package versions you've specified
2. remove package versions to allow pip attempt to solve the dependency conflict

"""
CONFLICT_STDERR_PIP23 = """ERROR: Cannot install needs-new-torch==1.0 because these package versions have conflicting dependencies.
ERROR: ResolutionImpossible: for help visit https://pip.pypa.io/en/latest/topics/dependency-resolution/#dealing-with-dependency-conflicts
"""
# pip 25.2 words the advice differently and prints the notice; the cause block is the same.
CONFLICT_STDOUT_PIP25 = CONFLICT_STDOUT_PIP23.replace("allow pip attempt", "allow pip to attempt")
CONFLICT_STDERR_PIP25 = """ERROR: Cannot install needs-new-torch==1.0 because these package versions have conflicting dependencies.

[notice] A new release of pip is available: 25.2 -> 26.3
[notice] To update, run: /tmp/v/bin/python -m pip install --upgrade pip
ERROR: ResolutionImpossible: for help visit https://pip.pypa.io/en/latest/topics/dependency-resolution/#dealing-with-dependency-conflicts
"""
BUILD_STDOUT = """Processing ./badproj
  Preparing metadata (pyproject.toml): started
  Preparing metadata (pyproject.toml): finished with status 'error'
"""
BUILD_STDERR = """  error: subprocess-exited-with-error
\x20\x20
  \u00d7 Preparing metadata (pyproject.toml) did not run successfully.
  \u2502 exit code: 1
  \u2570\u2500> [1 lines of output]
      compiler exploded: hipcc not found
      [end of output]
\x20\x20
  note: This error originates from a subprocess, and is likely not a problem with pip.
error: metadata-generation-failed
"""
NOT_FOUND = """ERROR: Could not find a version that satisfies the requirement nosuch==1 (from versions: none)
ERROR: No matching distribution found for nosuch==1
"""
RESOLVER_WARNING = ("Successfully installed torch-2.13.0\n"
                    "ERROR: pip's dependency resolver does not currently take into account all the packages that are "
                    "installed. This behaviour is the source of the following dependency conflicts.\n"
                    "old-app 1.0 requires torch<2.13, but you have torch 2.13.0 which is incompatible.\n")


def probe(*dists):
    rows = [[n, v, [], None, "/s/" + n, 1, []] for n, v in dists]
    return parse_probe("%s\n%s" % (PROBE_MARKER, json.dumps({"dists": rows, "markers": {}})))


def test_compare_classifies_every_kind_of_change(pk):
    before = {"torch": ("torch", "2.12.0+cpu"), "a": ("a", "1.0"), "b": ("b", "2.0"), "gone": ("gone", "1"),
              "same": ("same", "1.0")}
    after = {"torch": ("torch", ROCM), "a": ("a", "1.1"), "b": ("b", "1.9"), "new": ("New", "0.1"),
             "same": ("same", "1.0.0")}
    changes = compare(pk, before, after)
    assert changes == {
        "added": [{"name": "New", "version": "0.1"}],
        "removed": [{"name": "gone", "version": "1"}],
        "upgraded": [{"name": "a", "before": "1.0", "after": "1.1"}],
        "downgraded": [{"name": "b", "before": "2.0", "after": "1.9"}],
        "replaced": [{"name": "torch", "before": "2.12.0+cpu", "after": ROCM}],
    }
    assert any_change(changes)
    assert summary(changes) == "1 added, 1 removed, 1 upgraded, 1 downgraded, 1 replaced"
    assert not any_change(compare(pk, before, before))
    assert summary(compare(pk, before, before)) == "no change"


def test_diff_shows_only_lines_that_differ():
    before = {"pip": ("pip", "23.2.1"), "torch": ("torch", "2.12.0+cpu"), "gone": ("gone", "1")}
    after = {"pip": ("pip", "23.2.1"), "torch": ("torch", ROCM), "new": ("new", "2")}
    assert diff_lines(before, after) == {"before": "gone==1\ntorch==2.12.0+cpu\n",
                                         "after": "new==2\ntorch==%s\n" % ROCM}
    assert diff_lines(before, before) == {"before": "", "after": ""}


@pytest.mark.parametrize("out, err", [(CONFLICT_STDOUT_PIP23, CONFLICT_STDERR_PIP23),
                                      (CONFLICT_STDOUT_PIP25, CONFLICT_STDERR_PIP25)])
def test_conflict_explained_with_the_constraints_file(pk, tmp_path, out, err):
    cfile = tmp_path / "pip-constraints.txt"
    cfile.write_text("# Generated by tools/installation/setup.sh.\ntorch==%s\n" % ROCM)
    constraints = read_requirements_file(pk, str(cfile), constraint=True)[1]
    causes = conflict_causes(out, err)
    assert causes == ["needs-new-torch 1.0 depends on torch>=2.13", "The user requested (constraint) torch==%s" % ROCM]
    sentence, involved = explain_conflict(pk, causes, constraints, probe(("torch", ROCM)))
    assert sentence == ("This install would replace the pinned ROCm torch (torch==%s from %s) to satisfy "
                        "needs-new-torch 1.0 (torch>=2.13); pip refused." % (ROCM, cfile))
    assert involved == [{"name": "torch", "pin": "torch==%s" % ROCM, "file": str(cfile), "installed": ROCM,
                         "wanted_by": ["needs-new-torch 1.0 (torch>=2.13)"]}]


def test_conflict_without_a_constraint_has_no_sentence(pk):
    causes = ["a 1.0 depends on b<2", "The user requested b==2.0"]
    assert explain_conflict(pk, causes, [], probe()) == (None, [])


def test_build_output_and_resolver_warning():
    assert subprocess_output(BUILD_STDOUT, BUILD_STDERR) == ["compiler exploded: hipcc not found"]
    assert subprocess_output("", NOT_FOUND) == []
    warning = resolver_warnings(RESOLVER_WARNING, "")
    assert len(warning) == 1 and warning[0].endswith("old-app 1.0 requires torch<2.13, but you have torch 2.13.0 "
                                                     "which is incompatible.")
    assert resolver_warnings("Successfully installed x-1\n", "") == []


TWO_CONFLICTS = ("ERROR: pip's dependency resolver does not currently take into account all the packages that are "
                 "installed. This behaviour is the source of the following dependency conflicts.\n"
                 "amd-aiter 0.1.7 requires flydsl==0.1.7, but you have flydsl 0.2.4 which is incompatible.\n"
                 "old-app 1.0 requires torch<2.13, but you have torch 2.13.0 which is incompatible.\n"
                 "Successfully installed flydsl-0.2.4\n")


def test_expected_conflicts_are_kept_apart_and_the_others_still_warned():
    # Any spelling of the name: pip prints amd-aiter, the caller may write AMD_Aiter.
    warnings, known = resolver_conflicts(TWO_CONFLICTS, "", ["AMD_Aiter"])
    assert known == ["amd-aiter 0.1.7 requires flydsl==0.1.7, but you have flydsl 0.2.4 which is incompatible."]
    assert len(warnings) == 1 and warnings[0].endswith("conflicts. old-app 1.0 requires torch<2.13, but you have "
                                                       "torch 2.13.0 which is incompatible.")
    assert "amd-aiter" not in warnings[0]
    # Every line expected: no warning at all.
    assert resolver_conflicts(TWO_CONFLICTS, "", ["amd-aiter", "old-app"]) == ([], [
        "amd-aiter 0.1.7 requires flydsl==0.1.7, but you have flydsl 0.2.4 which is incompatible.",
        "old-app 1.0 requires torch<2.13, but you have torch 2.13.0 which is incompatible."])
    # Nothing expected: the whole report, as before.
    assert resolver_conflicts(TWO_CONFLICTS, "")[1] == [] and "amd-aiter 0.1.7" in resolver_warnings(TWO_CONFLICTS, "")[0]
    assert resolver_conflicts("Successfully installed x-1\n", "", ["x"]) == ([], [])


def test_tail():
    assert tail("a\nb\nc\n", 2) == "b\nc"
    assert tail("", 2) == ""


PIP_DEBUG_LOG = """2026-12-03T06:13:08,603 Building wheels for collected packages: tinymark
2026-12-03T06:13:08,607   Running command Preparing metadata (pyproject.toml)
2026-12-03T06:13:08,608   running dist_info
2026-12-03T06:13:08,609   Preparing metadata (pyproject.toml): finished with status 'done'
2026-12-03T06:13:08,610   Source in ./p has version 1.0.0
2026-12-03T06:13:08,611   Running command Building wheel for tinymark (pyproject.toml)
2026-12-03T06:13:08,938   running build_ext
2026-12-03T06:13:08,949   gcc -fPIC -c tinymark/_speed.c -o build/_speed.o
2026-12-03T06:13:09,078   tinymark/_speed.c:2:10: fatal error: rocshmem_missing.h: No such file or directory
2026-12-03T06:13:09,078       2 | #include "rocshmem_missing.h"

2026-12-03T06:13:09,085   error: command '/usr/bin/gcc' failed with exit code 1
2026-12-03T06:13:09,120   ERROR: [present-rich] Building wheel for tinymark (pyproject.toml) exited with 1
2026-12-03T06:13:09,128   Building wheel for tinymark (pyproject.toml): finished with status 'error'
2026-12-03T06:13:09,131 ERROR: Failed to build one or more wheels
"""


def test_build_output_is_the_last_builds_lines_from_pips_debug_log():
    assert build_output(PIP_DEBUG_LOG) == [
        "running build_ext", "gcc -fPIC -c tinymark/_speed.c -o build/_speed.o",
        "tinymark/_speed.c:2:10: fatal error: rocshmem_missing.h: No such file or directory",
        "    2 | #include \"rocshmem_missing.h\"", "error: command '/usr/bin/gcc' failed with exit code 1"]
    assert build_output(PIP_DEBUG_LOG, lines=1) == ["error: command '/usr/bin/gcc' failed with exit code 1"]
    assert build_output("") == [] and build_output("2026-12-03T06:13:08,603 Collecting x\n") == []
