# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""preflight_problems: preflight's checks before the lock (documented in preflight_problems.yml).

The logic is plugins/module_utils/preflight_checks.py.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.primus.trainenv.plugins.module_utils import preflight_checks


def preflight_problems(facts):
    """The message of every failing check of the inputs and of what node_info found, in order."""
    try:
        return preflight_checks.problems(facts)
    except (KeyError, TypeError, AttributeError) as exc:
        raise AnsibleFilterError('preflight_problems: the facts lack %s (settings, inputs, node, pins and paths are '
                                 'needed, as roles/primus publishes them)' % exc)


class FilterModule(object):
    """primus.trainenv preflight checks."""

    def filters(self):
        return {'preflight_problems': preflight_problems}
