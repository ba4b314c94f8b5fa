# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""glibc_facts, gpu_arch_facts and node_info run as Ansible runs them: a module process
reading its arguments from a JSON file, against the recorded hosts of tests/world/hosts."""

import hashlib
import os
import platform
import sys

import pytest

from ansible_collections.primus.trainenv.plugins.module_utils.glibc import glibcxx_versions_from_file

from module_runner import ROOT, run_module

HOSTS = os.path.join(ROOT, 'tests', 'world', 'hosts')


def warnings_of(result):
    found = []
    for warning in result.get('warnings', []):
        found.append(warning['event']['msg'] if isinstance(warning, dict) else warning)
    return found


def host_args(host, **extra):
    args = dict(rocminfo=os.path.join(HOSTS, host, 'bin', 'rocminfo'),
                kfd_nodes_path=os.path.join(HOSTS, host, 'sys', 'class', 'kfd', 'kfd', 'topology', 'nodes'))
    args.update(extra)
    return args


def kfd_only(host, **extra):
    return dict(kfd_nodes_path=os.path.join(HOSTS, host, 'sys', 'class', 'kfd', 'kfd', 'topology', 'nodes'), **extra)


NO_ROCMINFO = {'PATH': '/usr/bin:/bin'}

EXPECTED = {
    'mi300x': (['gfx942'], 8),
    'mi355x': (['gfx950'], 8),
    'mixed': (['gfx942', 'gfx950'], 4),
    'radeon-gfx1100': (['gfx1100'], 1),
    'radeon-gfx1100-igpu': (['gfx1036', 'gfx1100'], 2),
}


# --- gpu_arch_facts ---------------------------------------------------------------------------

@pytest.mark.parametrize('host', sorted(EXPECTED))
def test_gpu_arch_facts_rocminfo(host, tmpdir):
    result = run_module('gpu_arch_facts', host_args(host, kfd_device=str(tmpdir.join('kfd'))), tmpdir)
    gpu = result['ansible_facts']['primus_gpu']
    assert result['changed'] is False
    assert (gpu['archs'], gpu['gpu_count'], gpu['source']) == EXPECTED[host] + ('rocminfo',)
    assert gpu['pytorch_rocm_arch'] == ';'.join(EXPECTED[host][0])
    assert gpu['arch_csv'] == ','.join(EXPECTED[host][0])
    assert gpu['detected_archs'] == gpu['archs']
    assert gpu['rocminfo_path'].endswith('/%s/bin/rocminfo' % host)
    assert gpu['kfd_access'] is False
    assert any('cannot open' in w for w in warnings_of(result))


@pytest.mark.parametrize('host', sorted(EXPECTED))
def test_gpu_arch_facts_kfd_when_there_is_no_rocminfo(host, tmpdir):
    result = run_module('gpu_arch_facts', kfd_only(host), tmpdir, env=NO_ROCMINFO)
    gpu = result['ansible_facts']['primus_gpu']
    assert (gpu['archs'], gpu['gpu_count'], gpu['source']) == EXPECTED[host] + ('kfd',)
    assert gpu['notes'] == ['rocminfo not found on PATH']


def test_cpu_only_host_has_no_archs(tmpdir):
    result = run_module('gpu_arch_facts', host_args('cpu-only'), tmpdir)
    gpu = result['ansible_facts']['primus_gpu']
    assert (gpu['archs'], gpu['source'], gpu['gpu_count'], gpu['pytorch_rocm_arch']) == ([], 'none', 0, '')
    assert gpu['notes'][0] == 'rocminfo lists no GPU agent'
    assert warnings_of(result) == []


def test_cpu_only_host_with_the_release_default_warns(tmpdir):
    result = run_module('gpu_arch_facts', host_args('cpu-only', default_archs=['gfx950', 'gfx942']), tmpdir)
    gpu = result['ansible_facts']['primus_gpu']
    assert (gpu['archs'], gpu['source'], gpu['detected_archs']) == (['gfx942', 'gfx950'], 'default', [])
    assert warnings_of(result) == ['no GPU detected; defaulting PYTORCH_ROCM_ARCH=gfx942;gfx950 (override with '
                                   'primus_arch_override or by exporting PYTORCH_ROCM_ARCH)']


def test_failing_rocminfo_falls_back_to_kfd(tmpdir):
    fake = tmpdir.join('rocminfo')
    fake.write('#!/bin/sh\necho "ROCk module is NOT loaded, possibly no GPU devices"\nexit 1\n')
    fake.chmod(0o755)
    result = run_module('gpu_arch_facts', kfd_only('mi355x', rocminfo=str(fake)), tmpdir)
    gpu = result['ansible_facts']['primus_gpu']
    assert (gpu['archs'], gpu['source'], gpu['gpu_count']) == (['gfx950'], 'kfd', 8)
    assert gpu['notes'] == ['rocminfo exited 1: ROCk module is NOT loaded, possibly no GPU devices']


def test_rocminfo_from_the_venv_sdk(tmpdir):
    sdk = tmpdir.mkdir('venv').mkdir('lib').mkdir('python3.12').mkdir('site-packages').mkdir('_rocm_sdk_devel').mkdir('bin')
    fake = sdk.join('rocminfo')
    fake.write('#!/bin/sh\nexec cat "%s"\n' % os.path.join(HOSTS, 'mi300x', 'rocminfo.txt'))
    fake.chmod(0o755)
    result = run_module('gpu_arch_facts', dict(venv=str(tmpdir.join('venv')), kfd_nodes_path=str(tmpdir.join('none'))),
                        tmpdir, env=NO_ROCMINFO)
    gpu = result['ansible_facts']['primus_gpu']
    assert (gpu['archs'], gpu['source'], gpu['rocminfo_path']) == (['gfx942'], 'rocminfo', str(fake))


def test_nothing_at_all(tmpdir):
    result = run_module('gpu_arch_facts', dict(kfd_nodes_path=str(tmpdir.join('none'))), tmpdir, env=NO_ROCMINFO)
    gpu = result['ansible_facts']['primus_gpu']
    assert (gpu['archs'], gpu['source']) == ([], 'none')
    assert gpu['notes'][-1].endswith('does not exist')


def test_override_wins_and_detection_is_still_reported(tmpdir):
    result = run_module('gpu_arch_facts', host_args('mi300x', override=' gfx950,gfx942; '), tmpdir)
    gpu = result['ansible_facts']['primus_gpu']
    assert (gpu['archs'], gpu['source'], gpu['pytorch_rocm_arch']) == (['gfx942', 'gfx950'], 'override', 'gfx942;gfx950')
    assert (gpu['detected_archs'], gpu['detected_source'], gpu['gpu_count']) == (['gfx942'], 'rocminfo', 8)


@pytest.mark.parametrize('override, bad', [('gfx942;gfx95', 'gfx95'), ('gfx942:xnack-', 'gfx942:xnack-'),
                                           ('gfx1999', 'gfx1999'), ('mi300x', 'mi300x')])
def test_bad_override_fails_naming_the_entry(override, bad, tmpdir):
    result = run_module('gpu_arch_facts', host_args('mi300x', override=override), tmpdir)
    assert result['failed'] is True
    assert "'%s'" % bad in result['msg']
    assert 'primus_arch_override' in result['msg']


def test_explicit_rocminfo_that_does_not_exist_fails(tmpdir):
    result = run_module('gpu_arch_facts', dict(rocminfo=str(tmpdir.join('nope', 'rocminfo'))), tmpdir)
    assert result['failed'] is True
    assert 'primus_rocminfo' in result['msg']


def test_kfd_access_of_a_device_this_user_can_open(tmpdir):
    device = tmpdir.join('kfd')
    device.write('')
    result = run_module('gpu_arch_facts', host_args('mi300x', kfd_device=str(device)), tmpdir)
    gpu = result['ansible_facts']['primus_gpu']
    assert (gpu['kfd_access'], gpu['kfd_access_error']) == (True, '')
    assert warnings_of(result) == []


# --- glibc_facts ------------------------------------------------------------------------------

def test_glibc_facts_on_this_host(tmpdir):
    result = run_module('glibc_facts', {}, tmpdir)
    facts = result['ansible_facts']['primus_glibc']
    assert result['changed'] is False
    expected = os.confstr('CS_GNU_LIBC_VERSION').split()[1]
    assert (facts['version'], facts['source']) == (expected, 'confstr')
    assert facts['ldd_line'].endswith(' ' + expected)
    assert os.path.isfile(facts['libstdcxx_path']) and not os.path.islink(facts['libstdcxx_path'])
    assert facts['glibcxx_versions'] == glibcxx_versions_from_file(facts['libstdcxx_path'])
    assert facts['glibcxx_max'] == facts['glibcxx_versions'][-1]
    assert facts['glibcxx_versions'][0] == '3.4'


def test_glibc_facts_with_a_given_libstdcxx_and_no_ldd(tmpdir):
    lib = tmpdir.join('libstdc++.so.6.0.33')
    lib.write_binary(b'\x7fELF\x00GLIBCXX_3.4\x00GLIBCXX_3.4.33\x00GLIBCXX_3.4.32\x00')
    result = run_module('glibc_facts', dict(libstdcxx_path=str(lib), ldd=str(tmpdir.join('no-ldd'))), tmpdir)
    facts = result['ansible_facts']['primus_glibc']
    assert (facts['glibcxx_max'], facts['glibcxx_versions']) == ('3.4.33', ['3.4', '3.4.32', '3.4.33'])
    assert facts['ldd_line'] == ''
    assert facts['source'] == 'confstr'


def test_glibc_facts_with_a_musl_style_ldd(tmpdir):
    ldd = tmpdir.join('ldd')
    ldd.write('#!/bin/sh\necho "musl libc (x86_64)" >&2\necho "Version 1.2.4" >&2\nexit 1\n')
    ldd.chmod(0o755)
    facts = run_module('glibc_facts', dict(ldd=str(ldd)), tmpdir)['ansible_facts']['primus_glibc']
    assert facts['ldd_line'] == 'musl libc (x86_64)'


def test_glibc_facts_missing_libstdcxx_path_fails(tmpdir):
    result = run_module('glibc_facts', dict(libstdcxx_path=str(tmpdir.join('nope.so'))), tmpdir)
    assert result['failed'] is True and 'nope.so' in result['msg']


# --- node_info --------------------------------------------------------------------------------

def test_capacity_of_a_path_that_does_not_exist(tmpdir):
    target = tmpdir.join('a', 'b', 'c')
    result = run_module('node_info', dict(path=str(target)), tmpdir)
    assert (result['exists'], result['creatable'], result['nearest_existing']) == (False, True, str(tmpdir))
    st = os.statvfs(str(tmpdir))
    assert abs(result['free_bytes'] - st.f_bavail * st.f_frsize) < 512 * 1024 ** 2
    assert result['total_bytes'] == st.f_blocks * st.f_frsize
    assert result['cpus'] == len(os.sched_getaffinity(0))
    assert result['mem_available_bytes'] > 0
    assert not tmpdir.join('a').exists()


def test_capacity_under_a_file(tmpdir):
    tmpdir.join('file').write('x')
    result = run_module('node_info', dict(path=str(tmpdir.join('file', 'base'))), tmpdir)
    assert (result['creatable'], result['nearest_is_dir']) == (False, False)
    assert result['problem'] == '%s exists and is not a directory' % tmpdir.join('file')


def test_capacity_of_a_dangling_symlink(tmpdir):
    os.symlink(str(tmpdir.join('gone')), str(tmpdir.join('link')))
    result = run_module('node_info', dict(path=str(tmpdir.join('link', 'base'))), tmpdir)
    assert result['creatable'] is False and 'dangling' in result['problem']


def test_capacity_of_an_existing_directory(tmpdir):
    result = run_module('node_info', dict(path=str(tmpdir) + '/'), tmpdir)
    assert (result['exists'], result['is_dir'], result['creatable'], result['path']) == (True, True, True, str(tmpdir))


def test_node_info_reads_the_glibc_and_gpu_facts_of_the_facts_modules(tmpdir):
    """preflight's facts in node_info's one round trip: the same facts as glibc_facts and gpu_arch_facts report."""
    gpu_args = host_args('mi300x', kfd_device=str(tmpdir.join('kfd')), default_archs=['gfx942', 'gfx950'])
    result = run_module('node_info', dict(path=str(tmpdir), glibc=True, gpu=gpu_args), tmpdir)
    alone_glibc = run_module('glibc_facts', {}, tmpdir)['ansible_facts']['primus_glibc']
    assert result['glibc'] == dict(alone_glibc, problem='')
    alone = run_module('gpu_arch_facts', gpu_args, tmpdir)
    assert result['gpu'] == dict(alone['ansible_facts']['primus_gpu'], problem='')
    assert (result['gpu']['archs'], result['gpu']['source'], result['gpu']['gpu_count']) == (['gfx942'], 'rocminfo', 8)
    assert warnings_of(result) == warnings_of(alone) != []   # /dev/kfd not usable: the same warning
    plain = run_module('node_info', dict(path=str(tmpdir)), tmpdir)
    assert 'glibc' not in plain and 'gpu' not in plain


def test_node_info_reports_a_gpu_setting_it_cannot_use_without_failing(tmpdir):
    """The lock check and preflight's checks come first: the problem is reported, preflight stops on it."""
    result = run_module('node_info', dict(path=str(tmpdir), gpu=host_args('mi300x', override='gfx942;gfx95')), tmpdir)
    assert 'failed' not in result and result['gpu']['archs'] == []
    assert "'gfx95'" in result['gpu']['problem'] and 'primus_arch_override' in result['gpu']['problem']
    result = run_module('node_info', dict(path=str(tmpdir), gpu=dict(rocminfo=str(tmpdir.join('nope', 'rocminfo')))), tmpdir)
    assert 'primus_rocminfo' in result['gpu']['problem']
    result = run_module('node_info', dict(path=str(tmpdir), gpu=dict(overide='gfx942')), tmpdir)
    assert result['gpu']['problem'].startswith('gpu: unknown option(s) overide')
    result = run_module('node_info', dict(path=str(tmpdir), gpu=kfd_only('cpu-only', default_archs=['gfx950', 'gfx942'])),
                        tmpdir, env=NO_ROCMINFO)
    assert (result['gpu']['archs'], result['gpu']['source']) == (['gfx942', 'gfx950'], 'default')
    assert any(w.startswith('no GPU detected; defaulting PYTORCH_ROCM_ARCH=gfx942;gfx950') for w in warnings_of(result))


