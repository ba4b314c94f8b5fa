#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
module: retire_base
short_description: Remove a PRIMUS_BASE of a release that is no longer used
version_added: 0.1.0
description:
  - Removes a base this collection built - its venv, state, C(env.sh), modulefiles, workspace, manifest and logs - and
    the link to its modulefile in O(modulefiles_dir). The wheel cache and the wheel store are not in a base and stay,
    so a later base with the same build keys compiles nothing.
  - "Refuses, naming the base, why and what to do, and removing nothing: a path that is not a base this collection
    built for this user (a directory of this user's with stage stamps in C(state/)), a symbolic link, the base that
    O(current_link) points to, a base whose lock a run holds (C(.primus.lock)), and a base a process of this user runs
    from (its working directory, a file it loaded, its arguments, C(VIRTUAL_ENV) or C(PRIMUS_BASE))."
  - The base is first renamed to C(.<name>.retiring) beside it, then deleted, so an interrupted removal never leaves
    a half base that looks like a base; retiring the same path again finishes it.
author:
  - primus.trainenv developers (@primus-trainenv)
attributes:
  check_mode:
    description: Lists what would be removed (RV(entries), RV(modulefile_links)); removes nothing.
    support: full
  diff_mode:
    description: The base's top-level entries before, nothing after.
    support: full
options:
  path:
    description: The base to retire, an absolute path or C(~/...) (this user's home).
    type: str
    required: true
  current_link:
    description: The current link (C(primus_current_link)); the base it points to is refused. Empty - not checked.
    type: str
    default: ''
  modulefiles_dir:
    description: The shared modulefiles directory (C(primus_modulefiles_dir)); links into the base go too.
    type: str
    default: ''
"""

EXAMPLES = r"""
- name: Retire the v26.5 base (check mode lists what would go)
  primus.trainenv.retire_base:
    path: ~/envs/primus-v26.5
    current_link: ~/envs/primus-current
    modulefiles_dir: ~/privatemodules
"""

RETURN = r"""
base:
  description: The base, as an absolute path.
  returned: always
  type: str
  sample: /home/trainer/envs/primus-v26.5
release:
  description: The release its stage stamps record.
  returned: success
  type: str
  sample: v26.5
entries:
  description: The base's top-level entries and their sizes in bytes, that were (or would be) removed.
  returned: success
  type: list
  elements: dict
  sample: [{"name": "venv", "bytes": 20123456789}, {"name": "env.sh", "bytes": 4096}]
modulefile_links:
  description: The links to the base's modulefile in O(modulefiles_dir) that were (or would be) removed.
  returned: success
  type: list
  elements: str
  sample: [/home/trainer/privatemodules/primus/v26.5]
"""

import os
import pwd

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.primus.trainenv.plugins.module_utils import retire


def expand(path, home):
    return home.rstrip('/') + path[1:] if path == '~' or path.startswith('~/') else path


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type='str', required=True),
            current_link=dict(type='str', default=''),
            modulefiles_dir=dict(type='str', default=''),
        ),
        supports_check_mode=True,
    )
    try:
        home = pwd.getpwuid(os.geteuid()).pw_dir
    except KeyError:
        home = os.environ.get('HOME', '')
    base = expand(module.params['path'], home)
    try:
        found = retire.plan(base, os.geteuid(), expand(module.params['current_link'], home),
                            expand(module.params['modulefiles_dir'], home))
    except (retire.RetireError, OSError) as exc:
        module.fail_json(msg='retire_base: %s' % exc, base=base)
    result = dict(changed=True, base=found['base'], release=found['release'],
                  entries=[dict(name=name, bytes=size) for name, size in found['entries']],
                  modulefile_links=found['modulefile_links'],
                  diff=dict(before_header=found['base'], after_header=found['base'],
                            before=''.join('%s\n' % name for name, _size in found['entries']) + ''.join(
                                '%s\n' % link for link in found['modulefile_links']), after=''))
    if not module.check_mode:
        try:
            retire.remove(found)
        except OSError as exc:
            module.fail_json(msg='retire_base: removing %s failed: %s. Retire it again to finish (it was renamed to %s '
                                 'first)' % (found['base'], exc, retire.retiring_path(found['base'])), **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
