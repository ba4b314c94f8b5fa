# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""ck_jit_patch as Ansible runs it: the five states, exactly once, check mode, diff, mode kept,
the script found through a venv's own sysconfig (purelib, then platlib)."""

import ast
import os
import stat
import subprocess
import sys

from module_runner import ROOT, run_module

RELPATH = os.path.join('transformer_engine', 'lib', 'ck_jit', 'ck_jit_compile.sh')
BEFORE = '    mv -n "$_TMP_SO" "$OUTPUT"\n'
AFTER = '    mv -n "$_TMP_SO" "$OUTPUT" 2>/dev/null || true\n'
UPSTREAM = '    mv -n "$_TMP_SO" "$OUTPUT" || [ -f "$OUTPUT" ]\n'


def world_ck_jit():
    """The ck_jit_compile.sh the world's TE wheels ship (tests/world/lib/packages.py CK_JIT)."""
    with open(os.path.join(ROOT, 'tests', 'world', 'lib', 'packages.py')) as handle:
        tree = ast.parse(handle.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, 'id', None) for t in node.targets] == ['CK_JIT']:
            return ast.literal_eval(node.value)
    raise AssertionError('CK_JIT not found in the world')


def script(directory, text=None, mode=0o755):
    path = directory.join(RELPATH)
    path.dirpath().ensure(dir=True)
    path.write(world_ck_jit() if text is None else text)
    os.chmod(str(path), mode)
    return path


def mode_of(path):
    return stat.S_IMODE(os.stat(str(path)).st_mode)


def test_patches_the_world_script_once_keeping_its_mode(tmpdir):
    path = script(tmpdir)
    original = path.read()
    assert BEFORE in original.splitlines(True)
    result = run_module('ck_jit_patch', dict(path=str(path)), tmpdir, check_mode=False, diff=True)
    assert result['changed'] is True and result['state'] == 'patched' and result['path'] == str(path)
    assert result['msg'] == 'Patched %s' % path and result['lines'] == [10]
    assert 'owner' not in result and 'mode' not in result, "Ansible's file facts must not replace the patch state"
    assert path.read() == original.replace(BEFORE, AFTER) and mode_of(path) == 0o755
    assert result['diff'] == dict(before_header=str(path), after_header=str(path), before=original,
                                  after=original.replace(BEFORE, AFTER))
    assert sorted(os.listdir(str(path.dirpath()))) == ['ck_jit_compile.sh'], 'no temporary file left'
    inode = os.stat(str(path)).st_ino
    again = run_module('ck_jit_patch', dict(path=str(path)), tmpdir, check_mode=False, diff=True)
    assert again['changed'] is False and again['state'] == 'already_patched' and 'diff' not in again
    assert again['msg'] == 'ck_jit_compile.sh already patched' and again['lines'] == [10]
    assert os.stat(str(path)).st_ino == inode and path.read().count('2>/dev/null || true') == 1


def test_check_mode_reports_the_patch_and_writes_nothing(tmpdir):
    path = script(tmpdir, mode=0o700)
    before = path.read()
    stat_before = os.stat(str(path))
    result = run_module('ck_jit_patch', dict(path=str(path)), tmpdir, check_mode=True, diff=True)
    assert result['changed'] is True and result['state'] == 'patched'
    assert result['diff']['before'] == before and result['diff']['after'] == before.replace(BEFORE, AFTER)
    assert path.read() == before and os.stat(str(path)).st_mtime_ns == stat_before.st_mtime_ns
    assert mode_of(path) == 0o700 and os.listdir(str(path.dirpath())) == ['ck_jit_compile.sh']


def test_upstreams_fix_is_left_alone(tmpdir):
    text = world_ck_jit().replace(BEFORE, UPSTREAM)
    path = script(tmpdir, text)
    result = run_module('ck_jit_patch', dict(path=str(path)), tmpdir, check_mode=False, diff=True)
    assert result['changed'] is False and result['state'] == 'upstream_fixed' and result['lines'] == [10]
    assert path.read() == text


