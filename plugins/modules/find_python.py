#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
module: find_python
short_description: Find the Python interpreter to build the Primus venv from
version_added: 0.1.0
description:
  - Looks for an interpreter of the wanted C(major.minor) that can create a venv with pip, in the
    order of the upstream installer - the interpreter the user gave, then C(python<version>) on
    C(PATH), then interpreters that uv installed under O(uv_dirs).
  - An interpreter that runs but lacks the C(venv) or C(ensurepip) module (Debian and Ubuntu ship
    them separately) is passed over with the reason, instead of failing later at venv creation.
  - Read-only; finding nothing is not an error (RV(found=false)) because the caller can provision one.
author:
  - primus.trainenv developers (@primus-trainenv)
extends_documentation_fragment:
  - primus.trainenv.attributes.read_only
options:
  python:
    description:
      - An interpreter given by the user (path or command name). When set it is the only candidate,
        and the module fails if it does not qualify.
    type: str
  version:
    description: The wanted C(major.minor).
    type: str
    default: "3.12"
  search_path:
    description: Whether to try C(python<version>) on C(PATH).
    type: bool
    default: true
  uv_dirs:
    description:
      - Directories holding uv-managed interpreters (C(UV_PYTHON_INSTALL_DIR)); C(cpython-<version>*/bin/python<version>)
        below them is tried, newest patch release first.
    type: list
    elements: path
    default: []
"""

EXAMPLES = r"""
- name: Find Python 3.12
  primus.trainenv.find_python:
    python: "{{ primus_python }}"
    uv_dirs: ["{{ primus_base }}/python"]
  register: venv_python_found
"""

RETURN = r"""
found:
  description: Whether a qualifying interpreter was found.
  returned: always
  type: bool
python:
  description: Absolute path of the chosen interpreter.
  returned: when found
  type: str
  sample: /usr/bin/python3.12
version:
  description: Its full version.
  returned: when found
  type: str
  sample: 3.12.3
source:
  description: Where it came from - C(given), C(path) or C(uv).
  returned: when found
  type: str
rejected:
  description: Candidates that were tried and why each was passed over.
  returned: always
  type: list
  elements: str
"""

import glob
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.primus.trainenv.plugins.module_utils.python_find import (
    PROBE, choose, parse_probe, uv_glob_sort_key,
)


def probe(module, path, source):
    rc, out, err = module.run_command([path, "-c", PROBE])
    version, venv_ok, problem = parse_probe(rc, out)
    if version is None and err:
        problem = "%s: %s" % (problem, err.strip().splitlines()[-1])
    return {"path": path, "source": source, "version": version, "venv_ok": venv_ok, "problem": problem}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            python=dict(type="str"),
            version=dict(type="str", default="3.12"),
            search_path=dict(type="bool", default=True),
            uv_dirs=dict(type="list", elements="path", default=[]),
        ),
        supports_check_mode=True,
    )
    wanted = module.params["version"]
    given = module.params["python"]
    candidates = []
    if given:
        path = given if os.sep in given else module.get_bin_path(given)
        if not path or not os.access(path, os.X_OK):
            module.fail_json(msg="PRIMUS_PYTHON=%s is not Python %s: no such executable. Point it at a Python %s "
                                 "interpreter, or leave it empty to search PATH and uv." % (given, wanted, wanted))
        candidates.append(probe(module, os.path.abspath(path), "given"))
    else:
        if module.params["search_path"]:
            path = module.get_bin_path("python%s" % wanted)
            if path:
                candidates.append(probe(module, path, "path"))
        for base in module.params["uv_dirs"]:
            pattern = os.path.join(base, "cpython-%s*" % wanted, "bin", "python%s" % wanted)
            for path in sorted(glob.glob(pattern), key=uv_glob_sort_key):
                candidates.append(probe(module, path, "uv"))
    chosen, rejected = choose(candidates, wanted)
    if given and chosen is None:
        module.fail_json(msg="PRIMUS_PYTHON=%s is not Python %s: %s" % (given, wanted, "; ".join(rejected)),
                         rejected=rejected)
    if chosen is None:
        module.exit_json(changed=False, found=False, rejected=rejected)
    module.exit_json(changed=False, found=True, python=chosen["path"], version=chosen["version"],
                     source=chosen["source"], rejected=rejected)


if __name__ == "__main__":
    main()
