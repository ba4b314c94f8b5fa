# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The directories a run writes, checked and normalised before anything uses them (pure functions).

Every directory lands in env.sh and the modulefile, which every rank of every job sources, and in
command lines: a character that is code in bash or Tcl, or a separator in PATH, must never get
there. So a directory is accepted only when made of the safe characters below, and normalised
once (repeated and trailing slashes, ``.`` components) so that every later task and every
generated file sees one spelling of it.

Runs on the controller (filters) and on the target (node_info) with Python 3.8+; standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import errno
import os
import re
import stat
import unicodedata

# Letters, digits and . _ + @ % = , - and the separator /. Nothing a shell, Tcl, pip or a
# PATH-like variable treats specially: no space, quote, $, `, \, ;, :, *, ?, [, ], {, }, ~, #, !,
# &, |, <, >, (, ), newline or tab, and no non-ASCII letter.
SAFE_CHARS_TEXT = 'letters A-Z a-z, digits 0-9 and . _ + @ % = , - /'
_SAFE_RE = re.compile(r'^[A-Za-z0-9._+@%=,/-]*$')
_UNSAFE_RE = re.compile(r'[^A-Za-z0-9._+@%=,/-]')
# A command name given instead of a path (PRIMUS_PYTHON=python3.12): no separator at all.
_COMMAND_RE = re.compile(r'^[A-Za-z0-9._+-]+$')

# Linux limits: NAME_MAX for one component (in bytes) and a budget for the whole directory.
# PATH_MAX is 4096, and the trees built under these directories nest deep (site-packages,
# the ROCm SDK's llvm/amdgcn/bitcode, git checkouts with submodules), so the directory itself
# gets at most a quarter of it.
NAME_MAX = 255
PATH_MAX_DIR = 1024

_CHAR_NAMES = {
    '\n': 'a newline', '\t': 'a tab', '\r': 'a carriage return', ' ': 'a space', '\x00': 'a NUL byte',
}


def kind_of(value):
    """What a value is, in words for a message (never the value itself): 'a number', 'a mapping', ..."""
    if isinstance(value, bool):
        return 'true or false'
    for kind, words in ((str, 'a string'), ((int, float), 'a number'), (dict, 'a mapping'), ((list, tuple), 'a list')):
        if isinstance(value, kind):
            return words
    return 'empty' if value is None else type(value).__name__.replace('_AnsibleTagged', '').lower()


def describe_char(char):
    """A character as a reader can see it in a message: "'$' (U+0024)", "a newline (U+000A)"."""
    name = _CHAR_NAMES.get(char)
    code = 'U+%04X' % ord(char)
    if 0xDC80 <= ord(char) <= 0xDCFF:   # a byte that was not UTF-8, as Python decodes it (surrogateescape)
        return 'the byte 0x%02x, which is not UTF-8 (a name in another encoding)' % (ord(char) - 0xDC00)
    if name:
        return '%s (%s)' % (name, code)
    if unicodedata.category(char).startswith(('C', 'Z')):
        return 'the invisible character %s (%s)' % (unicodedata.name(char, 'control'), code)
    return "'%s' (%s)" % (char, code)


def visible(value):
    """value with control characters, backslashes and non-ASCII written as escapes, quoted: a message
    shows exactly what was given, on one line."""
    out = []
    for char in str(value):
        if char == '\\':
            out.append('\\\\')
        elif char == "'":
            out.append("\\'")
        elif ' ' <= char <= '~':
            out.append(char)
        elif char == '\n':
            out.append('\\n')
        elif char == '\t':
            out.append('\\t')
        elif char == '\r':
            out.append('\\r')
        elif ord(char) < 0x100:
            out.append('\\x%02x' % ord(char))
        elif 0xDC80 <= ord(char) <= 0xDCFF:
            out.append('\\x%02x' % (ord(char) - 0xDC00))
        else:
            out.append('\\u%04x' % ord(char) if ord(char) < 0x10000 else '\\U%08x' % ord(char))
    return "'%s'" % ''.join(out)


def printable(value):
    """value with every character that cannot be written as UTF-8 (a non-UTF-8 byte of an environment variable,
    surrogate-escaped) replaced by U+FFFD: what a setting with a problem is passed on as, so that no later task
    fails on encoding it before preflight explains the problem."""
    return value.encode('utf-8', 'replace').decode('utf-8') if isinstance(value, str) else value


