# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The fleet's wheel store as pure Jinja2 filters (logic in plugin_utils/wheel_store.py).

Each filter is documented in a YAML file of the same name next to this one.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.primus.trainenv.plugins.plugin_utils import wheel_store


def wheel_store_plan(hosts, wants, me, stored):
    """{id, members, builder, role, sum_path}: who builds the wheel of this host's store entry, who installs it."""
    try:
        return wheel_store.plan(hosts, wants, me, stored)
    except wheel_store.WheelStoreError as exc:
        raise AnsibleFilterError(str(exc))


def wheel_store_record(text, where=''):
    """{sha256, file} of a store entry's .sha256 file."""
    try:
        return wheel_store.record(text, where)
    except wheel_store.WheelStoreError as exc:
        raise AnsibleFilterError(str(exc))


def wheel_store_line(sha256, wheel):
    """The .sha256 file's text of a wheel: '<hex>  <file>' and a newline."""
    try:
        return wheel_store.line(sha256, wheel)
    except wheel_store.WheelStoreError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule(object):
    """primus.trainenv wheel store filters."""

    def filters(self):
        return {
            'wheel_store_plan': wheel_store_plan,
            'wheel_store_record': wheel_store_record,
            'wheel_store_line': wheel_store_line,
        }