def test_node_info_reports_a_relative_or_empty_path_without_failing(tmpdir):
    result = run_module('node_info', dict(path='envs/primus'), tmpdir)
    assert 'failed' not in result
    assert (result['creatable'], result['problem']) == (False, "'envs/primus' is not an absolute path")
    result = run_module('node_info', dict(path=''), tmpdir)
    assert (result['creatable'], result['problem']) == (False, 'PRIMUS_BASE is not set')
    assert result['user'] and result['cpus'] >= 1


def test_node_info_asks_interpreters_for_their_version(tmpdir):
    broken = tmpdir.join('broken-python')
    broken.write('#!/bin/sh\necho "error while loading shared libraries" >&2\nexit 127\n')
    broken.chmod(0o755)
    missing = str(tmpdir.join('venv', 'bin', 'python'))
    result = run_module('node_info', dict(path=str(tmpdir), interpreters=[sys.executable, str(broken), missing, '']), tmpdir)
    have = result['interpreters']
    assert have[sys.executable] == {'exists': True, 'version': '%d.%d' % sys.version_info[:2],
                                    'full_version': platform.python_version(), 'error': ''}
    assert have[str(broken)]['version'] == ''
    assert "it exits with rc 127: 'error while loading shared libraries'" in have[str(broken)]['error']
    assert have[missing] == {'exists': False, 'version': '', 'full_version': '', 'error': 'cannot be run: it does not exist'}
    assert '' not in have


