#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: stage_start
short_description: The start of a stage - its prerequisites, pip's debris and the stage's start time
version_added: 0.1.0
description:
  - The first task of every stage role of C(playbooks/primus.yml). It reads the C(preflight_stages) fact (what each
    stage needs, which stages are done on this base, which run in this run) and C(primus_node) (what
    M(primus.trainenv.node_info) found in the venv), both published before the stages run.
  - When a stage it needs is neither done on this base nor run before it in this run, the task fails at once naming
    the tags to run first; nothing is changed.
  - The first stage of the run that runs pip removes what a killed pip left in the venv's site-packages (C(~)-prefixed
    entries, C(*.tmp) in C(*.dist-info)), only in a venv this collection made or adopted. That is the only change it
    makes (through M(ansible.builtin.file)).
  - It records when the stage started (controller clock) in the fact C(primus_stage_started) (C({stage - epoch
    seconds})); the stage's stamp records the seconds since then, read as C(ansible_facts.primus_stage_started).
  - This is an action plugin; there is no module to run on the node.
author:
  - primus.trainenv developers (@primus-trainenv)
attributes:
  check_mode:
    description: Checks the prerequisites and reports the debris it would remove, removing nothing.
    support: full
  diff_mode:
    description: Nothing to show.
    support: none
  action:
    description: Runs on the controller; only the debris removal reaches the node.
    support: full
  facts:
    description: Sets C(primus_stage_started).
    support: full
options:
  stage:
    description: The stage (its tag, e.g. V(te)).
    type: str
    required: true
'''

EXAMPLES = r'''
- name: Start the stage
  primus.trainenv.stage_start:
    stage: te
'''

RETURN = r'''
stage:
  description: The stage.
  returned: always
  type: str
  sample: te
missing:
  description: The stages it needs that are neither done on this base nor run before it (the task failed).
  returned: always
  type: list
  elements: str
  sample: [torch, flash_attn]
removed:
  description: pip's debris removed from the venv (would be removed, in check mode).
  returned: always
  type: list
  elements: str
  sample: [/home/trainer/envs/primus-env/venv/lib/python3.12/site-packages/~orch]
ansible_facts:
  description: The facts it sets.
  returned: always
  type: dict
  contains:
    primus_stage_started:
      description: When each stage of this run started, in seconds since the epoch (controller clock).
      type: dict
      sample: {"venv": 1764700000.0, "torch": 1764700012.5}
'''
