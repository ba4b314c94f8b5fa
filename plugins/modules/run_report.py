#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: run_report
short_description: The run summary, the hosts' manifests and the drift report, written on the controller
version_added: 0.1.0
description:
  - Runs on the controller (the machine running C(ansible-playbook)); nothing is sent to a node. C(playbooks/primus.yml)
    runs it once per run (C(run_once)).
  - With O(state=checked) (the site playbook's first play, before anything is built) it checks the report directory
    O(dir) and the drift fields, and fails naming the setting, the value and the fix.
  - With O(state=written) it writes, into O(dir), C(summary.json) and C(summary.txt) (O(summary), as the
    P(primus.trainenv.run_summary#filter) filter makes it; a host without a record in this run - a later serial batch,
    a C(--limit) - keeps as C(last_known) the release, base and current link that the C(summary.json) already there
    recorded of it, with that run's time), C(manifests/<host>.json) (each host's manifest of this run,
    the host name with any character other than letters, digits and C(._@%+=,-) replaced by C(_)), and with O(drift)
    C(drift.json) and C(drift.md) (the P(primus.trainenv.drift_report#filter) report). Each file is written through a
    temporary file and a rename, mode 0644, only when its content changed; created directories get mode 0700.
  - The directory must be yours - absolute (a leading C(~) is your home on the controller), of safe characters, not a
    symbolic link, owned by you and not writable by others; it is created when missing.
  - It writes in check mode too (the playbook sets C(check_mode=false) on it) - the record of a run is the controller's,
    not a change to a node.
author:
  - primus.trainenv developers (@primus-trainenv)
attributes:
  check_mode:
    description: Not supported; the site playbook runs it with C(check_mode=false).
    support: none
  diff_mode:
    description: Nothing to show.
    support: none
  action:
    description: Runs on the controller only.
    support: full
options:
  dir:
    description:
      - The report directory on the controller (the setting C(primus_report_dir)). Empty means
        C($XDG_STATE_HOME/primus-trainenv), else C(~/.local/state/primus-trainenv).
    type: str
    default: ''
  state:
    description: V(checked) checks O(dir) and the fields only; V(written) writes the report.
    type: str
    choices: [checked, written]
    default: written
  default_fields:
    description: The default drift fields (name - JMESPath expression over the manifest).
    type: dict
    default: {}
  fields:
    description:
      - The user's drift fields (C(primus_drift_fields)) - a mapping of name to JMESPath expression that adds to or
        replaces the defaults; an empty expression removes a default field. Each expression is compiled; a bad one
        fails the task naming the field.
    type: raw
  summary:
    description: The run summary (required with O(state=written)).
    type: dict
  drift:
    description: The drift report; left out when no host wrote a manifest in this run.
    type: dict
  manifests:
    description: Each host's manifest of this run (host - manifest).
    type: dict
    default: {}
'''

EXAMPLES = r'''
- name: Check the report directory and the drift fields before the run
  primus.trainenv.run_report:
    dir: "{{ primus_report_dir | default('') }}"
    fields: "{{ primus_drift_fields | default({}) }}"
    state: checked
  run_once: true
'''

RETURN = r'''
path:
  description: The report directory.
  returned: always
  type: str
  sample: /home/trainer/.local/state/primus-trainenv
fields:
  description: The drift fields in force (defaults updated by the user's).
  returned: always
  type: dict
written:
  description: The files written (their content changed).
  returned: always
  type: list
  elements: str
unchanged:
  description: The files that already had this content.
  returned: always
  type: list
  elements: str
summary_path:
  description: The summary's text file.
  returned: with state=written
  type: str
summary:
  description: The summary as written (O(summary) with C(last_known) added).
  returned: with state=written
  type: dict
lines:
  description: The summary tables and the drift report's main lines, as the playbook prints them.
  returned: with state=written
  type: list
  elements: str
drift_path:
  description: The drift report's Markdown file.
  returned: with state=written and a drift report
  type: str
'''