def test_node_info_says_what_is_wrong_with_an_interpreter_that_is_not_one(tmpdir):
    """Each kind of "not a Python" is explained in words instead of a raw [Errno ...] failure."""
    text = tmpdir.join('notes.txt')
    text.write('just text\n')
    no_shebang = tmpdir.join('no-shebang')
    no_shebang.write('\x7fELF garbage')
    no_shebang.chmod(0o755)
    garbage = tmpdir.join('garbage')
    garbage.write('#!/bin/sh\necho "hello world"\n')
    garbage.chmod(0o755)
    dangling = tmpdir.join('dangling')
    os.symlink(str(tmpdir.join('gone')), str(dangling))
    too_long = str(tmpdir.join('x' * 300))
    cases = {
        str(text): 'cannot be run: it is not executable by user ',
        str(tmpdir): 'cannot be run: it is a directory, not a program',
        str(no_shebang): 'cannot be run: the kernel cannot execute it (Exec format error): it is not a program',
        str(garbage): "ran but printed 'hello world' instead of a version, so it is not a Python interpreter",
        str(dangling): "cannot be run: it is a dangling symlink (to '%s', which does not exist)" % tmpdir.join('gone'),
        too_long: 'cannot be run: its path is too long for Linux',
        'no-such-command-here': 'cannot be run: there is no no-such-command-here on PATH',
    }
    result = run_module('node_info', dict(path=str(tmpdir), interpreters=list(cases)), tmpdir)
    assert 'failed' not in result, result
    for interpreter, words in cases.items():
        got = result['interpreters'][interpreter]
        assert got['version'] == '' and got['error'].startswith(words), (interpreter, got)
    assert '(mode 0644)' in result['interpreters'][str(text)]['error']