def expand_home(value, home):
    """A leading ~ of a list setting's entry (primus_megatron_checkouts) is the target user's home."""
    if isinstance(value, str) and home and (value == '~' or value.startswith('~/')):
        return home.rstrip('/') + value[1:]
    return value


def normalise(path):
    """Collapse repeated slashes, drop '.' components and a trailing slash. '..' is kept."""
    parts = [p for p in path.split('/') if p not in ('', '.')]
    return '/' + '/'.join(parts)


def _lexical(path):
    """Resolve '..' textually (what the path would be without symlinks)."""
    parts = []
    for part in path.split('/'):
        if part in ('', '.'):
            continue
        if part == '..':
            if parts:
                parts.pop()
            continue
        parts.append(part)
    return '/' + '/'.join(parts)


def check_dir(value, label, required=True, example=None):
    """Check one directory setting.

    Returns {'path': normalised path (or the value as given when it is unusable), 'given': value,
    'problem': '' or one sentence naming what is wrong, 'fix': '' or what to do}.
    ``label`` names the setting in messages, e.g. "PRIMUS_BASE (primus_base)". An empty value is a
    problem only when ``required``.
    """
    example = example or '$HOME/envs/primus-env'
    result = {'path': printable(value), 'given': value, 'problem': '', 'fix': ''}
    if value is None or (not isinstance(value, str)):
        if value is None and not required:
            result['path'] = ''
            return result
        result.update(problem='%s must be a string, got %s' % (label, kind_of(value)),
                      fix='set it to an absolute path such as %s' % example)
        return result
    if value == '':
        if required:
            result.update(problem='%s is not set' % label, fix='set it to an absolute path such as %s' % example)
        return result
    if not value.startswith('/'):
        tilde = ' (~ is not expanded here)' if value.startswith('~') else ''
        result.update(problem='%s must be an absolute path, got %s%s' % (label, visible(value), tilde),
                      fix='use an absolute path such as %s' % example)
        return result
    bad = _UNSAFE_RE.search(value)
    if bad:
        result.update(
            problem='%s %s contains %s at position %d; only %s are allowed, because the path is written into '
                    'env.sh and the modulefile that every job sources, and into PATH-like variables'
                    % (label, visible(value), describe_char(bad.group(0)), bad.start() + 1, SAFE_CHARS_TEXT),
            fix='choose a directory whose path uses only those characters (e.g. %s, or a symlink with such a '
                'name that points where you want)' % example)
        return result
    path = normalise(value)
    if _lexical(path) == '/':
        result.update(problem='%s %s is the root directory / once normalised' % (label, visible(value)),
                      fix='use a directory of its own such as %s; the run creates and fills it' % example)
        return result
    if '..' in path.split('/'):
        result.update(problem="%s %s contains a '..' component, which means different directories with and "
                              "without symlinks" % (label, visible(value)),
                      fix='give the directory without .. (e.g. %s, the output of realpath -m)' % visible(_lexical(path)))
        return result
    for part in path.split('/'):
        if len(part.encode('utf-8')) > NAME_MAX:
            result.update(problem='%s has a component of %d characters (%s...); Linux allows at most %d per name'
                                  % (label, len(part), part[:24], NAME_MAX),
                          fix='use shorter directory names')
            return result
    if len(path) > PATH_MAX_DIR:
        result.update(problem='%s is %d characters long; at most %d are allowed, because the trees built under it '
                              'nest deep and Linux paths end at 4096' % (label, len(path), PATH_MAX_DIR),
                      fix='use a shorter path (or a short symlink to the place you want)')
        return result
    result['path'] = path
    return result


