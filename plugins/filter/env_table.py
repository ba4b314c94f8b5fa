# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Renderers of the one environment table (roles/primus/vars/env.yml) as Jinja2 filters.

Each filter is documented in a YAML file of the same name next to this one
(``ansible-doc -t filter primus.trainenv.env_sh``); the logic is
plugins/plugin_utils/env_table.py, unit-tested on its own.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.primus.trainenv.plugins.plugin_utils import env_table as _table


def _wrap(function):
    def filter_function(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except _table.EnvTableError as exc:
            raise AnsibleFilterError('environment table: %s' % exc)
    filter_function.__name__ = function.__name__
    filter_function.__doc__ = function.__doc__
    return filter_function


env_sh = _wrap(_table.render_sh)
env_tcl = _wrap(_table.render_tcl)
env_dict = _wrap(_table.render_dict)
sh_quote = _wrap(_table.sh_quote)
tcl_quote = _wrap(_table.tcl_quote)
comment_text = _wrap(_table.comment_text)


class FilterModule(object):
    """primus.trainenv environment table filters."""

    def filters(self):
        return {
            'env_sh': env_sh,
            'env_tcl': env_tcl,
            'env_dict': env_dict,
            'sh_quote': sh_quote,
            'tcl_quote': tcl_quote,
            'comment_text': comment_text,
        }