def test_node_info_looks_at_private_dirs_without_creating_them(tmpdir):
    user = __import__('pwd').getpwuid(os.geteuid()).pw_name
    mine = tmpdir.join('mine-%s' % user)
    mine.mkdir()
    os.chmod(str(mine), 0o700)
    open_dir = tmpdir.join('open')
    open_dir.mkdir()
    os.chmod(str(open_dir), 0o777)
    link = tmpdir.join('link')
    os.symlink(str(mine), str(link))
    afile = tmpdir.join('afile')
    afile.write('x')
    dirs = dict(mine=str(tmpdir) + '//mine-{user}/', open=str(open_dir), link=str(link), file=str(afile),
                absent=str(tmpdir.join('absent-{user}')))
    result = run_module('node_info', dict(path=str(tmpdir), private_dirs=dirs), tmpdir,
                        env={'PATH': '/opt/x/bin:/usr/bin:/bin', 'LD_LIBRARY_PATH': '/opt/x/lib', 'PIP_CONSTRAINT': '',
                             'NLTK_DATA': '/data/nltk'})
    assert result['environment'] == {'PATH': '/opt/x/bin:/usr/bin:/bin', 'LD_LIBRARY_PATH': '/opt/x/lib',
                                     'PIP_CONSTRAINT': '', 'NLTK_DATA': '/data/nltk'}
    got = result['private_dirs']
    assert got['mine'] == {'path': str(tmpdir) + '//mine-%s/' % user, 'exists': True, 'owner': user, 'mode': '0700',
                           'problem': ''}
    assert got['open']['problem'] == 'is writable by others (mode 0777)'
    assert got['link']['problem'].startswith('is a symbolic link')
    assert got['file']['problem'] == 'exists and is not a directory'
    assert got['absent'] == {'path': str(tmpdir.join('absent-%s' % user)), 'exists': False, 'owner': '', 'mode': '',
                             'problem': ''}
    assert not tmpdir.join('absent-%s' % user).exists()


