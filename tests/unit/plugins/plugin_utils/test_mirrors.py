# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Site mirrors (plugins/plugin_utils/mirrors.py): validation, the pins rewrite, git's insteadOf and the PyPI index."""

import os
import subprocess

import pytest

from ansible_collections.primus.trainenv.plugins.plugin_utils import mirrors

PINS = {
    'indexes': {'pypi': 'https://pypi.org/simple', 'torch': 'https://rocm.example/whl', 'te': 'https://te.example/'},
    'torchrec': {'packages': ['tensordict', 'git+https://github.com/mlperf/logging.git']},
    'sources': {'te': {'repo': 'https://github.com/ROCm/TransformerEngine.git'}},
}


def test_no_mirrors_keeps_the_pins_and_pypi_index():
    run = mirrors.apply(PINS, {})
    assert run['pins'] == PINS
    assert run['git_environment'] == {}
    assert run['pypi_index_url'] == 'https://pypi.org/simple'


def test_use_pip_config_without_pypi_mirror_passes_no_index_url():
    assert mirrors.apply(PINS, {}, use_pip_config=True)['pypi_index_url'] == ''
    run = mirrors.apply(PINS, {'indexes': {'pypi': 'https://m.example/simple'}}, use_pip_config=True)
    assert run['pypi_index_url'] == 'https://m.example/simple'


def test_indexes_and_git_urls_are_rewritten():
    run = mirrors.apply(PINS, {'indexes': {'torch': 'http://127.0.0.1:9/rocm/'},
                               'git': {'https://github.com/': 'https://git.example/gh/'}})
    pins = run['pins']
    assert pins['indexes'] == dict(PINS['indexes'], torch='http://127.0.0.1:9/rocm/')
    assert pins['torchrec']['packages'] == ['tensordict', 'git+https://git.example/gh/mlperf/logging.git']
    # the source repos keep their URL (git's insteadOf rewrites them, with their submodules)
    assert pins['sources'] == PINS['sources']
    assert PINS['indexes']['torch'] == 'https://rocm.example/whl'   # the input is not modified
    assert run['git_environment'] == {'GIT_CONFIG_COUNT': '1', 'GIT_CONFIG_KEY_0': 'url.https://git.example/gh/.insteadOf',
                                      'GIT_CONFIG_VALUE_0': 'https://github.com/'}


def test_a_plain_http_index_mirror_is_a_trusted_host_for_pip():
    # pip ignores an http index on another host ("not a trusted or secure host") unless told to trust it.
    run = mirrors.apply(PINS, {'indexes': {'pypi': 'http://devpi.site:3141/root/pypi/+simple/',
                                           'torch': 'http://devpi.site:3141/rocm/', 'te': 'https://m.example/te/'}})
    assert run['trusted_hosts'] == ['devpi.site:3141']
    assert mirrors.apply(PINS, {'indexes': {'pypi': 'https://m.example/simple'}})['trusted_hosts'] == []
    assert mirrors.apply(PINS, {})['trusted_hosts'] == []


def test_git_environment_rewrites_urls_for_git_itself(tmp_path):
    """The variables are what git reads: `git ls-remote` of the original prefix asks the mirror."""
    mirror = tmp_path / 'mirror'
    subprocess.run(['git', 'init', '-q', '--bare', str(mirror / 'repo.git')], check=True)
    env = dict(os.environ, **mirrors.git_environment({'https://github.invalid/': 'file://%s/' % mirror}))
    proc = subprocess.run(['git', 'ls-remote', 'https://github.invalid/repo.git'], env=env, capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize('value, expected', [
    ({'indexes': {'pypi': 'https://user:s3cret@m.example/simple'}}, 'carries credentials'),
    ({'indexes': {'pypi': 'ftp://m.example/simple'}}, 'not an http(s) or file URL'),
    ({'indexes': {'pypi': '-https://m.example/'}}, 'starts with "-"'),
    ({'indexes': {'pypi': 'https://m.example/simple a'}}, 'whitespace'),
    ({'indexes': {'pypi': 'https:///simple'}}, 'has no host'),
    ({'indexes': {'pypi': 'https://m.example/simple?x=1'}}, 'query or fragment'),
    ({'indexes': {'nightly': 'https://m.example/simple'}}, 'the release pins have no index nightly'),
    ({'git': {'https://github.com': 'https://git.example/'}}, 'must end with "/"'),
    ({'git': {'https://github.com/': 'https://tok3nXXXXX@git.example/'}}, 'carries credentials'),
    ({'mirror': {}}, 'unknown keys mirror'),
    (['https://m.example/'], 'must be a mapping'),
])
def test_bad_values_are_refused_with_the_setting_named(value, expected):
    with pytest.raises(mirrors.MirrorError) as err:
        mirrors.apply(PINS, value)
    assert expected in str(err.value)
    assert 'primus_mirrors' in str(err.value)
    assert 's3cret' not in str(err.value) and 'tok3nXXXXX' not in str(err.value)


def test_a_wheelhouse_replaces_every_index_and_git_host():
    run = mirrors.apply(PINS, {}, wheelhouse='/shared/wh')
    assert run['pins']['indexes'] == {'pypi': 'file:///shared/wh/pypi/simple', 'torch': 'file:///shared/wh/torch/simple',
                                      'te': 'file:///shared/wh/te/simple'}
    assert run['pypi_index_url'] == 'file:///shared/wh/pypi/simple'
    env = run['git_environment']
    assert env['GIT_CONFIG_COUNT'] == '2'
    assert (env['GIT_CONFIG_KEY_0'], env['GIT_CONFIG_VALUE_0']) == ('url./shared/wh/git/github.com/.insteadOf',
                                                                    'https://github.com/')
    assert (env['GIT_CONFIG_KEY_1'], env['GIT_CONFIG_VALUE_1']) == ('protocol.file.allow', 'always')
    with pytest.raises(mirrors.MirrorError) as err:
        mirrors.apply(PINS, {'indexes': {'pypi': 'https://m.example/simple'}}, wheelhouse='/shared/wh')
    assert 'primus_wheelhouse' in str(err.value)


def test_git_clones_a_wheelhouse_bundle_through_the_prefix(tmp_path):
    """What the wheelhouse relies on: a bundle file at <dir>/<host>/<path> is cloned for https://<host>/<path>."""
    src = tmp_path / 'src'
    subprocess.run(['git', 'init', '-q', str(src)], check=True)
    subprocess.run(['git', '-C', str(src), '-c', 'user.name=t', '-c', 'user.email=t@e', 'commit', '-q', '--allow-empty',
                    '-m', 'one'], check=True)
    bundle = tmp_path / 'wh' / 'git' / 'github.invalid' / 'o' / 'repo.git'
    bundle.parent.mkdir(parents=True)
    subprocess.run(['git', '-C', str(src), 'bundle', 'create', '-q', str(bundle), '--all'], check=True)
    env = dict(os.environ, GIT_TERMINAL_PROMPT='0',
               **mirrors.apply({'indexes': {}, 'sources': {'x': {'repo': 'https://github.invalid/o/repo.git'}}}, {},
                               wheelhouse=str(tmp_path / 'wh'))['git_environment'])
    proc = subprocess.run(['git', 'clone', '-q', 'https://github.invalid/o/repo.git', str(tmp_path / 'clone')], env=env,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
