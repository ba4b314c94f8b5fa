# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Retiring a base: removing one release's PRIMUS_BASE from a node on purpose, and only such a base.

A base may go when it is a base this collection built (a directory of this user's with stage stamps), it is not the
one the current link points to, no run holds its lock and no process of this user runs from it (a training job that
sourced its env.sh, a shell cd'ed into it). What goes is the whole base - venv, state, env.sh, modulefiles, workspace,
manifest, logs - and the link to its modulefile in the shared modulefiles directory; the wheel cache and the wheel
store are elsewhere and stay, so a later base of the same build keys compiles nothing.

Removal first renames the base to a hidden name beside it (``.<name>.retiring``), so an interrupted removal never
leaves a half base that looks like a base; a later retire of the same path finishes it. Standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import shutil
import stat

from ansible_collections.primus.trainenv.plugins.module_utils import base_lock, stage_state
from ansible_collections.primus.trainenv.plugins.module_utils.modes import hold_point

RETIRING = '.%s.retiring'


class RetireError(ValueError):
    """A base that must not be retired; the message names it, why, and what to do."""


def retiring_path(base):
    return os.path.join(os.path.dirname(base), RETIRING % os.path.basename(base))


def _size(path):
    total = 0
    for root, dirs, files in os.walk(path):
        for name in files + dirs:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def releases(base, uid):
    """{release: [stages]} the base's stage stamps record (every readable stamp)."""
    found = {}
    for stage, stamp in sorted(stage_state.read_stamps(os.path.join(base, 'state'), uid).items()):
        if isinstance(stamp, dict) and not stamp.get('problem') and stamp.get('release'):
            found.setdefault(str(stamp['release']), []).append(stage)
    return found


def processes_using(base, proc='/proc', uid=None):
    """[(pid, what)] of this user's processes that run from the base: their working directory, a file they mapped
    (a library of the venv), an argument, VIRTUAL_ENV or PRIMUS_BASE under it."""
    uid = os.geteuid() if uid is None else uid
    real = os.path.realpath(base)
    prefixes = tuple(set((base.rstrip('/') + '/', real.rstrip('/') + '/')))

    def inside(path):
        return path in (base, real) or path.startswith(prefixes)
    found = []
    for entry in os.listdir(proc):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        where = os.path.join(proc, entry)
        try:
            if os.stat(where).st_uid != uid:
                continue
        except OSError:
            continue
        what = ''
        try:
            if inside(os.readlink(os.path.join(where, 'cwd'))):
                what = 'its working directory'
        except OSError:
            pass
        if not what:
            try:
                with open(os.path.join(where, 'cmdline'), 'rb') as handle:
                    args = handle.read().decode('utf-8', 'replace').split('\0')
                if any(inside(a) or a.startswith(prefixes) for a in args if a):
                    what = 'its command line'
            except OSError:
                pass
        if not what:
            try:
                with open(os.path.join(where, 'environ'), 'rb') as handle:
                    env = dict(v.split('=', 1) for v in handle.read().decode('utf-8', 'replace').split('\0') if '=' in v)
                if any(inside(env.get(k, '').rstrip('/')) for k in ('VIRTUAL_ENV', 'PRIMUS_BASE')):
                    what = 'its environment (VIRTUAL_ENV or PRIMUS_BASE)'
            except OSError:
                pass
        if not what:
            try:
                with open(os.path.join(where, 'maps')) as handle:
                    if any(inside(line.split(None, 5)[-1].strip()) for line in handle if line.count(' ') >= 5):
                        what = 'a file it loaded'
            except (OSError, IndexError):
                pass
        if what:
            found.append((int(entry), what))
    return sorted(found)


def plan(base, uid, current_link='', modulefiles_dir=''):
    """What retiring the base removes: {base, release, entries [(name, bytes)], modulefile_links [paths],
    resume (an interrupted removal to finish)}; RetireError when the base must not go."""
    if not base or not os.path.isabs(base) or os.path.normpath(base) != base.rstrip('/') or base.rstrip('/') == '':
        raise RetireError('%r is not an absolute, normalised path of a base. Fix: give the base as its absolute path, '
                          'e.g. -e primus_retire_base=$HOME/envs/primus-v26.5' % (base,))
    base = base.rstrip('/')
    pending = retiring_path(base)
    if not os.path.lexists(base):
        if os.path.isdir(pending) and not os.path.islink(pending):
            return dict(base=base, release='', entries=[('(an interrupted removal) ' + pending, _size(pending))],
                        modulefile_links=[], resume=pending)
        raise RetireError('%s does not exist: there is no base to retire there' % base)
    lst = os.lstat(base)
    if stat.S_ISLNK(lst.st_mode):
        raise RetireError('%s is a symbolic link, not a base (the current link is one): nothing is removed through a '
                          'link. Fix: give the base it points to (%s), if that is the one to retire'
                          % (base, os.path.realpath(base)))
    if not stat.S_ISDIR(lst.st_mode) or lst.st_uid != uid:
        raise RetireError('%s is not a directory of this user%s: it is not a base this collection built for you, and '
                          'nothing in it is removed' % (base, '' if stat.S_ISDIR(lst.st_mode) else
                                                        ' (it is not a directory)'))
    found = releases(base, uid)
    if not found or not os.path.isfile(os.path.join(base, 'env.sh')) and not os.path.isdir(os.path.join(base, 'venv')):
        raise RetireError('%s is not a base this collection built (no stage stamps in its state/ directory): it is '
                          'not retired, and nothing in it is removed' % base)
    if current_link and os.path.lexists(current_link) and os.path.realpath(current_link) == os.path.realpath(base):
        raise RetireError('%s is the current base: %s points to it, so jobs started through it run from it. Fix: '
                          'move the link to another base first (run the playbook for that base with '
                          'primus_current_link=%s; it moves once that base verified), then retire this one'
                          % (base, current_link, current_link))
    holder, problem = base_lock.read_lock(base_lock.lock_path(base))
    if holder is not None or problem:
        raise RetireError('%s is locked: %s. A base a run holds is never retired. Fix: wait for that run to end; if it '
                          'was killed, run the playbook on this base once (it takes over the stale lock and releases '
                          'it), then retire it' % (base, base_lock.describe(holder) if holder else problem))
    users = processes_using(base, uid=uid)
    if users:
        raise RetireError('%s is in use: %s. Jobs keep the base they started with, so a base in use is not removed. '
                          'Fix: retire it once they ended' % (base, '; '.join(
                              'process %d (%s)' % (pid, what) for pid, what in users[:5])))
    entries = [(name, _size(os.path.join(base, name)) + os.lstat(os.path.join(base, name)).st_size)
               for name in sorted(os.listdir(base))]
    links = []
    release = sorted(found)[0] if len(found) == 1 else ''
    if modulefiles_dir:
        for name in sorted(found):
            link = os.path.join(modulefiles_dir, 'primus', name)
            if os.path.islink(link) and os.path.realpath(link).startswith(os.path.realpath(base) + '/'):
                links.append(link)
    return dict(base=base, release=release, entries=entries, modulefile_links=links, resume='')


def remove(found):
    """Remove what plan() found: the base renamed aside first, then deleted; then the modulefile links."""
    pending = found['resume'] or retiring_path(found['base'])
    if not found['resume']:
        os.rename(found['base'], pending)
        hold_point('retire:' + os.path.basename(found['base']))   # renamed aside, not yet deleted
    shutil.rmtree(pending)
    for link in found['modulefile_links']:
        if os.path.islink(link):
            os.unlink(link)
