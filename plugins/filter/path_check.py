# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""path_check: a directory or interpreter setting checked against the safe character set and normalised.

Documented in path_check.yml; the logic is plugins/module_utils/safe_paths.py.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.primus.trainenv.plugins.module_utils.safe_paths import check_command, check_dir, expand_home


def path_check(value, label, kind='dir', required=True):
    """{'path', 'given', 'problem', 'fix'} for one setting; kind is dir or command."""
    if kind == 'dir':
        return check_dir(value, label, required=required)
    if kind == 'command':
        return check_command(value, label)
    raise AnsibleFilterError("path_check: kind must be dir or command, got '%s'" % kind)


def path_list_check(value, label, home=''):
    """path_check of every directory of a list setting; a leading ~ is the target user's ``home``.

    A value that is not a list (a single string, say) is one problem, not a check of its characters."""
    if not isinstance(value, (list, tuple)):
        kind = 'a string' if isinstance(value, str) else 'a mapping' if isinstance(value, dict) else type(value).__name__
        return [{'path': '', 'given': value, 'fix': 'give a YAML list of absolute paths, e.g. ["/home/me/Primus"]',
                 'problem': '%s must be a list of directories, got %s' % (label, kind)}]
    results = []
    for item in value:
        results.append(check_dir(expand_home(item, home), label))
    return results


class FilterModule(object):
    """primus.trainenv path checks."""

    def filters(self):
        return {'path_check': path_check, 'path_list_check': path_list_check}
