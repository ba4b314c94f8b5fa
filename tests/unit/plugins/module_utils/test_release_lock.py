# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The release lock (plugins/module_utils/release_lock.py): a pip report against the lock, the hash-checked
requirements, and the index probe's verdicts and message. pip's own hash-checking of those requirements is
proven with the real pip at the end."""

import hashlib
import json
import os
import subprocess
import sys

import pytest

from ansible_collections.primus.trainenv.plugins.module_utils import release_lock

A, B, C = 'a' * 64, 'b' * 64, 'c' * 64
TORCH = 'torch-2.12.0+rocm7.15.0a20260720-cp312-cp312-manylinux_2_28_x86_64.whl'


def entry(name, version, url, sha=None, direct=False, archive=True):
    info = {'url': url}
    if archive:
        info['archive_info'] = {'hashes': {'sha256': sha}} if sha else {}
    elif url.startswith('git+'):
        info['vcs_info'] = {'vcs': 'git', 'commit_id': 'f' * 40}
    else:
        info['dir_info'] = {}
    return {'metadata': {'name': name, 'version': version}, 'download_info': info, 'is_direct': direct}


def lock(*files):
    return {'lock_version': 1, 'release': 'v26.5', 'files': [
        dict(filename=f, name=f.split('-')[0], version='1', index=i, url='http://x/' + f, size=1, sha256=s)
        for f, i, s in files]}


def test_report_items_kinds():
    report = {'install': [
        entry('torch', '2.12.0+rocm7.15.0a20260720', 'http://127.0.0.1:1/rocm/files/ab/%s' % TORCH.replace('+', '%2B'), A),
        entry('flash_attn', '2.8.3', 'file:///cache/wheels/flash_attn/k/flash_attn-2.8.3-cp312-cp312-linux_x86_64.whl',
              B, direct=True),
        entry('logging', '4.0', 'git+https://example/mlperf/logging.git', direct=True, archive=False),
        entry('proj', '1.0', 'file:///src/proj', direct=True, archive=False),
    ]}
    items = release_lock.report_items(report)
    assert [i['kind'] for i in items] == ['index', 'file', 'direct', 'direct']
    assert items[0]['sha256'] == A and release_lock.filename_of(items[0]['url']) == TORCH
    # the git requirement: its repository and the commit pip checked out, for the wheelhouse's bundle
    assert (items[2]['vcs'], items[2]['commit'], items[2]['repo']) == ('git', 'f' * 40, 'https://example/mlperf/logging.git')
    assert 'vcs' not in items[3] and 'repo' not in items[0]


def test_report_items_of_a_pep_610_vcs_entry_without_the_git_prefix():
    report = {'install': [{'metadata': {'name': 'mlperf-logging', 'version': '6.0.0rc5'}, 'is_direct': True,
                           'download_info': {'url': 'http://127.0.0.1:1/git/mlcommons-logging.git', 'vcs_info': {
                               'vcs': 'git', 'requested_revision': '6.0.0-rc5', 'commit_id': 'e' * 40}}}]}
    (item,) = release_lock.report_items(report)
    assert item['kind'] == 'direct' and item['repo'] == 'http://127.0.0.1:1/git/mlcommons-logging.git'
    assert item['commit'] == 'e' * 40


def test_check_items_names_changed_and_unlocked_files():
    locked = release_lock.hashes_by_filename(lock((TORCH, 'torch', A), ('six-1.0-py3-none-any.whl', 'pypi', C)))
    items = [{'name': 'torch', 'version': '2.12.0', 'url': 'http://m/%s' % TORCH, 'sha256': B, 'kind': 'index'},
             {'name': 'six', 'version': '1.0', 'url': 'http://m/six-1.0-py3-none-any.whl', 'sha256': C, 'kind': 'index'},
             {'name': 'new', 'version': '2', 'url': 'http://m/new-2-py3-none-any.whl', 'sha256': A, 'kind': 'index'},
             {'name': 'own', 'version': '1', 'url': 'file:///w/own-1-py3-none-any.whl', 'sha256': A, 'kind': 'file'}]
    problems = release_lock.check_items(items, locked)
    assert [(p['file'], p['problem']) for p in problems] == [(TORCH, 'changed'), ('new-2-py3-none-any.whl', 'not_locked')]
    message = release_lock.describe(problems)
    assert '%s has sha256 %s, the lock says %s' % (TORCH, B, A) in message
    assert 'not in the lock: new-2-py3-none-any.whl (new==2)' in message
    assert 'Nothing was installed' in message and 'When the nightly disappears' in message


def test_a_mirror_serving_the_same_bytes_under_another_url_matches():
    locked = release_lock.hashes_by_filename(lock((TORCH, 'torch', A)))
    item = {'name': 'torch', 'version': '2.12.0', 'url': 'https://mirror.example/any/path/%s' % TORCH, 'sha256': A,
            'kind': 'index'}
    assert release_lock.check_items([item], locked) == []


def test_hashed_requirements(tmp_path):
    wheel = tmp_path / 'own-1-py3-none-any.whl'
    wheel.write_bytes(b'built here')
    locked = {TORCH: [A, B]}
    text, direct = release_lock.hashed_requirements([
        {'name': 'Torch', 'version': '2.12.0+rocm7.15.0a20260720', 'url': 'http://m/%s' % TORCH, 'sha256': A, 'kind': 'index'},
        {'name': 'own', 'version': '1', 'url': 'file://%s' % wheel, 'sha256': '', 'kind': 'file'},
        {'name': 'logging', 'version': '4', 'url': 'git+https://e/l.git', 'sha256': '', 'kind': 'direct'}], locked)
    assert text.splitlines() == [
        'torch==2.12.0+rocm7.15.0a20260720 --hash=sha256:%s --hash=sha256:%s' % (A, B),
        '%s --hash=sha256:%s' % (wheel, hashlib.sha256(b'built here').hexdigest())]
    assert [d['name'] for d in direct] == ['logging']


@pytest.mark.parametrize('text, expected', [
    ('not json', 'is not JSON'),
    ('{"files": []}', 'is not a primus.trainenv release lock'),
    ('{"lock_version": 1, "files": [{"filename": "x"}]}', 'files[0] needs'),
    (json.dumps(lock(('x.whl', 'pypi', 'nothex'))), 'files[0] needs'),
    (json.dumps(dict(lock(), vcs=[{'vcs': 'git', 'url': '--upload-pack=touch /tmp/x', 'commit': 'e' * 40}])),
     'vcs[0] needs'),
    (json.dumps(dict(lock(), vcs=[{'vcs': 'git', 'url': 'https://e/l.git', 'commit': 'main'}])), 'vcs[0] needs'),
    (json.dumps(dict(lock(), vcs=[{'vcs': 'hg', 'url': 'https://e/l', 'commit': 'e' * 40}])), 'vcs[0] needs'),
])
def test_load_refuses_what_is_not_a_lock(text, expected):
    with pytest.raises(release_lock.LockError) as err:
        release_lock.load(text, '/p/v26.5.lock.json')
    assert expected in str(err.value) and '/p/v26.5.lock.json' in str(err.value)


def test_a_direct_vcs_item_is_installed_from_git_at_its_commit_not_downloaded_from_its_url():
    report = {'install': [
        {'metadata': {'name': 'MLPerf_Logging', 'version': '6.0.0rc5'}, 'is_direct': True,
         'download_info': {'url': 'http://127.0.0.1:1/git/mlcommons-logging.git',
                           'vcs_info': {'vcs': 'git', 'requested_revision': '6.0.0-rc5', 'commit_id': 'e' * 40}}},
        entry('proj', '1.0', 'file:///src/proj', direct=True, archive=False)]}
    text, direct = release_lock.hashed_requirements(release_lock.report_items(report), {})
    assert text == '' and [release_lock.direct_target(d) for d in direct] == [
        'git+http://127.0.0.1:1/git/mlcommons-logging.git@' + 'e' * 40 + '#egg=mlperf-logging', 'file:///src/proj']


@pytest.mark.parametrize('field, value', [
    ('name', 'x&subdirectory=../../other'), ('name', '-e'), ('subdirectory', '../outside'),
    ('subdirectory', 'a b'), ('subdirectory', 'pkg#egg=other'), ('repo', '--upload-pack=touch /tmp/x'),
    ('commit', 'main')])
def test_a_git_item_that_would_not_stay_one_requirement_is_refused(field, value):
    item = dict({'name': 'mlperf-logging', 'vcs': 'git', 'repo': 'https://e/l.git', 'commit': 'e' * 40}, **{field: value})
    with pytest.raises(release_lock.LockError, match='cannot be given to pip again'):
        release_lock.direct_target(item)


def test_a_git_item_keeps_its_subdirectory():
    item = {'name': 'Sub_Pkg', 'vcs': 'git', 'repo': 'file:///r/mono', 'commit': 'e' * 40, 'subdirectory': 'pkgs/sub'}
    assert release_lock.direct_target(item) == 'git+file:///r/mono@' + 'e' * 40 + '#egg=sub-pkg&subdirectory=pkgs/sub'


def test_load_keeps_the_git_requirements():
    vcs = [{'name': 'mlperf-logging', 'version': '6.0.0rc5', 'vcs': 'git', 'url': 'https://e/l.git', 'commit': 'e' * 40}]
    assert release_lock.load(json.dumps(dict(lock(), vcs=vcs)))['vcs'] == vcs


def test_parse_simple_page_and_nightly_date():
    page = ('<a href="/rocm/files/ab/%s#sha256=%s" data-requires-python="&gt;=3.10">%s</a><br />'
            '<a href="../x/six-1.0.tar.gz">six-1.0.tar.gz</a>' % (TORCH.replace('+', '%2B'), A, TORCH))
    files = release_lock.parse_simple_page(page)
    assert files[TORCH]['sha256'] == A and files['six-1.0.tar.gz']['sha256'] == ''
    assert release_lock.nightly_date(TORCH) == '2026-07-20' and release_lock.nightly_date('six-1.0.tar.gz') == ''


def test_probe_verdicts_and_message():
    data = lock((TORCH, 'torch', A), ('torchaudio-2.11.0+rocm7.15.0a20260720-cp312-cp312-linux_x86_64.whl', 'torch', A),
                ('six-1.0-py3-none-any.whl', 'pypi', C), ('te_core-1-py3-none-any.whl', 'te', C))
    indexes = {'torch': 'https://user:tok3n@rocm.example/whl', 'pypi': 'https://pypi.example/simple'}
    groups = release_lock.probe_groups(data, indexes)
    assert sorted(groups) == [('pypi', 'six'), ('torch', 'torch'), ('torch', 'torchaudio')]   # te: not an index here
    pages = {('torch', 'torch'): {TORCH: {'href': '', 'sha256': B}}, ('torch', 'torchaudio'): {},
             ('pypi', 'six'): None}
    verdicts = release_lock.probe_verdicts(groups, pages)
    assert [(v['index'], v['problem'], v['date']) for v in verdicts] == [
        ('pypi', 'unreadable', ''), ('torch', 'changed', '2026-07-20'), ('torch', 'missing', '2026-07-20')]
    message = release_lock.probe_message(verdicts, indexes, 'v26.5')
    assert message.startswith('3 locked file(s) of release v26.5')
    assert 'torch (https://user:****@rocm.example/whl), nightly 2026-07-20: %s (changed), torchaudio-' % TORCH in message
    assert 'tok3n' not in message
    assert 'tools/relock.py' in message and 'wheelhouse' in message and 'primus_index_probe: false' in message


def test_pip_refuses_other_bytes_under_a_locked_name(tmp_path):
    """The real pip, in the mode the hashed requirements put it in: a file whose bytes differ is refused, named."""
    wheel_dir = tmp_path / 'wheels'
    wheel_dir.mkdir()
    name = 'tiny-1.0-py3-none-any.whl'
    import zipfile
    with zipfile.ZipFile(str(wheel_dir / name), 'w') as z:
        z.writestr('tiny.py', '')
        z.writestr('tiny-1.0.dist-info/METADATA', 'Metadata-Version: 2.1\nName: tiny\nVersion: 1.0\n')
        z.writestr('tiny-1.0.dist-info/WHEEL', 'Wheel-Version: 1.0\nGenerator: t\nRoot-Is-Purelib: true\nTag: py3-none-any\n')
        z.writestr('tiny-1.0.dist-info/RECORD', '')
    text = release_lock.hashed_requirements(
        [{'name': 'tiny', 'version': '1.0', 'url': 'http://x/' + name, 'sha256': A, 'kind': 'index'}], {name: [A]})[0]
    req = tmp_path / 'req.txt'
    req.write_text(text)
    env = dict(os.environ, PIP_CONFIG_FILE=os.devnull)
    proc = subprocess.run([sys.executable, '-m', 'pip', 'download', '--no-index', '--find-links', str(wheel_dir),
                           '--require-hashes', '--no-deps', '-d', str(tmp_path / 'out'), '-r', str(req)],
                          capture_output=True, text=True, env=env, check=False)
    assert proc.returncode != 0
    assert 'DO NOT MATCH THE HASHES' in proc.stderr and 'tiny' in proc.stderr
