#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: installed_files
short_description: Check that a venv's installed files are the bytes their distributions' RECORDs claim
version_added: 0.1.0
description:
  - Reads every C(*.dist-info/RECORD) of the venv's site-packages and names each file whose bytes match none of the
    RECORDs that claim it (RV(changed_files)), and each file a RECORD lists that is gone (RV(missing)).
  - Hashes only what is needed - a file of a size no RECORD claims is changed without reading it; a file one RECORD
    claims, of its size and not modified since that RECORD was written, is not read; the rest is hashed. Compiled
    C(__pycache__) files are not judged.
  - Read-only; one process on the node.
author:
  - primus.trainenv developers (@primus-trainenv)
extends_documentation_fragment:
  - primus.trainenv.attributes.read_only
options:
  venv:
    description: The venv to check.
    type: path
    required: true
  skip:
    description: Paths relative to site-packages that this collection changes on purpose (a patched script).
    type: list
    elements: str
    default: []
'''

EXAMPLES = r'''
- name: Check the installed files against their RECORDs
  primus.trainenv.installed_files:
    venv: /home/trainer/envs/primus-env/venv
    skip: [transformer_engine/lib/ck_jit/ck_jit_compile.sh]
  register: verify_files
'''

RETURN = r'''
ok:
  description: Whether every judged file matches a RECORD that claims it and none is gone.
  returned: always
  type: bool
summary:
  description: One line - how many files matched, or which did not (at most five named per kind).
  returned: always
  type: str
  sample: 1 installed file(s) match none of the RECORDs that claim them - torch/__init__.py (torch 2.12.0)
distributions:
  description: How many RECORDs were read.
  returned: always
  type: int
files:
  description: How many files were judged.
  returned: always
  type: int
hashed:
  description: How many of them were read and hashed.
  returned: always
  type: int
changed_files:
  description: Each file whose bytes match none of the RECORDs that claim it - C(path) and C(claimed_by).
  returned: always
  type: list
  elements: dict
missing:
  description: Each file a RECORD lists that is not there - C(path) and C(claimed_by).
  returned: always
  type: list
  elements: dict
'''

import glob
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.primus.trainenv.plugins.module_utils import record_check


def main():
    module = AnsibleModule(
        argument_spec=dict(venv=dict(type='path', required=True), skip=dict(type='list', elements='str', default=[])),
        supports_check_mode=True,
    )
    venv = module.params['venv']
    site_packages = sorted(glob.glob(os.path.join(venv, 'lib', 'python*', 'site-packages')))
    if not site_packages:
        module.fail_json(msg='%s has no lib/python*/site-packages: it is not a venv' % venv)
    found = record_check.check(site_packages, set(module.params['skip']))
    module.exit_json(changed=False, ok=not (found['changed'] or found['missing'] or found['unreadable']),
                     summary=record_check.summary(found), distributions=found['distributions'], files=found['files'],
                     hashed=found['hashed'], changed_files=found['changed'], missing=found['missing'])


if __name__ == '__main__':
    main()
