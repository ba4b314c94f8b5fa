# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Stage stamps and prerequisites as pure Jinja2 filters (logic in module_utils/stage_state.py).

Each filter is documented in a YAML file of the same name next to this one
(``ansible-doc -t filter primus.trainenv.stage_key_id``).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.primus.trainenv.plugins.module_utils import stage_state


def stage_run(registry, run_tags, skip_tags, check_mode=False):
    """The stage registry's views and this run's stages and lock (module_utils.stage_state.run_plan)."""
    try:
        return stage_state.run_plan(registry, run_tags, skip_tags, check_mode)
    except stage_state.StageError as exc:
        raise AnsibleFilterError('stage_run: %s' % exc)


def stage_key_id(key):
    """First 16 hex digits of the sha256 of the canonical JSON of a stage key."""
    try:
        return stage_state.key_id(key)
    except stage_state.StageError as exc:
        raise AnsibleFilterError('stage_key_id: %s' % exc)


def stage_status(stamps, keys, requires, unavailable=None):
    """{stage: {done, stamp, reason, key_id}} from the stamps node_info read and the current keys."""
    try:
        return stage_state.stage_status(stamps, keys, requires, unavailable)
    except stage_state.StageError as exc:
        raise AnsibleFilterError('stage_status: %s' % exc)


def stage_outputs_missing(stamps, own, installed):
    """{stage: reason} for stages whose own distribution recorded in their stamp is gone or changed."""
    try:
        return stage_state.outputs_missing(stamps, own, installed)
    except stage_state.StageError as exc:
        raise AnsibleFilterError('stage_outputs_missing: %s' % exc)


def stage_settled(status, run, pip, venv, busy=None):
    """The stages of this run that are done with nothing else to do (module_utils.stage_state.settled)."""
    try:
        return stage_state.settled(status, run, pip, venv, busy)
    except stage_state.StageError as exc:
        raise AnsibleFilterError('stage_settled: %s' % exc)


def files_to_write(expected, found, mode='0644'):
    """The paths whose content or mode would change if written (module_utils.stage_state.files_to_write)."""
    try:
        return stage_state.files_to_write(expected, found, mode)
    except stage_state.StageError as exc:
        raise AnsibleFilterError('files_to_write: %s' % exc)


class FilterModule(object):
    """primus.trainenv stage filters."""

    def filters(self):
        return {
            'stage_run': stage_run,
            'stage_key_id': stage_key_id,
            'stage_status': stage_status,
            'stage_outputs_missing': stage_outputs_missing,
            'stage_settled': stage_settled,
            'files_to_write': files_to_write,
        }
