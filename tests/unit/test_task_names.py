# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Task names say what a task does: a task named "Stop - ..." only ever stops the run.

Issue 25: verify's final assert was named "Stop - the environment does not pass verify" and so showed
`ok` with "verify passed" on every good run.
"""

import glob
import os

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def tasks(items):
    for task in items or []:
        if not isinstance(task, dict):
            continue
        yield task
        for key in ("block", "rescue", "always", "tasks"):
            yield from tasks(task.get(key))


def every_task():
    for path in sorted(glob.glob(os.path.join(REPO, "roles", "*", "tasks", "*.yml"))):
        with open(path) as handle:
            for task in tasks(yaml.safe_load(handle)):
                yield os.path.relpath(path, REPO), task
    with open(os.path.join(REPO, "playbooks", "primus.yml")) as handle:
        for play in yaml.safe_load(handle):
            for task in tasks(play.get("tasks")):
                yield "playbooks/primus.yml", task


def test_a_stop_task_never_reports_success():
    found = [(path, task["name"]) for path, task in every_task() if str(task.get("name", "")).startswith("Stop")]
    assert found
    for path, name in found:
        task = [t for p, t in every_task() if p == path and t.get("name") == name][0]
        check = task.get("ansible.builtin.assert")
        assert check is None, "%s: %r is an assert that shows ok with %r on success: name it for what it checks" % (
            path, name, check.get("success_msg"))


def test_verify_names_its_final_check_for_what_it_does():
    with open(os.path.join(REPO, "roles", "verify", "tasks", "main.yml")) as handle:
        names = [t.get("name") for t in tasks(yaml.safe_load(handle))]
    assert "Check that every verify check passed" in names
