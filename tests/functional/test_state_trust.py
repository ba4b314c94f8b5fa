"""State under a base is trusted only as far as it can be checked (issue 24, holes 6 and the RECORD check): on one base
built with the cheap stages (venv, torch) by the unprivileged user over SSH - an installed file edited after pip wrote
it is named by verify; a stamp that claims another torch than the venv holds is not taken as done; a symlinked state/
is refused before anything is written through it; a copy of the base made with `cp -a` is refused, naming where its
venv was made."""
import glob
import json
import os

import pytest

pytestmark = pytest.mark.functional

ROCM = "2.12.0+rocm7.15.0a20260720"


@pytest.fixture(scope="module")
def built(golden):
    """A copy of a base converged with venv,torch (tests/functional/bases.py)."""
    return golden("trust")


def site_packages(base):
    found = glob.glob(os.path.join(base, "venv", "lib", "python3.12", "site-packages"))
    assert found
    return found[0]


def verify_results(base):
    with open(os.path.join(base, "manifest", "manifest.json")) as handle:
        return {r["name"]: r for r in json.load(handle)["verify"]}


def test_verify_names_an_installed_file_whose_bytes_match_no_record(built, playbook, target):
    run = playbook("verify", built)
    results = verify_results(built)
    assert results["installed_files"]["status"] == "ok", results["installed_files"]
    assert "match their RECORDs" in results["installed_files"]["detail"]
    edited = os.path.join(site_packages(built), "torch", "__init__.py")
    with open(edited) as handle:
        good = handle.read()
    try:
        assert target.run(["sh", "-c", 'echo "# edited by hand" >> "$1"', "sh", edited]).returncode == 0
        run = playbook("verify", built)
        assert run.rc != 0
        result = verify_results(built)["installed_files"]
        assert result["status"] == "failed"
        assert "1 installed file(s) match none of the RECORDs that claim them: torch/__init__.py (torch %s)" % ROCM \
            in result["detail"], result
        assert "Check installed_files (stage venv) failed" in run.output
    finally:
        target.run(["sh", "-c", 'cat > "$1"', "sh", edited], input_text=good)


def test_a_stamp_that_claims_another_torch_is_not_done(built, playbook, target):
    stamp_path = os.path.join(built, "state", "torch.json")
    with open(stamp_path) as handle:
        stamp = json.load(handle)
    assert stamp["outputs"]["distributions"]["torch"] == ROCM
    stamp["outputs"]["distributions"]["torch"] = "9.9.9"   # the key (and so key_id) untouched: only a cross-check sees it
    target.run(["sh", "-c", 'cat > "$1"', "sh", stamp_path], input_text=json.dumps(stamp))
    run = playbook("torch", built)
    assert run.rc == 0, run
    # Not done (its stamp's torch is not the venv's): the stage ran and recorded what is really installed.
    assert any("Record stage torch as done" in name for name in run.changed_tasks()), run.changed_tasks()
    with open(stamp_path) as handle:
        assert json.load(handle)["outputs"]["distributions"]["torch"] == ROCM
    again = playbook("torch", built)
    assert again.rc == 0 and again.stats["node1"]["changed"] == 0, again.changed_tasks()


def test_a_symlinked_state_directory_is_refused_and_nothing_written_through_it(built, playbook, target):
    state = os.path.join(built, "state")
    outside = built + "-state-elsewhere"
    assert target.run(["mv", state, outside]).returncode == 0
    assert target.run(["ln", "-s", outside, state]).returncode == 0
    try:
        before = sorted(os.listdir(outside))
        run = playbook("venv,torch", built)
        assert run.rc != 0
        assert "The state directory %s (under PRIMUS_BASE) %s is a symbolic link (to '%s')" % (state, state, outside) \
            in run.output, run.output[-3000:]
        assert sorted(os.listdir(outside)) == before and run.stats["node1"]["changed"] == 0
    finally:
        target.run(["rm", state])
        target.run(["mv", outside, state])


def test_a_base_copied_with_cp_a_is_refused_naming_where_its_venv_was_made(built, playbook, target):
    copy = built + "-copy"
    assert target.run(["cp", "-a", built, copy]).returncode == 0
    try:
        run = playbook("venv,torch", copy)
        assert run.rc != 0
        assert "the venv at %s/venv was made at %s/venv: this base was copied or moved there" % (copy, built) \
            in run.output, run.output[-3000:]
        assert "run with the original PRIMUS_BASE (%s)" % built in run.output
        assert run.stats["node1"]["changed"] == 0
    finally:
        target.run(["rm", "-rf", copy])
