# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""installed_fixes as Ansible runs it, with the fixes v26.5.1's release file declares: the comgr copy becomes a link to
the devel copy, the rocprofv3 line changes; idempotent, check mode and diff, a reinstalled original fixed again, a
changed package refused, nothing outside site-packages touched; and stage_stamp re-applying them."""

import os
import stat

import pytest
import yaml

from module_runner import ROOT, run_module


def release_fixes(release='v26.5.1'):
    with open(os.path.join(ROOT, 'roles', 'primus', 'vars', 'releases', release + '.yml')) as handle:
        return yaml.safe_load(handle)['primus_pins'].get('installed_fixes', [])


FIXES = release_fixes()
COMGR = '\x7fELF comgr (%s)\n'
ROCPROF = ('#!/usr/bin/env python3\nimport os\n\ndef update_env(name, value):\n    os.environ[name] = str(value)\n\n'
           'update_env("ROCPROFILER_LIBRARY_CTOR", True)\nupdate_env("ROCP_TOOL_LIBRARIES", "librocprofiler-sdk-tool.so")\n')


def sdk(tmpdir):
    """A site-packages with the ROCm SDK's files as the wheels install them: two separate comgr copies."""
    site = tmpdir.join('site-packages')
    site.join('_rocm_sdk_core', 'lib').ensure(dir=True)
    site.join('_rocm_sdk_devel', 'lib').ensure(dir=True)
    site.join('_rocm_sdk_devel', 'bin').ensure(dir=True)
    site.join('_rocm_sdk_core', 'lib', 'libamd_comgr.so.3').write(COMGR % 'core')
    site.join('_rocm_sdk_devel', 'lib', 'libamd_comgr.so.3').write(COMGR % 'devel')
    site.join('_rocm_sdk_devel', 'bin', 'rocprofv3').write(ROCPROF)
    os.chmod(str(site.join('_rocm_sdk_devel', 'bin', 'rocprofv3')), 0o755)
    return site


def test_the_release_declares_both_fixes_and_v26_5_none():
    assert [f['name'] for f in FIXES] == ['comgr_single_copy', 'rocprofv3_library_ctor']
    assert release_fixes('v26.5') == []


def test_both_fixes_apply_once_with_a_diff_and_then_hold(tmpdir):
    site = sdk(tmpdir)
    first = run_module('installed_fixes', dict(site_packages=str(site), fixes=FIXES, installed=True), tmpdir,
                       check_mode=False, diff=True)
    assert first['_rc'] == 0 and first['changed'], first
    assert [r['state'] for r in first['results']] == ['applied', 'applied']
    core = site.join('_rocm_sdk_core', 'lib', 'libamd_comgr.so.3')
    assert os.path.islink(str(core)) and os.readlink(str(core)) == '../../_rocm_sdk_devel/lib/libamd_comgr.so.3'
    assert core.read() == COMGR % 'devel'
    text = site.join('_rocm_sdk_devel', 'bin', 'rocprofv3').read()
    assert 'update_env("ROCPROFILER_LIBRARY_CTOR", False)' in text and 'CTOR", True)' not in text
    assert stat.S_IMODE(os.stat(str(site.join('_rocm_sdk_devel', 'bin', 'rocprofv3'))).st_mode) == 0o755
    diffs = first['diff']
    assert diffs[0]['before'].startswith('a regular file of') and diffs[0]['after'].startswith('a link to ')
    assert 'CTOR", True)' in diffs[1]['before'] and 'CTOR", False)' in diffs[1]['after']
    again = run_module('installed_fixes', dict(site_packages=str(site), fixes=FIXES, installed=True), tmpdir,
                       check_mode=False)
    assert again['_rc'] == 0 and not again['changed'] and 'diff' not in again, again


def test_check_mode_reports_a_reinstalled_copy_and_writes_nothing(tmpdir):
    site = sdk(tmpdir)
    run_module('installed_fixes', dict(site_packages=str(site), fixes=FIXES), tmpdir, check_mode=False)
    core = site.join('_rocm_sdk_core', 'lib', 'libamd_comgr.so.3')
    core.remove()
    core.write(COMGR % 'core')          # what a pip reinstall of rocm-sdk-core leaves
    planned = run_module('installed_fixes', dict(site_packages=str(site), fixes=FIXES), tmpdir, check_mode=True,
                         diff=True)
    assert planned['_rc'] == 0 and planned['changed'], planned
    assert [r['state'] for r in planned['results']] == ['pending', 'applied']
    assert 'is a second regular file' in planned['results'][0]['why']
    assert len(planned['diff']) == 1
    assert not os.path.islink(str(core))
    verify = run_module('installed_fixes', dict(site_packages=str(site), fixes=FIXES, check=True), tmpdir,
                        check_mode=False)
    assert verify['_rc'] == 1 and 'the fix comgr_single_copy is not applied' in verify['msg'], verify
    assert '_rocm_sdk_core/lib/libamd_comgr.so.3 is a second regular file' in verify['msg']
    assert not os.path.islink(str(core))
    fixed = run_module('installed_fixes', dict(site_packages=str(site), fixes=FIXES), tmpdir, check_mode=False)
    assert fixed['changed'] and os.path.islink(str(core))


