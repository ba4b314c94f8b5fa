# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""pip's installation report (`pip install --dry-run --report FILE`, format version 1).

The report's "install" array lists what pip would install (already-satisfied distributions are
not in it); each entry has metadata.name/version/requires_dist, "requested" (named on the command
line or in a requirements file) and "requested_extras".
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

from ansible_collections.primus.trainenv.plugins.module_utils._pip.decide import (
    marker_env, matching_patterns, same_version)


class ReportError(Exception):
    pass


class Planned(object):
    __slots__ = ('name', 'key', 'version', 'requested', 'requires', 'extras', 'url', 'is_direct', 'download')

    def __init__(self, name, key, version, requested, requires, extras, url, is_direct, download=None):
        self.name = name
        self.key = key
        self.version = version
        self.requested = requested
        self.requires = requires
        self.extras = extras
        self.url = url
        self.is_direct = is_direct
        self.download = download or {}   # the report's download_info: url, and archive_info/dir_info/vcs_info

    def __repr__(self):
        return 'Planned(%s==%s)' % (self.name, self.version)


def parse_report(pk, text):
    """Planned installs from a report's JSON text, in report order."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ReportError('pip wrote an unreadable report: %s' % exc)
    if not isinstance(data, dict) or not isinstance(data.get('install'), list):
        raise ReportError('pip report has no "install" list')
    version = str(data.get('version', ''))
    if version.split('.', 1)[0] != '1':
        raise ReportError('unsupported pip report version %r (expected 1)' % version)
    out = []
    for entry in data['install']:
        meta = entry.get('metadata') or {}
        name = meta.get('name')
        if not name or meta.get('version') is None:
            raise ReportError('pip report entry without name/version: %r' % (entry,))
        download = entry.get('download_info') or {}
        out.append(Planned(name, pk.canonicalize_name(name), str(meta['version']), bool(entry.get('requested')),
                           list(meta.get('requires_dist') or []), list(entry.get('requested_extras') or []),
                           download.get('url'), bool(entry.get('is_direct')), download))
    return out


def version_action(pk, before, after):
    """install | upgrade | downgrade | replace (same public version, other local label) | reinstall."""
    if before is None:
        return 'install'
    if same_version(pk, before, after):
        return 'reinstall'
    try:
        old, new = pk.Version(before), pk.Version(after)
    except pk.InvalidVersion:
        return 'upgrade'
    if old.public == new.public:
        return 'replace'
    return 'upgrade' if new > old else 'downgrade'


def plan_actions(pk, planned, probe):
    """[{name, version, installed, action, requested}] sorted by name."""
    out = []
    for item in planned:
        dist = probe.dists.get(item.key)
        installed = dist.version if dist is not None else None
        out.append({'name': item.name, 'version': item.version, 'installed': installed,
                    'action': version_action(pk, installed, item.version), 'requested': item.requested})
    return sorted(out, key=lambda x: x['name'].lower())


def _requires_key(pk, text, cache):
    if text not in cache:
        try:
            req = pk.Requirement(text)
            cache[text] = (pk.canonicalize_name(req.name), req)
        except pk.InvalidRequirement:
            cache[text] = (None, None)
    return cache[text]


def _applies(req, markers, extras):
    if req.marker is None:
        return True
    for extra in ('',) + tuple(extras):
        try:
            if req.marker.evaluate(marker_env(markers, extra)):
                return True
        except Exception:  # pylint: disable=broad-except
            return True
    return False


def requirers(pk, key, planned, probe, cache=None):
    """Who requires `key`: planned installs first, then installed distributions that stay.

    Returns [(name, version, is_planned, requested)].
    """
    cache = {} if cache is None else cache
    markers = probe.markers
    out = []
    planned_keys = set()
    for item in planned:
        planned_keys.add(item.key)
        if item.key == key:
            continue
        for text in item.requires:
            dep_key, req = _requires_key(pk, text, cache)
            if dep_key == key and _applies(req, markers, item.extras):
                out.append((item.name, item.version, True, item.requested))
                break
    for dist in probe.dists.values():
        if dist.key == key or dist.key in planned_keys:
            continue
        for text in dist.requires:
            dep_key, req = _requires_key(pk, text, cache)
            if dep_key == key and _applies(req, markers, ()):
                out.append((dist.name, dist.version, False, False))
                break
    return out


def requirement_chain(pk, key, planned, probe, cache=None, limit=8):
    """A readable path from a planned distribution up to what this task requested."""
    by_key = dict((p.key, p) for p in planned)
    parts = []
    seen = set([key])
    current = key
    for _step in range(limit):
        item = by_key.get(current)
        if item is not None and item.requested:
            parts.append('requested by this task')
            break
        found = requirers(pk, current, planned, probe, cache)
        if not found:
            break
        # Prefer a planned requirer (the new part of the graph), then an installed one.
        name, version, is_planned, requested = found[0]
        parent_key = pk.canonicalize_name(name)
        parts.append('required by %s %s%s' % (name, version, '' if is_planned else ' (installed)'))
        if requested or parent_key in seen:
            if requested:
                parts.append('requested by this task')
            break
        seen.add(parent_key)
        current = parent_key
    return parts


def forbidden_hits(pk, patterns, planned, probe):
    """Forbidden distributions present after the plan: [{name, version, pattern, required_by, chain, new}]."""
    if not patterns:
        return []
    cache = {}
    after = dict((key, (d.name, d.version, False)) for key, d in probe.dists.items())
    for item in planned:
        after[item.key] = (item.name, item.version, True)
    hits = []
    for key in sorted(after):
        name, version, new = after[key]
        matched = matching_patterns(key, version, patterns)
        if not matched:
            continue
        if new:
            direct = requirers(pk, key, planned, probe, cache)
            required_by = ['%s %s' % (n, v) for n, v, _p, _r in direct]
            chain = requirement_chain(pk, key, planned, probe, cache)
        else:
            required_by = []
            chain = ['already installed in the venv']
        hits.append({'name': name, 'version': version, 'pattern': matched[0], 'required_by': required_by,
                     'chain': chain, 'new': new})
    return hits


def describe_forbidden(hits):
    """One line per hit: 'nvidia-cublas-cu12 12.1 (forbidden by nvidia-*): required by torch 2.13.0, ...'."""
    lines = []
    for hit in hits:
        chain = ', '.join(hit['chain']) or 'no requirer found'
        lines.append('%s %s (forbidden by %s): %s' % (hit['name'], hit['version'], hit['pattern'], chain))
    return lines


def predicted_after(probe, planned):
    """{key: (name, version)} after the plan would be applied."""
    after = probe.versions()
    for item in planned:
        after[item.key] = (item.name, item.version)
    return after