def check_command(value, label):
    """Check an interpreter setting (PRIMUS_PYTHON): empty, a command name, or an absolute path of safe
    characters. Returns the same shape as check_dir; a path is not normalised."""
    result = {'path': printable(value) or '', 'given': value, 'problem': '', 'fix': ''}
    if not value:
        return result
    if not isinstance(value, str):
        result.update(problem='%s must be a string, got %s' % (label, kind_of(value)),
                      fix='set it to the path of a Python interpreter')
        return result
    bad = _UNSAFE_RE.search(value)
    if bad:
        result.update(problem='%s %s contains %s at position %d; only %s are allowed in a path this collection runs'
                              % (label, visible(value), describe_char(bad.group(0)), bad.start() + 1, SAFE_CHARS_TEXT),
                      fix='point it at the interpreter through a path of those characters (a symlink works)')
        return result
    if '/' not in value:
        if not _COMMAND_RE.match(value):
            result.update(problem='%s %s is neither a command name nor an absolute path' % (label, visible(value)),
                          fix='give an absolute path such as /usr/bin/python3.12')
        return result
    if not value.startswith('/'):
        result.update(problem='%s must be an absolute path or a command name, got %s' % (label, visible(value)),
                      fix='give an absolute path such as /usr/bin/python3.12')
        return result
    for part in value.split('/'):
        if len(part.encode('utf-8')) > NAME_MAX:
            result.update(problem='%s has a component of %d characters (%s...); Linux allows at most %d per name'
                                  % (label, len(part), part[:24], NAME_MAX), fix='use a shorter path (a symlink works)')
            return result
    if len(value) > PATH_MAX_DIR:
        result.update(problem='%s is %d characters long; at most %d are allowed' % (label, len(value), PATH_MAX_DIR),
                      fix='use a shorter path (a symlink works)')
    return result


def is_safe(value):
    """True when value holds only the safe characters."""
    return isinstance(value, str) and bool(_SAFE_RE.match(value))


def private_dir_problem(lst, uid, owner_name=None):
    """Why a directory must not be adopted as this user's private cache or build directory ('' if it may).

    lst: os.lstat result of the directory (None when it does not exist: nothing to adopt),
    uid: this user's uid, owner_name: a function uid -> user name for messages.
    """
    if lst is None:
        return ''
    name = owner_name or str
    if stat.S_ISLNK(lst.st_mode):
        return 'is a symbolic link (owned by %s); a link is not adopted, since it can point anywhere' % name(lst.st_uid)
    if not stat.S_ISDIR(lst.st_mode):
        return 'exists and is not a directory'
    if lst.st_uid != uid:
        return 'is owned by %s (uid %d), not by you' % (name(lst.st_uid), lst.st_uid)
    if lst.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return 'is writable by others (mode %04o)' % stat.S_IMODE(lst.st_mode)
    return ''


# --------------------------------------------------------------------------- the directories a run writes, on the node

# What a base of this collection holds (roles/primus: primus_paths under the base, the lock and its temporary
# files). A non-empty directory is taken as a base only when it holds one of SIGNATURE (what only a run of this
# collection leaves), or nothing but these names (a run that stopped early).
BASE_ENTRIES = ('venv', 'state', 'logs', 'workspace', 'python', 'bin', 'env.sh', 'pip-constraints.txt', 'manifest',
                'nltk_data', 'modulefiles', 'wheels')
BASE_SIGNATURE = ('state', '.primus.lock', 'venv/primus-trainenv.cfg')
TRUSTED_LINKS_TEXT = ('symlinks are followed only where the system put them: a link owned by root in a directory only '
                      'root can write, outside your home (such as /home -> /users or /scratch -> /lustre/scratch)')
_WRITABLE_BY_OTHERS = stat.S_IWGRP | stat.S_IWOTH


def _components(path):
    """'/a/b/c' -> ['/a', '/a/b', '/a/b/c']."""
    parts = [p for p in path.split('/') if p]
    return ['/' + '/'.join(parts[:index + 1]) for index in range(len(parts))]


def trusted_link(path, lst, parent_lst, home=''):
    """Whether the symlink ``path`` (lst) in a directory (parent_lst) is the system's: owned by root, in a directory
    only root can write, and not below the user's home (where root's own links are a user's links too). Any other
    link could have been made by a user to point anywhere (/etc, another user's home)."""
    below_home = bool(home) and home != '/' and path.startswith(home.rstrip('/') + '/')
    return (lst.st_uid == 0 and parent_lst is not None and parent_lst.st_uid == 0
            and not parent_lst.st_mode & _WRITABLE_BY_OTHERS and not below_home)


