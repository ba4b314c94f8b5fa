#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: gpu_arch_facts
short_description: Detect the AMD GPU architectures of a node (rocminfo, then KFD sysfs), or validate an override
version_added: 0.1.0
description:
  - Decides the GPU archs to build for, the way the upstream C(env.sh) does, and reports where they came from.
  - An O(override) (the C(PYTORCH_ROCM_ARCH) form, for example C(gfx942;gfx950)) wins. Each entry must be
    C(gfx) followed by digits/hex letters and name a processor LLVM knows; a bad entry is an error that names it.
  - Otherwise C(rocminfo) is run and the C(Name) of every agent whose C(Device Type) is C(GPU) is taken
    (CPU agents and the ISA lines of the C(ISA Info) sections are not archs). The output is read by each
    agent's own fields, not by the C(*******)/C(Agent N) banners, so pasted or truncated output works;
    an agent whose C(Name) is not a gfx name (or was cut off) gets its arch from its first non-generic ISA
    line (C(amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-)); generic ISAs such as C(gfx9-4-generic) and target
    features are never archs. The C(env.sh) and modulefile the C(torch) stage writes detect by the same rules.
  - If C(rocminfo) is missing, fails or lists no GPU agent, the KFD topology is read - the
    C(gfx_target_version) line of each node's C(properties) file, decoded as decimal major, hex minor,
    hex stepping (90402 is gfx942, 90010 is gfx90a, 110501 is gfx1151); 0 marks a CPU node and unreadable
    nodes are skipped.
  - If neither finds a GPU, RV(ansible_facts.primus_gpu.archs) is O(default_archs) with source C(default) and a
    warning, or empty with source C(none) when no default is given.
  - Also reports whether this user can open C(/dev/kfd) read-write, which running on the GPUs needs (building does not).
  - Read-only; it never changes the node.
author:
  - primus.trainenv developers (@primus-trainenv)
attributes:
  facts:
    description: Sets C(ansible_facts.primus_gpu).
    support: full
extends_documentation_fragment:
  - primus.trainenv.attributes.read_only
options:
  override:
    description:
      - GPU archs to use instead of detecting them, separated by C(;) or C(,) (for example C(gfx942;gfx950)).
      - Empty means detect. Detection still runs, to report the node's own GPUs in
        RV(ansible_facts.primus_gpu.detected_archs).
    type: str
    default: ''
  rocminfo:
    description:
      - The C(rocminfo) to run, a path or a command name looked up on C(PATH). Given explicitly, it must exist.
      - Empty means C(rocminfo) on C(PATH), then C(<venv>/bin/rocminfo), then the ROCm SDK that the
        C(rocm-sdk-devel) wheel puts into the venv (C(_rocm_sdk_devel/bin/rocminfo)).
    type: str
    default: ''
  venv:
    description:
      - The venv whose ROCm SDK C(rocminfo) is tried when none is on C(PATH). Empty means none.
    type: path
  default_archs:
    description:
      - Archs to use, with a warning, when no GPU is detected and there is no override (the seed uses
        C(gfx942) and C(gfx950)). Empty means report no archs (source C(none)).
    type: list
    elements: str
    default: []
  kfd_nodes_path:
    description: The KFD topology directory read when C(rocminfo) finds no GPU.
    type: path
    default: /sys/class/kfd/kfd/topology/nodes
  kfd_device:
    description: The KFD device whose read-write access is reported in RV(ansible_facts.primus_gpu.kfd_access).
    type: path
    default: /dev/kfd
notes:
  - C(rocminfo) needs the C(amdgpu) kernel driver; on a build node without a GPU it exits non-zero, which is not
    an error here, and detection moves on to KFD.
seealso:
  - module: primus.trainenv.glibc_facts
  - name: LLVM AMDGPU processors
    description: The gfx names LLVM knows.
    link: https://llvm.org/docs/AMDGPUUsage.html#processors
'''

EXAMPLES = r'''
- name: Detect the GPU archs of each node
  primus.trainenv.gpu_arch_facts:

- name: Build for both Instinct generations whatever the node has
  primus.trainenv.gpu_arch_facts:
    override: gfx942;gfx950

