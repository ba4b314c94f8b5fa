#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: capacity_info
short_description: Can this user create a directory here, how much space is free there, and how many CPUs and how much memory it may use
version_added: 0.1.0
description:
  - Looks at O(path) without creating it - whether it exists, its nearest existing ancestor, whether this user
    can create O(path) (or write into it when it exists), and the free and total space of that filesystem as an
    unprivileged user sees it (C(statvfs) C(f_bavail)).
  - Also reports the CPUs this process may run on (its affinity mask) and the memory available to it
    (C(MemAvailable) of C(/proc/meminfo), lowered to what its cgroup's memory limit leaves).
  - Exists because no builtin module gives the free space of a path that does not exist yet without gathering
    every mount of the node, and C(ansible.builtin.stat) cannot find the nearest existing ancestor in one call.
  - Read-only; it never changes the node.
author:
  - primus.trainenv developers (@primus-trainenv)
attributes:
  check_mode:
    description: Runs normally in check mode; it only reads.
    support: full
  diff_mode:
    description: Nothing to show; it only reads.
    support: none
options:
  path:
    description: Absolute path of the directory to check. It does not need to exist.
    type: str
    required: true
'''

EXAMPLES = r'''
- name: Check the build directory before creating anything
  primus.trainenv.capacity_info:
    path: /home/trainer/envs/primus-env
  register: base_capacity

- name: Stop when it cannot be created or is too small
  ansible.builtin.assert:
    that:
      - base_capacity.creatable
      - base_capacity.free_bytes >= 60 * 1024 ** 3
'''

RETURN = r'''
path:
  description: The path checked, normalised.
  returned: always
  type: str
  sample: /home/trainer/envs/primus-env
exists:
  description: Whether O(path) exists.
  returned: always
  type: bool
  sample: false
is_dir:
  description: Whether O(path) is a directory (after symlinks).
  returned: always
  type: bool
  sample: false
nearest_existing:
  description: O(path) itself when it exists, else its nearest existing ancestor.
  returned: always
  type: str
  sample: /home/trainer
nearest_is_dir:
  description: Whether RV(nearest_existing) is a directory.
  returned: always
  type: bool
  sample: true
creatable:
  description:
    - Whether this user can use O(path) as a directory - it exists as a directory this user can write into and
      enter, or it does not exist and RV(nearest_existing) is such a directory.
  returned: always
  type: bool
  sample: true
problem:
  description: Why RV(creatable) is false; empty when it is true.
  returned: always
  type: str
  sample: /home is not writable by user trainer
free_bytes:
  description: Space available to unprivileged users on the filesystem of RV(nearest_existing).
  returned: always
  type: int
  sample: 85579005952
total_bytes:
  description: Size of that filesystem.
  returned: always
  type: int
  sample: 270553174016
cpus:
  description: CPUs this process may run on (its affinity mask; the CPU count when that is unknown).
  returned: always
  type: int
  sample: 192
mem_available_bytes:
  description: C(MemAvailable) of C(/proc/meminfo), lowered to the room left under this process's cgroup memory limit; 0 if unknown.
  returned: always
  type: int
  sample: 2012938108928
mem_limit_bytes:
  description: This process's cgroup memory limit; 0 when there is none or it is unknown.
  returned: always
  type: int
  sample: 0
user:
  description: The user the checks were made for.
  returned: always
  type: str
  sample: trainer
'''

import os
import pwd

from ansible.module_utils.basic import AnsibleModule


def nearest_existing(path):
    current = path
    while not os.path.lexists(current):
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    return current


def _read(path):
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def mem_available():
    text = _read('/proc/meminfo') or ''
    for line in text.splitlines():
        if line.startswith('MemAvailable:'):
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit():
                return int(parts[1]) * 1024
    return 0


def _int_or_none(text):
    text = (text or '').strip()
    return int(text) if text.isdigit() else None


def cgroup_memory():
    """(limit, usage) of this process's cgroup (v2, else v1 memory controller); (None, None) if unlimited/unknown."""
    for line in (_read('/proc/self/cgroup') or '').splitlines():
        parts = line.split(':', 2)
        if len(parts) != 3:
            continue
        hierarchy, controllers, rel = parts
        rel = rel.lstrip('/')
        if hierarchy == '0' and controllers == '':
            base = os.path.join('/sys/fs/cgroup', rel)
            limit = _int_or_none(_read(os.path.join(base, 'memory.max')))
            usage = _int_or_none(_read(os.path.join(base, 'memory.current')))
            if limit is not None:
                return limit, usage
        elif 'memory' in controllers.split(','):
            base = os.path.join('/sys/fs/cgroup/memory', rel)
            limit = _int_or_none(_read(os.path.join(base, 'memory.limit_in_bytes')))
            usage = _int_or_none(_read(os.path.join(base, 'memory.usage_in_bytes')))
            # v1 reports "no limit" as a huge page-aligned number.
            if limit is not None and limit < (1 << 60):
                return limit, usage
    return None, None


def cpu_count():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def main():
    module = AnsibleModule(
        argument_spec=dict(path=dict(type='str', required=True)),
        supports_check_mode=True,
    )
    path = module.params['path']
    if not os.path.isabs(path):
        module.fail_json(msg='path %r is not absolute' % path)
    path = os.path.normpath(path)
    try:
        user = pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        user = str(os.geteuid())

    exists = os.path.exists(path)
    nearest = path if exists else nearest_existing(path)
    nearest_is_dir = os.path.isdir(nearest)
    problem = ''
    if os.path.islink(nearest) and not os.path.exists(nearest):
        problem = '%s is a dangling symlink' % nearest
    elif not nearest_is_dir:
        problem = '%s exists and is not a directory' % nearest
    elif not os.access(nearest, os.W_OK | os.X_OK):
        problem = '%s is not writable by user %s' % (nearest, user)

    free = total = 0
    stat_dir = nearest if nearest_is_dir else os.path.dirname(nearest)
    try:
        st = os.statvfs(stat_dir)
        free = st.f_bavail * st.f_frsize
        total = st.f_blocks * st.f_frsize
    except OSError as exc:
        module.fail_json(msg='cannot read the free space of %s: %s' % (stat_dir, exc))

    available = mem_available()
    limit, usage = cgroup_memory()
    if limit is not None:
        room = max(0, limit - (usage or 0))
        available = min(available, room) if available else room

    module.exit_json(
        changed=False,
        path=path,
        exists=exists,
        is_dir=os.path.isdir(path),
        nearest_existing=nearest,
        nearest_is_dir=nearest_is_dir,
        creatable=not problem,
        problem=problem,
        free_bytes=free,
        total_bytes=total,
        cpus=cpu_count(),
        mem_available_bytes=available,
        mem_limit_bytes=limit or 0,
        user=user,
    )


if __name__ == '__main__':
    main()