def test_node_info_looks_at_files_and_globs(tmpdir):
    env_sh = tmpdir.join('base', 'env.sh')
    env_sh.write('export A=1\n', ensure=True)
    os.chmod(str(env_sh), 0o640)
    tmpdir.join('base', 'nltk_data', 'tokenizers', 'punkt_tab.zip').write('z', ensure=True)
    os.symlink(str(env_sh), str(tmpdir.join('base', 'link')))
    files = [str(env_sh), str(tmpdir.join('base')), str(tmpdir.join('base', 'link')), str(tmpdir.join('absent'))]
    pattern = str(tmpdir.join('base', 'nltk_data', '*', '*.zip'))
    result = run_module('node_info', dict(path=str(tmpdir), files=files, globs=[pattern, str(tmpdir.join('none*'))]), tmpdir)
    got = result['files']
    assert got[str(env_sh)] == {'exists': True, 'kind': 'file', 'mode': '0640',
                                'sha256': hashlib.sha256(b'export A=1\n').hexdigest()}
    assert got[str(tmpdir.join('base'))]['kind'] == 'dir' and got[str(tmpdir.join('base'))]['sha256'] == ''
    assert got[str(tmpdir.join('base', 'link'))]['kind'] == 'link'
    assert got[str(tmpdir.join('absent'))] == {'exists': False, 'kind': '', 'mode': '', 'sha256': ''}
    assert result['globs'] == {pattern: [str(tmpdir.join('base', 'nltk_data', 'tokenizers', 'punkt_tab.zip'))],
                               str(tmpdir.join('none*')): []}