- name: Use a recorded rocminfo and KFD tree (tests)
  primus.trainenv.gpu_arch_facts:
    rocminfo: tests/world/hosts/mi300x/bin/rocminfo
    kfd_nodes_path: tests/world/hosts/mi300x/sys/class/kfd/kfd/topology/nodes

- name: Show the result
  ansible.builtin.debug:
    msg: "{{ ansible_facts['primus_gpu']['pytorch_rocm_arch'] }} from {{ ansible_facts['primus_gpu']['source'] }}"
'''

RETURN = r'''
ansible_facts:
  description: Facts to add to ansible_facts.
  returned: always
  type: dict
  contains:
    primus_gpu:
      description: The GPU archs to build for and how they were found.
      returned: always
      type: dict
      contains:
        archs:
          description: The archs, sorted and unique; empty when no GPU was found and there is no override.
          type: list
          elements: str
          sample: [gfx942, gfx950]
        pytorch_rocm_arch:
          description: The archs joined with C(;), the C(PYTORCH_ROCM_ARCH) form.
          type: str
          sample: gfx942;gfx950
        arch_csv:
          description: The archs joined with C(,), the C(HIP_ARCHITECTURES)/C(GPU_ARCHS) form.
          type: str
          sample: gfx942,gfx950
        source:
          description: Where the archs came from, C(override), C(rocminfo), C(kfd), C(default) (O(default_archs)) or C(none).
          type: str
          sample: rocminfo
        detected_archs:
          description: The node's own GPU archs, from C(rocminfo) or KFD, also when an override is used.
          type: list
          elements: str
          sample: [gfx942]
        detected_source:
          description: Where RV(ansible_facts.primus_gpu.detected_archs) came from, C(rocminfo), C(kfd) or C(none).
          type: str
          sample: kfd
        gpu_count:
          description: GPU agents listed by C(rocminfo), else GPU nodes in the KFD topology.
          type: int
          sample: 8
        marketing_names:
          description: The GPUs' marketing names (rocminfo) or KFD node names; names that say nothing are left out.
          type: list
          elements: str
          sample: [AMD Instinct MI300X]
        rocminfo_path:
          description: The C(rocminfo) that was run; empty when none was found.
          type: str
          sample: /opt/rocm/bin/rocminfo
        kfd_access:
          description: Whether this user can open O(kfd_device) read-write.
          type: bool
          sample: true
        kfd_access_error:
          description: Why O(kfd_device) cannot be opened; empty when it can.
          type: str
          sample: "/dev/kfd: Permission denied"
        notes:
          description: What detection tried and skipped, one line each.
          type: list
          elements: str
          sample: ["rocminfo exited 1: ROCk module is NOT loaded, possibly no GPU devices"]
