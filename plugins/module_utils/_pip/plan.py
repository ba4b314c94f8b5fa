# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Check-mode plans for a venv that does not exist yet, or that earlier tasks would have changed.

pip plans (`install --dry-run --report`) against the distributions its interpreter sees. To plan
for a venv as it *would* be, pip_constrained makes a scratch venv in its temporary directory
(`python -m venv --without-pip`, no network, nothing outside the module's tmpdir), writes a
metadata-only `.dist-info` for every distribution that venv would hold (the real venv's, or
ensurepip's pip for a venv not created yet, plus what earlier tasks plan to install), and runs a
pip (the venv's own, else the planning interpreter's, else ensurepip's bundled wheel) with that
scratch interpreter. pip resolves against that set exactly as it would against the real venv.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os

from ansible_collections.primus.trainenv.plugins.module_utils.common import wheel_name

# Run by the planning interpreter (-I): where its pip is, and which pip ensurepip would install.
PLAN_PROBE = r'''
import json, os, sys
out = {"version": list(sys.version_info[:3]), "pip": None, "pip_version": None, "ensurepip": None, "wheel": None}
try:
    import pip
    out["pip"] = os.path.dirname(os.path.abspath(pip.__file__))
    out["pip_version"] = pip.__version__
except Exception:
    pass
try:
    import ensurepip
    out["ensurepip"] = ensurepip.version()
    bundled = os.path.join(os.path.dirname(ensurepip.__file__), "_bundled")
    wheels = [w for w in os.listdir(bundled) if w.startswith("pip-") and w.endswith(".whl")]
    out["wheel"] = os.path.join(bundled, wheels[0]) if wheels else None
except Exception:
    pass
print(json.dumps(out))
'''


def _dist_dir_name(name, version):
    return '%s-%s.dist-info' % (wheel_name(name), version)


def fake_dist_files(name, version, requires=(), direct_url=None):
    """{relative path: text} of a metadata-only installed distribution."""
    base = _dist_dir_name(name, version)
    lines = ['Metadata-Version: 2.1', 'Name: %s' % name, 'Version: %s' % version]
    lines += ['Requires-Dist: %s' % r for r in requires or ()]
    files = {base + '/METADATA': '\n'.join(lines) + '\n', base + '/INSTALLER': 'primus.trainenv-plan\n'}
    if direct_url:
        files[base + '/direct_url.json'] = json.dumps(direct_url)
    return files


def write_fake_dists(site_dir, dists):
    """dists: [(name, version, requires, direct_url)]; writes their metadata into site_dir."""
    for name, version, requires, direct_url in dists:
        for rel, text in fake_dist_files(name, version, requires, direct_url).items():
            path = os.path.join(site_dir, rel)
            if not os.path.isdir(os.path.dirname(path)):
                os.makedirs(os.path.dirname(path))
            with open(path, 'w') as handle:
                handle.write(text)


def prior_entries(pk, entries):
    """(name, version) pairs of `prior_plan` entries: 'name==version' strings or {name, version} dicts.

    Raises ValueError naming a bad entry. Entries without a version (an inexact plan) are skipped, and so
    are wheel builds (action `build`, from wheel_dir): they install nothing.
    """
    out = []
    for index, entry in enumerate(entries or []):
        if isinstance(entry, dict) and entry.get('action') == 'build':
            continue
        if isinstance(entry, dict):
            name, version = entry.get('name'), entry.get('version')
        elif isinstance(entry, str) and '==' in entry:
            name, version = entry.split('==', 1)
        else:
            raise ValueError('prior_plan[%d]: %r is neither name==version nor a plan entry {name, version}'
                             % (index, entry))
        if not name:
            raise ValueError('prior_plan[%d]: %r has no name' % (index, entry))
        if version is None or version == '':
            continue
        try:
            version = str(pk.Version(str(version).strip()))
        except pk.InvalidVersion:
            raise ValueError('prior_plan[%d]: %r is not a version' % (index, version))
        out.append((str(name).strip(), version))
    return out


def planned_venv(pk, installed, prior):
    """[(name, version, requires, direct_url)] of the venv after earlier tasks: installed, then prior."""
    by_key = {}
    for dist in installed:
        by_key[dist.key] = (dist.name, dist.version, list(dist.requires), dist.direct_url)
    for name, version in prior:
        by_key[pk.canonicalize_name(name)] = (name, version, [], None)
    return [by_key[k] for k in sorted(by_key)]


def requested_plan(items):
    """An inexact plan: the requested items themselves, versions known only where pinned exactly."""
    out = []
    for item in items:
        version = item.version
        if version is None and item.req is not None:
            pins = [s.version for s in item.req.specifier if s.operator in ('==', '===') and '*' not in s.version]
            version = pins[0] if len(pins) == 1 else None
        out.append({'name': item.name or item.text, 'version': version, 'installed': None, 'action': 'install',
                    'requested': True, 'requirement': item.text})
    return sorted(out, key=lambda x: x['name'].lower())
