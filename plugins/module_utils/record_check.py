# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Are the venv's installed files the bytes their distributions' RECORDs claim?

Every ``*.dist-info/RECORD`` of site-packages lists the files its distribution installed with their sha256 and size.
A file is *intact* when its bytes match at least one RECORD that claims it (two distributions may ship one file, such
as mlflow and mlflow-skinny's ``mlflow/__init__.py``, with the same bytes). Hashing a whole training venv (tens of GB)
would take minutes, so only what is needed is hashed: a file whose size matches no claim is changed without reading
it; a file claimed by one RECORD, not modified after that RECORD was written (mtime) and of the claimed size is taken
as installed; every other file (modified later, or claimed by several RECORDs) is hashed. Compiled ``__pycache__``
files, which Python may rewrite, and files without a hash in their RECORD (the RECORD itself, INSTALLER) are not
judged. Standard library only; runs on the node in one process.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import base64
import csv
import glob
import hashlib
import os
import stat

CHUNK = 1024 * 1024


def read_record(dist_info):
    """[(relative path, 'sha256', urlsafe-b64 digest, size or None)] of a dist-info's RECORD (hashed entries only)."""
    path = os.path.join(dist_info, 'RECORD')
    try:
        with open(path, 'r') as handle:
            rows = list(csv.reader(handle))
    except (IOError, OSError, UnicodeDecodeError, csv.Error):
        return None
    entries = []
    for row in rows:
        if len(row) < 2 or not row[1] or '=' not in row[1]:
            continue
        algorithm, digest = row[1].split('=', 1)
        size = int(row[2]) if len(row) > 2 and row[2].isdigit() else None
        entries.append((row[0], algorithm, digest, size))
    return entries


def _digest(path, algorithm):
    sha = hashlib.new(algorithm)
    with open(path, 'rb') as handle:
        while True:
            block = handle.read(CHUNK)
            if not block:
                break
            sha.update(block)
    return base64.urlsafe_b64encode(sha.digest()).rstrip(b'=').decode('ascii')


def _distribution(dist_info):
    stem = os.path.basename(dist_info)[:-len('.dist-info')]
    name, _sep, version = stem.partition('-')
    return '%s %s' % (name, version)


def check(site_packages, skip=()):
    """{'distributions', 'files', 'hashed', 'changed': [{'path', 'claimed_by'}], 'missing': [...], 'unreadable': [...]}
    for the site-packages directories given; ``skip``: relative paths this collection changes on purpose (a patch)."""
    claims = {}
    result = {'distributions': 0, 'files': 0, 'hashed': 0, 'changed': [], 'missing': [], 'unreadable': []}
    for sp in site_packages:
        for dist_info in sorted(glob.glob(os.path.join(sp, '*.dist-info'))):
            entries = read_record(dist_info)
            if entries is None:
                result['unreadable'].append(os.path.relpath(os.path.join(dist_info, 'RECORD'), sp))
                continue
            result['distributions'] += 1
            try:
                written = os.stat(os.path.join(dist_info, 'RECORD')).st_mtime
            except OSError:
                written = 0
            for rel, algorithm, digest, size in entries:
                full = os.path.normpath(os.path.join(sp, rel))
                if '__pycache__' in rel.split('/') or rel in skip:
                    continue
                claims.setdefault(full, []).append((_distribution(dist_info), algorithm, digest, size, written, sp))
    for full, owners in sorted(claims.items()):
        rel = os.path.relpath(full, owners[0][5])
        result['files'] += 1
        try:
            st = os.lstat(full)
        except OSError:
            result['missing'].append({'path': rel, 'claimed_by': [o[0] for o in owners]})
            continue
        if not stat.S_ISREG(st.st_mode):
            result['changed'].append({'path': rel, 'claimed_by': [o[0] for o in owners]})
            continue
        sizes = [o[3] for o in owners]
        if None not in sizes and st.st_size not in sizes:
            result['changed'].append({'path': rel, 'claimed_by': [o[0] for o in owners]})
            continue
        if len(owners) == 1 and st.st_mtime <= owners[0][4]:
            continue
        result['hashed'] += 1
        try:
            seen = {}
            ok = False
            for _owner, algorithm, digest, _size, _written, _sp in owners:
                if algorithm not in seen:
                    seen[algorithm] = _digest(full, algorithm)
                if seen[algorithm] == digest:
                    ok = True
                    break
        except (IOError, OSError, ValueError):
            ok = False
        if not ok:
            result['changed'].append({'path': rel, 'claimed_by': [o[0] for o in owners]})
    return result


def summary(result, limit=5):
    """One line: what matched, or which files match none of the RECORDs that claim them."""
    bad = result['changed'] + result['missing']
    if not bad and not result['unreadable']:
        return ('%d files of %d distributions match their RECORDs (%d hashed)'
                % (result['files'], result['distributions'], result['hashed']))

    def named(files):
        return '; '.join('%s (%s)' % (c['path'], ', '.join(c['claimed_by'])) for c in files[:limit])

    parts = []
    if result['changed']:
        parts.append('%d installed file(s) match none of the RECORDs that claim them: %s'
                     % (len(result['changed']), named(result['changed'])))
    if result['missing']:
        parts.append('%d file(s) their RECORDs list are gone: %s' % (len(result['missing']), named(result['missing'])))
    if result['unreadable']:
        parts.append('unreadable RECORDs: %s' % ', '.join(result['unreadable'][:limit]))
    return '. '.join(parts)