'''

import glob
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.primus.trainenv.plugins.module_utils.gpu_arch import (
    ArchError,
    arch_forms,
    can_open_rw,
    gpus_from_kfd,
    gpus_from_rocminfo,
    normalize_arch_list,
)


def _tail(text, lines=5):
    return ' / '.join(line.strip() for line in (text or '').strip().splitlines()[-lines:] if line.strip())


def _find_rocminfo(module):
    """(path or None, notes). An explicit option that cannot be found fails the module."""
    wanted = module.params['rocminfo']
    if wanted:
        if os.path.sep in wanted:
            path = os.path.abspath(wanted)
            if not (os.path.isfile(path) and os.access(path, os.X_OK)):
                module.fail_json(msg='rocminfo %s is not an executable file; fix or unset the rocminfo option '
                                     '(primus_rocminfo) to detect with rocminfo on PATH and KFD' % wanted)
            return path, []
        path = module.get_bin_path(wanted)
        if not path:
            module.fail_json(msg='rocminfo command %r is not on PATH; fix or unset the rocminfo option '
                                 '(primus_rocminfo)' % wanted)
        return path, []
    path = module.get_bin_path('rocminfo')
    if path:
        return path, []
    venv = module.params['venv']
    if venv:
        candidates = [os.path.join(venv, 'bin', 'rocminfo')]
        candidates += sorted(glob.glob(os.path.join(venv, 'lib', 'python3*', 'site-packages',
                                                    '_rocm_sdk_devel', 'bin', 'rocminfo')))
        for candidate in candidates:
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return candidate, []
    return None, ['rocminfo not found on PATH%s' % (' nor in the venv %s' % venv if venv else '')]


def detect(module):
    """(archs, source, gpu_count, marketing_names, rocminfo_path, notes) of the node itself."""
    notes = []
    rocminfo, found_notes = _find_rocminfo(module)
    notes.extend(found_notes)
    if rocminfo:
        rc, out, err = module.run_command([rocminfo])
        if rc != 0:
            notes.append('rocminfo exited %d: %s' % (rc, _tail(err or out)))
        archs, count, names = gpus_from_rocminfo(out)
        if archs:
            return archs, 'rocminfo', count, names, rocminfo, notes
        if rc == 0:
            notes.append('rocminfo lists no GPU agent')

    nodes_path = module.params['kfd_nodes_path']
    if os.path.isdir(nodes_path):
        archs, count, names, kfd_notes = gpus_from_kfd(nodes_path)
        notes.extend(kfd_notes)
        if archs:
            return archs, 'kfd', count, names, rocminfo or '', notes
        notes.append('KFD topology %s has no GPU node' % nodes_path)
    else:
        notes.append('KFD topology %s does not exist' % nodes_path)
    return [], 'none', 0, [], rocminfo or '', notes


def main():
    module = AnsibleModule(
        argument_spec=dict(
            override=dict(type='str', default=''),
            rocminfo=dict(type='str', default=''),
            venv=dict(type='path'),
            kfd_nodes_path=dict(type='path', default='/sys/class/kfd/kfd/topology/nodes'),
            kfd_device=dict(type='path', default='/dev/kfd'),
            default_archs=dict(type='list', elements='str', default=[]),
        ),
        supports_check_mode=True,
    )

    override = (module.params['override'] or '').strip()
    override_archs = []
    if override:
        try:
            override_archs = normalize_arch_list(override)
        except ArchError as exc:
            module.fail_json(msg='GPU arch override %r: %s. Fix primus_arch_override (or PYTORCH_ROCM_ARCH), '
                                 'for example gfx942;gfx950.' % (override, exc))
        if not override_archs:
            module.fail_json(msg='GPU arch override %r names no arch; give e.g. gfx942;gfx950, or leave it empty '
                                 'to detect' % override)

    default_archs = []
    if module.params['default_archs']:
        try:
            default_archs = normalize_arch_list(module.params['default_archs'])
        except ArchError as exc:
            module.fail_json(msg='default_archs: %s' % exc)

    detected, detected_source, count, names, rocminfo, notes = detect(module)
    if override_archs:
        archs, source = override_archs, 'override'
    elif detected:
        archs, source = detected, detected_source
    elif default_archs:
        archs, source = default_archs, 'default'
        module.warn('no GPU detected; defaulting PYTORCH_ROCM_ARCH=%s (override with primus_arch_override '
                    'or by exporting PYTORCH_ROCM_ARCH)' % arch_forms(archs)[0])
    else:
        archs, source = [], 'none'
    semicolon, csv = arch_forms(archs)
    kfd_device = module.params['kfd_device']
    kfd_access, kfd_reason = can_open_rw(kfd_device)
    kfd_error = '' if kfd_access else '%s: %s' % (kfd_device, kfd_reason)
    if detected and not kfd_access:
        module.warn('GPUs found, but this user cannot open %s read-write (%s): building works, but running on the '
                    'GPUs needs membership of the group that owns it (usually render or video)' % (kfd_device, kfd_reason))

    facts = dict(
        archs=archs,
        pytorch_rocm_arch=semicolon,
        arch_csv=csv,
        source=source,
        detected_archs=detected,
        detected_source=detected_source,
        gpu_count=count,
        marketing_names=names,
        rocminfo_path=rocminfo,
        kfd_access=kfd_access,
        kfd_access_error=kfd_error,
        notes=notes,
    )
    module.exit_json(changed=False, ansible_facts=dict(primus_gpu=facts))


if __name__ == '__main__':
    main()
