#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: stage_stamp
short_description: Record that a stage is done on a base, with the key it was built from
version_added: 0.1.0
description:
  - Writes C(<path>/<stage>.json), the stage's stamp - C(format) (1), C(stage), C(release), C(key) (the inputs that
    define the stage's result), C(key_id) (first 16 hex digits of the sha256 of the key's canonical JSON, as the
    P(primus.trainenv.stage_key_id#filter) filter computes it), C(finished) (UTC), C(host) and C(outputs).
  - With O(venv) and O(distributions), the installed version of each distribution is read from the venv (one run of
    its python) and recorded in C(outputs.distributions); one that is not installed fails the task, since the stage
    cannot be done without it.
  - With O(seconds), how long the stage took is recorded as C(outputs.seconds).
  - The stamp is rewritten only when its release, key or outputs change; the time and host of writing and
    C(outputs.seconds) do not count, so a converged run writes nothing and a stamp keeps the time of the run that
    built its result. Written through a temporary file and a rename, mode 0644; the directory is
    created with mode 0755.
  - With O(installed_fixes), the release's fixes to installed files are decided first and any the stage undid (a pip
    run of the stage reinstalled the original) is applied again, as M(primus.trainenv.installed_fixes) does; a fix
    whose file is not installed is left alone, one that is broken fails the task. RV(fixes) names those applied.
  - M(primus.trainenv.node_info) reads the stamps back (its O(primus.trainenv.node_info#module:state_dir) option), in
    the run's one look at the node.
author:
  - primus.trainenv developers (@primus-trainenv)
attributes:
  check_mode:
    description: Reports whether the stamp would change; writes nothing.
    support: full
  diff_mode:
    description: The stamp before and after.
    support: full
options:
  path:
    description: The directory of the stamps, C($PRIMUS_BASE/state).
    type: path
    required: true
  stage:
    description: The stage name (lower case letters, digits and C(_)); the stamp is C(<path>/<stage>.json).
    type: str
    required: true
  release:
    description: The release the stage was built for.
    type: str
    required: true
  key:
    description: The inputs that define the stage's result (release, python version, pins, archs ...); JSON values only.
    type: dict
    required: true
  outputs:
    description: What the stage produced, recorded as given (merged with the distributions read from O(venv)).
    type: dict
    default: {}
  venv:
    description: The venv to read the installed versions of O(distributions) from (required with them).
    type: path
  site_packages:
    description: The venv's site-packages, which O(installed_fixes) paths are relative to (required with them).
    type: path
  installed_fixes:
    description: The release's fixes to installed files (see M(primus.trainenv.installed_fixes)), re-applied first.
    type: list
    elements: dict
    default: []
  distributions:
    description:
      - Distributions whose installed version is recorded, given as names or requirements (C(torch==2.12.0+rocm...));
        the name is read from the start of each entry.
    type: list
    elements: str
    default: []
  seconds:
    description: How long the stage took, in seconds (recorded as C(outputs.seconds), rounded to 0.1 s; not negative).
    type: float
'''

EXAMPLES = r'''
- name: Record stage torch as done
  primus.trainenv.stage_stamp:
    path: "{{ primus_base }}/state"
    stage: torch
    release: v26.5
    key:
      release: v26.5
      python: "3.12"
      packages: [torch==2.12.0+rocm7.15.0a20260720]
      archs: [gfx942]
    venv: "{{ primus_base }}/venv"
    distributions: [torch==2.12.0+rocm7.15.0a20260720, triton]
    seconds: 312.4
'''

RETURN = r'''
path:
  description: The stamp file.
  returned: always
  type: str
  sample: /home/trainer/envs/primus-env/state/torch.json
stamp:
  description: The stamp as written (or, in check mode, as it would be written).
  returned: always
  type: dict
  sample: {"format": 1, "stage": "torch", "release": "v26.5", "key": {"archs": ["gfx942"]}, "key_id": "1b2c3d4e5f607182",
           "finished": "2026-12-02T17:30:00Z", "host": "node1", "outputs": {"distributions": {"torch": "2.12.0+rocm7.15.0a20260720"}}}
previous:
  description: The stamp that was there before (empty when there was none or it could not be read).
  returned: always
  type: dict
fixes:
  description: The names of the O(installed_fixes) applied again before the stamp was written.
  returned: always
  type: list
  elements: str
  sample: [comgr_single_copy]
'''

import json
import os
import re
import socket
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.primus.trainenv.plugins.module_utils import installed_fixes, stage_state
from ansible_collections.primus.trainenv.plugins.module_utils.common import normalize_name
from ansible_collections.primus.trainenv.plugins.module_utils.modes import write_atomic

# The distribution name at the start of a requirement (PEP 508), normalised as PEP 503 does.
NAME = re.compile(r'^\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)')
PROBE = (
    "import json, sys\n"
    "from importlib import metadata\n"
    "found = {}\n"
    "for name in sys.argv[1:]:\n"
    "    try:\n"
    "        found[name] = metadata.version(name)\n"
    "    except metadata.PackageNotFoundError:\n"
    "        pass\n"
    "print(json.dumps(found))\n"
)


def canonical_name(text):
    match = NAME.match(text or '')
    if not match:
        return None
    return normalize_name(match.group(1))


def installed_versions(module, venv, names):
    python = os.path.join(venv, 'bin', 'python')
    cmd = [python, '-c', PROBE] + names
    rc, out, err = module.run_command(cmd)
    if rc != 0:
        module.fail_json(msg='cannot read the installed distributions of %s (rc=%s): %s'
                         % (venv, rc, (err or out).strip()[-2000:]), cmd=cmd, rc=rc)
    try:
        return json.loads(out)
    except ValueError:
        module.fail_json(msg='the venv python printed no JSON: %s' % out[-2000:], cmd=cmd, rc=rc)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type='path', required=True),
            stage=dict(type='str', required=True),
            release=dict(type='str', required=True),
            # The inputs of a stage, never a secret (index URLs are not part of a key).
            key=dict(type='dict', required=True, no_log=False),
            outputs=dict(type='dict', default={}),
            venv=dict(type='path'),
            distributions=dict(type='list', elements='str', default=[]),
            seconds=dict(type='float'),
            site_packages=dict(type='path'),
            installed_fixes=dict(type='list', elements='dict', default=[]),
        ),
        supports_check_mode=True,
    )
    params = module.params
    stage = params['stage']
    if not stage_state.STAGE_NAME.match(stage):
        module.fail_json(msg='stage %r is not a stage name (lower case letters, digits and _)' % stage)
    path = os.path.join(params['path'], stage + '.json')
    outputs = dict(params['outputs'])
    if params['seconds'] is not None:
        if params['seconds'] < 0:
            module.fail_json(msg='seconds is negative (%r): a stage cannot take less than 0 seconds; pass the time '
                                 'since the stage started' % params['seconds'])
        outputs['seconds'] = round(params['seconds'], 1)

    names = []
    for entry in params['distributions']:
        name = canonical_name(entry)
        if name is None:
            module.fail_json(msg='distributions: %r does not start with a distribution name' % entry)
        if name not in names:
            names.append(name)
    if names and not params['venv']:
        module.fail_json(msg='distributions are read from a venv: venv is required with distributions')
    python = os.path.join(params['venv'] or '', 'bin', 'python')
    if names and module.check_mode and not os.path.exists(python):
        # The venv is not there yet (a plan on an empty base): the stamp would be written with what gets installed.
        module.exit_json(changed=True, path=path, stamp={}, previous={},
                         msg='check mode: %s does not exist yet, so the stamp of %s would be written after it is made'
                         % (python, stage))
    if names:
        found = installed_versions(module, params['venv'], names)
        missing = [n for n in names if n not in found]
        if missing:
            module.fail_json(msg='stage %s cannot be recorded as done: %s not installed in %s'
                             % (stage, ', '.join(missing), params['venv']), missing=missing)
        outputs['distributions'] = dict((n, found[n]) for n in names)

    fixed, fix_diffs = [], []
    if params['installed_fixes']:
        if not params['site_packages']:
            module.fail_json(msg='installed_fixes are relative to site_packages: site_packages is required with them')
        try:
            results, fix_diffs, failure = installed_fixes.run(params['site_packages'], params['installed_fixes'],
                                                              check_mode=module.check_mode)
        except (installed_fixes.FixError, IOError, OSError) as exc:
            module.fail_json(msg='stage %s: installed_fixes: %s' % (stage, exc))
        if failure:
            module.fail_json(msg=failure, fixes=[])
        fixed = [r['name'] for r in results if r['changed']]

    try:
        stamp = stage_state.make_stamp(stage, params['release'], params['key'], outputs, socket.gethostname(),
                                       time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()))
    except stage_state.StageError as exc:
        module.fail_json(msg='stage %s: %s' % (stage, exc))

    previous = stage_state.read_stamps(params['path']).get(stage, {})
    previous.pop('problem', None)
    if stage_state.same_result(previous, stamp):
        if fixed:
            module.exit_json(changed=True, path=path, stamp=previous, previous=previous, fixes=fixed, diff=fix_diffs)
        module.exit_json(changed=False, path=path, stamp=previous, previous=previous, fixes=fixed)
    text = json.dumps(stamp, indent=2, sort_keys=True) + '\n'
    if not module.check_mode:
        state_dir = os.path.dirname(path)
        if os.path.islink(state_dir):
            module.fail_json(msg='the state directory %s is a symbolic link: the stamp of %s is not written through it '
                             '(it could point outside the base). Fix: replace the link by a directory of its own.'
                             % (state_dir, stage), path=path)
        try:
            write_atomic(path, text.encode('utf-8'), 0o644)
        except (IOError, OSError) as exc:
            module.fail_json(msg='cannot write the stamp %s: %s' % (path, exc), path=path)
    diff = dict(before_header=path, after_header=path, after=text,
                before=json.dumps(previous, indent=2, sort_keys=True) + '\n' if previous else '')
    module.exit_json(changed=True, path=path, stamp=stamp, previous=previous, fixes=fixed,
                     diff=[diff] + fix_diffs if fix_diffs else diff)


if __name__ == '__main__':
    main()
