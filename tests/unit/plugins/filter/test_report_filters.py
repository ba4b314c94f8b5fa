# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""host_facts (plugins/filter/report.py): one fact of each host, null where a host has none yet."""

from ansible_collections.primus.trainenv.plugins.filter.report import FilterModule, host_facts


class HostVars(dict):
    """hostvars as the filter sees it: a mapping of host name to a mapping that fails on a missing key."""

    def __getitem__(self, host):
        return _Facts(dict.__getitem__(self, host))


class _Facts(dict):
    def __getattr__(self, name):
        raise AttributeError("object of type 'HostVarsVars' has no attribute %r" % name)


def test_a_host_of_a_later_batch_gives_null_and_the_order_is_the_hosts():
    hostvars = HostVars({"a": {"report_host": {"result": "ok"}}, "b": {}, "c": {"report_host": None}})
    out = host_facts(["c", "b", "a"], hostvars, "report_host")
    assert out == {"c": None, "b": None, "a": {"result": "ok"}}
    assert list(out) == ["c", "b", "a"]


def test_a_host_missing_from_hostvars_gives_null_and_other_facts_are_not_read():
    hostvars = HostVars({"a": {"report_host": 1, "report_manifest": {"x": 1}}})
    assert host_facts(["a", "gone"], hostvars, "report_manifest") == {"a": {"x": 1}, "gone": None}


def test_the_filter_is_registered():
    assert FilterModule().filters()["host_facts"] is host_facts
