# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Render templates of this collection with Ansible's own templating, in a fresh interpreter.

stdin: JSON {"variables": {...}, "vars_files": [paths], "jobs": [{"template": path} | {"expr": "{{ ... }}"}]}
stdout: JSON list of results. Ansible resolves the primus.trainenv.* filters through its collection
finder, as ansible-playbook does; it must be installed before anything imports ansible_collections,
hence the separate process.
"""
import json
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder
    _AnsibleCollectionFinder(paths=[os.path.join(REPO, ".collections")])._install()  # pylint: disable=protected-access
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar
    try:  # ansible-core 2.19+: only trusted text is a template
        from ansible.template import trust_as_template
    except ImportError:  # ansible-core 2.17
        def trust_as_template(text):
            return text

    request = json.load(sys.stdin)
    loader = DataLoader()
    variables = dict(request["variables"])
    for path in request.get("vars_files", []):
        try:
            variables.update(loader.load_from_file(path, trusted_as_template=True))
        except TypeError:  # ansible-core 2.17
            variables.update(loader.load_from_file(path))
    templar = Templar(loader=loader, variables=variables)
    results = []
    for job in request["jobs"]:
        if "template" in job:
            with open(job["template"]) as handle:
                text = handle.read()
        else:
            text = job["expr"]
        results.append(templar.template(trust_as_template(text)))
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
