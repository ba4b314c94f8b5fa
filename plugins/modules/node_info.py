#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: node_info
short_description: What preflight needs to know about a node, read in one round trip
version_added: 0.1.0
description:
  - Looks at O(path) without creating it - whether it exists, its nearest existing ancestor, whether this user
    can create O(path) (or write into it when it exists), and the free and total space of that filesystem as an
    unprivileged user sees it (C(statvfs) C(f_bavail)).
  - Reports the filesystem RV(nearest_existing) lives on (RV(filesystem), from C(/proc/self/mountinfo)) and whether it
    is a network filesystem that several nodes share, the node's name (RV(hostname)) and its OS (RV(os), from
    C(/etc/os-release)).
  - Reports the user, its home, the CPUs this process may run on (its affinity mask) and the memory available to it
    (C(MemAvailable) of C(/proc/meminfo), lowered to what its cgroup's memory limit leaves).
  - Asks each interpreter of O(interpreters) for its C(major.minor) and looks up each command of O(commands) on C(PATH).
    An interpreter that cannot be run (missing, a directory, not executable, a dangling symlink, not a program, a path
    too long) or that prints no version is described in words, not failed on.
  - With O(venv), looks at what is at the venv path (RV(venv)) - whether it is a venv this collection made and
    finished, one whose creation was interrupted, a venv made by someone else that can be adopted, or something that
    must not be touched - and lists pip's debris of a killed install in its site-packages.
  - With O(state_dir), reads every stage stamp C(<state_dir>/<stage>.json) (RV(stamps)).
  - Looks at each directory of O(private_dirs) - whether another user owns it or others can write it.
  - Looks at each path of O(files) (kind, mode and, for a regular file, the sha256 of its content) and lists the
    matches of each pattern of O(globs).
  - One module run instead of a fact gathering, a stat and several commands - every task costs a round trip, and a
    converged run should take seconds. No builtin gives the free space of a path that does not exist yet without
    gathering every mount of the node.
  - Read-only; it never changes the node. A relative or empty O(path) is reported in RV(problem), not failed on, so that
    the caller can explain it.
author:
  - primus.trainenv developers (@primus-trainenv)
extends_documentation_fragment:
  - primus.trainenv.attributes.read_only
options:
  path:
    description: Absolute path of the directory to check. It does not need to exist.
    type: str
    required: true
  interpreters:
    description:
      - Python interpreters to ask for their version (paths, or command names looked up on C(PATH)); empty entries are
        ignored. Results are keyed by the entry as given.
    type: list
    elements: str
    default: []
  commands:
    description: Command names to look up on C(PATH).
    type: list
    elements: str
    default: []
  venv:
    description: Path of the venv to look at (it does not need to exist). Empty means do not look.
    type: str
    default: ''
  state_dir:
    description: Directory of the stage stamps to read (it does not need to exist). Empty means do not read.
    type: str
    default: ''
  written_dirs:
    description:
      - Directories the run writes (the venv, state/, logs/ ...), by name, each checked as O(path) is - see
        RV(written_dirs). O(path) itself is always checked (RV(base_problem)).
    type: dict
    default: {}
  megatron_checkouts:
    description:
      - Primus checkouts Megatron's helpers_cpp is built in (C(primus_megatron_checkouts); a leading C(~/) is this
        user's home). Each that exists and has Megatron's datasets Makefile is checked as
        C(primus.trainenv.megatron_helpers) checks it before anything runs there - see RV(megatron_checkouts).
        Entries that are not absolute paths are left to preflight's check of the setting.
    type: list
    elements: raw
    default: []
  private_dirs:
    description:
      - Directories this user must own alone (a build or cache directory), by name. C({user}) in a path stands for
        the user's name (for example C(/tmp/primus-build-{user})). It is looked at normalised (repeated and trailing
        slashes, C(.) components removed).
      - Each is looked at without following a symlink and without creating anything; see RV(private_dirs).
    type: dict
    default: {}
  files:
    description:
      - Paths to look at without following a symlink (RV(files)) - for example the generated files of a base, whose
        content the caller compares with what it would write, so that a run with nothing to change writes nothing.
        A leading C(~/) is this user's home (the result keeps the path as given).
    type: list
    elements: str
    default: []
  globs:
    description: Shell patterns (C(*), C(?), C([...])) to list the matches of (RV(globs)), for example downloaded data.
    type: list
    elements: str
    default: []
  installed_fixes:
    description:
      - The release's fixes to installed files (C(primus_pins.installed_fixes)), decided as
        M(primus.trainenv.installed_fixes) decides them, against the site-packages of O(venv) with the Python of
        O(fixes_python) (RV(installed_fixes)). Read only.
    type: list
    elements: dict
    default: []
  fixes_python:
    description: The venv's Python version (major.minor) whose site-packages O(installed_fixes) are under.
    type: str
    default: ''
  glibc:
    description: Also read the glibc and libstdc++ facts (RV(glibc)), as M(primus.trainenv.glibc_facts) does.
    type: bool
    default: false
  gpu:
    description:
      - Also detect the GPU archs (RV(gpu)) as M(primus.trainenv.gpu_arch_facts) does, with these of its options -
        C(override), C(rocminfo), C(kfd_nodes_path), C(kfd_device) and C(default_archs); O(venv) is where a rocminfo
        not on C(PATH) is looked for. Empty means do not detect.
      - An option that cannot be used (an override that is not an arch list, a rocminfo that cannot be run) is reported
        in the result's C(problem), not failed on, so that the lock check and preflight run first.
    type: dict
    default: {}
