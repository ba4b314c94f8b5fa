#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: megatron_helpers
short_description: Build Megatron's helpers_cpp extension in Primus checkouts, under the venv python's own name
version_added: 0.1.0
description:
  - Megatron's dataset indexing needs the pybind11 extension C(helpers_cpp); without it training fails with
    C(MockGPTDataset failed to build as a mock data generator). Its Makefile names the output after
    C(python3-config --extension-suffix), which a venv does not have, so a plain C(make) writes a name the venv
    never imports.
  - For each checkout, in order and without repeats, builds in C(<checkout>/third_party/Megatron-LM/megatron/core/datasets)
    with C(make -C <dir> LIBEXT=<EXT_SUFFIX> CPPFLAGS=<python -m pybind11 --includes>), where both come from O(python),
    and with the directory of O(python) first on C(PATH) so that C(python3) and pybind11 resolve in the venv.
  - A checkout that does not exist, or has no Megatron datasets Makefile (submodules not checked out), is skipped
    and reported as C(skipped_missing).
  - An existing C(helpers_cpp<EXT_SUFFIX>) that is not older than C(helpers.cpp) and loads is left alone
    (C(current), no make). Otherwise it is removed before C(make) (a stale build, for example a root-owned one from
    another OS that needs a newer GLIBCXX, would otherwise be picked up).
  - Before anything runs in a checkout, it is checked the way git refuses a repository of another user
    (C(safe.directory)). Its real path (symlinks of the path given resolved once, and make runs there), every directory
    from it to the datasets directory, and what make reads there (C(GNUmakefile), C(makefile), C(Makefile),
    C(helpers.cpp)) must be the user's own - no symlink, owned by the user running the task, writable by no other user
    (group write only for the user's own group) - and every directory above it owned by the user or root and not
    writable by every user unless sticky. A checkout another user can change fails the task naming the path, its owner
    and the fix, and nothing is built or loaded anywhere, since its Makefile would run with this user's rights (as
    root, root's).
  - An existing C(helpers_cpp<EXT_SUFFIX>) that is a symlink, another user's or writable by another user is never
    loaded (loading runs its code), it is replaced.
  - Before anything is built, every checkout that needs a build is checked; one whose file cannot be removed or
    whose directory cannot be written fails the task naming the file, its owner and the fix, and nothing is built.
  - After the build the file is loaded with O(python) through C(importlib.util.spec_from_file_location) and
    C(exec_module); a failure reports C(helpers_cpp built but will not load in <dir>) with the error line.
  - Two runs of one user can build in the same checkout at once (C(~/.cache/Primus) is in every base's default list),
    and C(make) writes the extension in place. The module holds an exclusive C(flock) on each datasets directory
    from its first look to its load test; a run that finds one held waits for it (up to 600 seconds, then fails
    naming the directory). Not in check mode.
author:
  - primus.trainenv developers (@primus-trainenv)
attributes:
  check_mode:
    description: Reports which checkouts would be built (status C(would_build)); builds and removes nothing.
    support: full
  diff_mode:
    description: Not supported; the result lists each checkout's status.
    support: none
options:
  checkouts:
    description:
      - Primus checkout directories (the workspace clone, C(~/.cache/Primus), the checkout training is launched from).
      - Two spellings of one directory are built once.
    type: list
    elements: path
    required: true
  python:
    description: The venv's python (C($PRIMUS_BASE/venv/bin/python)); it names, builds and loads the extension.
    type: path
    required: true
  log_path:
    description: A file that each make's command and output are appended to (created with mode 0644).
    type: path
'''

EXAMPLES = r'''
- name: Build Megatron helpers_cpp in every Primus checkout
  primus.trainenv.megatron_helpers:
    python: "{{ primus_base }}/venv/bin/python"
    checkouts:
      - "{{ primus_base }}/workspace/Primus"
      - "{{ ansible_facts['env']['HOME'] }}/.cache/Primus"
    log_path: "{{ primus_base }}/logs/primus.log"
'''

RETURN = r'''
ext:
  description: The extension suffix of O(python) (its C(EXT_SUFFIX)); empty when O(python) does not exist yet in check mode.
  returned: always
  type: str
  sample: .cpython-312-x86_64-linux-gnu.so
checkouts:
  description: One entry per checkout, in order, without repeats.
  returned: always
  type: list
  elements: dict
  contains:
    checkout:
      description: The checkout as given.
      type: str
      sample: /home/trainer/envs/primus-env/workspace/Primus
    path:
      description: Its Megatron datasets directory.
      type: str
      sample: /home/trainer/envs/primus-env/workspace/Primus/third_party/Megatron-LM/megatron/core/datasets
    status:
      description:
        - C(built), C(current) (already there, not older than C(helpers.cpp), loads), C(skipped_missing) (no checkout
          or no Makefile), C(would_build) (check mode).
      type: str
      sample: built
    file:
      description: The extension file (empty when skipped or when the suffix is not known yet).
      type: str
      sample: /home/trainer/envs/primus-env/workspace/Primus/third_party/Megatron-LM/megatron/core/datasets/helpers_cpp.cpython-312-x86_64-linux-gnu.so
    reason:
      description: Why the checkout was skipped or (re)built.
      type: str
      sample: helpers_cpp.cpython-312-x86_64-linux-gnu.so is older than helpers.cpp
'''

import os
import pwd
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.primus.trainenv.plugins.module_utils import megatron_helpers as mh
from ansible_collections.primus.trainenv.plugins.module_utils.modes import hold_point, make_dirs, restrict_umask
from ansible_collections.primus.trainenv.plugins.module_utils.safe_paths import foreign_tree_problem, own_group

# Seconds a run waits for another run of this user that builds in the same checkout (a build takes seconds).
LOCK_TIMEOUT = 600


def user_name(uid):
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return 'uid %d' % uid


class Builder(object):
    def __init__(self, module):
        self.module = module
        self.python = module.params['python']
        self.log_path = module.params['log_path']
        self.path_env = os.path.dirname(self.python) + os.pathsep + os.environ.get('PATH', '/usr/bin:/bin')
        self.uid = os.geteuid()
        self.own_group = own_group(self.uid)
        self.real = {}   # checkout -> the real path of its datasets directory, where make runs

    def log(self, text):
        if not self.log_path:
            return
        try:
            make_dirs(os.path.dirname(self.log_path), 0o755)
            with open(self.log_path, 'a') as handle:
                handle.write('[%s] %s\n' % (time.strftime('%Y-%m-%dT%H:%M:%S'), text.rstrip('\n')))
        except (IOError, OSError) as exc:
            self.module.fail_json(msg='cannot write the log %s: %s' % (self.log_path, exc))

    def run(self, argv):
        return self.module.run_command(argv, environ_update={'PATH': self.path_env})

    def ext(self):
        argv = [self.python, '-c', mh.EXT_PROBE]
        rc, out, err = self.run(argv)
        if rc != 0:
            self.module.fail_json(msg='%s cannot tell its extension suffix (rc=%s): %s'
                                  % (self.python, rc, mh.last_error_line(err or out)), cmd=argv, rc=rc)
        try:
            return out.strip(), mh.extension_name(out)
        except ValueError as exc:
            self.module.fail_json(msg='%s (%s). helpers_cpp would get a name this python never imports.'
                                  % (exc, self.python), cmd=argv)

    def load_error(self, path):
        """None when the file loads in the venv python, else the error line."""
        rc, out, err = self.run([self.python, '-c', mh.LOAD_PROBE, path])
        return None if rc == 0 else mh.last_error_line(err or out)

    def plan(self, checkout, name):
        directory = mh.datasets_dir(checkout)
        entry = dict(checkout=checkout, path=directory, status='skipped_missing', file='', reason='')
        if not os.path.isdir(checkout):
            entry['reason'] = 'the checkout does not exist'
            return entry, None
        if not os.path.isfile(os.path.join(directory, mh.MAKEFILE)):
            entry['reason'] = ('%s has no Megatron datasets Makefile: its submodules are not checked out '
                               '(git -C %s submodule update --init --recursive)' % (checkout, checkout))
            return entry, None
        real = os.path.realpath(checkout)
        problem, owner = foreign_tree_problem(real, mh.TRUSTED, self.uid, os.lstat, user_name, self.own_group)
        if problem:
            return entry, mh.refusal(checkout, real, problem, user_name(owner) if owner is not None else None,
                                     user_name(self.uid))
        directory = self.real[checkout] = mh.datasets_dir(real)
        path = os.path.join(directory, name) if name else ''
        entry.update(file=os.path.join(entry['path'], name) if name else '', status='would_build',
                     reason='%s does not exist' % (name or 'helpers_cpp'))
        if not name:
            return entry, None
        try:
            file_stat = os.lstat(path)
        except OSError:
            file_stat = None
        foreign = mh.foreign_file(file_stat, self.uid, user_name, self.own_group) if file_stat is not None else ''
        if foreign:
            entry['reason'] = '%s %s: it is not loaded (that runs its code) but replaced' % (name, foreign)
        elif file_stat is not None:
            try:
                source_mtime = os.stat(os.path.join(directory, mh.SOURCE)).st_mtime
            except OSError:
                source_mtime = None
            if not mh.is_newer(file_stat.st_mtime, source_mtime):
                entry['reason'] = '%s is older than %s' % (name, mh.SOURCE)
            else:
                error = self.load_error(path)
                if error is None:
                    entry.update(status='current', reason='%s is there, not older than %s, and loads'
                                 % (name, mh.SOURCE))
                    return entry, None
                entry['reason'] = '%s does not load: %s' % (name, error)
        dir_stat = os.stat(directory)
        kind = mh.removal_problem(directory, dir_stat, os.access(directory, os.W_OK | os.X_OK), file_stat,
                                  self.uid)
        if kind is None:
            return entry, None
        return entry, mh.blocked_message(kind, checkout, directory, path, user_name(self.uid),
                                         user_name(dir_stat.st_uid),
                                         user_name(file_stat.st_uid) if file_stat is not None else None)

    def includes(self):
        argv = [self.python, '-m', 'pybind11', '--includes']
        rc, out, err = self.run(argv)
        if rc != 0 or not out.strip():
            self.module.fail_json(msg='pybind11 is not usable by %s (%s): helpers.cpp needs its headers. Install '
                                  'pybind11 into this venv (Primus requirements.txt brings it: run the primus stage).'
                                  % (self.python, mh.last_error_line(err or out)), cmd=argv, rc=rc)
        return out.strip()

    def build(self, entry, ext, cppflags, make):
        directory = self.real[entry['checkout']]
        path = os.path.join(directory, os.path.basename(entry['file']))
        self.log('Compiling Megatron helpers_cpp in %s (%s)' % (directory, entry['reason']))
        if os.path.lexists(path):
            try:
                os.unlink(path)
            except OSError as exc:
                self.module.fail_json(msg='cannot remove the stale %s: %s' % (path, exc), checkouts=[entry])
        argv = [make, '-C', directory, 'LIBEXT=' + ext, 'CPPFLAGS=' + cppflags]
        rc, out, err = self.run(argv)
        self.log('$ %s\n%s%s[rc=%s]' % (' '.join(argv), out, err, rc))
        if rc != 0:
            self.module.fail_json(msg='helpers_cpp build failed in %s: %s%s' % (
                directory, mh.build_error_line(err + out),
                ' (full output in %s)' % self.log_path if self.log_path else ''),
                cmd=argv, rc=rc, stdout_lines=out.splitlines()[-40:], stderr_lines=err.splitlines()[-40:])
        if not os.path.isfile(path):
            self.module.fail_json(msg='make succeeded in %s but wrote no %s: the Makefile did not use LIBEXT=%s'
                                  % (directory, os.path.basename(path), ext), cmd=argv)
        hold_point('helpers_cpp-built:' + os.path.basename(path))   # built, not yet load-tested (a test's kill point)
        error = self.load_error(path)
        if error is not None:
            self.log('load test failed: %s' % error)
            self.module.fail_json(msg='helpers_cpp built but will not load in %s: %s' % (directory, error),
                                  file=path)
        entry['status'] = 'built'


def main():
    module = AnsibleModule(
        argument_spec=dict(
            checkouts=dict(type='list', elements='path', required=True),
            python=dict(type='path', required=True),
            log_path=dict(type='path'),
        ),
        supports_check_mode=True,
    )
    restrict_umask()
    builder = Builder(module)
    python = module.params['python']
    for value in [python] + module.params['checkouts']:
        if not os.path.isabs(value):
            module.fail_json(msg='%r is not an absolute path' % value)
    checkouts = mh.unique_checkouts(module.params['checkouts'])

    ext, name = '', None
    if os.path.exists(python):
        ext, name = builder.ext()
    elif not module.check_mode:
        module.fail_json(msg='python %s does not exist: helpers_cpp is built with the venv python; create the venv '
                             'first (tag venv)' % python)

    if not module.check_mode:
        # Held until the module exits: another run of this user building in the same checkouts waits here.
        locks = mh.lock_directories([mh.datasets_dir(c) for c in checkouts], LOCK_TIMEOUT, on_wait=lambda d: builder.log(
            'waiting for another run that builds helpers_cpp in %s (up to %d s)' % (d, LOCK_TIMEOUT)))
        if locks[1]:
            module.fail_json(msg='another run has held %s for more than %d s (an exclusive flock: it builds '
                                 'helpers_cpp there); let it finish, then run again' % (locks[1], LOCK_TIMEOUT))
    entries, problems = [], []
    for checkout in checkouts:
        entry, problem = builder.plan(checkout, name)
        entries.append(entry)
        if problem:
            problems.append(problem)
    if problems:
        module.fail_json(msg='Nothing was built. ' + ' '.join(problems), checkouts=entries, ext=ext)
    todo = [e for e in entries if e['status'] == 'would_build']
    if module.check_mode or not todo:
        module.exit_json(changed=bool(todo), checkouts=entries, ext=ext)

    make = module.get_bin_path('make', required=True)
    cppflags = builder.includes()
    for entry in todo:
        builder.build(entry, ext, cppflags, make)
    module.exit_json(changed=True, checkouts=entries, ext=ext)


if __name__ == '__main__':
    main()
