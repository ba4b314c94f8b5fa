# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""uv_fetch run as Ansible runs it (a module process) against a real HTTP index on loopback: PEP 503
and PEP 691 pages, wheels with uv's layout, credentials, a proxy, failures and leftovers."""

import base64
import hashlib
import io
import json
import os
import stat
import threading
import zipfile

import pytest

from module_runner import run_module

from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

V = '0.13.9'
GOOD = 'uv-%s-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl' % V


def wheel(version=V, script=None, member=None):
    """A wheel with uv's layout: uv/__init__.py and the binary in uv-<v>.data/scripts/uv."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, 'w') as archive:   # fixed dates: the same wheel has the same sha256
        for path, data, mode in (
                ('uv/__init__.py', '', 0o644),
                (member or 'uv-%s.data/scripts/uv' % version,
                 script if script is not None else '#!/bin/sh\necho "uv %s (stand-in)"\n' % version, 0o755),
                ('uv-%s.dist-info/RECORD' % version, '', 0o644)):
            info = zipfile.ZipInfo(path, date_time=(2026, 7, 20, 0, 0, 0))
            info.external_attr = (0o100000 | mode) << 16
            archive.writestr(info, data)
    return buf.getvalue()


class Index(object):
    """A loopback index: routes {path: [(status, content type, body)]}, the last answer repeats."""

    def __init__(self):
        self.routes = {}
        self.requests = []
        index = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                index.requests.append({'line': self.requestline, 'path': self.path, 'headers': dict(self.headers)})
                path = self.path.split('://', 1)[-1]
                path = path[path.index('/'):] if '://' in self.path else self.path
                answers = index.routes.get(path) or [(404, 'text/plain', b'not found')]
                status, ctype, body = answers.pop(0) if len(answers) > 1 else answers[0]
                self.send_response(status)
                self.send_header('Content-Type', ctype)
                self.send_header('Content-Length', str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.url = 'http://127.0.0.1:%d' % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def publish(self, files, json_api=False, sha=True, page='/simple/uv/'):
        """files: {filename: bytes}; a PEP 503 (or 691) page for them and the files under /files/."""
        entries = []
        for name, data in files.items():
            self.routes['/files/' + name] = [(200, 'application/octet-stream', data)]
            entries.append((name, hashlib.sha256(data).hexdigest() if sha is True else sha))
        if json_api:
            body = json.dumps({'meta': {'api-version': '1.1'}, 'name': 'uv', 'files': [
                {'filename': n, 'url': '../../files/' + n, 'hashes': {'sha256': h} if h else {}, 'yanked': False}
                for n, h in entries]}).encode()
            self.routes[page] = [(200, 'application/vnd.pypi.simple.v1+json', body)]
        else:
            links = ''.join('<a href="/files/%s%s">%s</a><br />\n' % (n, '#sha256=' + h if h else '', n)
                            for n, h in entries)
            self.routes[page] = [(200, 'text/html', ('<html><body>%s</body></html>' % links).encode())]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def index():
    served = Index()
    yield served
    served.close()


def fetch(index, tmpdir, check_mode=False, env=None, **extra):
    args = dict(requirement='uv==' + V, index_url=index.url + '/simple', dest=str(tmpdir.join('bin')), retries=2)
    args.update(extra)
    return run_module('uv_fetch', args, tmpdir, env=env, check_mode=check_mode)


def standard_files():
    return {GOOD: wheel(), 'uv-%s-py3-none-musllinux_1_1_x86_64.whl' % V: wheel(script='#!/bin/sh\necho musl\n'),
            'uv-0.14.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl': wheel('0.14.0')}


@pytest.mark.parametrize('json_api', [False, True])
def test_installs_the_binary_of_the_pinned_wheel(index, tmpdir, json_api):
    index.publish(standard_files(), json_api=json_api)
    result = fetch(index, tmpdir, check_mode=False)
    assert result['_rc'] == 0, result
    uv = tmpdir.join('bin', 'uv')
    assert result['changed'] is True and result['path'] == str(uv)
    assert (result['filename'], result['platform_tag']) == (GOOD, 'manylinux_2_17_x86_64')
    assert result['sha256'] == hashlib.sha256(wheel()).hexdigest()
    assert result['version'] == 'uv 0.13.9 (stand-in)'
    assert stat.S_IMODE(os.stat(str(uv)).st_mode) == 0o755
    assert sorted(os.listdir(str(tmpdir.join('bin')))) == ['uv']
    accept = index.requests[0]['headers']['Accept']
    assert accept.startswith('application/vnd.pypi.simple.v1+json')


def test_a_converged_node_fetches_nothing(index, tmpdir):
    index.publish(standard_files())
    assert fetch(index, tmpdir)['changed'] is True
    before = len(index.requests)
    again = fetch(index, tmpdir)
    assert again['_rc'] == 0 and again['changed'] is False and again['version'] == 'uv 0.13.9 (stand-in)'
    assert len(index.requests) == before, 'no request on a converged node'


def test_check_mode_names_the_wheel_and_writes_nothing(index, tmpdir):
    index.publish(standard_files())
    result = fetch(index, tmpdir, check_mode=True)
    assert result['_rc'] == 0 and result['changed'] is True and result['filename'] == GOOD
    assert not tmpdir.join('bin').check()
    assert [r['path'] for r in index.requests] == ['/simple/uv/']


def test_another_version_in_dest_is_replaced(index, tmpdir):
    index.publish(standard_files())
    old = tmpdir.join('bin').ensure(dir=True).join('uv')
    old.write('#!/bin/sh\necho "uv 0.12.0"\n')
    old.chmod(0o755)
    result = fetch(index, tmpdir)
    assert result['changed'] is True and result['version'].startswith('uv 0.13.9')


def test_leftovers_of_an_earlier_failure_do_not_block(index, tmpdir):
    index.publish(standard_files())
    bindir = tmpdir.join('bin').ensure(dir=True)
    bindir.join('.uv-venv', 'bin').ensure(dir=True)
    os.symlink('/nonexistent/python3.10', str(bindir.join('.uv-venv', 'bin', 'python')))
    os.symlink('.uv-venv/bin/uv', str(bindir.join('uv')))              # the old link, dangling
    bindir.join('.uv-fetch-1a2b3c.whl').write(b'PK\x03\x04half a wheel')   # a killed download
    result = fetch(index, tmpdir)
    assert result['_rc'] == 0, result
    assert sorted(os.path.basename(p) for p in result['removed']) == ['.uv-fetch-1a2b3c.whl', '.uv-venv']
    assert sorted(os.listdir(str(bindir))) == ['uv'] and not bindir.join('uv').islink()


def test_a_sha256_mismatch_installs_nothing(index, tmpdir):
    index.publish(standard_files(), sha='0' * 64)
    result = fetch(index, tmpdir)
    assert result['_rc'] == 1 and result.get('failed')
    assert 'sha256 mismatch - the index says %s' % ('0' * 64) in result['msg']
    assert os.listdir(str(tmpdir.join('bin'))) == []


def test_a_wheel_without_a_hash_is_refused(index, tmpdir):
    index.publish(standard_files(), sha=None)
    result = fetch(index, tmpdir)
    assert result['_rc'] == 1 and 'gives no sha256 for %s' % GOOD in result['msg']
    assert not tmpdir.join('bin').check()


def test_a_wheel_without_the_script_is_named(index, tmpdir):
    index.publish({GOOD: wheel(member='uv/uv')})
    result = fetch(index, tmpdir)
    assert result['_rc'] == 1 and 'has no uv-0.13.9.data/scripts/uv' in result['msg']
    assert os.listdir(str(tmpdir.join('bin'))) == []


def test_a_binary_that_does_not_run_here_replaces_nothing(index, tmpdir):
    index.publish({GOOD: wheel(script='#!/bin/sh\necho "cannot execute binary file: Exec format error" >&2\nexit 126\n')})
    bindir = tmpdir.join('bin').ensure(dir=True)
    old = bindir.join('uv')
    old.write('#!/bin/sh\necho "uv 0.12.0"\n')
    old.chmod(0o755)
    result = fetch(index, tmpdir)
    assert result['_rc'] == 1 and 'does not run here or is not uv 0.13.9' in result['msg']
    assert old.read() == '#!/bin/sh\necho "uv 0.12.0"\n' and os.listdir(str(bindir)) == ['uv']


def test_no_wheel_for_this_platform(index, tmpdir):
    index.publish({'uv-%s-py3-none-macosx_11_0_arm64.whl' % V: wheel(), 'uv-%s-py3-none-win_amd64.whl' % V: wheel()})
    result = fetch(index, tmpdir)
    assert result['_rc'] == 1
    assert 'no wheel of uv==0.13.9 fits this node' in result['msg'] and 'win_amd64' in result['msg']


def test_a_project_the_index_does_not_have(index, tmpdir):
    result = fetch(index, tmpdir)
    assert result['_rc'] == 1
    assert 'Finding uv==0.13.9 from %s/simple failed (http 404)' % index.url in result['msg']
    assert 'HTTP 404' in result['msg'] and '127.0.0.1' in result['msg']


def test_503_twice_then_200_is_retried(index, tmpdir):
    index.publish(standard_files())
    page = index.routes['/simple/uv/'][0]
    index.routes['/simple/uv/'] = [(503, 'text/plain', b'busy'), (503, 'text/plain', b'busy'), page]
    result = fetch(index, tmpdir)
    assert result['_rc'] == 0 and result['changed'] is True, result
    assert len(result['attempts']) == 2 and 'HTTP 503' in result['attempts'][0]


def test_a_refused_connection_is_named(tmpdir):
    import socket
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    port = sock.getsockname()[1]
    sock.close()
    result = run_module('uv_fetch', dict(requirement='uv==' + V, index_url='http://127.0.0.1:%d/simple' % port,
                                         dest=str(tmpdir.join('bin'))), tmpdir, check_mode=False)
    assert result['_rc'] == 1 and '(refused)' in result['msg'], result['msg']


def test_credentials_go_to_the_index_host_only_and_are_never_shown(index, tmpdir):
    files = Index()   # the wheels live on another host, as files.pythonhosted.org does for pypi.org
    try:
        files.publish(standard_files())
        index.publish(standard_files())
        body = index.routes['/simple/uv/'][0][2].decode().replace('href="/files/', 'href="%s/files/' % files.url)
        index.routes['/simple/uv/'] = [(200, 'text/html', body.encode())]
        url = index.url.replace('http://', 'http://ci%40corp:s3cr3t-t0ken@') + '/simple'
        result = fetch(index, tmpdir, index_url=url)
        assert result['_rc'] == 0, result
        assert index.requests[0]['headers']['Authorization'] == 'Basic ' + base64.b64encode(b'ci@corp:s3cr3t-t0ken').decode()
        download = files.requests[-1]
        assert download['path'].endswith(GOOD) and 'Authorization' not in download['headers']
        assert 's3cr3t-t0ken' not in json.dumps(result)
        failed = fetch(index, tmpdir, index_url=url.replace('/simple', '/nothing'), dest=str(tmpdir.join('bin2')))
        assert 's3cr3t-t0ken' not in json.dumps(failed) and 'ci%40corp:****@' in failed['msg']
    finally:
        files.close()


def test_pips_proxy_setting_applies_only_with_use_pip_config(index, tmpdir):
    proxy = Index()
    try:
        files = standard_files()
        proxy.publish(files)
        index.publish(files)
        conf = tmpdir.join('pip.conf')
        conf.write('[global]\nproxy = %s\n' % proxy.url)
        env = {'PIP_CONFIG_FILE': str(conf), 'http_proxy': '', 'HTTP_PROXY': '', 'no_proxy': '', 'NO_PROXY': ''}
        ignored = fetch(index, tmpdir, env=env, dest=str(tmpdir.join('a')))
        assert ignored['_rc'] == 0 and proxy.requests == [] and index.requests
        used = fetch(index, tmpdir, env=env, dest=str(tmpdir.join('b')), use_pip_config=True)
        assert used['_rc'] == 0, used
        assert proxy.requests[0]['line'].startswith('GET %s/simple/uv/ ' % index.url), proxy.requests[0]
        by_variable = fetch(index, tmpdir, env={'no_proxy': '', 'NO_PROXY': ''}, dest=str(tmpdir.join('c')),
                            environment={'PIP_PROXY': proxy.url})
        assert by_variable['_rc'] == 0 and len(proxy.requests) == 4   # environment's PIP_PROXY always counts
    finally:
        proxy.close()


@pytest.mark.parametrize('requirement', ['uv', 'uv>=0.13', 'uv==0.13.9 --index-url=http://x'])
def test_an_unpinned_requirement_is_refused(index, tmpdir, requirement):
    result = fetch(index, tmpdir, requirement=requirement)
    assert result['_rc'] == 1 and 'must pin one exact version' in result['msg']
    assert index.requests == []
