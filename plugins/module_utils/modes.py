# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Nothing this collection creates is writable by others, whatever the user's umask (even 000).

Python 3.7+ creates the intermediate directories of os.makedirs with the umask's mode, not the
one asked for, and pip, venv and builds create files with the umask's: so a module that writes
tightens the umask of its own process (and its children) and creates directories level by level
with an explicit mode.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import errno
import fnmatch
import os
import stat
import tempfile
import time

# group and others never get write permission.
NEVER = 0o022

# The fault matrix's kill points (tests/functional/test_faults.py): a directory named here makes hold_point() wait.
FAULT_HOLD_ENV = 'PRIMUS_TRAINENV_FAULT_HOLD'


def hold_point(name):
    """A test hook that stops this process at a named point of its work while a test asks for it, so a kill -9
    lands exactly there. Off (one environment lookup) unless $PRIMUS_TRAINENV_FAULT_HOLD names a directory holding
    a file <pattern>.hold whose pattern matches name (fnmatch): then <pattern>.at is written (this pid and the
    name, atomically) and the process waits while <pattern>.hold exists."""
    directory = os.environ.get(FAULT_HOLD_ENV)
    if not directory:
        return
    try:
        entries = sorted(os.listdir(directory))
    except OSError:
        return
    for entry in entries:
        if not (entry.endswith('.hold') and fnmatch.fnmatchcase(name, entry[:-len('.hold')])):
            continue
        hold = os.path.join(directory, entry)
        at = hold[:-len('.hold')] + '.at'
        try:
            with open(at + '.tmp', 'w') as handle:
                handle.write('%d %s\n' % (os.getpid(), name))
            os.rename(at + '.tmp', at)
        except (IOError, OSError):
            return
        while os.path.exists(hold):
            time.sleep(0.05)
        return


def restrict_umask():
    """Add group/other write to this process's umask (keeping anything stricter); returns the old umask."""
    old = os.umask(NEVER)
    os.umask(old | NEVER)
    return old


def make_dirs(path, mode=0o755):
    """Create path and its missing parents, each with exactly ``mode``; returns the directories created.
    A directory that appears meanwhile (another run making the same parents) is not an error."""
    missing = []
    current_dir = path
    while current_dir and not os.path.isdir(current_dir):
        missing.append(current_dir)
        parent = os.path.dirname(current_dir)
        if parent == current_dir:
            break
        current_dir = parent
    created = []
    for directory in reversed(missing):
        try:
            os.mkdir(directory, mode)
        except OSError as exc:
            if exc.errno != errno.EEXIST:
                raise
            continue
        os.chmod(directory, mode)
        created.append(directory)
    return created


def current(path):
    """(content bytes, mode) of the file at path, or (None, None) when it cannot be read."""
    try:
        with open(path, 'rb') as handle:
            data = handle.read()
        return data, stat.S_IMODE(os.stat(path).st_mode)
    except (IOError, OSError):
        return None, None


def write_atomic(path, data, mode, dir_mode=0o755):
    """Write data to path with one rename (a reader sees the old file or the new one, never a part), the file
    with exactly ``mode``, missing parents with ``dir_mode``. Raises IOError/OSError; leaves no temporary file."""
    parent = os.path.dirname(path)
    tmp = None
    try:
        make_dirs(parent, dir_mode)
        fd, tmp = tempfile.mkstemp(prefix='.%s.' % os.path.basename(path), dir=parent)
        with os.fdopen(fd, 'wb') as handle:
            handle.write(data)
        os.chmod(tmp, mode)
        hold_point('write:' + os.path.basename(path))   # the new bytes written, not yet in place
        os.rename(tmp, path)
    except BaseException:
        if tmp and os.path.exists(tmp):
            os.unlink(tmp)
        raise
