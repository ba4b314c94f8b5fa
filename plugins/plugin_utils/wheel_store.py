# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The wheel store of a fleet (roles/source_build/tasks/store.yml, store_share.yml): pure functions.

One wheel per build key for the whole fleet, laid out as::

    <store>/<component>/<key id>/<file>.whl
    <store>/<component>/<key id>/<file>.whl.sha256      "<sha256 hex>  <file>.whl" (sha256sum -c reads it)

The .sha256 file is written last: an entry counts as stored only with it. The hosts of a play that need the same
entry (same store, component and key id) form its group; when the store has no wheel for it, the first of them in the
play's order builds it and the others install that wheel.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import posixpath
import re

SHA256 = re.compile(r'^[0-9a-f]{64}$')
# A wheel's file name (PEP 427, a local version's '+' included): one path component, nothing a shell or a path reads.
WHEEL_FILE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._+-]*\.whl$')
SUM_SUFFIX = '.sha256'


class WheelStoreError(ValueError):
    """A store entry or a group that cannot be used; the message names what and the fix."""


def plan(hosts, wants, me, stored):
    """Who builds the wheel of this host's entry and who installs it.

    hosts: the play's hosts that are still running, in the play's order; wants: each one's entry id, aligned with hosts
    ('' for a host that needs none now); me: this host; stored: the paths of the .sha256 files the store's entry
    directory holds. Returns {id, members, builder, role, sum_path}: role is ``take`` (the store has the wheel),
    ``build`` (this host builds it for the group) or ``wait`` (the builder is another host of the group).
    """
    hosts = list(hosts or [])
    wants = list(wants or [])
    if len(hosts) != len(wants):
        raise WheelStoreError('wheel_store_plan: %d hosts but %d entries' % (len(hosts), len(wants)))
    if me not in hosts:
        raise WheelStoreError('wheel_store_plan: %s is not among the play hosts %s' % (me, ', '.join(hosts)))
    entry = wants[hosts.index(me)]
    if not entry:
        raise WheelStoreError('wheel_store_plan: %s needs no entry of the wheel store' % me)
    stored = sorted(stored or [])
    if len(stored) > 1:
        directory = posixpath.dirname(stored[0])
        raise WheelStoreError(
            "the wheel store's entry %s holds %d wheels (%s) instead of one for its build key. Fix: remove that "
            "directory (rm -rf '%s') and run again; one node of the fleet then builds the wheel again."
            % (directory, len(stored), ', '.join(posixpath.basename(p)[:-len(SUM_SUFFIX)] for p in stored), directory))
    members = [host for host, want in zip(hosts, wants) if want == entry]
    if stored:
        return {'id': entry, 'members': members, 'builder': '', 'role': 'take', 'sum_path': stored[0]}
    return {'id': entry, 'members': members, 'builder': members[0], 'sum_path': '',
            'role': 'build' if members[0] == me else 'wait'}


def record(text, where=''):
    """{sha256, file} of a store entry's .sha256 file (its first line, ``<hex>  <file>``, as sha256sum writes it)."""
    line = (text or '').strip().splitlines()[:1]
    fields = line[0].split() if line else []
    name = fields[1].lstrip('*') if len(fields) == 2 else ''
    if len(fields) != 2 or not SHA256.match(fields[0]) or not WHEEL_FILE.match(name):
        raise WheelStoreError(
            "the wheel store's checksum file %s does not hold '<sha256>  <wheel file>' (got %r). Fix: remove its "
            "directory (rm -rf '%s') and run again; one node of the fleet then builds the wheel again."
            % (where or '(unnamed)', (text or '')[:120], posixpath.dirname(where) if where else '<store>/<name>/<key id>'))
    return {'sha256': fields[0], 'file': name}


def line(sha256, wheel):
    """The .sha256 file's text for a wheel: ``<hex>  <file>`` and a newline (checked like record() reads it)."""
    name = posixpath.basename(wheel or '')
    text = '%s  %s\n' % (sha256, name)
    record(text, wheel)
    return text
