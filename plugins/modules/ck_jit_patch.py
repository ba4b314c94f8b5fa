#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
module: ck_jit_patch
short_description: Patch TransformerEngine's ck_jit_compile.sh so a lost race to publish a CK JIT kernel is not fatal
version_added: 0.1.0
description:
  - Concurrent CK JIT compiles race to publish the same C(.so); without the patch the loser's C(mv -n) fails and
    the run aborts. The line C(    mv -n "$_TMP_SO" "$OUTPUT") becomes C(    mv -n "$_TMP_SO" "$OUTPUT" 2>/dev/null || true),
    as the v26.5 installer and image patch it (its indentation is kept; every such line is patched).
  - The file is C(transformer_engine/lib/ck_jit/ck_jit_compile.sh) under the venv's C(sysconfig) purelib, then
    platlib (the first where it exists), read with one run of the venv's python; or O(path).
  - "The result is one of these states: C(patched) (the line was patched, or would be in check mode),
    C(already_patched), C(upstream_fixed) (the script already tolerates the lost race, for example
    C(mv -n \"$_TMP_SO\" \"$OUTPUT\" || [ -f \"$OUTPUT\" ]), and is left alone), C(not_present) (no such file: not an
    error, nothing changes) and C(unrecognized) (the file is there but no line is in a known form: the task fails
    naming the file, the lines moving C($_TMP_SO) it found and the expected text)."
  - Written through a temporary file and a rename, keeping the file's mode, then read back; a patch that did not
    take fails the task.
author:
  - primus.trainenv developers (@primus-trainenv)
attributes:
  check_mode:
    description: Reports the state the file would reach; writes nothing.
    support: full
  diff_mode:
    description: The script before and after the patch.
    support: full
options:
  venv:
    description:
      - The venv whose TransformerEngine to patch; its C(bin/python) is asked for its purelib and platlib.
      - Exactly one of O(venv) and O(path) is required.
    type: path
  path:
    description:
      - The C(ck_jit_compile.sh) to patch, given explicitly.
      - Exactly one of O(venv) and O(path) is required.
    type: path
"""

EXAMPLES = r"""
- name: Patch the CK JIT compile script of the venv's TransformerEngine
  primus.trainenv.ck_jit_patch:
    venv: "{{ primus_base }}/venv"
  register: primus_ck_jit

- name: Patch a script at a known path
  primus.trainenv.ck_jit_patch:
    path: /opt/venv/lib/python3.12/site-packages/transformer_engine/lib/ck_jit/ck_jit_compile.sh
"""

RETURN = r"""
path:
  description:
    - The script found (or given); with O(venv) and no script there, the first place looked.
    - Empty in check mode when the venv has no C(bin/python) yet.
  returned: always
  type: str
  sample: /home/trainer/envs/primus-env/venv/lib/python3.12/site-packages/transformer_engine/lib/ck_jit/ck_jit_compile.sh
state:
  description: C(patched), C(already_patched), C(upstream_fixed) or C(not_present) (C(unrecognized) fails the task).
  returned: always
  type: str
  sample: patched
lines:
  description: Line numbers (1-based) of the lines patched (C(patched)) or found in their tolerant form.
  returned: always
  type: list
  elements: int
  sample: [10]
searched:
  description: The places looked at, in order (with O(venv), purelib's then platlib's; else O(path)).
  returned: always
  type: list
  elements: str
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.primus.trainenv.plugins.module_utils import text_patch

PROBE = 'import json, sysconfig; p = sysconfig.get_paths(); print(json.dumps([p["purelib"], p["platlib"]]))'


def candidates(module, venv):
    """The script's possible places, purelib's then platlib's (one place when both are the same)."""
    python = os.path.join(venv, 'bin', 'python')
    if not os.path.exists(python):
        if module.check_mode:
            return None
        module.fail_json(msg='%s has no bin/python: the venv must be created (stage venv) and TransformerEngine '
                             'installed (stage te) before the ck_jit patch' % venv, path='', state='', lines=[],
                         searched=[])
    cmd = [python, '-I', '-c', PROBE]
    rc, out, err = module.run_command(cmd)
    if rc != 0:
        module.fail_json(msg='the venv python could not report its site-packages (rc %d): %s'
                             % (rc, (err or out).strip()[-2000:]), cmd=cmd, rc=rc)
    try:
        dirs = json.loads(out)
    except ValueError:
        module.fail_json(msg='the venv python printed no JSON: %s' % out[-2000:], cmd=cmd, rc=rc)
    found = []
    for directory in dirs:
        place = os.path.join(directory, text_patch.CK_JIT_RELPATH)
        if place not in found:
            found.append(place)
    return found


def results_as_given(kwargs):
    """Leave a result as it is: AnsibleModule adds the file's owner, mode and `state: file` to any result with
    a `path`, which would overwrite this module's `state` (the patch's)."""
    return kwargs


def main():
    module = AnsibleModule(
        argument_spec=dict(venv=dict(type='path'), path=dict(type='path')),
        mutually_exclusive=[('venv', 'path')],
        required_one_of=[('venv', 'path')],
        supports_check_mode=True,
    )
    module.add_path_info = results_as_given
    if module.params['path']:
        searched = [module.params['path']]
    else:
        searched = candidates(module, module.params['venv'])
        if searched is None:
            module.exit_json(changed=False, state='not_present', path='', lines=[], searched=[],
                             msg='%s has no bin/python yet (check mode): TransformerEngine is not installed there, '
                                 'nothing to patch' % module.params['venv'])
    path = next((place for place in searched if os.path.isfile(place)), None)
    result = dict(changed=False, searched=searched, lines=[])
    if path is None:
        module.exit_json(state='not_present', path=searched[0], msg=text_patch.CK_JIT_NOT_PRESENT, **result)
    result['path'] = path
    try:
        text, mode = text_patch.read_text(path)
    except (IOError, OSError) as exc:
        module.fail_json(msg='cannot read %s: %s' % (path, exc), state='', **result)
    found = text_patch.ck_jit_classify(text)
    if found['state'] == 'unrecognized':
        module.fail_json(msg=text_patch.ck_jit_unrecognized_message(path, found), state='unrecognized', **result)
    if found['state'] == 'already_patched':
        result['lines'] = found['patched']
        module.exit_json(state='already_patched', msg='%s already patched' % text_patch.CK_JIT_NAME, **result)
    if found['state'] == 'upstream_fixed':
        result['lines'] = found['upstream_fixed']
        module.exit_json(state='upstream_fixed', msg='%s already tolerates a lost mv race (upstream fix), left as is'
                                                     % text_patch.CK_JIT_NAME, **result)
    patched, _count = text_patch.ck_jit_apply(text)
    result.update(changed=True, state='patched', lines=found['unpatched'],
                  diff=dict(before_header=path, after_header=path, before=text_patch.diff_text(text),
                            after=text_patch.diff_text(patched)))
    if module.check_mode:
        module.exit_json(msg='would patch %s' % path, **result)
    try:
        text_patch.write_text_atomic(path, patched, mode)
        again, _mode = text_patch.read_text(path)
    except (IOError, OSError) as exc:
        module.fail_json(msg='cannot write %s: %s' % (path, exc), **result)
    if text_patch.ck_jit_classify(again)['state'] != 'already_patched':
        module.fail_json(msg='%s patch did not apply; upstream changed %s' % (text_patch.CK_JIT_NAME, path), **result)
    module.exit_json(msg='Patched %s' % path, **result)


if __name__ == '__main__':
    main()
