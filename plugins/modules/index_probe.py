#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: index_probe
short_description: Check that every file of the release lock is still served by its index
version_added: 0.1.0
description:
  - Reads the project page (PEP 503) of every project of O(files) on its index of O(indexes), in parallel (at most
    O(concurrency) at a time, each request bounded by O(timeout)), and checks that each locked file is still listed
    there with its locked sha256. Nothing is downloaded but the index pages.
  - Fails with one message that lists the files no longer served (missing, listed with another hash, or whose page
    could not be read) by index and nightly date, and says what to do (re-lock, a wheelhouse or a site mirror).
  - Credentials for an index host come from C(~/.netrc) (as pip reads them); proxies from C(http_proxy)/C(https_proxy).
  - Read-only; it never changes the node.
author:
  - primus.trainenv developers (@primus-trainenv)
extends_documentation_fragment:
  - primus.trainenv.attributes.read_only
options:
  indexes:
    description: Index name to its URL (the pins' C(indexes), site mirrors applied).
    type: dict
    required: true
  files:
    description: The lock's entries (C(filename), C(name), C(index), C(sha256), ...); entries of other indexes are ignored.
    type: list
    elements: dict
    required: true
  release:
    description: The release, for the message.
    type: str
    default: ""
  concurrency:
    description: Index pages read at the same time.
    type: int
    default: 8
  timeout:
    description: Seconds each page read may take.
    type: float
    default: 10
'''

EXAMPLES = r'''
- name: Check that the locked files are still served
  primus.trainenv.index_probe:
    indexes: "{{ primus_pins.indexes }}"
    files: "{{ primus_release_lock_data.files }}"
    release: "{{ primus_pins.release }}"
'''

RETURN = r'''
pages:
  description: How many project pages were read.
  returned: always
  type: int
checked:
  description: How many locked files were checked.
  returned: always
  type: int
missing:
  description: The locked files not served as locked (index, file, nightly date, problem - missing, changed, unreadable).
  returned: always
  type: list
  elements: dict
seconds:
  description: Wall time of the probe.
  returned: always
  type: float
'''

import base64
import netrc
import os
import time
from concurrent.futures import ThreadPoolExecutor

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.six.moves.urllib.error import HTTPError, URLError
from ansible.module_utils.six.moves.urllib.parse import unquote, urlsplit
from ansible.module_utils.urls import ConnectionError as UrlConnectionError, open_url
from ansible_collections.primus.trainenv.plugins.module_utils import release_lock


def _netrc_auth():
    try:
        return netrc.netrc()
    except (IOError, OSError, netrc.NetrcParseError):
        return None


def read_page(url, timeout, auth):
    """The page's files, {} for a 404 (or a missing directory of a file:// index), None when it cannot be read."""
    parts = urlsplit(url)
    if parts.scheme == 'file':
        # a local PEP 503 tree (an offline wheelhouse): <project>/index.html, as pip reads it
        path = os.path.join(unquote(parts.path), 'index.html')
        if not os.path.exists(path):
            return {}
        try:
            with open(path, 'rb') as handle:
                return release_lock.parse_simple_page(handle.read().decode('utf-8', 'replace'))
        except (IOError, OSError):
            return None
    host = urlsplit(url).hostname
    found = auth.authenticators(host) if auth and host else None
    headers = {}
    if found:
        token = base64.b64encode(('%s:%s' % (found[0], found[2])).encode('utf-8')).decode('ascii')
        headers['Authorization'] = 'Basic %s' % token
    try:
        response = open_url(url, headers=headers, timeout=timeout, use_netrc=False)
        try:
            return release_lock.parse_simple_page(response.read().decode('utf-8', 'replace'))
        finally:
            response.close()
    except HTTPError as exc:
        return {} if exc.code == 404 else None
    except (URLError, UrlConnectionError, IOError, OSError, ValueError):
        return None


def main():
    module = AnsibleModule(
        argument_spec=dict(
            indexes=dict(type='dict', required=True),
            files=dict(type='list', elements='dict', required=True),
            release=dict(type='str', default=''),
            concurrency=dict(type='int', default=8),
            timeout=dict(type='float', default=10.0),
        ),
        supports_check_mode=True,
    )
    params = module.params
    start = time.time()
    indexes = dict((k, v) for k, v in params['indexes'].items() if v)
    groups = release_lock.probe_groups({'files': params['files']}, indexes)
    auth = _netrc_auth()
    keys = sorted(groups)
    urls = ['%s/%s/' % (indexes[index].rstrip('/'), project) for index, project in keys]
    with ThreadPoolExecutor(max(1, min(params['concurrency'], 64))) as pool:
        pages = dict(zip(keys, pool.map(lambda u: read_page(u, params['timeout'], auth), urls)))
    verdicts = release_lock.probe_verdicts(groups, pages)
    result = dict(changed=False, pages=len(keys), checked=sum(len(v) for v in groups.values()), missing=verdicts,
                  seconds=round(time.time() - start, 2))
    if verdicts:
        module.fail_json(msg=release_lock.probe_message(verdicts, indexes, params['release']), **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