def written_dir_problem(path, uid, lstat, owner_name=None, readlink=None, home=''):
    """Why a directory a run writes (PRIMUS_BASE, the venv, state/ ...) must not be used ('' if it may).

    Walks the path from / without following a link the walk has not judged: every symlink on it must be a trusted one
    (trusted_link); the directory, when it exists, must be a real directory owned by ``uid`` that others cannot
    write; when it does not exist, its nearest existing ancestor must not be another user's private directory (one
    it could only be created in because that user left it writable). ``lstat`` is os.lstat (or a stand-in),
    ``owner_name`` uid -> name, ``readlink`` os.readlink (for the message), ``home`` the user's home directory."""
    name = owner_name or str
    previous = None
    parent = '/'
    try:
        previous = lstat('/')
    except OSError:
        previous = None
    for current in _components(path):
        try:
            lst = lstat(current)
        except OSError as exc:
            # Not there (the rest is created by the run), or not reachable by this user (nothing can be created
            # there either: the check of whether PRIMUS_BASE can be created says so).
            if getattr(exc, 'errno', None) in (errno.ENOENT, errno.EACCES):
                return _nearest_problem(parent, previous, uid, name)
            return '%s cannot be looked at (%s)' % (current, getattr(exc, 'strerror', None) or exc)
        if stat.S_ISLNK(lst.st_mode):
            if not trusted_link(current, lst, previous, home):
                target = ''
                if readlink is not None:
                    try:
                        target = ' (to %s)' % visible(readlink(current))
                    except OSError:
                        target = ''
                return ('%s is a symbolic link%s made by %s; %s, since a link can point anywhere (a system directory, '
                        'another user\'s home)' % (current, target, name(lst.st_uid), TRUSTED_LINKS_TEXT))
            try:
                lst = lstat(current + '/.')   # the directory the trusted link points to
            except OSError as exc:
                return '%s cannot be looked at (%s)' % (current, getattr(exc, 'strerror', None) or exc)
        elif current != path and not stat.S_ISDIR(lst.st_mode):
            return '%s exists and is not a directory' % current
        previous, parent = lst, current
    if not stat.S_ISDIR(previous.st_mode):
        return 'exists and is not a directory'
    if previous.st_uid != uid:
        return 'is owned by %s (uid %d), not by you' % (name(previous.st_uid), previous.st_uid)
    if previous.st_mode & stat.S_IWOTH:
        return 'is writable by every user (mode %04o)' % stat.S_IMODE(previous.st_mode)
    return ''


def _nearest_problem(parent, lst, uid, name):
    """The nearest existing ancestor of a directory that does not exist yet: not another user's own directory."""
    if lst is None or lst.st_uid in (0, uid) or lst.st_mode & stat.S_ISVTX:
        return ''
    return ('does not exist and would be created in %s, a directory of user %s (uid %d)'
            % (parent, name(lst.st_uid), lst.st_uid))


# --------------------------------------------------------------------------- trees a run builds in or runs a tool from

def own_group(uid, getpwuid=None, getgrgid=None):
    """A function gid -> whether that group is the user's own: named like the user, with no other member listed
    (a user private group, whose write bit a umask of 002 sets on everything). Any other group holds other users."""
    if getpwuid is None or getgrgid is None:
        import grp  # pylint: disable=import-outside-toplevel
        import pwd  # pylint: disable=import-outside-toplevel
        getpwuid, getgrgid = pwd.getpwuid, grp.getgrgid
    try:
        user = getpwuid(uid).pw_name
    except KeyError:
        return lambda gid: False

    def is_own(gid):
        try:
            group = getgrgid(gid)
        except KeyError:
            return False
        return group.gr_name == user and set(group.gr_mem) <= set([user])
    return is_own


def writable_by_others(lst, own_group_of):
    """'' or why another user can write this file or directory (its mode's group or other write bit)."""
    mode = stat.S_IMODE(lst.st_mode)
    if lst.st_mode & stat.S_IWOTH:
        return 'is writable by every user (mode %04o)' % mode
    if lst.st_mode & stat.S_IWGRP and not own_group_of(lst.st_gid):
        return 'is writable by its group, gid %d, which holds other users (mode %04o)' % (lst.st_gid, mode)
    return ''


