# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What is at the venv path, and what the venv stage may do with it.

The venv stage writes a marker, ``<venv>/primus-trainenv.cfg`` (``key = value`` lines under a
``# primus.trainenv`` header, like pyvenv.cfg), with ``state = creating`` before it runs
``python -m venv`` and ``state = complete`` once pip and the build front-end pins are in. The
marker is what proves a directory is ours: only then may a run delete it.

Kinds (``classify``):

========== ================================================================= ==============
kind       what is there                                                     the stage
========== ================================================================= ==============
absent     nothing                                                           creates it
empty      an empty directory                                                creates it
ready      our marker "complete", pyvenv.cfg, bin/python and pip             uses it
moved      our marker, but pyvenv.cfg says it was made at another path        preflight refuses it
interrupted our marker "creating": a run stopped while creating it           recreates it
broken     our marker "complete" but pyvenv.cfg, bin/python or pip is gone   recreates it
adoptable  no marker, pyvenv.cfg, bin/python, a working pip (seed-built)     adopts it
foreign    anything else: not a directory, no pyvenv.cfg, an unreadable      refuses it
           marker, or a venv of someone else's without a working pip
========== ================================================================= ==============
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import glob
import os

from ansible_collections.primus.trainenv.plugins.module_utils.common import normalize_name
from ansible_collections.primus.trainenv.plugins.module_utils.safe_paths import read_regular

MARKER = 'primus-trainenv.cfg'
MARKER_HEADER = '# primus.trainenv'
MARKER_STATES = ('creating', 'complete')
RECREATE = ('interrupted', 'broken')
CREATE = ('absent', 'empty') + RECREATE


def read_marker(venv):
    """('creating'|'complete'|'' for no marker|'invalid', detail)."""
    path = os.path.join(venv, MARKER)
    if not os.path.lexists(path):
        return '', ''
    try:
        lines = read_regular(path, 64 * 1024).decode('utf-8').splitlines()
    except (IOError, OSError, UnicodeDecodeError) as exc:
        return 'invalid', 'cannot be read (%s)' % (getattr(exc, 'strerror', None) or type(exc).__name__)
    if not lines or not lines[0].startswith(MARKER_HEADER):
        return 'invalid', 'does not start with %r' % MARKER_HEADER
    values = dict(tuple(part.strip() for part in line.split('=', 1)) for line in lines[1:] if '=' in line)
    if values.get('state') not in MARKER_STATES:
        return 'invalid', 'has no state = creating or complete line'
    return values['state'], ''


def made_at(venv):
    """The path the venv was made at: the last word of pyvenv.cfg's ``command = ... -m venv <path>`` line (Python
    3.11+ writes it), '' when there is none. A venv's scripts and activate hold that path, so a copy of it elsewhere
    (cp -a of a whole base) still runs the original."""
    try:
        text = read_regular(os.path.join(venv, 'pyvenv.cfg'), 64 * 1024).decode('utf-8', 'replace')
    except (IOError, OSError):
        return ''
    for line in text.splitlines():
        key, sep, value = line.partition('=')
        if sep and key.strip() == 'command' and ' -m venv ' in value:
            words = value.split()
            return words[-1] if words and words[-1].startswith('/') else ''
    return ''


def moved(obs):
    """Whether the venv was made at another path than where it is now (a copied or moved base)."""
    made = obs.get('made_at') or ''
    if not made or os.path.normpath(made) == os.path.normpath(obs['path']):
        return False
    return os.path.realpath(made) != os.path.realpath(obs['path'])


def site_packages(venv):
    return sorted(glob.glob(os.path.join(venv, 'lib', 'python*', 'site-packages')))


def find_debris(dirs):
    """What a killed pip leaves in site-packages: '~'-prefixed entries (the copies pip moves aside while
    replacing a distribution, such as ~orch) and '*.tmp' files in '*.dist-info' (a RECORD being written)."""
    found = []
    for sp in dirs:
        try:
            entries = sorted(os.listdir(sp))
        except OSError:
            continue
        for name in entries:
            path = os.path.join(sp, name)
            if name.startswith('~'):
                found.append(path)
            elif name.endswith('.dist-info') and os.path.isdir(path) and not os.path.islink(path):
                try:
                    inner = sorted(os.listdir(path))
                except OSError:
                    continue
                found.extend(os.path.join(path, f) for f in inner if f.endswith('.tmp'))
    return found


def distributions(dirs):
    """{normalised name: version} of the distributions installed in site-packages, read from the
    ``<name>-<version>.dist-info`` directory names (what pip writes; no file is opened, so a
    converged run pays nothing for it). Names are normalised as PEP 503 does."""
    found = {}
    for sp in dirs:
        try:
            entries = os.listdir(sp)
        except OSError:
            continue
        for entry in entries:
            stem = entry[:-len('.dist-info')]
            if not entry.endswith('.dist-info') or '-' not in stem:
                continue
            name, version = stem.split('-', 1)
            if name and version:
                found[normalize_name(name)] = version
    return found


def inspect(venv, pip_works=None):
    """Observations of the venv path; pip_works(python) -> (bool, detail) is asked only for a venv without
    our marker (to decide whether it can be adopted)."""
    obs = {'path': venv, 'exists': os.path.lexists(venv), 'is_dir': os.path.isdir(venv), 'empty': False,
           'pyvenv_cfg': False, 'python': False, 'pip': False, 'marker': '', 'marker_problem': '',
           'pip_detail': '', 'entries': [], 'debris': [], 'distributions': {}, 'made_at': ''}
    if not obs['is_dir']:
        return obs
    try:
        entries = sorted(os.listdir(venv))
    except OSError as exc:
        obs['marker_problem'] = 'cannot be listed (%s)' % exc
        obs['marker'] = 'invalid'
        return obs
    obs['entries'] = entries[:8]
    obs['empty'] = not entries
    obs['pyvenv_cfg'] = os.path.isfile(os.path.join(venv, 'pyvenv.cfg'))
    python = os.path.join(venv, 'bin', 'python')
    obs['python'] = os.path.exists(python)
    dirs = site_packages(venv)
    obs['pip'] = any(os.path.isfile(os.path.join(sp, 'pip', '__init__.py')) for sp in dirs)
    obs['marker'], obs['marker_problem'] = read_marker(venv)
    obs['made_at'] = made_at(venv) if obs['pyvenv_cfg'] else ''
    obs['debris'] = find_debris(dirs)
    obs['distributions'] = distributions(dirs)
    if not obs['marker'] and obs['pyvenv_cfg'] and obs['python'] and obs['pip'] and pip_works is not None:
        obs['pip'], obs['pip_detail'] = pip_works(python)
    return obs


def _missing(obs):
    return [what for what, present in (('pyvenv.cfg', obs['pyvenv_cfg']), ('bin/python', obs['python']),
                                       ('pip', obs['pip'])) if not present]


def removal(path, removable):
    """How a refusal says to clear the venv path: remove it when it is inside the user's own PRIMUS_BASE, else only
    move it out of the way (a venv path outside the base may be a system or pyenv prefix: never advise deleting it)."""
    if removable:
        return "remove it (rm -rf '%s')" % path
    return ("move it out of the way (mv '%s' '%s.old'; it is outside PRIMUS_BASE, so removing it is not suggested)"
            % (path, path))


def classify(obs, removable=True):
    """(kind, problem): see the module docstring. problem says what is wrong and what to do (foreign).
    removable: the venv path is inside PRIMUS_BASE (see removal)."""
    path = obs['path']
    if not obs['exists']:
        return 'absent', ''
    if not obs['is_dir']:
        return 'foreign', ("%s exists and is not a directory, so it is not a venv. Nothing was installed into it. "
                           "Fix: move it away or remove it, or set primus_venv_dir to another path, then run again."
                           % path)
    if obs['empty']:
        return 'empty', ''
    if obs['marker'] == 'creating':
        return 'interrupted', ('the venv at %s was being created by an earlier run that did not finish (%s)'
                               % (path, ', '.join(['no ' + m for m in _missing(obs)]) or 'its marker says "creating"'))
    if obs['marker'] in ('complete', 'creating') and moved(obs):
        return 'moved', ("the venv at %s was made at %s: this base was copied or moved there (a venv's scripts and "
                         "activate keep the absolute path it was made at, so this copy would run the original's "
                         "programs)" % (path, obs['made_at']))
    if obs['marker'] == 'complete':
        missing = _missing(obs)
        if missing:
            return 'broken', ('the venv at %s, made by primus.trainenv, has lost %s' % (path, ', '.join(missing)))
        return 'ready', ''
    if obs['marker'] == 'invalid':
        return 'foreign', ("%s has a file %s that %s, so it cannot be told whether this venv is one primus.trainenv "
                           "made. Nothing was installed into it. Fix: if nothing in it is yours to keep, %s "
                           "and run again; the venv stage creates a new one."
                           % (path, MARKER, obs['marker_problem'], removal(path, removable)))
    if not obs['pyvenv_cfg']:
        shown = ', '.join(obs['entries']) + (', ...' if len(obs['entries']) >= 8 else '')
        return 'foreign', ("%s is not a venv (it has no pyvenv.cfg; it holds %s) and was not made by primus.trainenv. "
                           "Nothing was installed into it, nor into any interpreter it points at. Fix: %s if it is not "
                           "yours to keep, or set primus_venv_dir to another path, then run again."
                           % (path, shown, removal(path, removable)))
    missing = _missing(obs)
    if missing:
        detail = obs['pip_detail'] or 'no ' + ', no '.join(missing)
        return 'foreign', ("%s is a venv that primus.trainenv did not make, and it cannot be adopted: %s. Nothing was "
                           "installed into it. Fix: %s and run again; the venv stage creates a "
                           "new one." % (path, detail, removal(path, removable)))
    return 'adoptable', ''
