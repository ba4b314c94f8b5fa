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

import os

# group and others never get write permission.
NEVER = 0o022


def restrict_umask():
    """Add group/other write to this process's umask (keeping anything stricter); returns the old umask."""
    old = os.umask(NEVER)
    os.umask(old | NEVER)
    return old


def make_dirs(path, mode=0o755):
    """Create path and its missing parents, each with exactly ``mode``; returns the directories created."""
    missing = []
    current = path
    while current and not os.path.isdir(current):
        missing.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    created = []
    for directory in reversed(missing):
        os.mkdir(directory, mode)
        os.chmod(directory, mode)
        created.append(directory)
    return created
