# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Test-only connection: a "host" that is a directory tree (the world's Debian trixie root).

The functional tests enable it with ANSIBLE_CONNECTION_PLUGINS=tests/functional/connection_plugins
and ansible_connection=primus_chroot; it is not part of the collection.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
name: primus_chroot
short_description: Run tasks inside a chroot directory as an unprivileged user (test only)
description:
  - Runs every command of a task inside O(root) with C(chroot --userspec), as O(user), with a clean environment (C(PATH),
    C(HOME), C(USER), C(LOGNAME), C(SHELL), C(LANG)); the user, its ids and its home come from the root's own
    C(/etc/passwd), as a login on that system would see them.
  - With O(mount_proc) (the default), each command runs in a private mount namespace of its own (C(unshare --mount))
    with C(/proc) mounted inside the root, as on a booted system; the mount ends with the command and nothing is left
    mounted.
  - Files are copied into and out of the root by C(dd) running inside it as O(user), so what is put is owned by that
    user and a symbolic link inside the root never leads outside it.
  - The controller must run as root (chroot and unshare need it). Privilege escalation (C(become)) is refused.
author:
  - primus.trainenv developers (@primus-trainenv)
version_added: 0.1.0
options:
  root:
    description: Absolute path of the root directory on the controller (a built Debian trixie root).
    type: path
    required: true
    vars:
      - name: primus_chroot_root
  user:
    description: The user that runs the commands; it must have an entry in the root's C(/etc/passwd) and a home there.
    type: str
    required: true
    vars:
      - name: primus_chroot_user
  mount_proc:
    description: Mount C(/proc) inside the root for each command (in a private mount namespace).
    type: bool
    default: true
    vars:
      - name: primus_chroot_mount_proc
extends_documentation_fragment:
  - connection_pipelining
notes:
  - The remote user is ignored; O(user) is used instead.