def foreign_tree_problem(root, members, uid, lstat, owner_name=None, own_group_of=None):
    """Why user ``uid`` must not build in, or run a tool from, the tree at ``root`` ('' and None if it may), the way git
    refuses a repository another user owns (safe.directory): whoever can change what the command reads there runs
    code with this user's rights (as root: root's).

    ``root`` is the tree's real path (os.path.realpath: the symlinks of the path given are resolved once, and the
    command runs in the real path); ``members`` are paths relative to it that the command reads (a missing one is
    skipped). The tree's root, every directory from it to a member and the member itself must be real (no symlink),
    owned by ``uid`` and writable by no other user (group write only for the user's own group, ``own_group_of``);
    every directory above the root must be owned by ``uid`` or root and not writable by every user unless sticky, or
    another user could put a tree of theirs in its place. ``lstat`` is os.lstat (or a stand-in), ``owner_name`` uid ->
    name. Returns (the problem, naming the path and its owner; the uid of the user who could change it, or None)."""
    name = owner_name or str
    own_group_of = own_group_of or (lambda gid: False)
    parents = _components(os.path.dirname(root)) if root != '/' else []
    for current in ['/'] + parents:
        try:
            lst = lstat(current)
        except OSError as exc:
            return '%s cannot be looked at (%s)' % (current, getattr(exc, 'strerror', None) or exc), None
        if stat.S_ISLNK(lst.st_mode):
            return '%s is a symbolic link (it changed while the path was resolved)' % current, None
        if lst.st_uid not in (0, uid):
            return ('%s is inside %s, a directory of user %s (uid %d), who can put another tree in its place'
                    % (root, current, name(lst.st_uid), lst.st_uid), lst.st_uid)
        if lst.st_mode & stat.S_IWOTH and not lst.st_mode & stat.S_ISVTX:
            return ('%s is inside %s, which every user can write (mode %04o, not sticky), so anyone can put another '
                    'tree in its place' % (root, current, stat.S_IMODE(lst.st_mode)), None)
    paths = [root]
    for member in members:
        parts = [part for part in member.split('/') if part and part != '.']
        paths.extend(root.rstrip('/') + '/' + '/'.join(parts[:index + 1]) for index in range(len(parts)))
    seen = set()
    for current in paths:
        if current in seen:
            continue
        seen.add(current)
        try:
            lst = lstat(current)
        except OSError as exc:
            if getattr(exc, 'errno', None) in (errno.ENOENT, errno.ENOTDIR):
                continue
            return '%s cannot be looked at (%s)' % (current, getattr(exc, 'strerror', None) or exc), None
        if stat.S_ISLNK(lst.st_mode):
            return ('%s is a symbolic link (made by %s): a link inside the tree can point into anybody\'s files'
                    % (current, name(lst.st_uid)), lst.st_uid if lst.st_uid != uid else None)
        if lst.st_uid != uid:
            return '%s is owned by %s (uid %d), not by you' % (current, name(lst.st_uid), lst.st_uid), lst.st_uid
        writable = writable_by_others(lst, own_group_of)
        if writable:
            return '%s %s' % (current, writable), None
    return '', None


def base_entries_problem(entries, has):
    """Why an existing, non-empty PRIMUS_BASE is not recognisably a base of this collection ('' if it is).

    entries: the names in it; has(relative path) -> whether that entry exists (for BASE_SIGNATURE)."""
    if not entries:
        return ''
    if any(has(mark) for mark in BASE_SIGNATURE):
        return ''
    foreign = sorted(e for e in entries if e not in BASE_ENTRIES and not e.startswith('.primus.lock'))
    if not foreign:
        return ''
    shown = ', '.join(visible(e) for e in foreign[:5]) + (', ...' if len(foreign) > 5 else '')
    return ('is not empty and is not a base of primus.trainenv (it has no state/ directory and holds %s, which a run '
            'of this collection never writes)' % shown)


def read_regular(path, limit):
    """The first ``limit`` bytes of a regular file, never blocking: a FIFO, device or directory at the path is not
    opened (a FIFO's open blocks until a writer comes), and the open is non-blocking besides (a file swapped for a
    FIFO in between). Raises OSError (ENOENT when there is nothing, EINVAL for what is not a regular file)."""
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise OSError(errno.EINVAL, 'not a regular file', path)
    fd = os.open(path, os.O_RDONLY | getattr(os, 'O_NONBLOCK', 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, 'not a regular file', path)
        return os.read(fd, limit)
    finally:
        os.close(fd)
