#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: uv_fetch
short_description: Install uv's binary from its wheel on a package index, without pip or venv
version_added: 0.1.0
description:
  - Installs the C(uv) binary (or another script a wheel ships in C(<name>-<version>.data/scripts/)) into
    O(dest), from the wheel that the index names for O(requirement) - using the Python standard library only,
    so it works on a node that has neither pip nor the C(venv) module (a stock Ubuntu 22.04 without
    C(python3.10-venv), and no root to add it).
  - Reads the project page of O(index_url) (PEP 691 JSON, else PEP 503 HTML), picks the wheel of the pinned
    version for this node's platform the way pip does (C(manylinux_2_Y_ARCH) for the node's glibc, C(musllinux_1_Y_ARCH)
    for musl, the legacy C(manylinux2014) names; tag C(py3-none)), downloads it, checks the sha256 the index
    gives for it (a file without one is refused), unpacks the script with mode 0755 and checks that it runs and
    reports the pinned version before it replaces anything in O(dest).
  - When O(dest)/uv already runs and reports the pinned version, nothing is fetched (no network).
  - Leftovers of an interrupted earlier run never block the next one - partial downloads
    (C(.uv-fetch-*) in O(dest)) are removed, and so is C(.uv-venv) in O(dest), the helper venv earlier
    versions of this collection made with pip.
author:
  - primus.trainenv developers (@primus-trainenv)
attributes:
  check_mode:
    description: Reads the index and reports the wheel it would install; writes and removes nothing.
    support: full
  diff_mode:
    description: Nothing to show beyond the return values.
    support: none
