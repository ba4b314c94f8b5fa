# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Megatron's helpers_cpp extension in a Primus checkout: where it is, whether it is current, and
why it cannot be replaced (pure functions; the module runs the commands).

Megatron's datasets Makefile names its output ``helpers_cpp$(LIBEXT)`` with LIBEXT taken from
``python3-config --extension-suffix``; a venv ships no python3-config, so the name falls back to
the system interpreter's suffix (or to none) and a 3.12 venv never imports it (Primus setup.sh compile_megatron_helpers).
The module passes ``LIBEXT=<EXT_SUFFIX of the venv's python>`` instead. A stale extension under
that name (a root-owned build bind-mounted from another OS) is removed first; removing a file
needs write and search permission on its directory, and in a sticky directory ownership of the
file or of the directory. Two runs of the same user (two bases, each with its own lock) can build in one checkout
(~/.cache/Primus is in every base's default list) and make writes the extension in place: each run holds an
exclusive flock on the datasets directories from its look at them to its load test (lock_directories).

A checkout is built in only when another user cannot change what make reads there (MAKE_READS: the makefiles make
looks for and helpers.cpp, and every directory from the checkout's root to them; safe_paths.foreign_tree_problem):
make runs the Makefile with the rights of the user running the stage, root's when root runs it. Such a checkout is
refused before anything runs there (refusal), and an extension file another user owns is never loaded (loading runs
its code): it is replaced. Python 3.8+, standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import errno
import fcntl
import os
import re
import stat
import time

from ansible_collections.primus.trainenv.plugins.module_utils.safe_paths import writable_by_others

DATASETS = os.path.join('third_party', 'Megatron-LM', 'megatron', 'core', 'datasets')
LIBNAME = 'helpers_cpp'
SOURCE = 'helpers.cpp'
MAKEFILE = 'Makefile'
# What `make -C <datasets>` reads: the makefiles make looks for, in its order, and the source it compiles.
MAKE_READS = ('GNUmakefile', 'makefile', MAKEFILE, SOURCE)
# The paths of a checkout that must be its user's alone (safe_paths.foreign_tree_problem's members).
TRUSTED = tuple([DATASETS] + [os.path.join(DATASETS, name) for name in MAKE_READS])

# Run by the venv's python: its extension suffix (empty when the interpreter has none).
EXT_PROBE = "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX') or '')"
# Run by the venv's python with the file as argv[1]: load it the way the upstream installer's load test does.
LOAD_PROBE = (
    "import importlib.util, sys\n"
    "spec = importlib.util.spec_from_file_location('helpers_cpp', sys.argv[1])\n"
    "module = importlib.util.module_from_spec(spec)\n"
    "spec.loader.exec_module(module)\n"
)


def datasets_dir(checkout):
    """The Megatron datasets directory of a Primus checkout."""
    return os.path.join(checkout, DATASETS)


def unique_checkouts(checkouts):
    """checkouts in order without repeats; two spellings of one directory count once (upstream de-duplicates too)."""
    seen, out = set(), []
    for checkout in checkouts:
        key = os.path.realpath(checkout)
        if key not in seen:
            seen.add(key)
            out.append(checkout)
    return out


def extension_name(ext):
    """helpers_cpp<ext>, or a ValueError naming why ext cannot be a suffix."""
    ext = (ext or '').strip()
    if not ext:
        raise ValueError("could not determine this interpreter's extension suffix")
    if '/' in ext or not ext.startswith('.') or not ext.endswith('.so'):
        raise ValueError('the extension suffix %r is not of the form .cpython-312-x86_64-linux-gnu.so' % ext)
    return LIBNAME + ext


def last_error_line(text):
    """The line that says what went wrong: the last non-empty line of a traceback or compiler output."""
    lines = [line.strip() for line in (text or '').splitlines() if line.strip()]
    return lines[-1] if lines else '(no output)'


# Megatron's Makefile passes -fdiagnostics-color, so the compiler colours its output even into a pipe.
_ANSI = re.compile(r'\x1b\[[0-9;]*[A-Za-z]')
_COMPILER_ERROR = re.compile(r'(^|\s)(fatal )?error:')


def build_error_line(text):
    """The compiler's first error (colour codes removed), else the last line of the build's output."""
    plain = _ANSI.sub('', text or '')
    for line in plain.splitlines():
        if _COMPILER_ERROR.search(line) and not line.startswith('make'):
            return line.strip()
    return last_error_line(plain)


def is_newer(built_mtime, source_mtime):
    """The built file is current against its source (make's rule: the target is not older than the source)."""
    if source_mtime is None:
        return True
    return built_mtime >= source_mtime


def removal_problem(directory, dir_stat, dir_writable, file_stat, euid):
    """Why this process cannot create or remove helpers_cpp in directory, or None when it can.

    dir_writable: os.access(directory, W_OK | X_OK) of this process (it knows ACLs and read-only
    mounts); dir_stat and file_stat (None when there is no file) decide the sticky-bit rule.
    """
    if not dir_writable:
        return 'not_writable'
    if file_stat is not None and euid != 0 and dir_stat.st_mode & stat.S_ISVTX:
        if euid not in (file_stat.st_uid, dir_stat.st_uid):
            return 'sticky'
    return None


def blocked_message(kind, checkout, directory, path, user, dir_owner, file_owner):
    """The refusal, naming the file or directory, its owner and the ways out."""
    if file_owner is None:
        return ('helpers_cpp cannot be built in %s: the directory is not writable by %s (it is owned by %s). '
                'Fix: build it as %s, or have its owner make the directory writable for you, or leave %s out of '
                'checkouts.' % (directory, user, dir_owner, dir_owner, checkout))
    if kind == 'sticky':
        why = ('its directory %s is sticky (mode +t) and neither the file nor the directory belongs to %s'
               % (directory, user))
    else:
        why = 'its directory %s (owned by %s) is not writable by %s' % (directory, dir_owner, user)
    return ('%s must be replaced before helpers_cpp can be built, but %s cannot remove it: %s. The file is owned by '
            '%s. Fix: remove it as %s (rm %s), or have an administrator run sudo rm %s, or leave %s out of '
            'checkouts.' % (path, user, why, file_owner, file_owner, path, path, checkout))


def refusal(checkout, real, problem, owner, user):
    """Why nothing is run in a checkout another user can change: the checkout (and its real path), what is wrong
    (naming the path and its owner: safe_paths.foreign_tree_problem) and the ways out. owner: the name of the user
    who can change it, or None when it is writable by others."""
    where = checkout if os.path.normpath(checkout) == real else '%s (the real path of %s)' % (real, checkout)
    if owner:
        way = 'build helpers_cpp there as %s (run the primus stage as that user), or ' % owner
    else:
        way = 'make it writable by you alone (chmod -R go-w %s, if it is yours), or ' % real
    return ('The Megatron checkout %s cannot be built in by user %s: %s. A build there runs its Makefile with your '
            'rights, so nothing is run there. Fix: %sput a checkout of your own (git clone it) in '
            'primus_megatron_checkouts instead of %s.' % (where, user, problem, way, checkout))


def foreign_file(lst, uid, owner_name=None, own_group_of=None):
    """Why an existing helpers_cpp file must not be loaded by user uid ('' if it may): a link, another user's file or
    one another user can write (loading it runs its code)."""
    if stat.S_ISLNK(lst.st_mode):
        return 'is a symbolic link'
    if not stat.S_ISREG(lst.st_mode):
        return 'is not a regular file'
    if lst.st_uid != uid:
        return 'is owned by %s (uid %d), not by you' % ((owner_name or str)(lst.st_uid), lst.st_uid)
    return writable_by_others(lst, own_group_of or (lambda gid: False))


def lock_directories(directories, timeout, on_wait=None, clock=time.monotonic, sleep=time.sleep):
    """Take an exclusive flock on each directory that exists, in sorted order (two runs never hold one each and wait
    for the other's), waiting up to `timeout` seconds for one another process holds; on_wait(directory) is called
    once when a wait starts. Returns (descriptors, busy): the open descriptors holding the locks (closing them, or
    the process ending, releases them) and None, or the descriptors taken so far and the directory still held after
    the timeout. A filesystem without flock on directories is not locked (a local build directory always is)."""
    held = []
    for directory in sorted(set(directories)):
        try:
            fd = os.open(directory, os.O_RDONLY | getattr(os, 'O_DIRECTORY', 0))
        except OSError:
            continue
        deadline, waiting = clock() + timeout, False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                held.append(fd)
                break
            except (IOError, OSError) as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    os.close(fd)
                    break
            if clock() >= deadline:
                os.close(fd)
                return held, directory
            if not waiting and on_wait is not None:
                on_wait(directory)
            waiting = True
            sleep(0.2)
    return held, None
