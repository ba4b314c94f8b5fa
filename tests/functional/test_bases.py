"""A converged base copied with bases.relocate_copy is the base a converge at its new path would have left: its
re-run changes nothing and asks the world for nothing, verify passes, and nothing done to the copy reaches the
original (the scenarios that start from a copy rely on all three)."""
import json
import os
import subprocess

import pytest

import bases
from harness import record_timing

pytestmark = pytest.mark.functional

STAGES = "venv,torch,manifest"


def world_requests(world, offset):
    with open(os.path.join(world["root"], "server.log")) as handle:
        handle.seek(offset)
        return [line for line in handle if '"GET ' in line or '"POST ' in line or '"HEAD ' in line]


def test_a_copied_base_reruns_with_no_change_and_no_request_verifies_and_leaves_its_original_alone(
        golden, playbook, target, world):
    original = golden.source(STAGES)
    before = bases.fingerprint(original)
    copy = golden("copied-base", STAGES)
    assert len(os.fsencode(copy)) == len(os.fsencode(original)) and copy != original
    # Not one byte of the copy names the original any more (file contents, binaries included, and link targets).
    named = subprocess.run(["grep", "-rlaF", "--", original, copy], capture_output=True, text=True, check=False)
    assert named.returncode == 1, named.stdout
    links = subprocess.run(["find", copy, "-type", "l", "-lname", original + "*"], capture_output=True, text=True,
                           check=False)
    assert links.stdout == ""
    assert "-m venv %s" % os.path.join(copy, "venv") in open(os.path.join(copy, "venv", "pyvenv.cfg")).read()

    offset = os.path.getsize(os.path.join(world["root"], "server.log"))
    rerun = playbook(STAGES, copy)
    assert rerun.rc == 0, str(rerun)
    record_timing("a relocated copy of venv,torch,manifest, re-run", rerun.seconds)
    assert rerun.stats["node1"]["changed"] == 0, rerun.changed_tasks()
    assert world_requests(world, offset) == []
    # verify checks the whole environment: on this base of two stages it fails for the stages not built, and every
    # check of the two stages built - the imports, env.sh, each installed file against its RECORD - passes.
    verify = playbook("verify", copy)
    with open(os.path.join(copy, "manifest", "manifest.json")) as handle:
        checks = {check["name"]: check for check in json.load(handle)["verify"]}
    assert {name for name, check in checks.items() if check["stage"] in ("venv", "torch")} >= {
        "torch_hip", "torch_pinned", "installed_files", "env_sh"}, checks
    for name, check in checks.items():
        expected = "ok" if check["stage"] in ("venv", "torch") else "not built"
        assert check["status"] == expected, (name, check)
    assert "match their RECORDs" in checks["installed_files"]["detail"]
    assert "Not built on this base" in verify.failed()[0]["result"]["msg"], str(verify)
    python = os.path.join(copy, "venv", "bin", "python")
    prefix = target.run([python, "-c", "import sys, torch; print(sys.prefix)"])
    assert prefix.returncode == 0 and prefix.stdout.strip() == os.path.join(copy, "venv"), prefix

    # What is done to the copy - a stage made again, a file changed, the copy removed - leaves the original as it was.
    os.remove(os.path.join(copy, "state", "torch.json"))
    again = playbook(STAGES, copy)
    assert again.rc == 0, str(again)
    with open(os.path.join(copy, "env.sh"), "a") as handle:
        handle.write("# changed in the copy\n")
    subprocess.run(["rm", "-rf", "--", copy], check=True)
    assert bases.fingerprint(original) == before
