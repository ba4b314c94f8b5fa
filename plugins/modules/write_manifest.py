#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: write_manifest
short_description: Write the node's manifest (what was built, from what) and a short summary, with no secrets
version_added: 0.1.0
description:
  - Writes C(<dir>/manifest.json) and C(<dir>/summary.txt) (a few lines for a human) through a temporary file and
    a rename each, mode 0644; a missing O(dir) is created with mode 0755 at every level.
  - The manifest holds C(format) (1), the fields of O(data), C(env_sh) as C(path) and the C(sha256) this module
    computes, and C(generated) (UTC).
  - "Before anything is written, secrets are scrubbed: anything that looks like an environment dump (a key named
    C(env), C(environ), C(environment)..., a mapping or text holding several of PATH, HOME, USER...) and any key whose
    name says it holds a secret (token, password, secret, api key, credential...) are left out and reported in
    RV(stripped) and as warnings; credentials in URLs are redacted as pip redacts them (C(user:****@)), and so is
    every other occurrence of those secrets and of the values of this process's own secret-named variables
    (C(HF_TOKEN), C(WANDB_API_KEY)...). Keys of C(distributions), C(checkouts), C(build_keys) and
    C(timings) are names, not checked for secret names."
  - C(generated) and C(timings) do not count as a change. A manifest that differs only there is kept as it is, so
    a converged run (stages that take seconds) reports no change and keeps the record of the run that built
    the environment.
author:
  - primus.trainenv developers (@primus-trainenv)
attributes:
  check_mode:
    description: Reports whether the files would change; writes nothing.
    support: full
  diff_mode:
    description: Each file's before and after.
    support: full
