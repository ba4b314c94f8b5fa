#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
module: installed_fixes
short_description: Apply a release's fixes to files that wheels install in the venv
version_added: 0.1.0
description:
  - A release declares fixes to installed files (C(primus_pins.installed_fixes)); each names a file relative to the
    venv's site-packages and is either a link (O(fixes[].link_to), the file becomes a relative symlink to another
    installed file) or a line (O(fixes[].before) becomes O(fixes[].after), as a verified literal replacement).
  - "Every fix is decided before anything is written, into one of these states: C(applied); C(pending) (the
    original is there; the task applies it and reports a change); C(not_installed) (the file's package is not
    installed yet); C(broken) (neither the original nor the fix is there, or a link's target is missing: the task
    fails naming the fix, the file and what it found)."
  - A pip run that reinstalls the package puts the original back; the next run of this module applies the fix again.
  - A link is made beside the file and renamed over it; a line is written through a temporary file and a rename,
    keeping the file's mode. The result is decided again after writing; a fix that did not take fails.
  - O(check) decides only (verify uses it) and fails when a fix is not applied.
author:
  - primus.trainenv developers (@primus-trainenv)
attributes:
  check_mode:
    description: Reports the fixes that would be applied and their diff; writes nothing. A file not installed yet is
      reported as C(not_installed) (an earlier task of the run installs it).
    support: full
  diff_mode:
    description: For a link, what the file is before and after; for a line, the file's text before and after.
    support: full
options:
  site_packages:
    description: The venv's site-packages directory; every path is relative to it and must stay inside it.
    type: path
    required: true
  fixes:
    description: The fixes, as the release file declares them (C(primus_pins.installed_fixes)).
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: The fix's name, in results and messages.
        type: str
        required: true
      stage:
        description: The stage that installs the file (named in messages).
        type: str
        default: torch
      path:
        description: The installed file, relative to O(site_packages).
        type: str
        required: true
      link_to:
        description: Make O(fixes[].path) a link to this file (relative to O(site_packages)).
        type: str
      before:
        description: The line to replace (a literal text).
        type: str
      after:
        description: What it becomes.
        type: str
  installed:
    description: The files must be installed (the stage that installs them has run); C(not_installed) then fails.
    type: bool
    default: false
  check:
    description: Decide only, write nothing, and fail naming every fix that is not applied (what verify runs).
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Fix the ROCm SDK's installed files after rocm-sdk init
  primus.trainenv.installed_fixes:
    site_packages: "{{ primus_paths.site_packages }}"
    fixes: "{{ primus_pins.installed_fixes }}"
    installed: true

- name: Verify that the fixes hold
  primus.trainenv.installed_fixes:
    site_packages: "{{ primus_paths.site_packages }}"
    fixes: "{{ primus_pins.installed_fixes }}"
    check: true
"""

RETURN = r"""
results:
  description: One entry per fix, in the order given.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: The fix's name.
      type: str
      sample: comgr_single_copy
    kind:
      description: C(link) or C(line).
      type: str
      sample: link
    path:
      description: The file, relative to O(site_packages).
      type: str
      sample: _rocm_sdk_core/lib/libamd_comgr.so.3
    state:
      description: C(applied), C(pending) (check mode or O(check)), C(not_installed) or C(broken).
      type: str
      sample: applied
    why:
      description: What was found, in words.
      type: str
      sample: _rocm_sdk_core/lib/libamd_comgr.so.3 is a second regular file (16 bytes), not a link to
        _rocm_sdk_devel/lib/libamd_comgr.so.3
    changed:
      description: The fix was applied by this run (or would be, in check mode).
      type: bool
      sample: true
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.primus.trainenv.plugins.module_utils import installed_fixes


def main():
    module = AnsibleModule(
        argument_spec=dict(
            site_packages=dict(type='path', required=True),
            fixes=dict(type='list', elements='dict', required=True, options=dict(
                name=dict(type='str', required=True),
                stage=dict(type='str', default='torch'),
                path=dict(type='str', required=True),
                link_to=dict(type='str'),
                before=dict(type='str'),
                after=dict(type='str'),
            ), mutually_exclusive=[('link_to', 'before'), ('link_to', 'after')],
                required_one_of=[('link_to', 'before')], required_together=[('before', 'after')]),
            installed=dict(type='bool', default=False),
            check=dict(type='bool', default=False),
        ),
        supports_check_mode=True,
    )
    params = module.params
    try:
        results, diffs, failure = installed_fixes.run(params['site_packages'], params['fixes'],
                                                      check_mode=module.check_mode or params['check'],
                                                      installed_required=params['installed'])
    except (installed_fixes.FixError, IOError, OSError) as exc:
        module.fail_json(msg='installed_fixes: %s' % exc, results=[])
    result = dict(changed=bool(diffs) and not params['check'], results=results)
    if diffs and not params['check']:
        result['diff'] = diffs
    if failure:
        module.fail_json(msg=failure, **result)
    if params['check']:
        undone = [r for r in results if r['state'] != installed_fixes.APPLIED]
        if undone:
            module.fail_json(msg='; '.join('the fix %s is not applied: %s' % (r['name'], r['why']) for r in undone) + (
                '. A pip run reinstalled the file after the fix (or the package is missing). Fix: re-run the playbook '
                'without --tags (the torch stage applies the fixes again), or --tags torch'), **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