'''

EXAMPLES = r'''
- name: Check the build directory before creating anything
  primus.trainenv.node_info:
    path: /home/trainer/envs/primus-env
    interpreters: [/home/trainer/envs/primus-env/venv/bin/python]
    commands: [git, make, g++]
    private_dirs:
      build: /tmp/primus-build-{user}
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
filesystem:
  description:
    - The mount holding RV(nearest_existing) (symlinks resolved) - C(mount_point), C(fstype), C(source) and C(network)
      (an NFS, Lustre, GPFS, BeeGFS, CIFS, sshfs ... filesystem that other nodes share). All empty (and C(network)
      false) when C(/proc/self/mountinfo) cannot be read.
  returned: always
  type: dict
  sample: {"mount_point": "/home", "fstype": "nfs4", "source": "fs01:/export/home", "network": true}
hostname:
  description: The node's host name.
  returned: always
  type: str
  sample: node17
os:
  description: C(id), C(version_id) and C(pretty_name) of C(/etc/os-release) (empty strings when it cannot be read).
  returned: always
  type: dict
  sample: {"id": "ubuntu", "version_id": "22.04", "pretty_name": "Ubuntu 22.04.4 LTS"}
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
home:
  description: That user's home directory.
  returned: always
  type: str
  sample: /home/trainer
python:
  description: The interpreter running this module (it can create a small venv for uv).
  returned: always
  type: str
  sample: /usr/bin/python3
interpreters:
  description:
    - For each interpreter of O(interpreters) - C(exists) (something is at that path), C(version) (C(major.minor),
      empty when it cannot run or prints no version), C(full_version) (C(platform.python_version()), for example
      C(3.12.1); empty when it does not say) and C(error) (why, in words that can follow "it", for example
      C(cannot be run - it is a directory) or C(ran but printed 'hello' instead of a version, so it is not a Python)).
  returned: always
  type: dict
  sample: {"/usr/bin/python3.11": {"exists": true, "version": "3.11", "full_version": "3.11.9", "error": ""}}
environment:
  description:
    - The list variables a command on this node starts with (C(PATH), C(LD_LIBRARY_PATH), C(PIP_CONSTRAINT), C(NLTK_DATA);
      empty when unset), for a build environment that prepends to them (filter C(primus.trainenv.env_dict), its C(inherit)).
  returned: always
  type: dict
  sample: {"PATH": "/usr/local/bin:/usr/bin:/bin", "LD_LIBRARY_PATH": "", "PIP_CONSTRAINT": "", "NLTK_DATA": ""}
private_dirs:
  description:
    - For each directory of O(private_dirs) - C(path) (with C({user}) replaced), C(exists), C(owner) (user
      name, empty when it does not exist), C(mode) (octal permission bits, empty when it does not exist) and
      C(problem) - why it must not be adopted (another user's directory, one others can write, a symlink, not a
      directory), or empty.
  returned: always
  type: dict
  sample: {"cache": {"path": "/tmp/primus-cache-trainer", "exists": true, "owner": "mallory", "mode": "0755",
           "problem": "is owned by mallory (uid 1001), not by you"}}