options:
  dir:
    description: The manifest directory, C($PRIMUS_BASE/manifest).
    type: path
    required: true
  data:
    description:
      - "What the manifest records, any of: C(release), C(host), C(os) (a string or a mapping), C(glibc), C(glibcxx),
        C(python), C(archs) (list of gfx names), C(te_mode), C(plan) (preflight's per-node decisions that follow from
        the archs - device wheels, C(NVTE_CK_IS_V3_ATOMIC_FP32)), C(distributions) (name -> version), C(checkouts)
        (name -> commit), C(build_keys) (stage -> key id), C(env_sh) (absolute path of env.sh; the manifest records its
        sha256), C(timings) (stage -> seconds), C(verify) (check -> result, or a list of results), C(installed_fixes)
        (the release's fixes to installed files, each C(name), C(kind), C(path), C(state), C(why))."
      - Other keys are refused (a typo would drop a record silently), after environment dumps are left out.
    type: dict
    required: true
'''

EXAMPLES = r'''
- name: Write the manifest
  primus.trainenv.write_manifest:
    dir: "{{ primus_base }}/manifest"
    data:
      release: v26.5
      host: "{{ inventory_hostname }}"
      os: "{{ ansible_facts['distribution'] }} {{ ansible_facts['distribution_version'] }}"
      glibc: "{{ ansible_facts['primus_glibc']['version'] }}"
      glibcxx: "{{ ansible_facts['primus_glibc']['glibcxx_max'] }}"
      python: "3.12.1"
      archs: "{{ ansible_facts['primus_gpu']['archs'] }}"
      te_mode: wheel
      distributions: {torch: 2.12.0+rocm7.15.0a20260720}
      checkouts: {Primus: b511d1b66b0068715308ea9bfe8ba147ea1a3860}
      build_keys: {te: 1b2c3d4e5f607182}
      env_sh: "{{ primus_base }}/env.sh"
      timings: {torch: 312.4, te: 2710.0}
      verify: {import_torch: true}
'''

RETURN = r'''
path:
  description: The manifest file.
  returned: always
  type: str
  sample: /home/trainer/envs/primus-env/manifest/manifest.json
summary_path:
  description: The summary file.
  returned: always
  type: str
  sample: /home/trainer/envs/primus-env/manifest/summary.txt
checksum:
  description: The sha256 of manifest.json as written (or, in check mode, as it would be written).
  returned: always
  type: str
  sample: 0f343b0931126a20f133d67c2b018a3b2d2c5e8b2f6c0a1a6e1e4d8f8f3a9b10
manifest:
  description: The manifest as written (or as it would be written), after scrubbing.
  returned: always
  type: dict
stripped:
  description: The keys of O(data) that were left out, and why.
  returned: always
  type: list
  elements: dict
  sample: [{"key": "verify.env", "reason": "looks like an environment dump"}]
written:
  description: The files written (or, in check mode, that would be written).
  returned: always
  type: list
  elements: str
'''

import hashlib
import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_text
from ansible_collections.primus.trainenv.plugins.module_utils import manifest as mf
from ansible_collections.primus.trainenv.plugins.module_utils.common import file_sha256
from ansible_collections.primus.trainenv.plugins.module_utils.modes import current, restrict_umask, write_atomic

FILE_MODE = 0o644
DIR_MODE = 0o755


def write(module, path, data):
    try:
        write_atomic(path, data, FILE_MODE, DIR_MODE)
    except (IOError, OSError) as exc:
        module.fail_json(msg='cannot write %s: %s' % (path, exc), path=path)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            dir=dict(type='path', required=True),
            # A free mapping, validated by manifest.validate only after the scrub: an environment dump under an
            # unknown key is left out, not echoed back in an argument error. Its secrets go to no_log_values.
            data=dict(type='dict', required=True, no_log=False),
        ),
        supports_check_mode=True,
    )
    restrict_umask()
    directory = module.params['dir']
    if not os.path.isabs(directory):
        module.fail_json(msg='dir %r is not absolute' % directory)
    given = dict((k, v) for k, v in module.params['data'].items() if v is not None)

    clean, stripped, secrets = mf.scrub(given, mf.environment_secrets(os.environ))
    module.no_log_values.update(secrets)
    for item in stripped:
        module.warn('manifest: left out data.%s: %s' % (item['key'], item['reason']))
    try:
        mf.validate(clean)
    except mf.ManifestError as exc:
        module.fail_json(msg=str(exc))

    env_sha = None
    env_sh = clean.get('env_sh')
    if env_sh is not None:
        if not os.path.isabs(env_sh):
            module.fail_json(msg='data.env_sh %r is not absolute' % env_sh)
        if os.path.isfile(env_sh):
            env_sha = file_sha256(env_sh)
        elif not module.check_mode:
            module.fail_json(msg='data.env_sh %s does not exist: the manifest records its sha256, so write env.sh '
                                 'before the manifest (or leave env_sh out)' % env_sh)

    path = os.path.join(directory, 'manifest.json')
    summary_path = os.path.join(directory, 'summary.txt')
    new = mf.build(clean, env_sha, time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()))
    old_bytes, _mode = current(path)
    old = mf.parse(to_text(old_bytes, errors='surrogate_or_replace')) if old_bytes is not None else None
    document = old if mf.same_record(old, new) else new
    manifest_text = mf.to_json(document)
    files = [(path, manifest_text), (summary_path, mf.summary(document))]

    written, diffs = [], []
    for target, text in files:
        have, have_mode = current(target)
        data = to_bytes(text)
        if have == data and have_mode == FILE_MODE:
            continue
        written.append(target)
        diffs.append(dict(before_header=target, after_header=target, after=text,
                          before=to_text(have, errors='surrogate_or_replace') if have is not None else ''))
        if not module.check_mode:
            write(module, target, data)
    module.exit_json(changed=bool(written), path=path, summary_path=summary_path, written=written,
                     checksum=hashlib.sha256(to_bytes(manifest_text)).hexdigest(), manifest=document,
                     stripped=stripped, diff=diffs)


if __name__ == '__main__':
    main()
