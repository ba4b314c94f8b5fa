#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: glibc_facts
short_description: Gather the node's glibc version and the GLIBCXX versions of its libstdc++
version_added: 0.1.0
description:
  - Reads the glibc version of the node (from C(confstr), else from C(ldd --version)) and the
    C(GLIBCXX_*) symbol versions that the node's C(libstdc++.so.6) provides.
  - The GLIBCXX versions are read from the library's bytes, so binutils (C(strings), C(objdump))
    are not needed.
  - The C(libstdc++) read is the one the dynamic linker would load, that is the C(ldconfig -p)
    entry for C(libstdc++.so.6) of this machine's ELF class, else the first one found in the usual
    library directories.
  - Read-only; it never changes the node.
author:
  - primus.trainenv developers (@primus-trainenv)
attributes:
  facts:
    description: Sets C(ansible_facts.primus_glibc).
    support: full
extends_documentation_fragment:
  - primus.trainenv.attributes.read_only
options:
  libstdcxx_path:
    description:
      - Read this C(libstdc++) instead of looking one up (for example a newer one that a
        runtime puts on C(LD_LIBRARY_PATH)).
      - An explicit path that cannot be read is an error.
    type: path
  ldd:
    description:
      - The C(ldd) command used for C(ldd_line), and for the version when C(confstr) gives none.
      - A name is looked up on C(PATH); a missing C(ldd) is not an error (musl and minimal images).
    type: str
    default: ldd
notes:
  - The version is what the node's C library reports; the C(python) that runs this module must
    therefore be a normal dynamically linked interpreter of that node, which every system or
    uv-provided CPython is.
seealso:
  - module: primus.trainenv.gpu_arch_facts
'''

EXAMPLES = r'''
- name: Gather glibc and GLIBCXX facts
  primus.trainenv.glibc_facts:

- name: Show them
  ansible.builtin.debug:
    msg: "glibc {{ ansible_facts['primus_glibc']['version'] }}, GLIBCXX up to {{ ansible_facts['primus_glibc']['glibcxx_max'] }}"

- name: Read a side-loaded libstdc++ instead
  primus.trainenv.glibc_facts:
    libstdcxx_path: /opt/gcc-14/lib64/libstdc++.so.6
'''

RETURN = r'''
ansible_facts:
  description: Facts to add to ansible_facts.
  returned: always
  type: dict
  contains:
    primus_glibc:
      description: glibc and libstdc++ facts of the node.
      returned: always
      type: dict
      contains:
        version:
          description: glibc version, for example C(2.36); empty when it could not be determined (musl, no ldd).
          type: str
          sample: "2.36"
        source:
          description: Where the version came from, C(confstr), C(ldd), or C(none).
          type: str
          sample: confstr
        ldd_line:
          description: First line of C(ldd --version); empty when C(ldd) is missing.
          type: str
          sample: ldd (Debian GLIBC 2.36-9+deb12u14) 2.36
        libstdcxx_path:
          description: The C(libstdc++) file that was read (symlinks resolved); empty when none was found.
          type: str
          sample: /usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30
        glibcxx_max:
          description: Newest C(GLIBCXX_*) version the C(libstdc++) provides, for example C(3.4.30); empty if unknown.
          type: str
          sample: "3.4.30"
        glibcxx_versions:
          description: All C(GLIBCXX_*) versions it provides, oldest first.
          type: list
          elements: str
          sample: ["3.4", "3.4.1", "3.4.30"]
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.primus.trainenv.plugins.module_utils.glibc import gather


def main():
    module = AnsibleModule(
        argument_spec=dict(
            libstdcxx_path=dict(type='path'),
            ldd=dict(type='str', default='ldd'),
        ),
        supports_check_mode=True,
    )
    try:
        facts = gather(module, module.params['libstdcxx_path'], module.params['ldd'])
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=False, ansible_facts=dict(primus_glibc=facts))


if __name__ == '__main__':
    main()
