# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Index pages, wheel names, platform tags and pip settings (module_utils.wheel_fetch).

The index pages below have PyPI's real shapes (its PEP 503 page with data-requires-python, the
metadata attributes and <br /> between links; its PEP 691 JSON with hashes, core-metadata,
provenance, size, upload-time and yanked) and uv's real file set of one release.
"""

import pytest

from ansible_collections.primus.trainenv.plugins.module_utils.common import redact_url
from ansible_collections.primus.trainenv.plugins.module_utils.wheel_fetch import (
    FetchError,
    choose_wheel,
    classify_error,
    linux_platform_tags,
    musl_version,
    parse_pin,
    parse_simple_html,
    parse_simple_json,
    parse_wheel_filename,
    pip_config_files,
    pip_settings,
    project_url,
    python_tags,
    script_member,
    split_credentials,
)

V = '0.13.9'
UV_FILES = [  # what PyPI publishes for one uv release
    'uv-%s-py3-none-linux_armv6l.whl',
    'uv-%s-py3-none-macosx_10_12_x86_64.whl',
    'uv-%s-py3-none-macosx_11_0_arm64.whl',
    'uv-%s-py3-none-manylinux_2_17_aarch64.manylinux2014_aarch64.musllinux_1_1_aarch64.whl',
    'uv-%s-py3-none-manylinux_2_17_armv7l.manylinux2014_armv7l.whl',
    'uv-%s-py3-none-manylinux_2_17_i686.manylinux2014_i686.whl',
    'uv-%s-py3-none-manylinux_2_17_ppc64.manylinux2014_ppc64.whl',
    'uv-%s-py3-none-manylinux_2_17_ppc64le.manylinux2014_ppc64le.whl',
    'uv-%s-py3-none-manylinux_2_17_s390x.manylinux2014_s390x.whl',
    'uv-%s-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl',
    'uv-%s-py3-none-manylinux_2_31_riscv64.whl',
    'uv-%s-py3-none-musllinux_1_1_armv7l.whl',
    'uv-%s-py3-none-musllinux_1_1_i686.whl',
    'uv-%s-py3-none-musllinux_1_1_x86_64.whl',
    'uv-%s-py3-none-win32.whl',
    'uv-%s-py3-none-win_amd64.whl',
    'uv-%s-py3-none-win_arm64.whl',
    'uv-%s.tar.gz',
]
PAGE = 'https://pypi.org/simple/uv/'
HEX = 'ab' * 32


def entries(version=V, yanked=()):
    return [{'filename': f % version, 'url': 'https://files.example/%s' % (f % version), 'sha256': HEX,
             'yanked': (f % version) in yanked, 'requires_python': '>=3.8'} for f in UV_FILES]


# --- the simple API ---------------------------------------------------------------------------

PEP503 = (
    '<!DOCTYPE html>\n'
    '<html>\n'
    '  <head>\n'
    '    <meta name="pypi:repository-version" content="1.4">\n'
    '    <title>Links for uv</title>\n'
    '  </head>\n'
    '  <body>\n'
    '    <h1>Links for uv</h1>\n'
    '    <a href="https://files.pythonhosted.org/packages/0b/6e/'
    'uv-0.13.9-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl#sha256=%(h1)s" '
    'data-requires-python="&gt;=3.8" data-dist-info-metadata="sha256=%(h2)s" data-core-metadata="sha256=%(h2)s">'
    'uv-0.13.9-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl</a><br />\n'
    '    <a href="../../packages/uv-0.13.9.tar.gz#sha256=%(h2)s" data-requires-python="&gt;=3.8" >uv-0.13.9.tar.gz</a><br />\n'
    '    <a href="https://files.pythonhosted.org/packages/uv-0.1.0-py3-none-win32.whl#md5=0123456789abcdef0123456789abcdef" '
    'data-yanked="">uv-0.1.0-py3-none-win32.whl</a><br />\n'
    '    <a href="https://files.pythonhosted.org/packages/uv-0.2.0-py3-none-win32.whl#sha256=%(h1)s" '
    'data-yanked="broken &amp; withdrawn">uv-0.2.0-py3-none-win32.whl</a><br />\n'
    '  </body>\n'
    '</html>\n'
    '<!--SERIAL 31234567-->\n'
) % {'h1': '1f' * 32, 'h2': '2E' * 32}


def test_pep503_page_as_pypi_serves_it():
    files = parse_simple_html(PEP503, PAGE)
    assert [f['filename'] for f in files] == [
        'uv-0.13.9-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl', 'uv-0.13.9.tar.gz',
        'uv-0.1.0-py3-none-win32.whl', 'uv-0.2.0-py3-none-win32.whl']
    first, sdist, md5_only, yanked = files
    assert first['url'] == ('https://files.pythonhosted.org/packages/0b/6e/'
                            'uv-0.13.9-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl')
    assert first['sha256'] == '1f' * 32 and first['requires_python'] == '>=3.8' and first['yanked'] is False
    assert sdist['url'] == 'https://pypi.org/packages/uv-0.13.9.tar.gz'   # relative to the page
    assert sdist['sha256'] == '2e' * 32                                    # lower-cased
    assert md5_only['sha256'] is None and md5_only['yanked'] is True       # data-yanked without a reason
    assert yanked['yanked'] == 'broken & withdrawn'


def test_pep691_json_as_pypi_serves_it():
    data = {
        'meta': {'_last-serial': 31234567, 'api-version': '1.4'}, 'name': 'uv', 'versions': ['0.13.9'],
        'files': [
            {'core-metadata': {'sha256': '2e' * 32}, 'data-dist-info-metadata': {'sha256': '2e' * 32},
             'filename': 'uv-0.13.9-py3-none-musllinux_1_1_x86_64.whl', 'hashes': {'sha256': '1F' * 32},
             'provenance': None, 'requires-python': '>=3.8', 'size': 17654321, 'upload-time': '2026-07-01T12:00:00Z',
             'url': 'https://files.pythonhosted.org/packages/ab/uv-0.13.9-py3-none-musllinux_1_1_x86_64.whl',
             'yanked': False},
            {'filename': 'uv-0.13.9.tar.gz', 'hashes': {}, 'url': '/packages/uv-0.13.9.tar.gz', 'yanked': 'bad build'},
            {'filename': '', 'url': 'x'},
        ]}
    files = parse_simple_json(data, PAGE)
    assert [(f['filename'], f['sha256'], f['yanked']) for f in files] == [
        ('uv-0.13.9-py3-none-musllinux_1_1_x86_64.whl', '1f' * 32, False),
        ('uv-0.13.9.tar.gz', None, 'bad build')]
    assert files[1]['url'] == 'https://pypi.org/packages/uv-0.13.9.tar.gz'


def test_json_without_files_is_refused():
    with pytest.raises(FetchError):
        parse_simple_json({'message': 'not found'}, PAGE)


# --- names and requirements ----------------------------------------------------------------------

def test_project_names_and_urls():
    assert project_url('https://pypi.org/simple', 'UV') == 'https://pypi.org/simple/uv/'
    assert project_url('https://pypi.org/simple/', 'uv') == 'https://pypi.org/simple/uv/'


@pytest.mark.parametrize('text, pin', [('uv==0.13.9', ('uv', '0.13.9')), (' uv == 0.13.9 ', ('uv', '0.13.9')),
                                       ('my_tool==1.0rc1', ('my_tool', '1.0rc1'))])
def test_exact_pins(text, pin):
    assert parse_pin(text) == pin


@pytest.mark.parametrize('text', ['uv', 'uv>=0.13', 'uv==', 'uv===0.13.9', '==0.13.9', 'uv==0.13.*;x', '-r x==1',
                                  'uv==0.13.9 --index-url=http://evil', None])
def test_anything_but_an_exact_pin_is_refused(text):
    with pytest.raises(ValueError) as err:
        parse_pin(text)
    assert 'must pin one exact version' in str(err.value)


def test_wheel_filenames():
    wheel = parse_wheel_filename('uv-0.13.9-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl')
    assert wheel['name'] == 'uv' and wheel['version'] == '0.13.9' and wheel['build'] is None
    assert wheel['platforms'] == {'manylinux_2_17_x86_64', 'manylinux2014_x86_64'}
    built = parse_wheel_filename('my_pkg-1.0-2-py2.py3-none-any.whl')
    assert built['build'] == '2' and built['pythons'] == {'py2', 'py3'}
    assert parse_wheel_filename('uv-0.13.9.tar.gz') is None
    assert parse_wheel_filename('uv-0.13.9-py3-none.whl') is None


def test_script_member():
    names = ['uv/__init__.py', 'uv-0.13.9.data/scripts/uv', 'uv-0.13.9.data/scripts/uvx', 'uv-0.13.9.dist-info/RECORD']
    assert script_member(names, 'uv', '0.13.9', 'uv') == 'uv-0.13.9.data/scripts/uv'
    assert script_member(names, 'uv', '0.13.9', 'uvx') == 'uv-0.13.9.data/scripts/uvx'
    assert script_member(names, 'uv', '0.14.0', 'uv') is None
    assert script_member(['my_tool-1.0.data/scripts/my-tool'], 'my-tool', '1.0', 'my-tool') == 'my_tool-1.0.data/scripts/my-tool'


# --- platform tags and the choice ----------------------------------------------------------------

def test_glibc_tags_best_first_with_legacy_aliases():
    tags = linux_platform_tags('x86_64', 'glibc', '2.35')
    assert tags[:3] == ['manylinux_2_35_x86_64', 'manylinux_2_34_x86_64', 'manylinux_2_33_x86_64']
    assert tags.index('manylinux2014_x86_64') == tags.index('manylinux_2_17_x86_64') + 1
    assert 'manylinux2010_x86_64' in tags and 'manylinux1_x86_64' in tags
    assert tags[-1] == 'linux_x86_64' and not any('musllinux' in t for t in tags)
    arm = linux_platform_tags('aarch64', 'glibc', '2.31')
    assert 'manylinux2014_aarch64' in arm and 'manylinux2010_aarch64' not in arm


def test_musl_tags():
    assert linux_platform_tags('x86_64', 'musl', '1.2.4') == [
        'musllinux_1_2_x86_64', 'musllinux_1_1_x86_64', 'musllinux_1_0_x86_64', 'linux_x86_64']


def test_unknown_libc_and_odd_machines():
    assert linux_platform_tags('AMD64', '', '') == ['linux_x86_64']
    assert linux_platform_tags('i586', 'glibc', '2.5')[0] == 'manylinux_2_5_i686'


@pytest.mark.parametrize('machine, libc, version, chosen', [
    ('x86_64', 'glibc', '2.35', 'uv-0.13.9-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl'),  # Ubuntu 22.04
    ('x86_64', 'glibc', '2.17', 'uv-0.13.9-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl'),  # EL7
    ('aarch64', 'glibc', '2.39', 'uv-0.13.9-py3-none-manylinux_2_17_aarch64.manylinux2014_aarch64.musllinux_1_1_aarch64.whl'),
    ('aarch64', 'musl', '1.2.5', 'uv-0.13.9-py3-none-manylinux_2_17_aarch64.manylinux2014_aarch64.musllinux_1_1_aarch64.whl'),
    ('x86_64', 'musl', '1.2.4', 'uv-0.13.9-py3-none-musllinux_1_1_x86_64.whl'),                        # Alpine
    ('riscv64', 'glibc', '2.39', 'uv-0.13.9-py3-none-manylinux_2_31_riscv64.whl'),
    ('armv6l', 'glibc', '2.36', 'uv-0.13.9-py3-none-linux_armv6l.whl'),
])
def test_the_wheel_for_the_node(machine, libc, version, chosen):
    entry, tag = choose_wheel(entries(), 'uv', V, linux_platform_tags(machine, libc, version), python_tags(3, 10))
    assert entry['filename'] == chosen
    assert tag in parse_wheel_filename(chosen)['platforms']


def test_only_the_pinned_version():
    files = entries('0.14.0') + entries(V)
    entry, _tag = choose_wheel(files, 'UV', V, linux_platform_tags('x86_64', 'glibc', '2.35'), python_tags(3, 12))
    assert '-0.13.9-' in entry['filename']


def test_no_fitting_wheel_names_the_platform_and_the_files():
    with pytest.raises(FetchError) as err:
        choose_wheel(entries(), 'uv', V, linux_platform_tags('x86_64', 'glibc', '2.12'), python_tags(3, 10))
    message = err.value.message
    assert 'no wheel of uv==0.13.9 fits this node (platform manylinux_2_12_x86_64)' in message
    assert 'uv-0.13.9-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl' in message and 'uv-0.13.9.tar.gz' in message


def test_a_version_the_index_does_not_have():
    with pytest.raises(FetchError) as err:
        choose_wheel(entries('0.14.0'), 'uv', V, linux_platform_tags('x86_64', 'glibc', '2.35'), python_tags(3, 10))
    assert err.value.message == 'the index has no file of uv==0.13.9'


def test_an_abi_or_python_specific_wheel_is_not_a_script_wheel():
    files = [{'filename': 'uv-0.13.9-cp312-cp312-manylinux_2_17_x86_64.whl', 'url': 'u', 'sha256': HEX,
              'yanked': False, 'requires_python': None}]
    with pytest.raises(FetchError):
        choose_wheel(files, 'uv', V, linux_platform_tags('x86_64', 'glibc', '2.35'), python_tags(3, 12))


def test_a_yanked_file_only_when_nothing_else_fits():
    linux = linux_platform_tags('x86_64', 'glibc', '2.35')
    best = 'uv-0.13.9-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl'
    plain = {'filename': 'uv-0.13.9-py3-none-linux_x86_64.whl', 'url': 'u', 'sha256': HEX, 'yanked': False,
             'requires_python': None}
    assert choose_wheel(entries() + [plain], 'uv', V, linux, python_tags(3, 10))[0]['filename'] == best
    entry, tag = choose_wheel(entries(yanked=(best,)) + [plain], 'uv', V, linux, python_tags(3, 10))
    assert (entry['filename'], tag) == ('uv-0.13.9-py3-none-linux_x86_64.whl', 'linux_x86_64')
    only = [e for e in entries(yanked=(best,)) if e['filename'] == best]
    assert choose_wheel(only, 'uv', V, linux, python_tags(3, 10))[0]['filename'] == best


def test_python_tags():
    assert python_tags(3, 10)[:3] == ['py310', 'py3', 'py39']


# --- credentials, errors, the musl loader ------------------------------------------------------

def test_credentials_are_split_off_and_redacted():
    url = 'https://build%40corp:t0k%3Aen@mirror.corp:8443/pypi/simple'
    assert redact_url(url) == 'https://build%40corp:****@mirror.corp:8443/pypi/simple'
    assert split_credentials(url) == ('https://mirror.corp:8443/pypi/simple', 'mirror.corp:8443', 'build@corp', 't0k:en')
    assert redact_url('https://pypi.org/simple') == 'https://pypi.org/simple'
    assert split_credentials('https://pypi.org/simple')[2:] == (None, None)


@pytest.mark.parametrize('reason, kind', [
    ('[Errno -2] Name or service not known', 'dns'), ('[Errno -3] Temporary failure in name resolution', 'dns'),
    ('[Errno 111] Connection refused', 'refused'), ('[Errno 104] Connection reset by peer', 'reset'),
    ('Remote end closed connection without response', 'reset'), ('timed out', 'timeout'),
    ('[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate', 'tls'),
    ('something else', 'other'),
])
def test_error_classes(reason, kind):
    assert classify_error(reason) == kind


def test_musl_loader_version():
    text = ('musl libc (x86_64)\nVersion 1.2.4\nDynamic Program Loader\n'
            'Usage: /lib/ld-musl-x86_64.so.1 [options] [--] pathname [args]\n')
    assert musl_version(text) == '1.2.4'
    assert musl_version('ldd (GNU libc) 2.35') is None
    assert musl_version('') is None


# --- pip's proxy and cert settings ---------------------------------------------------------------

def test_pip_config_files_in_pips_order():
    files = pip_config_files({'XDG_CONFIG_DIRS': '/etc/xdg:/opt/xdg', 'PIP_CONFIG_FILE': '/srv/pip.conf',
                              'VIRTUAL_ENV': '/venv'}, '/home/u')
    assert files == ['/opt/xdg/pip/pip.conf', '/etc/xdg/pip/pip.conf', '/etc/pip.conf', '/home/u/.pip/pip.conf',
                     '/home/u/.config/pip/pip.conf', '/venv/pip.conf', '/srv/pip.conf']
    assert pip_config_files({'PIP_CONFIG_FILE': '/dev/null'}, '/home/u') == []


def test_pip_settings_later_files_and_variables_win(tmpdir):
    site = tmpdir.join('etc-pip.conf')
    site.write('[global]\nproxy = http://site-proxy:3128\ncert = /etc/ssl/site.pem\n')
    user = tmpdir.join('user-pip.conf')
    user.write('[install]\nproxy = http://user-proxy:8080\nfind-links = /x\n')
    files = [str(site), str(tmpdir.join('missing.conf')), str(user)]
    assert pip_settings(files, {}) == {'proxy': 'http://user-proxy:8080', 'cert': '/etc/ssl/site.pem'}
    assert pip_settings(files, {'PIP_PROXY': 'http://env-proxy:1'})['proxy'] == 'http://env-proxy:1'
    assert pip_settings([], {}) == {}


def test_a_broken_pip_config_is_named(tmpdir):
    broken = tmpdir.join('pip.conf')
    broken.write('proxy = x\n')
    with pytest.raises(FetchError) as err:
        pip_settings([str(broken)], {})
    assert 'pip configuration %s cannot be read' % broken in err.value.message
