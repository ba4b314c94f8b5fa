#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
module: git_checkout
short_description: Clone or update a checkout at a commit with its submodules, git's output streamed into a log
version_added: 0.1.0
description:
  - Brings the checkout at O(dest) to O(commit) (a detached HEAD), with that commit's submodules when O(submodules) is
    true, running git itself and writing every command line and git's output into O(log_path) as git prints it
    (progress lines included), so C(tail -f) shows a long clone while it runs and the output stays after success and
    failure alike.
  - A missing O(dest) is cloned (C(git clone --no-checkout), then C(git checkout --force) of the commit). An existing
    checkout gets its C(origin) set to O(repo), the commit fetched when it does not have it, and a forced checkout of
    the commit when HEAD is elsewhere or a tracked file of the checkout was edited (edits to tracked files are reset,
    untracked files stay, such as a build's products, aiter's JIT builds, Megatron's helpers_cpp). Submodules are synced and
    updated (C(git submodule update --init --recursive --force)) when HEAD moved or one is not at the commit's
    version.
  - A checkout already at the commit, unedited, with its submodules in place runs nothing but local reads
    (C(changed=false)); it asks no remote anything.
  - An existing O(dest) is used only when it is the user's own, as git's C(safe.directory) demands. Its real path and
    its C(.git) must be no symlink, owned by the user running the task and writable by no other user, and every
    directory above it owned by the user or root (a kept tree another user can change would run that user's code in
    the build, with this user's rights). Otherwise the task fails with RV(failure) C(ownership) before any git
    command runs.
  - Credentials in O(repo) (C(https://user:token@host)) are redacted in the log and in everything returned.
  - A failed git command fails the task keeping git's own error lines (RV(cause)), with its class (RV(failure) - the
    repository is none, wants credentials, lacks the commit, the network) and the fix of that class (RV(fix)); only a
    failure of the network is worth trying again (RV(transient)).
author:
  - primus.trainenv developers (@primus-trainenv)
attributes:
  check_mode:
    description: Reports what would run (RV(actions)); runs no git command that changes anything, writes no log.
    support: full
  diff_mode:
    description: Not supported.
    support: none
options:
  repo:
    description: The repository URL (the C(origin) remote).
    type: str
    required: true
  dest:
    description: The checkout directory; created by the clone when it does not exist.
    type: path
    required: true
  commit:
    description: The commit to check out, a full hexadecimal object name.
    type: str
    required: true
  submodules:
    description: Whether the commit's submodules are initialised and updated, recursively.
    type: bool
    default: false
  log_path:
    description:
      - The log git's output is appended to, line by line (C($PRIMUS_BASE/logs/<stage>.log)); rotated at a run's first
        write as pip_constrained's logs are. Without it nothing is logged.
    type: path
  log_keep:
    description: Files of O(log_path) kept by its rotation (itself included).
    type: int
    default: 5
  umask:
    description: The umask git runs with, an octal string.
    type: str
    default: '0022'
"""

EXAMPLES = r"""
- name: Clone Primus at its pinned commit, git's output in the stage's log
  primus.trainenv.git_checkout:
    repo: https://github.com/AMD-AGI/Primus.git
    dest: "{{ primus_workspace_dir }}/Primus"
    commit: 0123456789abcdef0123456789abcdef01234567
    submodules: true
    log_path: "{{ primus_base }}/logs/primus.log"
"""

RETURN = r"""
before:
  description: The commit HEAD was at before (empty when O(dest) was not a checkout).
  returned: always
  type: str
after:
  description: The commit HEAD is at now (O(commit); in check mode the commit it would be at).
  returned: always
  type: str
actions:
  description: What ran (or would run, in check mode), in order - C(clone), C(set-url), C(fetch), C(checkout), C(submodules).
  returned: always
  type: list
  elements: str
  sample: [clone, checkout, submodules]
log_path:
  description: The log git's output went to (empty without O(log_path)).
  returned: always
  type: str
failure:
  description:
    - The class of a failed git command - C(not_a_repository), C(authentication), C(unknown_commit), C(network),
      C(ownership) (a checkout of another user) or C(other).
  returned: failure
  type: str
  sample: not_a_repository
cause:
  description: git's own error lines of the failure (progress and advice left out, credentials redacted), on one line.
  returned: failure
  type: str
  sample: "fatal: '/etc' does not appear to be a git repository; fatal: Could not read from remote repository"
fix:
  description: What to do about a failure of this class.
  returned: failure
  type: str
transient:
  description: Whether the failure may go away when the command is tried again (the network's).
  returned: failure
  type: bool
"""

import os
import pwd
import re
import shlex
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native
from ansible_collections.primus.trainenv.plugins.module_utils import git_failure, run_log
from ansible_collections.primus.trainenv.plugins.module_utils._pip.command import stream
from ansible_collections.primus.trainenv.plugins.module_utils.common import Redactor
from ansible_collections.primus.trainenv.plugins.module_utils.safe_paths import foreign_tree_problem, own_group

COMMIT = re.compile(r'^[0-9a-f]{40}([0-9a-f]{24})?$')


def user_name(uid):
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return 'uid %d' % uid


class Checkout(object):

    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.dest = module.params['dest']
        self.redact = Redactor()
        self.redact.add_from([module.params['repo']])
        module.no_log_values.update(self.redact.secrets)
        self.actions = []
        self.env = dict(os.environ, GIT_TERMINAL_PROMPT='0', LC_ALL='C')

    def read(self, *args):
        """A git command that only reads the checkout: (rc, stdout without its last newline)."""
        rc, out, _err = self.module.run_command(['git', '-C', self.dest] + list(args), environ_update={'LC_ALL': 'C'},
                                                check_rc=False, expand_user_and_vars=False)
        return rc, out.rstrip('\n')

    def open_log(self):
        return run_log.open_for_module(self.module, self.params['log_path'], self.params['log_keep'])

    def run(self, action, args, record=True):
        """Run git, its output into the log as it comes (carriage-return progress lines as lines of their own)."""
        if record:
            self.actions.append(action)
        argv = ['git'] + args
        handle = self.open_log()

        def to_log(text):
            handle.write(self.redact.text(text.replace('\r\n', '\n').replace('\r', '\n')))
            handle.flush()
        if handle is not None:
            handle.write(self.redact.text('### %s git_checkout: %s\n' % (
                time.strftime('%Y-%m-%dT%H:%M:%S'), ' '.join(shlex.quote(a) for a in argv))))
            handle.flush()
        try:
            rc, _out, err = stream(argv, self.env, None, to_log if handle is not None else None)
        except (IOError, OSError) as exc:
            rc, err = 127, 'cannot run git: %s\n' % to_native(exc)
        finally:
            if handle is not None:
                handle.write('### rc=%s\n' % rc)
                handle.close()
        if rc != 0:
            err = self.redact.text(err)
            kind = git_failure.classify(err)
            cause = git_failure.cause(err) or 'no error output'
            fix = self.redact.text(git_failure.fix(kind, self.params['repo'], self.params['commit'], self.dest))
            self.fail('git %s failed (rc=%d): %s. Fix: %s%s' % (
                action, rc, cause, fix, '. Its output: %s' % self.params['log_path'] if self.params['log_path'] else ''),
                rc=rc, stderr=err, failure=kind, cause=cause, fix=fix, transient=kind in git_failure.TRANSIENT)

    def fail(self, msg, **extra):
        self.module.fail_json(msg=self.redact.text(msg), actions=self.actions, log_path=self.params['log_path'] or '',
                              **extra)

    def head(self):
        rc, out = self.read('rev-parse', '--verify', '-q', 'HEAD^{commit}')
        return out if rc == 0 else ''

    def has_commit(self, commit):
        return self.read('cat-file', '-e', commit + '^{commit}')[0] == 0

    def edited(self):
        """True when a tracked file of the checkout differs from HEAD (its submodules' own content is theirs)."""
        rc, out = self.read('status', '--porcelain', '--untracked-files=no', '--ignore-submodules=all')
        return rc != 0 or bool(out.strip())

    def submodules_behind(self):
        """True when a submodule of the checked-out commit is not initialised or not at the recorded commit."""
        if not os.path.exists(os.path.join(self.dest, '.gitmodules')):
            return False
        rc, out = self.read('submodule', 'status', '--recursive')
        return rc != 0 or any(line[:1] != ' ' for line in out.splitlines() if line)

    def check_owner(self):
        """An existing dest must be this user's alone before git (or a build after it) runs there."""
        if not os.path.lexists(self.dest):
            return
        uid = os.geteuid()
        problem, owner = foreign_tree_problem(os.path.realpath(self.dest), ['.git'], uid, os.lstat, user_name,
                                              own_group(uid))
        if problem:
            fix = ('remove it as %s (or ask an admin to), then run again: it is cloned afresh' % user_name(owner)
                   if owner is not None else 'make it writable by you alone (chmod -R go-w %s), then run again'
                   % os.path.realpath(self.dest))
            self.fail('the checkout %s cannot be used by user %s: %s. git and the build would run code of whoever can '
                      'change it with your rights, so nothing is run there. Fix: %s' % (
                          self.dest, user_name(uid), problem, fix),
                      failure='ownership', cause=problem, fix=fix, transient=False)

    def converge(self):
        repo, commit, check = self.params['repo'], self.params['commit'], self.module.check_mode
        self.check_owner()
        is_checkout = os.path.exists(os.path.join(self.dest, '.git'))
        before = self.head() if is_checkout else ''
        if not is_checkout:
            if check:
                self.actions += ['clone', 'checkout'] + (['submodules'] if self.params['submodules'] else [])
                return before
            self.run('clone', ['clone', '--progress', '--no-checkout', '--origin', 'origin', '--', repo, self.dest])
        else:
            rc, url = self.read('config', '--get', 'remote.origin.url')
            if rc != 0 or url != repo:
                if check:
                    self.actions.append('set-url')
                else:
                    self.run('set-url', ['-C', self.dest, 'remote'] + (['set-url'] if rc == 0 else ['add'])
                             + ['origin', repo])
            if not self.has_commit(commit):
                if check:
                    self.actions.append('fetch')
                else:
                    self.run('fetch', ['-C', self.dest, 'fetch', '--progress', '--tags', 'origin'])
        if not check and not self.has_commit(commit):
            # Not on a branch or tag head's history: ask for the commit itself (servers that allow it).
            self.run('fetch', ['-C', self.dest, 'fetch', '--progress', 'origin', commit])
        moved = before != commit
        if moved or (is_checkout and self.edited()):
            if check:
                self.actions.append('checkout')
            else:
                self.run('checkout', ['-C', self.dest, '-c', 'advice.detachedHead=false', 'checkout', '--force',
                                      '--detach', commit])
        # In check mode HEAD has not moved: the submodules of the commit cannot be known, so a move counts as a change.
        if self.params['submodules'] and (moved or self.submodules_behind()):
            if check:
                self.actions.append('submodules')
            elif os.path.exists(os.path.join(self.dest, '.gitmodules')):
                self.run('submodules', ['-C', self.dest, 'submodule', 'sync', '--recursive'], record=False)
                self.run('submodules', ['-C', self.dest, 'submodule', 'update', '--init', '--recursive', '--force',
                                        '--progress'])
        return before


def main():
    module = AnsibleModule(
        argument_spec=dict(
            repo=dict(type='str', required=True),
            dest=dict(type='path', required=True),
            commit=dict(type='str', required=True),
            submodules=dict(type='bool', default=False),
            log_path=dict(type='path'),
            log_keep=dict(type='int', default=run_log.DEFAULT_KEEP),
            umask=dict(type='str', default='0022'),
        ),
        supports_check_mode=True,
    )
    checkout = Checkout(module)
    commit = module.params['commit']
    if not COMMIT.match(commit):
        checkout.fail('commit %r is not a full hexadecimal commit name (40 characters, lower case). Fix: give the '
                      'commit the pins or the plan resolved' % commit[:80])
    if not re.match(r'^0?[0-7]{3}$', module.params['umask']):
        checkout.fail("umask %r is not an octal umask such as '0022'" % module.params['umask'][:20])
    if module.params['log_keep'] < 1:
        checkout.fail('log_keep must be at least 1, got %d' % module.params['log_keep'])
    os.umask(int(module.params['umask'], 8))
    before = checkout.converge()
    module.exit_json(changed=bool(checkout.actions), before=before, after=commit, actions=checkout.actions,
                     log_path=module.params['log_path'] or '')


if __name__ == '__main__':
    main()
