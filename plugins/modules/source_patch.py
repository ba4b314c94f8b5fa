#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
module: source_patch
short_description: Apply verified literal text replacements to the files of a source tree
version_added: 0.1.0
description:
  - Each patch of O(patches) replaces every occurrence of its O(patches[].before) text with its O(patches[].after) text
    in one file of the tree at O(root), as the seed's C(sed s|before|after|g) does, but verified.
  - A patch whose O(patches[].before) is there is applied (C(patched), with the count of occurrences replaced); one whose
    O(patches[].after) is there and O(patches[].before) is not is C(already_patched). One with neither fails the
    task naming the file and both texts, before anything is written (the seed's sed silently did nothing).
    Occurrences of O(patches[].before) inside O(patches[].after) do not count, so a patch that appends to a line
    is applied once.
  - Patches are applied in order; several may patch one file, but none may patch the text another wrote or write
    back the text another replaced. Such a list is refused, since it could be neither verified nor idempotent.
  - Each changed file is written once, through a temporary file and a rename, keeping its mode, then read back and
    checked; a patch that did not take fails.
  - A file must stay inside O(root) - a relative path with no C(..) whose real path (symlinks resolved) is under
    the root's real path; anything else is refused.
  - RV(patch_hash) identifies the patches list, so a build key can include it.
author:
  - primus.trainenv developers (@primus-trainenv)
attributes:
  check_mode:
    description:
      - Reports what would be patched; writes nothing. When O(root) does not exist yet (the tree is cloned by an
        earlier task of the same run) every patch is reported as C(planned) and the task as changed.
    support: full
  diff_mode:
    description: Each changed file before and after.
    support: full
options:
  root:
    description: The source tree (a directory), for example the checkout of torchao.
    type: path
    required: true
  patches:
    description: The replacements, applied in order.
    type: list
    elements: dict
    required: true
    suboptions:
      file:
        description: The file to patch, relative to O(root) (no C(..), not absolute).
        type: str
        required: true
      before:
        description: The literal text to replace (not a regular expression); every occurrence is replaced.
        type: str
        required: true
      after:
        description: The literal text that replaces it; must differ from O(patches[].before).
        type: str
        required: true
"""

EXAMPLES = r"""
- name: Patch torchao before building it
  primus.trainenv.source_patch:
    root: "{{ primus_build_dir }}/ao"
    patches:
      - file: torchao/float8/config.py
        before: "pad_inner_dim: bool = False"
        after: "pad_inner_dim: bool = True"
      - file: torchao/csrc/rocm/swizzle/swizzle.cpp
        before: "if defined(HIPBLASLT_VEC_EXT)"
        after: "if false"
  register: primus_torchao_patch
"""

RETURN = r"""
results:
  description: One entry per patch, in the order given.
  returned: always
  type: list
  elements: dict
  contains:
    file:
      description: The patch's file, relative to O(root).
      type: str
      sample: torchao/float8/config.py
    state:
      description: C(patched) (or would be, in check mode), C(already_patched) or C(planned) (check mode, no tree yet).
      type: str
      sample: patched
    count:
      description: Occurrences of the patch's O(patches[].before) replaced.
      type: int
      sample: 1
  sample: [{"file": "torchtune/modules/moe/utils.py", "state": "patched", "count": 2}]
files:
  description: Files (relative to O(root)) written, or that would be written in check mode.
  returned: always
  type: list
  elements: str
patch_hash:
  description: sha256 (hex) of the canonical JSON (sorted keys, no spaces) of the patches list.
  returned: always
  type: str
  sample: 3f0c6d1e5b0f4a8c9e2d7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.primus.trainenv.plugins.module_utils import text_patch


def main():
    module = AnsibleModule(
        argument_spec=dict(
            root=dict(type='path', required=True),
            patches=dict(type='list', elements='dict', required=True, options=dict(
                file=dict(type='str', required=True),
                before=dict(type='str', required=True),
                after=dict(type='str', required=True),
            )),
        ),
        supports_check_mode=True,
    )
    root = module.params['root']
    try:
        patches = text_patch.check_patches(module.params['patches'])
        digest = text_patch.patch_hash(patches)
    except text_patch.PatchError as exc:
        module.fail_json(msg='source_patch: %s' % exc)
    result = dict(changed=False, results=[], files=[], patch_hash=digest)
    if not os.path.isdir(root):
        if module.check_mode and not os.path.exists(root):
            result.update(changed=True, files=sorted(set(p['file'] for p in patches)),
                          results=[dict(file=p['file'], state='planned', count=0) for p in patches],
                          msg='%s does not exist yet (check mode): the patches would be applied to it' % root)
            module.exit_json(**result)
        module.fail_json(msg='root %s is not a directory: the source tree to patch must be checked out first' % root,
                         **result)

    # Decide every patch in memory first: a patch that no longer matches fails before anything is written.
    texts, order = {}, []
    for patch in patches:
        try:
            real = text_patch.resolve_inside(root, patch['file'])
        except text_patch.PatchError as exc:
            module.fail_json(msg='source_patch: %s' % exc, **result)
        if patch['file'] not in texts:
            try:
                text, mode = text_patch.read_text(real)
            except (IOError, OSError) as exc:
                module.fail_json(msg='cannot read %s: %s' % (real, exc), **result)
            texts[patch['file']] = dict(real=real, mode=mode, before=text, after=text)
            order.append(patch['file'])
        entry = texts[patch['file']]
        state = text_patch.literal_state(entry['after'], patch['before'], patch['after'])
        if state == 'mismatch':
            module.fail_json(msg=text_patch.mismatch_message(patch['file'], patch['before'], patch['after']), **result)
        count = 0
        if state == 'pending':
            entry['after'], count = text_patch.replace_literal(entry['after'], patch['before'], patch['after'])
        result['results'].append(dict(file=patch['file'], state='patched' if count else 'already_patched',
                                      count=count))

    changed_files = [name for name in order if texts[name]['after'] != texts[name]['before']]
    result.update(changed=bool(changed_files), files=changed_files,
                  diff=[dict(before_header=texts[name]['real'], after_header=texts[name]['real'],
                             before=text_patch.diff_text(texts[name]['before']),
                             after=text_patch.diff_text(texts[name]['after'])) for name in changed_files])
    if module.check_mode:
        module.exit_json(**result)
    for name in changed_files:
        entry = texts[name]
        try:
            text_patch.write_text_atomic(entry['real'], entry['after'], entry['mode'])
            again, _mode = text_patch.read_text(entry['real'])
        except (IOError, OSError) as exc:
            module.fail_json(msg='cannot write %s: %s' % (entry['real'], exc), **result)
        for patch in [p for p in patches if p['file'] == name]:
            if again != entry['after'] or text_patch.literal_state(again, patch['before'], patch['after']) \
                    != 'already_patched':
                module.fail_json(msg="the patch of %s did not apply: read back after writing, %s has '%s' or lacks "
                                     "'%s'" % (name, entry['real'], patch['before'], patch['after']), **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
