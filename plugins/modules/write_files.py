#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
module: write_files
short_description: Write several small text files in one round trip, atomically and only when they differ
version_added: 0.1.0
description:
  - Writes each file of O(files) whose content or mode differs, through a temporary file and an atomic rename, and
    creates missing parent directories with mode O(dir_mode), each level explicitly, whatever the umask.
  - A mode that gives others write permission is refused; under any umask (even C(000)) nothing written is
    group- or world-writable unless the mode says group.
  - One module run for a set of generated files (env.sh, the constraints file, the modulefile, the manifest), where
    C(ansible.builtin.template) costs two round trips per file even when nothing changes.
  - Check mode reports what would change and writes nothing; diff mode shows each changed file's before and after.
author:
  - primus.trainenv developers (@primus-trainenv)
attributes:
  check_mode:
    description: Reports what would be written; writes nothing.
    support: full
  diff_mode:
    description: Before and after of every file that differs.
    support: full
options:
  files:
    description: The files to write.
    type: list
    elements: dict
    required: true
    suboptions:
      path:
        description: Absolute path of the file.
        type: path
        required: true
      content:
        description: The whole text of the file.
        type: str
        required: true
      mode:
        description: Octal permissions, for example C("0644"). Others may never write (C(o+w) is refused).
        type: str
        default: "0644"
  dir_mode:
    description: Octal permissions of the parent directories this module creates. Others may never write.
    type: str
    default: "0755"
"""

EXAMPLES = r"""
- name: Write env.sh and the constraints file
  primus.trainenv.write_files:
    files:
      - path: "{{ primus_base }}/env.sh"
        content: "{{ lookup('ansible.builtin.template', 'env.sh.j2') }}"
      - path: "{{ primus_base }}/pip-constraints.txt"
        content: "torch==2.12.0+rocm7.15.0a20260720\n"
"""

RETURN = r"""
written:
  description: Paths written (or, in check mode, that would be written).
  returned: always
  type: list
  elements: str
  sample: ["/home/trainer/envs/primus-env/env.sh"]
unchanged:
  description: Paths that already had this content and mode.
  returned: always
  type: list
  elements: str
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_text
from ansible_collections.primus.trainenv.plugins.module_utils.modes import current, restrict_umask, write_atomic


def octal_mode(module, text, what):
    try:
        mode = int(text, 8)
    except (TypeError, ValueError):
        module.fail_json(msg="mode %r of %s is not octal" % (text, what))
    if mode & 0o002 or mode & ~0o7777:
        module.fail_json(msg="mode %r of %s would let every user write it; use e.g. 0644 (files) or 0755 (directories)"
                             % (text, what))
    return mode


def write(module, path, data, mode, dir_mode):
    try:
        write_atomic(path, data, mode, dir_mode)
    except (IOError, OSError) as exc:
        module.fail_json(msg="cannot write %s: %s" % (path, exc), path=path)


def main():
    module = AnsibleModule(
        argument_spec=dict(files=dict(type="list", elements="dict", required=True, options=dict(
            path=dict(type="path", required=True),
            content=dict(type="str", required=True),
            mode=dict(type="str", default="0644"),
        )), dir_mode=dict(type="str", default="0755")),
        supports_check_mode=True,
    )
    restrict_umask()
    dir_mode = octal_mode(module, module.params["dir_mode"], "the parent directories")
    written, unchanged, diffs = [], [], []
    for item in module.params["files"]:
        path = item["path"]
        if not os.path.isabs(path):
            module.fail_json(msg="path %r is not absolute" % path)
        mode = octal_mode(module, item["mode"], path)
        data = to_bytes(item["content"])
        have, have_mode = current(path)
        if have == data and have_mode == mode:
            unchanged.append(path)
            continue
        written.append(path)
        diffs.append(dict(before_header=path, after_header=path,
                          before=to_text(have, errors="surrogate_or_replace") if have is not None else "",
                          after=item["content"]))
        if not module.check_mode:
            write(module, path, data, mode, dir_mode)
    module.exit_json(changed=bool(written), written=written, unchanged=unchanged, diff=diffs)


if __name__ == "__main__":
    main()
