# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""apply_mirrors: the release pins with the site mirrors of primus_mirrors applied.

Documented in apply_mirrors.yml; the logic is plugins/plugin_utils/mirrors.py.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.primus.trainenv.plugins.plugin_utils import mirrors


def apply_mirrors(pins, value, use_pip_config=False, wheelhouse=''):
    """{'pins', 'git_environment', 'pypi_index_url', 'mirrored'}; a bad setting stops with its problems."""
    try:
        return mirrors.apply(pins, value, use_pip_config, wheelhouse)
    except mirrors.MirrorError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule(object):
    """primus.trainenv site mirrors."""

    def filters(self):
        return {'apply_mirrors': apply_mirrors}