base_problem:
  description:
    - Why O(path) must not be used as PRIMUS_BASE, empty when it may - a symlink on its path that the system did not
      put there (not owned by root in a directory only root can write), an existing directory that is not a real
      directory owned by this user or that every user can write, a directory to be created inside another user's,
      or a non-empty directory that is not recognisably a base of this collection (no C(state/), lock or venv
      marker, and names a run never writes).
  returned: always
  type: str
  sample: /home/trainer/envs/x is a symbolic link (to '/etc') made by trainer; ...
written_dirs:
  description: For each directory of O(written_dirs) - C(path) and C(problem) (as RV(base_problem), without the
    emptiness rule).
  returned: always
  type: dict
  sample: {"state": {"path": "/home/trainer/envs/primus-env/state", "problem": ""}}
megatron_checkouts:
  description:
    - For each checkout of O(megatron_checkouts) that another user can change (its path, a directory of it, or what
      make reads there is another user's or writable by another user), the refusal naming the path, its owner and the
      fix; a checkout that may be built in, or is not there, has none.
  returned: always
  type: dict
  sample: {"/home/bob/Primus": "The Megatron checkout /home/bob/Primus cannot be built in by user me: ..."}
commands:
  description: The commands of O(commands) found on C(PATH), with their paths.
  returned: always
  type: dict
  sample: {"git": "/usr/bin/git", "make": "/usr/bin/make"}
venv:
  description:
    - What is at O(venv) - C(kind) is V(absent), V(empty), V(ready) (made and finished by this collection),
      V(interrupted) (its creation did not finish), V(broken) (made by this collection, since lost pyvenv.cfg,
      bin/python or pip), V(adoptable) (a venv with a working pip that this collection did not make) or V(foreign)
      (anything else; C(problem) says what and how to fix it).
    - C(debris) lists what a killed pip left in site-packages (C(~)-prefixed entries, C(*.tmp) in C(*.dist-info)).
    - C(distributions) maps each installed distribution (name normalised as PEP 503 does) to its version, read from
      the C(*.dist-info) directory names; a stage is not done when the distribution it built is gone.
  returned: when O(venv) is given
  type: dict
  sample: {"path": "/home/trainer/envs/primus-env/venv", "kind": "ready", "problem": "", "marker": "complete",
           "pyvenv_cfg": true, "python": true, "pip": true, "debris": [],
           "distributions": {"torch": "2.12.0+rocm7.15.0a20260720"}}
lock:
  description:
    - The record of the lock C(<path>/.primus.lock) of a run that holds the base now (see M(primus.trainenv.base_lock)),
      empty when there is none; with C(problem) when the file is not a lock record. Read only.
  returned: always
  type: dict
  sample: {"run_id": "1a2b3c4d5e6f", "user": "trainer", "controller_host": "login1", "controller_pid": 4242}
files:
  description:
    - For each path of O(files), as given - C(exists), C(kind) (V(file), V(dir), V(link), V(other) or empty when
      absent), C(mode) (octal permission bits, for example V(0644); empty when absent), C(sha256) (of a regular
      file's content up to 16 MiB; empty otherwise or when it cannot be read) and, for a link, C(target) (what it
      points to, as written).
  returned: always
  type: dict
  sample: {"/home/trainer/envs/primus-env/env.sh": {"exists": true, "kind": "file", "mode": "0644", "sha256": "9f86d0..."}}
globs:
  description: For each pattern of O(globs), its matches, sorted (none when nothing matches).
  returned: always
  type: dict
  sample: {"/home/trainer/envs/primus-env/nltk_data/*/punkt_tab.zip": ["/home/trainer/envs/primus-env/nltk_data/tokenizers/punkt_tab.zip"]}
installed_fixes:
  description:
    - For each fix of O(installed_fixes), in order - C(name), C(kind) (V(link) or V(line)), C(path), C(state)
      (V(applied), V(pending), V(not_installed) or V(broken)) and C(why) (what was found, in words). Empty when O(venv)
      or O(fixes_python) is empty.
  returned: always
  type: list
  elements: dict
  sample: [{"name": "comgr_single_copy", "kind": "link", "path": "_rocm_sdk_core/lib/libamd_comgr.so.3",
            "state": "pending", "why": "_rocm_sdk_core/lib/libamd_comgr.so.3 is a second regular file (16 bytes)"}]
glibc:
  description:
    - With O(glibc) - the facts M(primus.trainenv.glibc_facts) reports (C(version), C(source), C(ldd_line),
      C(libstdcxx_path), C(glibcxx_max), C(glibcxx_versions)) and C(problem), empty unless the libstdc++ cannot be read.
  returned: when O(glibc) is true
  type: dict
  sample: {"version": "2.39", "source": "confstr", "glibcxx_max": "3.4.33", "problem": ""}
gpu:
  description:
    - With O(gpu) - the facts M(primus.trainenv.gpu_arch_facts) reports (C(archs), C(pytorch_rocm_arch), C(arch_csv),
      C(source), C(detected_archs), C(gpu_count), C(marketing_names), C(kfd_access) ...) and C(problem), empty unless an
      option cannot be used (then the facts are empty). Its warnings (no GPU found, C(/dev/kfd) not usable) are this
      module's.
  returned: when O(gpu) is given
  type: dict
  sample: {"archs": ["gfx942"], "pytorch_rocm_arch": "gfx942", "source": "rocminfo", "gpu_count": 8, "problem": ""}
stamps:
  description:
    - Each stage stamp of O(state_dir), by stage - the stamp's fields (C(format), C(stage), C(release), C(key),
      C(key_id), C(finished), C(host), C(outputs)) and C(problem), empty unless the stamp cannot be trusted.
  returned: when O(state_dir) is given
  type: dict
  sample: {"venv": {"format": 1, "stage": "venv", "release": "v26.5", "key_id": "6f1c0e2d9a8b7c6d", "problem": ""}}