def test_a_file_in_neither_form_fails_naming_the_fix_and_the_file(tmpdir):
    site = sdk(tmpdir)
    site.join('_rocm_sdk_devel', 'bin', 'rocprofv3').write('#!/usr/bin/env python3\nprint("rewritten")\n')
    result = run_module('installed_fixes', dict(site_packages=str(site), fixes=FIXES), tmpdir, check_mode=False)
    assert result['_rc'] == 1
    assert 'the fix rocprofv3_library_ctor cannot be applied' in result['msg']
    assert '_rocm_sdk_devel/bin/rocprofv3 has neither' in result['msg']
    # every fix is decided before anything is written: the pending comgr fix before it is not applied either
    assert 'rewritten' in site.join('_rocm_sdk_devel', 'bin', 'rocprofv3').read()
    assert not os.path.islink(str(site.join('_rocm_sdk_core', 'lib', 'libamd_comgr.so.3')))


def test_a_missing_link_target_is_refused(tmpdir):
    site = sdk(tmpdir)
    site.join('_rocm_sdk_devel', 'lib', 'libamd_comgr.so.3').remove()
    result = run_module('installed_fixes', dict(site_packages=str(site), fixes=FIXES[:1]), tmpdir, check_mode=False)
    assert result['_rc'] == 1 and 'what _rocm_sdk_core/lib/libamd_comgr.so.3 is to link to' in result['msg']
    assert not os.path.islink(str(site.join('_rocm_sdk_core', 'lib', 'libamd_comgr.so.3')))


def test_not_installed_is_not_an_error_unless_the_stage_installed_it(tmpdir):
    site = tmpdir.join('site-packages').ensure(dir=True)
    plain = run_module('installed_fixes', dict(site_packages=str(site), fixes=FIXES), tmpdir, check_mode=False)
    assert plain['_rc'] == 0 and not plain['changed']
    assert [r['state'] for r in plain['results']] == ['not_installed', 'not_installed']
    required = run_module('installed_fixes', dict(site_packages=str(site), fixes=FIXES, installed=True), tmpdir,
                          check_mode=False)
    assert required['_rc'] == 1 and 'although stage torch installs it' in required['msg']


@pytest.mark.parametrize('fix, words', [
    (dict(name='x', path='../outside', link_to='a'), "leaves the source tree"),
    (dict(name='x', path='/etc/passwd', before='a', after='b'), 'is absolute'),
    (dict(name='x', path='lib/f', link_to='../../etc/passwd'), "leaves the source tree"),
])
def test_a_path_outside_site_packages_is_refused(tmpdir, fix, words):
    site = sdk(tmpdir)
    site.join('lib').ensure(dir=True)
    result = run_module('installed_fixes', dict(site_packages=str(site), fixes=[fix]), tmpdir, check_mode=False)
    assert result['_rc'] == 1 and words in result['msg'], result


def test_a_directory_link_out_of_site_packages_is_refused(tmpdir):
    site = sdk(tmpdir)
    outside = tmpdir.join('outside').ensure(dir=True)
    outside.join('f').write('update_env("ROCPROFILER_LIBRARY_CTOR", True)\n')
    os.symlink(str(outside), str(site.join('escape')))
    fix = dict(name='x', path='escape/f', before='CTOR", True)', after='CTOR", False)')
    result = run_module('installed_fixes', dict(site_packages=str(site), fixes=[fix]), tmpdir, check_mode=False)
    assert result['_rc'] == 1 and 'leads outside' in result['msg']
    assert 'True' in outside.join('f').read()


def test_stage_stamp_applies_a_fix_a_later_stage_undid(tmpdir):
    site = sdk(tmpdir)
    run_module('installed_fixes', dict(site_packages=str(site), fixes=FIXES), tmpdir, check_mode=False)
    core = site.join('_rocm_sdk_core', 'lib', 'libamd_comgr.so.3')
    core.remove()
    core.write(COMGR % 'core')
    state = tmpdir.join('state')
    stamp = run_module('stage_stamp', dict(path=str(state), stage='turbo', release='v26.5.1', key={'a': 1},
                                           site_packages=str(site), installed_fixes=FIXES), tmpdir,
                       check_mode=False, diff=True)
    assert stamp['_rc'] == 0 and stamp['fixes'] == ['comgr_single_copy'], stamp
    assert os.path.islink(str(core))
    assert state.join('turbo.json').check()
    again = run_module('stage_stamp', dict(path=str(state), stage='turbo', release='v26.5.1', key={'a': 1},
                                           site_packages=str(site), installed_fixes=FIXES), tmpdir, check_mode=False)
    assert again['_rc'] == 0 and not again['changed'] and again['fixes'] == []