options:
  requirement:
    description:
      - The distribution and its exact version, C(name==version) (for example C(uv==0.13.9)).
    type: str
    required: true
  index_url:
    description:
      - A simple repository API index (PEP 503/691), for example C(https://pypi.org/simple).
      - Credentials in it (C(https://user:token@host/simple)) are sent to that host only, as pip does, and
        shown as C(****) everywhere.
    type: str
    required: true
  dest:
    description: The directory the script is installed into (created when missing).
    type: path
    required: true
  script:
    description: The script of the wheel's C(.data/scripts) directory to install; default the distribution's name.
    type: str
  use_pip_config:
    description:
      - V(false) (default) - like C(primus.trainenv.pip_constrained), pip's configuration files and inherited
        C(PIP_*) variables are ignored; the standard C(http_proxy), C(https_proxy) and C(no_proxy) variables apply
        (pip honours them too).
      - V(true) - the C(proxy) and C(cert) settings of pip's configuration files (C([global]), C([download]),
        C([install])) and C(PIP_PROXY)/C(PIP_CERT) apply as they would to pip.
    type: bool
    default: false
  environment:
    description:
      - Variables set for the requests, applied last (for example C(https_proxy), or C(PIP_PROXY)/C(PIP_CERT),
        which count even when O(use_pip_config=false), as with C(primus.trainenv.pip_constrained)).
    type: dict
    default: {}
  timeout:
    description: Seconds to wait for each request.
    type: int
    default: 60
  retries:
    description: Extra attempts after a failed request that may pass when repeated (HTTP 5xx or 429, reset, timeout), with backoff.
    type: int
    default: 3
notes:
  - The node's Python runs this module; it needs nothing outside the standard library.
  - TLS certificates are checked against the system's trust store (or O(environment)'s C(SSL_CERT_FILE), or pip's C(cert)).
seealso:
  - module: primus.trainenv.pip_constrained
  - name: Simple repository API
    description: PEP 503 and PEP 691 index pages.
    link: https://packaging.python.org/en/latest/specifications/simple-repository-api/
'''

EXAMPLES = r'''
- name: Install uv from PyPI into the base's bin directory
  primus.trainenv.uv_fetch:
    requirement: uv==0.13.9
    index_url: https://pypi.org/simple
    dest: "{{ primus_paths.bin }}"
'''

RETURN = r'''
path:
  description: The installed script.
  returned: always
  type: str
  sample: /home/me/envs/primus-env/bin/uv
version:
  description: What the script printed for C(--version); empty in check mode when it is not installed yet.
  returned: always
  type: str
  sample: uv 0.13.9
filename:
  description: The wheel that was (or in check mode would be) installed; empty when nothing had to change.
  returned: always
  type: str
  sample: uv-0.13.9-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl
url:
  description: Where that wheel was downloaded from, credentials replaced by C(****).
  returned: always
  type: str
  sample: https://files.pythonhosted.org/packages/ab/cd/uv-0.13.9-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl
sha256:
  description: The wheel's sha256, as the index gave it and as it was checked.
  returned: always
  type: str
platform_tag:
  description: The platform tag of this node the wheel was chosen for.
  returned: always
  type: str
  sample: manylinux_2_17_x86_64
removed:
  description: Leftovers of earlier runs that were removed (partial downloads, the old C(.uv-venv) helper).
  returned: always
  type: list
  elements: str
attempts:
  description: Failed requests that were retried, one line each.
  returned: always
  type: list
  elements: str
'''

import glob
import hashlib
import json
import os
import platform
import pwd
import re
import shutil
import ssl
import sys
import tempfile
import time
import zipfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.six.moves.urllib.error import HTTPError, URLError
from ansible.module_utils.six.moves.urllib.request import HTTPSHandler, ProxyHandler, Request, build_opener
from ansible_collections.primus.trainenv.plugins.module_utils.common import redact_url
from ansible_collections.primus.trainenv.plugins.module_utils.glibc import glibc_from_confstr
from ansible_collections.primus.trainenv.plugins.module_utils._pip.command import pip_environ
from ansible_collections.primus.trainenv.plugins.module_utils.wheel_fetch import (
    ACCEPT,
    JSON_TYPE,
    FetchError,
    choose_wheel,
    classify_error,
    linux_platform_tags,
    musl_version,
    parse_pin,
    parse_simple_html,
    parse_simple_json,
    pip_config_files,
    pip_settings,
    project_url,
    python_tags,
    script_member,
    split_credentials,
)

DEBRIS = '.uv-fetch-'
OLD_HELPER = '.uv-venv'
MAX_SCRIPT = 512 * 1024 * 1024
TRANSIENT_HTTP = (429, 500, 502, 503, 504)


class Fetcher:
    def __init__(self, module, index_url, proxy, cert):
        self.module = module
        self.index_url, self.index_host, user, password = split_credentials(index_url)
        self.auth = None
        if user is not None:
            import base64
            token = base64.b64encode(('%s:%s' % (user, password or '')).encode('utf-8')).decode('ascii')
            self.auth = 'Basic ' + token
        handlers = [HTTPSHandler(context=ssl.create_default_context(cafile=cert) if cert else ssl.create_default_context())]
        if proxy:
            handlers.append(ProxyHandler({'http': proxy, 'https': proxy}))
        self.opener = build_opener(*handlers)
        self.timeout = module.params['timeout']
        self.retries = max(0, module.params['retries'])
        self.attempts = []

    def open(self, url, accept=None):
        """The response of a GET, retried with backoff for errors that may pass."""
        clean, host, _user, _password = split_credentials(url)
        headers = {'User-Agent': 'primus.trainenv uv_fetch (python %d.%d)' % sys.version_info[:2]}
        if accept:
            headers['Accept'] = accept
        if self.auth and host == self.index_host:
            headers['Authorization'] = self.auth
        delay = 1
        for attempt in range(self.retries + 1):
            try:
                return self.opener.open(Request(clean, headers=headers), timeout=self.timeout)
            except HTTPError as exc:
                kind, detail = 'http %d' % exc.code, 'HTTP %d %s from %s' % (exc.code, exc.reason, host)
                transient = exc.code in TRANSIENT_HTTP
            except URLError as exc:
                kind = classify_error(exc.reason)
                detail = '%s (%s) reaching %s' % (kind, exc.reason, host)
                transient = kind in ('reset', 'timeout')
            except (IOError, OSError) as exc:   # socket.timeout, connection resets while reading headers
                kind = classify_error(exc)
                detail = '%s (%s) reaching %s' % (kind, exc, host)
                transient = kind in ('reset', 'timeout')
            if not transient or attempt == self.retries:
                raise FetchError('%s: %s' % (redact_url(url), detail), kind)
            self.attempts.append('attempt %d: %s, retrying in %ds' % (attempt + 1, detail, delay))
            time.sleep(delay)
            delay *= 2
        raise FetchError('unreachable')  # pragma: no cover

    def project_files(self, name):
        url = project_url(self.index_url, name)
        response = self.open(url, accept=ACCEPT)
        with response:
            body = response.read()
            content_type = response.headers.get('Content-Type', '').split(';')[0].strip().lower()
            final = response.geturl()
        if content_type == JSON_TYPE:
            try:
                return parse_simple_json(json.loads(body.decode('utf-8')), final)
            except ValueError as exc:
                raise FetchError('%s answered invalid JSON: %s' % (redact_url(url), exc))
        return parse_simple_html(body.decode('utf-8', 'replace'), final)

    def download(self, url, dest_dir, sha256):
        """A temporary file in dest_dir holding url's content, its sha256 checked. A transfer cut
        short (reset, timeout) starts again, like a failed request."""
        delay = 1
        for attempt in range(self.retries + 1):
            fd, path = tempfile.mkstemp(prefix=DEBRIS, suffix='.whl', dir=dest_dir)
            digest = hashlib.sha256()
            try:
                with os.fdopen(fd, 'wb') as out:
                    response = self.open(url)
                    with response:
                        while True:
                            chunk = response.read(1024 * 1024)
                            if not chunk:
                                break
                            digest.update(chunk)
                            out.write(chunk)
                break
            except FetchError:
                os.unlink(path)
                raise
            except (IOError, OSError) as exc:
                os.unlink(path)
                kind = classify_error(exc)
                if kind not in ('reset', 'timeout') or attempt == self.retries:
                    raise FetchError('%s: download failed: %s' % (redact_url(url), exc), kind)
                self.attempts.append('attempt %d: download of %s cut short (%s), retrying in %ds'
                                     % (attempt + 1, redact_url(url), kind, delay))
                time.sleep(delay)
                delay *= 2
        if digest.hexdigest() != sha256:
            os.unlink(path)
            raise FetchError('%s: sha256 mismatch - the index says %s, the download is %s; nothing was installed'
                             % (redact_url(url), sha256, digest.hexdigest()), 'hash')
        return path


def node_platform_tags(module):
    """(platform tags best first, 'glibc 2.35' or 'musl 1.2.4' or '') of this node."""
    try:
        glibc = glibc_from_confstr(os.confstr('CS_GNU_LIBC_VERSION'))
    except (ValueError, OSError, AttributeError):
        glibc = None
    if glibc:
        return linux_platform_tags(platform.machine(), 'glibc', glibc), 'glibc ' + glibc
    for loader in sorted(glob.glob('/lib/ld-musl-*.so.1')):
        rc, out, err = module.run_command([loader])
        version = musl_version(err or out)
        if version:
            return linux_platform_tags(platform.machine(), 'musl', version), 'musl ' + version
    return linux_platform_tags(platform.machine(), '', ''), ''


def reported_version(module, path):
    """What `path --version` printed (first line), or None when it does not run."""
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        return None
    try:
        rc, out, err = module.run_command([path, '--version'])
    except (IOError, OSError):
        return None
    line = (out or '').strip().splitlines()[0] if (out or '').strip() else ''
    return line if rc == 0 else None


def is_version(line, script, version):
    return bool(line) and re.match(r'^%s %s(\s|$)' % (re.escape(script), re.escape(version)), line) is not None


def debris(dest):
    return sorted(glob.glob(os.path.join(dest, DEBRIS + '*')))


def remove(paths):
    removed = []
    for path in paths:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.lexists(path):
            os.unlink(path)
        removed.append(path)
    return removed


def main():
    module = AnsibleModule(
        argument_spec=dict(
            requirement=dict(type='str', required=True),
            index_url=dict(type='str', required=True),
            dest=dict(type='path', required=True),
            script=dict(type='str'),
            use_pip_config=dict(type='bool', default=False),
            environment=dict(type='dict', default={}),
            timeout=dict(type='int', default=60),
            retries=dict(type='int', default=3),
        ),
        supports_check_mode=True,
    )
    params = module.params
    try:
        name, version = parse_pin(params['requirement'])
    except ValueError as exc:
        module.fail_json(msg='%s. Fix primus_pins.uv.requirement in the release pins.' % exc)
    script = params['script'] or name
    if not re.match(r'^[A-Za-z0-9][A-Za-z0-9._-]*$', script):
        module.fail_json(msg='script %r is not a file name' % script)
    if not re.match(r'^https?://', params['index_url']):
        module.fail_json(msg='index_url %s is not an http(s) URL' % redact_url(params['index_url']))
    dest = os.path.abspath(params['dest'])
    target = os.path.join(dest, script)
    result = dict(changed=False, path=target, version='', filename='', url='', sha256='', platform_tag='',
                  removed=[], attempts=[])

    current = reported_version(module, target)
    if is_version(current, script, version):
        result['version'] = current
        module.exit_json(**result)

    # Requests see what pip would see: pip_constrained's environment rule, then pip's proxy/cert settings.
    env = pip_environ(os.environ, params['environment'], params['use_pip_config'])
    os.environ.clear()
    os.environ.update(env)
    try:
        settings = pip_settings(pip_config_files(env, env.get('HOME') or pwd.getpwuid(os.getuid()).pw_dir), env)
    except FetchError as exc:
        module.fail_json(msg=exc.message)
    fetcher = Fetcher(module, params['index_url'], settings.get('proxy'), settings.get('cert'))
    tags, libc = node_platform_tags(module)
    index = redact_url(params['index_url'])

    def fail(exc, what):
        module.fail_json(
            msg='%s %s==%s from %s failed (%s): %s. Check the network and the proxy (with use_pip_config=true, '
                "as primus_pip_use_config: true sets it, pip's proxy and cert settings apply)"
                % (what, name, version, index, exc.kind, exc.message), attempts=fetcher.attempts, **dict(
                    (k, v) for k, v in result.items() if k not in ('changed', 'attempts')))

    try:
        files = fetcher.project_files(name)
        entry, tag = choose_wheel(files, name, version, tags, python_tags(*sys.version_info[:2]))
    except FetchError as exc:
        fail(exc, 'Finding')
    if not entry['sha256']:
        module.fail_json(msg='the index %s gives no sha256 for %s: an unverified binary is not installed. Use an index '
                             'that publishes hashes (PyPI and its mirrors do).' % (index, entry['filename']))
    result.update(filename=entry['filename'], url=redact_url(entry['url']), sha256=entry['sha256'], platform_tag=tag,
                  attempts=fetcher.attempts, changed=True)
    if entry['yanked']:
        reason = '' if entry['yanked'] is True else ': %s' % entry['yanked']
        module.warn('%s is yanked on %s%s' % (entry['filename'], index, reason))
    if module.check_mode:
        module.exit_json(**result)

    if not os.path.isdir(dest):
        os.makedirs(dest, 0o755)
    result['removed'] = remove(debris(dest))
    try:
        wheel = fetcher.download(entry['url'], dest, entry['sha256'])
    except FetchError as exc:
        fail(exc, 'Downloading')
    result['attempts'] = fetcher.attempts
    fd, staged = tempfile.mkstemp(prefix=DEBRIS, dir=dest)
    try:
        with os.fdopen(fd, 'wb') as out:
            with zipfile.ZipFile(wheel) as archive:
                member = script_member(archive.namelist(), name, version, script)
                if member is None or archive.getinfo(member).file_size > MAX_SCRIPT:
                    raise FetchError('%s has no %s-%s.data/scripts/%s' % (entry['filename'], name, version, script))
                with archive.open(member) as data:
                    shutil.copyfileobj(data, out)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(staged, 0o755)
        line = reported_version(module, staged)
        if not is_version(line, script, version):
            raise FetchError('the %s from %s does not run here or is not %s %s (it printed %r); %s was left as it was'
                             % (script, entry['filename'], script, version, line, target))
        os.rename(staged, target)
    except (FetchError, zipfile.BadZipfile, IOError, OSError) as exc:
        remove([staged, wheel])
        module.fail_json(msg='Installing %s==%s: %s' % (name, version, getattr(exc, 'message', None) or exc),
                         **dict((k, v) for k, v in result.items() if k != 'changed'))
    os.unlink(wheel)
    helper = os.path.join(dest, OLD_HELPER)
    if os.path.lexists(helper):
        result['removed'] += remove([helper])
    result['version'] = line
    module.exit_json(**result)


if __name__ == '__main__':
    main()
