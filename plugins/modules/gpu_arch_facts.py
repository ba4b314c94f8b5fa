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

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.primus.trainenv.plugins.module_utils.gpu_arch import GpuFactsError, gather


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
    try:
        facts, warnings = gather(module, **module.params)
    except GpuFactsError as exc:
        module.fail_json(msg=str(exc))
    for warning in warnings:
        module.warn(warning)
    module.exit_json(changed=False, ansible_facts=dict(primus_gpu=facts))


if __name__ == '__main__':
    main()