@pytest.mark.skipif(os.geteuid() != 0, reason='needs root to make a directory owned by another user')
def test_node_info_names_the_owner_of_another_users_dir(tmpdir):
    theirs = tmpdir.join('theirs')
    theirs.mkdir()
    os.chown(str(theirs), __import__('pwd').getpwnam('nobody').pw_uid, -1)
    result = run_module('node_info', dict(path=str(tmpdir), private_dirs=dict(cache=str(theirs))), tmpdir)
    got = result['private_dirs']['cache']
    assert got['owner'] == 'nobody'
    assert got['problem'].startswith('is owned by nobody (uid ') and got['problem'].endswith('), not by you')


def test_node_info_finds_commands_on_path(tmpdir):
    tool = tmpdir.join('bin', 'my-tool')
    tool.write('#!/bin/sh\n', ensure=True)
    tool.chmod(0o755)
    result = run_module('node_info', dict(path=str(tmpdir), commands=['my-tool', 'no-such-tool-here']), tmpdir,
                        env={'PATH': '%s:%s' % (tmpdir.join('bin'), os.environ['PATH'])})
    assert result['commands'] == {'my-tool': str(tool)}


def test_node_info_refuses_a_megatron_checkout_another_user_can_change(tmpdir):
    """Preflight's look at primus_megatron_checkouts: one that another user can change (here: a datasets directory every
    user can write) gets the refusal megatron_helpers would give; the user's own, one without Megatron's Makefile
    (submodules not checked out), one that is not there and entries that are no absolute path get none."""
    datasets_rel = os.path.join('third_party', 'Megatron-LM', 'megatron', 'core', 'datasets')
    for name in ('mine', 'open'):
        os.makedirs(str(tmpdir.join(name, datasets_rel)))
        tmpdir.join(name, datasets_rel, 'Makefile').write('x')
    tmpdir.mkdir('bare')
    open_datasets = str(tmpdir.join('open', datasets_rel))
    os.chmod(open_datasets, 0o777)
    checkouts = [str(tmpdir.join('mine')), str(tmpdir.join('open')), str(tmpdir.join('bare')), str(tmpdir.join('gone')),
                 'relative/Primus', 7]
    result = run_module('node_info', dict(path=str(tmpdir), megatron_checkouts=checkouts), tmpdir)
    real = os.path.realpath(str(tmpdir.join('open')))
    assert list(result['megatron_checkouts']) == [str(tmpdir.join('open'))], result['megatron_checkouts']
    message = result['megatron_checkouts'][str(tmpdir.join('open'))]
    assert message.startswith('The Megatron checkout %s' % tmpdir.join('open'))
    assert '%s/%s is writable by every user (mode 0777)' % (real, datasets_rel) in message
    assert 'chmod -R go-w %s' % real in message
    assert run_module('node_info', dict(path=str(tmpdir)), tmpdir)['megatron_checkouts'] == {}