def test_a_missing_script_is_not_an_error(tmpdir):
    missing = tmpdir.join(RELPATH)
    result = run_module('ck_jit_patch', dict(path=str(missing)), tmpdir, check_mode=False)
    assert result['_rc'] == 0 and result['changed'] is False and result['state'] == 'not_present'
    assert result['msg'] == 'ck_jit_compile.sh not present, nothing to patch' and result['path'] == str(missing)
    assert not missing.exists()


def test_an_unrecognized_script_fails_naming_file_and_expected_text(tmpdir):
    text = world_ck_jit().replace(BEFORE, '    mv -n "$_TMP_SO" "$OUTPUT" 2>/dev/null\n')
    path = script(tmpdir, text)
    result = run_module('ck_jit_patch', dict(path=str(path)), tmpdir, check_mode=False)
    assert result['_rc'] != 0 and result['failed'] is True and result['state'] == 'unrecognized'
    assert result['msg'].startswith('%s is not in a form the ck_jit patch knows' % path)
    assert BEFORE.rstrip('\n') in result['msg'] and "line 10: 'mv -n" in result['msg']
    assert path.read() == text


def fake_venv(tmpdir, purelib, platlib):
    """A venv whose python answers the sysconfig probe with these two directories."""
    python = tmpdir.join('venv', 'bin', 'python')
    python.dirpath().ensure(dir=True)
    python.write('#!/bin/sh\nprintf \'["%s", "%s"]\\n\'\n' % (purelib, platlib))
    os.chmod(str(python), 0o755)
    return tmpdir.join('venv')


def test_a_venv_is_searched_purelib_first_then_platlib(tmpdir):
    purelib, platlib = tmpdir.join('lib', 'site-packages'), tmpdir.join('lib64', 'site-packages')
    venv = fake_venv(tmpdir, purelib, platlib)
    path = script(platlib)
    result = run_module('ck_jit_patch', dict(venv=str(venv)), tmpdir, check_mode=False)
    assert result['state'] == 'patched' and result['path'] == str(path)
    assert result['searched'] == [str(purelib.join(RELPATH)), str(platlib.join(RELPATH))]
    first = script(purelib)
    result = run_module('ck_jit_patch', dict(venv=str(venv)), tmpdir, check_mode=False)
    assert result['state'] == 'patched' and result['path'] == str(first)
    assert AFTER in first.read()


def test_a_real_venv_without_te_has_nothing_to_patch_and_with_te_is_patched(tmpdir):
    venv = tmpdir.join('venv')
    subprocess.run([sys.executable, '-m', 'venv', '--without-pip', str(venv)], check=True)
    result = run_module('ck_jit_patch', dict(venv=str(venv)), tmpdir, check_mode=False)
    assert result['state'] == 'not_present' and result['changed'] is False
    purelib = subprocess.run([str(venv.join('bin', 'python')), '-c', 'import sysconfig; print(sysconfig.get_paths()["purelib"])'],
                             capture_output=True, text=True, check=True).stdout.strip()
    assert result['searched'][0] == os.path.join(purelib, RELPATH) and result['path'] == result['searched'][0]
    path = script(tmpdir.__class__(purelib))
    result = run_module('ck_jit_patch', dict(venv=str(venv)), tmpdir, check_mode=False)
    assert result['state'] == 'patched' and result['path'] == str(path) and AFTER in path.read()


def test_a_venv_not_created_yet(tmpdir):
    venv = tmpdir.join('no-venv')
    planned = run_module('ck_jit_patch', dict(venv=str(venv)), tmpdir, check_mode=True)
    assert planned['_rc'] == 0 and planned['state'] == 'not_present' and planned['changed'] is False
    real = run_module('ck_jit_patch', dict(venv=str(venv)), tmpdir, check_mode=False)
    assert real['failed'] is True and '%s has no bin/python' % venv in real['msg'] and 'stage venv' in real['msg']


def test_venv_and_path_exclude_each_other_and_one_is_required(tmpdir):
    both = run_module('ck_jit_patch', dict(venv=str(tmpdir), path=str(tmpdir.join('f'))), tmpdir)
    assert both['failed'] is True and 'mutually exclusive' in both['msg']
    neither = run_module('ck_jit_patch', {}, tmpdir)
    assert neither['failed'] is True and 'one of the following is required: venv, path' in neither['msg']
