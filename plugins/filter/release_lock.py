# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""release_lock: a release lock's JSON text, checked, with the hashes pip_constrained takes.

Documented in release_lock.yml; the logic is plugins/module_utils/release_lock.py.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.primus.trainenv.plugins.module_utils import release_lock as lock_utils


def release_lock(text, path='the lock'):
    """{'path', 'release', 'files', 'hashes'}; a lock that cannot be used stops with the reason."""
    try:
        data = lock_utils.load(text, path)
    except lock_utils.LockError as exc:
        raise AnsibleFilterError(str(exc))
    return {'path': path, 'release': data.get('release', ''), 'files': data['files'],
            'hashes': lock_utils.hashes_by_filename(data)}


class FilterModule(object):
    """primus.trainenv release lock."""

    def filters(self):
        return {'release_lock': release_lock}