'''

import os
import subprocess

import ansible.constants as C
from ansible.errors import AnsibleConnectionFailure, AnsibleError, AnsibleFileNotFound
from ansible.module_utils.common.text.converters import to_bytes, to_native, to_text
from ansible.plugins.connection import ConnectionBase
from ansible.utils.display import Display

display = Display()

PATH = '/usr/local/bin:/usr/bin:/bin'
BLOCK = 65536


def read_passwd(path, user):
    """The entry of user in a passwd file: dict(uid, gid, home, shell); None if it has none.

    Raises ValueError naming the line when the user's entry is malformed.
    """
    with open(path) as handle:
        for number, line in enumerate(handle, 1):
            line = line.rstrip('\n')
            if not line or line.startswith('#') or line.split(':', 1)[0] != user:
                continue
            fields = line.split(':')
            if len(fields) != 7 or not fields[2].isdigit() or not fields[3].isdigit():
                raise ValueError('%s line %d is not name:password:uid:gid:gecos:home:shell: %r' % (path, number, line))
            return {'uid': int(fields[2]), 'gid': int(fields[3]), 'home': fields[5] or '/', 'shell': fields[6] or '/bin/sh'}
    return None


class Connection(ConnectionBase):
    """Commands and files inside a chroot, as one unprivileged user of it."""

    transport = 'primus_chroot'
    has_pipelining = True
    has_tty = False

    def __init__(self, *args, **kwargs):
        super(Connection, self).__init__(*args, **kwargs)
        self._root = None
        self._entry = None

    def _connect(self):
        if self._connected:
            return self
        root = self.get_option('root')
        user = self.get_option('user')
        if os.geteuid() != 0:
            raise AnsibleConnectionFailure(
                'primus_chroot: the controller runs as uid %d, but chroot and unshare need root. '
                'Fix: run ansible-playbook as root (the commands inside still run as %s).' % (os.geteuid(), user))
        if not root or not os.path.isabs(root) or not os.path.isdir(root):
            raise AnsibleConnectionFailure(
                'primus_chroot: root %r is not an absolute path of a directory. '
                'Fix: set primus_chroot_root to a built root (python3 tests/world/trixie.py build).' % (root,))
        for needed in ('bin/sh', 'usr/bin/env', 'bin/dd', 'etc/passwd'):
            if not os.path.exists(os.path.join(root, needed)):
                raise AnsibleConnectionFailure(
                    'primus_chroot: %s has no /%s, so it is not a usable root. '
                    'Fix: rebuild it (python3 tests/world/trixie.py build).' % (root, needed))
        passwd = os.path.join(root, 'etc', 'passwd')
        try:
            entry = read_passwd(passwd, user)
        except ValueError as exc:
            raise AnsibleConnectionFailure('primus_chroot: %s. Fix that line.' % exc)
        if entry is None:
            raise AnsibleConnectionFailure(
                'primus_chroot: user %r has no entry in %s, so it does not exist inside the root. '
                'Fix: add a line %s:x:UID:GID::/home/%s:/bin/sh and create that home (owned by UID:GID) '
                'inside the root.' % (user, passwd, user, user))
        if entry['uid'] == 0:
            raise AnsibleConnectionFailure(
                'primus_chroot: user %r is root (uid 0) in %s; the connection is for unprivileged users. '
                'Fix: set primus_chroot_user to an ordinary user.' % (user, passwd))
        home = os.path.join(root, entry['home'].lstrip('/'))
        if not os.path.isdir(home) or os.stat(home).st_uid != entry['uid']:
            raise AnsibleConnectionFailure(
                'primus_chroot: the home %s of %r (from %s) is not a directory owned by uid %d inside the root, '
                'and Ansible keeps its temporary files there. Fix: create %s owned by %d:%d.'
                % (entry['home'], user, passwd, entry['uid'], home, entry['uid'], entry['gid']))
        self._root = root
        self._entry = dict(entry, name=user)
        self._play_context.remote_user = user
        display.vvv(u'ESTABLISH PRIMUS_CHROOT CONNECTION TO %s AS %s (uid %d)' % (root, user, entry['uid']),
                    host=self._play_context.remote_addr)
        self._connected = True
        return self

    def _argv(self, argv):
        """The controller's argv that runs argv inside the root as the user, in a clean environment."""
        entry = self._entry
        prefix = []
        if self.get_option('mount_proc'):
            prefix = ['unshare', '--mount', '--propagation', 'private', '--mount-proc=%s' % os.path.join(self._root, 'proc')]
        environment = {'PATH': PATH, 'HOME': entry['home'], 'USER': entry['name'], 'LOGNAME': entry['name'],
                       'SHELL': entry['shell'], 'LANG': 'C.UTF-8'}
        return prefix + [
            'chroot', '--userspec=%d:%d' % (entry['uid'], entry['gid']), '--groups=%d' % entry['gid'], self._root,
            '/usr/bin/env', '-i'] + ['%s=%s' % item for item in sorted(environment.items())] + list(argv)

    def _run(self, argv, in_data=None, stdin=None, stdout=subprocess.PIPE):
        proc = subprocess.Popen(self._argv(argv), cwd='/', stdin=stdin if stdin is not None else subprocess.PIPE,
                                stdout=stdout, stderr=subprocess.PIPE)
        out, err = proc.communicate(in_data if stdin is None else None)
        return proc.returncode, out, err

    def exec_command(self, cmd, in_data=None, sudoable=True):
        super(Connection, self).exec_command(cmd, in_data=in_data, sudoable=sudoable)
        if sudoable and self.become:
            raise AnsibleError('primus_chroot does not support become: the tasks run as %s. Fix: remove become from '
                               'the play or task.' % self._entry['name'])
        executable = C.DEFAULT_EXECUTABLE.split()[0] if C.DEFAULT_EXECUTABLE else '/bin/sh'
        display.vvv(u'EXEC %s' % to_text(cmd), host=self._play_context.remote_addr)
        return self._run([executable, '-c', to_text(cmd)], in_data=in_data)

    def put_file(self, in_path, out_path):
        super(Connection, self).put_file(in_path, out_path)
        display.vvv(u'PUT %s TO %s' % (in_path, out_path), host=self._play_context.remote_addr)
        if not os.path.isfile(to_bytes(in_path, errors='surrogate_or_strict')):
            raise AnsibleFileNotFound('primus_chroot: file to put does not exist: %s' % to_native(in_path))
        with open(to_bytes(in_path, errors='surrogate_or_strict'), 'rb') as source:
            rc, dummy, err = self._run(['/bin/dd', 'of=%s' % out_path, 'bs=%d' % BLOCK, 'status=none'], stdin=source)
        if rc != 0:
            raise AnsibleError('primus_chroot: could not write %s inside %s as %s (dd exit %d): %s'
                               % (out_path, self._root, self._entry['name'], rc, to_native(err).strip()))

    def fetch_file(self, in_path, out_path):
        super(Connection, self).fetch_file(in_path, out_path)
        display.vvv(u'FETCH %s TO %s' % (in_path, out_path), host=self._play_context.remote_addr)
        partial = out_path + '.primus-chroot-partial'
        try:
            with open(to_bytes(partial, errors='surrogate_or_strict'), 'wb') as dest:
                rc, dummy, err = self._run(['/bin/dd', 'if=%s' % in_path, 'bs=%d' % BLOCK, 'status=none'],
                                           stdin=subprocess.DEVNULL, stdout=dest)
            if rc != 0:
                raise AnsibleError('primus_chroot: could not read %s inside %s as %s (dd exit %d): %s'
                                   % (in_path, self._root, self._entry['name'], rc, to_native(err).strip()))
            os.replace(partial, out_path)
        finally:
            if os.path.exists(partial):
                os.unlink(partial)

    def reset(self):
        self.close()

    def close(self):
        self._connected = False