'''

import errno
import glob
import hashlib
import os
import pwd
import re
import socket
import stat
import sys

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.primus.trainenv.plugins.module_utils import (
    base_lock, glibc, gpu_arch, installed_fixes, megatron_helpers, mountinfo, stage_state, venv_state)
from ansible_collections.primus.trainenv.plugins.module_utils.safe_paths import (
    base_entries_problem, expand_home, foreign_tree_problem, normalise, own_group, private_dir_problem, visible,
    written_dir_problem)

_VERSION_RE = re.compile(r'^(\d+)\.(\d+)$')
_FULL_VERSION_RE = re.compile(r'^\d+\.\d+\.\d+[0-9A-Za-z.+]*$')


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


def os_error_words(exc, user):
    """An OSError about a path, as words that say what to fix."""
    code = getattr(exc, 'errno', None)
    if code == errno.ENOENT:
        return 'it does not exist'
    if code == errno.ENAMETOOLONG:
        return 'its path is too long for Linux (a name of more than 255 characters, or more than 4096 in all)'
    if code in (errno.EACCES, errno.EPERM):
        return 'user %s may not reach or run it (permission denied: a directory on its path is not searchable, ' \
               'or its filesystem is mounted noexec)' % user
    if code == errno.ENOEXEC:
        return 'the kernel cannot execute it (Exec format error): it is not a program, nor a script starting with #!'
    if code == errno.ENOTDIR:
        return 'a component of its path is a file, not a directory'
    if code == errno.ELOOP:
        return 'its symlinks loop'
    return '%s (errno %s)' % (getattr(exc, 'strerror', None) or exc, code)


def interpreter_version(module, path, user):
    """{'exists', 'version', 'full_version', 'error'} of one interpreter; never fails the module."""
    def cannot(exists, words):
        return {'exists': exists, 'version': '', 'full_version': '', 'error': 'cannot be run: ' + words}

    if os.sep not in path:
        found = module.get_bin_path(path)
        if not found:
            return cannot(False, 'there is no %s on PATH' % path)
        path = found
    try:
        lst = os.lstat(path)
    except OSError as exc:
        return cannot(False, os_error_words(exc, user))
    try:
        st = os.stat(path)
    except OSError as exc:
        if stat.S_ISLNK(lst.st_mode) and exc.errno == errno.ENOENT:
            return cannot(True, 'it is a dangling symlink (to %s, which does not exist)' % visible(os.readlink(path)))
        return cannot(True, os_error_words(exc, user))
    if stat.S_ISDIR(st.st_mode):
        return cannot(True, 'it is a directory, not a program')
    if not stat.S_ISREG(st.st_mode):
        return cannot(True, 'it is not a regular file')
    if not os.access(path, os.X_OK):
        return cannot(True, 'it is not executable by user %s (mode %04o)' % (user, stat.S_IMODE(st.st_mode)))
    try:
        rc, out, err = module.run_command([path, '-c', "import platform, sys; print('%d.%d' % sys.version_info[:2]); "
                                                 "print(platform.python_version())"],
                                          expand_user_and_vars=False, handle_exceptions=False)
    except (IOError, OSError) as exc:
        return cannot(True, os_error_words(exc, user))
    if rc != 0:
        lines = (err or out or '').strip().splitlines()
        return cannot(True, 'it exits with rc %s: %s' % (rc, visible(lines[-1][:200]) if lines else 'no output'))
    lines = (out or '').strip().splitlines()
    text = lines[0].strip() if lines else ''
    if not _VERSION_RE.match(text):
        text = (out or '').strip()
        return {'exists': True, 'version': '', 'full_version': '', 'error': 'ran but printed %s instead of a version, so it '
                'is not a Python interpreter' % (visible(text[:80]) if text else 'nothing')}
    full = lines[1].strip() if len(lines) > 1 else ''
    return {'exists': True, 'version': text, 'full_version': full if _FULL_VERSION_RE.match(full) else '', 'error': ''}


def look_at_private_dir(path, user, uid):
    path = path.replace('{user}', user)
    result = {'path': path, 'exists': False, 'owner': '', 'mode': '', 'problem': ''}
    if not path.startswith('/'):
        return result   # preflight explains a relative path
    try:
        lst = os.lstat(normalise(path))
    except OSError as exc:
        if exc.errno != errno.ENOENT:
            result['problem'] = 'cannot be looked at: %s' % os_error_words(exc, user)
        return result
    result.update(exists=True, owner=user_name(lst.st_uid), mode='%04o' % stat.S_IMODE(lst.st_mode))
    result['problem'] = private_dir_problem(lst, uid, user_name)
    return result


# Larger files are not hashed (the generated files of a base are a few KiB).
HASH_LIMIT = 16 * 1024 * 1024


def look_at_file(path):
    """{exists, kind, mode, sha256} of a path, without following a symlink."""
    result = {'exists': False, 'kind': '', 'mode': '', 'sha256': ''}
    try:
        lst = os.lstat(path)
    except (OSError, ValueError):
        return result
    kinds = ((stat.S_ISREG, 'file'), (stat.S_ISDIR, 'dir'), (stat.S_ISLNK, 'link'))
    kind = [name for test, name in kinds if test(lst.st_mode)][:1]
    result.update(exists=True, kind=(kind or ['other'])[0], mode='%04o' % stat.S_IMODE(lst.st_mode))
    if result['kind'] == 'link':
        try:
            result['target'] = os.readlink(path)
        except OSError:
            result['target'] = ''
    if result['kind'] == 'file' and lst.st_size <= HASH_LIMIT:
        digest = hashlib.sha256()
        try:
            with open(path, 'rb') as handle:
                for block in iter(lambda: handle.read(1024 * 1024), b''):
                    digest.update(block)
        except (IOError, OSError):
            return result
        result['sha256'] = digest.hexdigest()
    return result


def look_at_written_dir(path, uid, home):
    if not path or not path.startswith('/'):
        return {'path': path, 'problem': ''}   # preflight explains a relative or empty path
    path = normalise(path)
    return {'path': path, 'problem': written_dir_problem(path, uid, os.lstat, user_name, os.readlink, home)}


def megatron_refusals(checkouts, uid, home):
    """{checkout: refusal} of the Megatron checkouts another user can change (megatron_helpers' own check)."""
    found = {}
    for given in checkouts:
        if not isinstance(given, str):
            continue
        path = expand_home(given, home)
        if not path.startswith('/') or not os.path.isfile(os.path.join(megatron_helpers.datasets_dir(path),
                                                                       megatron_helpers.MAKEFILE)):
            continue
        real = os.path.realpath(path)
        problem, owner = foreign_tree_problem(real, megatron_helpers.TRUSTED, uid, os.lstat, user_name, own_group(uid))
        if problem:
            found[path] = megatron_helpers.refusal(path, real, problem, user_name(owner) if owner is not None else None,
                                                   user_name(uid))
    return found


def base_problem(path, uid, home):
    """Why path must not be PRIMUS_BASE ('' if it may): written_dir_problem, then what an existing one holds."""
    problem = written_dir_problem(path, uid, os.lstat, user_name, os.readlink, home)
    if problem or not os.path.isdir(path):
        return problem
    try:
        entries = os.listdir(path)
    except OSError as exc:
        return 'cannot be listed (%s)' % os_error_words(exc, user_name(uid))
    return base_entries_problem(entries, lambda rel: os.path.lexists(os.path.join(path, rel)))


def user_name(uid):
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return 'uid %d' % uid


def pip_works(module):
    def check(python):
        rc, out, err = module.run_command([python, '-m', 'pip', '--version'])
        if rc != 0:
            lines = (err or out or '').strip().splitlines()
            return False, 'its pip does not run (%s)' % (lines[-1] if lines else 'rc %s' % rc)
        return True, ''
    return check


def filesystem_of(path):
    try:
        mounts = mountinfo.parse(_read('/proc/self/mountinfo') or '')
    except (IOError, OSError):
        mounts = []
    found = mountinfo.mount_of(os.path.realpath(path), mounts) if path else None
    return found or dict(mount_point='', fstype='', source='', network=False)


def os_release():
    found = dict(id='', version_id='', pretty_name='')
    for path in ('/etc/os-release', '/usr/lib/os-release'):
        text = _read(path)
        if not text:
            continue
        for line in text.splitlines():
            key, sep, value = line.partition('=')
            key = key.strip().lower()
            if sep and key in found:
                value = value.strip()
                if len(value) >= 2 and value[0] == value[-1] and value[0] in '"\'':
                    value = value[1:-1]
                found[key] = value
        break
    return found


def venv_info(module, path, base):
    obs = venv_state.inspect(path, pip_works(module))
    inside = bool(base) and os.path.isabs(base) and path.startswith(normalise(base).rstrip('/') + '/')
    obs['kind'], obs['problem'] = venv_state.classify(obs, removable=inside)
    return obs


GPU_OPTIONS = ('override', 'rocminfo', 'kfd_nodes_path', 'kfd_device', 'default_archs')


def gpu_facts(module, options, venv):
    """gpu_arch.gather with the options given (unknown keys are a problem); its warnings become this module's."""
    unknown = sorted(set(options) - set(GPU_OPTIONS))
    empty = dict(archs=[], pytorch_rocm_arch='', arch_csv='', source='none', detected_archs=[], detected_source='none',
                 gpu_count=0, marketing_names=[], rocminfo_path='', kfd_access=False, kfd_access_error='', notes=[])
    if unknown:
        return dict(empty, problem='gpu: unknown option(s) %s (known: %s)' % (', '.join(unknown), ', '.join(GPU_OPTIONS)))
    args = dict((k, v) for k, v in options.items() if v is not None and v != '')
    try:
        facts, warnings = gpu_arch.gather(module, venv=venv or None, **args)
    except gpu_arch.GpuFactsError as exc:
        return dict(empty, problem=str(exc))
    for warning in warnings:
        module.warn(warning)
    return dict(facts, problem='')


def look_at_fixes(venv, python_version, fixes):
    """Each fix's state in the venv's site-packages (installed_fixes.decide), read only; a fix that cannot be decided
    is reported broken with the reason, for preflight to explain."""
    if not venv or not python_version or not os.path.isabs(venv):
        return []
    site = os.path.join(venv, 'lib', 'python%s' % python_version, 'site-packages')
    out = []
    for fix in fixes:
        entry = dict(name=str(fix.get('name', '')), kind=installed_fixes.kind(fix), path=str(fix.get('path', '')))
        try:
            state, why, _before, _after = installed_fixes.decide(site, fix)
        except (installed_fixes.FixError, KeyError, IOError, OSError) as exc:
            state, why = installed_fixes.BROKEN, str(exc)
        out.append(dict(entry, state=state, why=why))
    return out


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type='str', required=True),
            interpreters=dict(type='list', elements='str', default=[]),
            commands=dict(type='list', elements='str', default=[]),
            venv=dict(type='str', default=''),
            state_dir=dict(type='str', default=''),
            private_dirs=dict(type='dict', default={}),
            megatron_checkouts=dict(type='list', elements='raw', default=[]),
            files=dict(type='list', elements='str', default=[]),
            globs=dict(type='list', elements='str', default=[]),
            written_dirs=dict(type='dict', default={}),
            glibc=dict(type='bool', default=False),
            gpu=dict(type='dict', default={}),
            installed_fixes=dict(type='list', elements='dict', default=[]),
            fixes_python=dict(type='str', default=''),
        ),
        supports_check_mode=True,
    )
    try:
        entry = pwd.getpwuid(os.geteuid())
        user, home = entry.pw_name, entry.pw_dir
    except KeyError:
        user, home = str(os.geteuid()), os.environ.get('HOME', '')
    node = dict(
        changed=False, user=user, home=home, python=sys.executable, cpus=cpu_count(),
        interpreters=dict((p, interpreter_version(module, p, user)) for p in module.params['interpreters'] if p),
        private_dirs=dict((name, look_at_private_dir(str(p or ''), user, os.geteuid()))
                          for name, p in module.params['private_dirs'].items()),
        written_dirs=dict((name, look_at_written_dir(str(p or ''), os.geteuid(), home))
                          for name, p in module.params['written_dirs'].items()),
        megatron_checkouts=megatron_refusals(module.params['megatron_checkouts'], os.geteuid(), home),
        environment=dict((name, os.environ.get(name, ''))
                         for name in ('PATH', 'LD_LIBRARY_PATH', 'PIP_CONSTRAINT', 'NLTK_DATA')),
        hostname=socket.gethostname(), os=os_release(),
        files=dict((p, look_at_file(home.rstrip('/') + p[1:] if p == '~' or p.startswith('~/') else p))
                   for p in module.params['files'] if p),
        globs=dict((p, sorted(glob.glob(p))) for p in module.params['globs'] if p),
    )
    found = [(c, module.get_bin_path(c)) for c in module.params['commands']]
    node['commands'] = dict((c, where) for c, where in found if where)
    available = mem_available()
    limit, usage = cgroup_memory()
    if limit is not None:
        room = max(0, limit - (usage or 0))
        available = min(available, room) if available else room
    node.update(mem_available_bytes=available, mem_limit_bytes=limit or 0)
    # Only absolute paths are looked at (preflight explains a relative or empty base).
    if module.params['venv']:
        venv = module.params['venv']
        node['venv'] = venv_info(module, os.path.normpath(venv), module.params['path']) if os.path.isabs(venv) else dict(
            path=venv, kind='absent', problem='', debris=[], distributions={})
    node['installed_fixes'] = look_at_fixes(module.params['venv'], module.params['fixes_python'],
                                            module.params['installed_fixes'])
    if module.params['glibc']:
        try:
            node['glibc'] = dict(glibc.gather(module), problem='')
        except ValueError as exc:
            node['glibc'] = dict(version='', source='none', ldd_line='', libstdcxx_path='', glibcxx_max='',
                                 glibcxx_versions=[], problem=str(exc))
    if module.params['gpu']:
        node['gpu'] = gpu_facts(module, module.params['gpu'], module.params['venv'])
    if module.params['state_dir']:
        state_dir = module.params['state_dir']
        node['stamps'] = stage_state.read_stamps(state_dir, os.geteuid()) if os.path.isabs(state_dir) else {}

    path = module.params['path']
    if not path or not os.path.isabs(path):
        problem = 'PRIMUS_BASE is not set' if not path else '%r is not an absolute path' % path
        module.exit_json(path=path, exists=False, is_dir=False, nearest_existing='', nearest_is_dir=False,
                         creatable=False, problem=problem, free_bytes=0, total_bytes=0,
                         filesystem=filesystem_of(''), lock={}, base_problem='', **node)
    path = normalise(path)
    node['base_problem'] = base_problem(path, os.geteuid(), home)
    # The base's lock as it is now (read only): a run on a locked base is refused from this, before its other checks.
    holder, lock_problem = base_lock.read_lock(base_lock.lock_path(path))
    node['lock'] = dict(holder, problem=lock_problem) if lock_problem and holder is not None else (holder or {})

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
        problem = problem or 'the free space of %s cannot be read: %s' % (stat_dir, os_error_words(exc, user))

    module.exit_json(
        path=path,
        exists=exists,
        is_dir=os.path.isdir(path),
        nearest_existing=nearest,
        nearest_is_dir=nearest_is_dir,
        creatable=not problem,
        problem=problem,
        free_bytes=free,
        total_bytes=total,
        filesystem=filesystem_of(stat_dir),
        **node
    )


if __name__ == '__main__':
    main()
