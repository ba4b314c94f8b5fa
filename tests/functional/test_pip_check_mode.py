"""`--check --diff` of the venv and torch stages tells the truth, as the unprivileged user against the world.

On an empty base: every pip task shows the exact packages it would add (planned by pip in a scratch
venv made from the interpreter the venv will come from, holding what the earlier tasks would have
installed), and the constraints file is shown as it will be written, with the planned torch and
triton lines. On a base where only the venv exists: nothing fails (the torch plan sees the pre-torch
pins the task before it would install). Nothing is written in either case.
"""
import os
import re

import pytest

from harness import record_timing, tree_state

pytestmark = pytest.mark.functional

ROCM = "2.12.0+rocm7.15.0a20260720"
TRITON = re.compile(r"^triton==3\.7\.1\+git[0-9a-f]+\.rocm7\.15\.0a20260720$")


def added(run, task):
    result = run.task(task)["result"]
    assert result.get("plan_exact") is True, (task, result.get("warnings"), result.get("msg"))
    return dict((a["name"].lower(), a["version"]) for a in result["added"])


def constraints_after(run):
    diffs = run.task("Write pip-constraints.txt")["result"]["diff"]
    (diff,) = [d for d in diffs if d["after_header"].endswith("pip-constraints.txt")]
    return [line for line in diff["after"].splitlines() if line and not line.startswith("#")]


def test_check_diff_on_an_empty_base_shows_the_exact_plan_and_the_constraints(playbook, target):
    base = target.base("check-empty")
    run = playbook("venv,torch", base, check=True, diff=True)
    record_timing("venv,torch --check --diff on an empty base (unprivileged, SSH)", run.seconds)
    assert run.rc == 0, "\n".join("%s: %s" % (r["task"], r["result"].get("msg")) for r in run.failed())
    assert not os.path.exists(base), "check mode created the base"
    front = added(run, "Install pinned pip and the build front-end pins")
    assert {k: front.get(k) for k in ("wheel", "cmake", "ninja", "packaging", "setuptools")} == {
        "wheel": "0.45.1", "cmake": "3.31.6", "ninja": "1.11.1.3", "packaging": "25.0", "setuptools": "75.1.0"}
    pip_plan = run.task("Install pinned pip and the build front-end pins")["result"]["upgraded"]
    assert [(u["name"], u["after"]) for u in pip_plan] == [("pip", "26.3")]   # from ensurepip's pip
    pre = added(run, "Install the pre-torch pins")
    assert pre["cxxfilt"] == "0.3.0" and pre["pytest"] == "9.0.3" and "wheel" not in pre
    stack = added(run, "Install torch, companions and device wheels")
    assert stack["torch"] == ROCM and stack["apex"] == "1.12.0+rocm7.15.0a20260720"
    assert stack["amd-torch-device-gfx942"] == ROCM and "cxxfilt" not in stack   # planned by the task before
    lines = constraints_after(run)
    assert lines[0] == "torch==" + ROCM and TRITON.match(lines[1]) and len(lines) == 2, lines
    assert lines[1] == "triton==" + stack["triton"]
    assert "+torch==%s" % ROCM in run.stdout and "+" + lines[1] in run.stdout    # what --diff prints


def test_check_on_a_base_with_only_the_venv_does_not_fail(playbook, target, python312):
    base = target.base("check-venv-only")
    made = target.run(["bash", "-c", "mkdir -p %s && %s -m venv %s/venv" % (base, python312, base)])
    assert made.returncode == 0, made.stderr
    before = tree_state(base)
    run = playbook("venv,torch", base, check=True, diff=True)
    assert run.rc == 0, "\n".join("%s: %s" % (r["task"], r["result"].get("msg")) for r in run.failed())
    assert tree_state(base) == before, "check mode changed the base"
    stack = added(run, "Install torch, companions and device wheels")
    assert stack["torch"] == ROCM
    lines = constraints_after(run)
    assert lines[0] == "torch==" + ROCM and TRITON.match(lines[1]), lines
