# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The run summary and the drift report as pure Jinja2 filters (logic in plugin_utils/fleet_report.py).

Each filter is documented in a YAML file of the same name next to this one
(``ansible-doc -t filter primus.trainenv.drift_report``).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.primus.trainenv.plugins.plugin_utils import fleet_report


def run_failure(result, task, run, started, logs_dir=''):
    """{stage, task, cause, log, stopped} of a host's failed task, one sanitised line."""
    return fleet_report.failure(result, task, run, started, logs_dir)


def run_record(run, status, started, ended, failed=None, check_mode=False, installed=None, host=None):
    """What each stage did on this host in this run, with its seconds, and its release, base and current link."""
    return fleet_report.run_record(run, status, started, ended, failed, check_mode, installed, host)


def host_facts(hosts, hostvars, name):
    """{host: its fact called name, or None} of each host: a host of a later serial batch has none yet."""
    out = {}
    for host in hosts:
        facts = hostvars[host] if host in hostvars else {}
        out[host] = facts[name] if name in facts else None
    return out


def run_summary(records, batch=None, generated=''):
    """The run's summary over every host."""
    return fleet_report.run_summary(records, batch, generated)


def drift_fields(defaults, extra=None):
    """The drift field set, every JMESPath expression checked."""
    try:
        return fleet_report.drift_fields(defaults, extra)
    except fleet_report.ReportError as exc:
        raise AnsibleFilterError('drift_fields: %s' % exc)


def drift_report(manifests, fields, pins=None, generated=''):
    """Per field, the hosts that differ from the majority or from the pins."""
    try:
        return fleet_report.drift_report(manifests, fields, pins, generated)
    except fleet_report.ReportError as exc:
        raise AnsibleFilterError('drift_report: %s' % exc)


class FilterModule(object):
    """primus.trainenv run summary and drift report filters."""

    def filters(self):
        return {
            'host_facts': host_facts,
            'run_failure': run_failure,
            'run_record': run_record,
            'run_summary': run_summary,
            'drift_fields': drift_fields,
            'drift_report': drift_report,
        }
