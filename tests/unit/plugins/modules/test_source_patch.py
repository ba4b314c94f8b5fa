# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""source_patch as Ansible runs it, with the release's own torchtune and torchao patches: every
occurrence replaced and verified, idempotent, check mode and diff, modes kept, no escape from the
root, and a patch that no longer matches fails before anything is written."""

import hashlib
import json
import os
import stat

import yaml

from module_runner import ROOT, run_module


def pinned(component):
    with open(os.path.join(ROOT, 'roles', 'primus', 'vars', 'releases', 'v26.5.yml')) as handle:
        return yaml.safe_load(handle)['primus_pins']['sources'][component]['patches']


TORCHTUNE = pinned('torchtune')
TORCHAO = pinned('torchao')

# The shape of the lines the patches target at the pinned commits.
UTILS = ('def _use_grouped_mm():\n    use_grouped_mm = True\n    return use_grouped_mm\n\n\n'
         'class Experts:\n    def __init__(self):\n        self.use_grouped_mm = True\n')
CONFIG = ('@dataclass\nclass Float8LinearConfig:\n    # pad the inner dimension of a gemm to a multiple of 16\n'
          '    pad_inner_dim: bool = False\n    emulate: bool = False\n')
SWIZZLE = ('#include <hipblaslt/hipblaslt.h>\n\n#if defined(HIPBLASLT_VEC_EXT)\n#define USE_VEC_EXT 1\n#endif\n')


def tree(tmpdir, files, mode=0o644):
    root = tmpdir.join('src')
    for rel, text in files.items():
        path = root.join(rel)
        path.dirpath().ensure(dir=True)
        path.write(text)
        os.chmod(str(path), mode)
    return root


def mode_of(path):
    return stat.S_IMODE(os.stat(str(path)).st_mode)


def test_torchtune_every_occurrence_is_replaced_once(tmpdir):
    root = tree(tmpdir, {'torchtune/modules/moe/utils.py': UTILS}, mode=0o664)
    utils = root.join('torchtune/modules/moe/utils.py')
    result = run_module('source_patch', dict(root=str(root), patches=TORCHTUNE), tmpdir, check_mode=False, diff=True)
    assert result['changed'] is True and result['files'] == ['torchtune/modules/moe/utils.py']
    assert result['results'] == [dict(file='torchtune/modules/moe/utils.py', state='patched', count=2)]
    assert utils.read() == UTILS.replace('use_grouped_mm = True', 'use_grouped_mm = False')
    assert mode_of(utils) == 0o664
    assert result['diff'] == [dict(before_header=str(utils), after_header=str(utils), before=UTILS, after=utils.read())]
    assert os.listdir(str(utils.dirpath())) == ['utils.py'], 'no temporary file left'
    inode = os.stat(str(utils)).st_ino
    again = run_module('source_patch', dict(root=str(root), patches=TORCHTUNE), tmpdir, check_mode=False, diff=True)
    assert again['changed'] is False and again['files'] == [] and again['diff'] == []
    assert again['results'] == [dict(file='torchtune/modules/moe/utils.py', state='already_patched', count=0)]
    assert os.stat(str(utils)).st_ino == inode


def test_torchao_both_patches_and_the_hash_a_build_key_can_use(tmpdir):
    root = tree(tmpdir, {'torchao/float8/config.py': CONFIG, 'torchao/csrc/rocm/swizzle/swizzle.cpp': SWIZZLE})
    result = run_module('source_patch', dict(root=str(root), patches=TORCHAO), tmpdir, check_mode=False)
    assert [r['state'] for r in result['results']] == ['patched', 'patched']
    assert root.join('torchao/float8/config.py').read() == CONFIG.replace('= False\n    emulate', '= True\n    emulate')
    assert '#if false\n' in root.join('torchao/csrc/rocm/swizzle/swizzle.cpp').read()
    canonical = json.dumps(TORCHAO, sort_keys=True, separators=(',', ':'))
    assert result['patch_hash'] == hashlib.sha256(canonical.encode('utf-8')).hexdigest()
    other = run_module('source_patch', dict(root=str(root), patches=TORCHAO[:1]), tmpdir, check_mode=False)
    assert other['patch_hash'] != result['patch_hash'] and other['changed'] is False


def test_check_mode_shows_the_diff_and_writes_nothing(tmpdir):
    root = tree(tmpdir, {'torchao/float8/config.py': CONFIG, 'torchao/csrc/rocm/swizzle/swizzle.cpp': SWIZZLE})
    config = root.join('torchao/float8/config.py')
    mtime = os.stat(str(config)).st_mtime_ns
    result = run_module('source_patch', dict(root=str(root), patches=TORCHAO), tmpdir, check_mode=True, diff=True)
    assert result['changed'] is True and len(result['diff']) == 2
    assert result['diff'][0]['before'] == CONFIG and 'pad_inner_dim: bool = True' in result['diff'][0]['after']
    assert config.read() == CONFIG and os.stat(str(config)).st_mtime_ns == mtime
    assert root.join('torchao/csrc/rocm/swizzle/swizzle.cpp').read() == SWIZZLE


def test_a_patch_that_no_longer_matches_fails_and_nothing_is_written(tmpdir):
    changed_upstream = SWIZZLE.replace('#if defined(HIPBLASLT_VEC_EXT)', '#ifdef HIPBLASLT_VEC_EXT')
    root = tree(tmpdir, {'torchao/float8/config.py': CONFIG, 'torchao/csrc/rocm/swizzle/swizzle.cpp': changed_upstream})
    result = run_module('source_patch', dict(root=str(root), patches=TORCHAO), tmpdir, check_mode=False)
    assert result['failed'] is True
    assert result['msg'].startswith("the patch no longer matches: torchao/csrc/rocm/swizzle/swizzle.cpp has neither "
                                    "'if defined(HIPBLASLT_VEC_EXT)' nor 'if false'")
    assert 'roles/primus/vars/releases/' in result['msg']
    assert root.join('torchao/float8/config.py').read() == CONFIG, 'the first patch was not written either'


def test_files_outside_the_root_are_refused(tmpdir):
    root = tree(tmpdir, {'pkg/a.py': 'x = 1\n'})
    outside = tmpdir.join('outside.py')
    outside.write('x = 1\n')
    os.symlink(str(outside), str(root.join('pkg', 'link.py')))
    for file, message in (('../outside.py', "leaves the source tree (it has '..')"),
                          (str(outside), 'is absolute'),
                          ('pkg/link.py', 'leads outside')):
        result = run_module('source_patch', dict(root=str(root), patches=[dict(file=file, before='x = 1', after='x = 2')]),
                            tmpdir, check_mode=False)
        assert result['failed'] is True and message in result['msg'], (file, result['msg'])
    assert outside.read() == 'x = 1\n'


def test_several_patches_of_one_file_write_it_once(tmpdir):
    root = tree(tmpdir, {'m.py': 'A = 1\nB = 1\n'}, mode=0o600)
    patches = [dict(file='m.py', before='A = 1', after='A = 2'), dict(file='m.py', before='B = 1', after='B = 2')]
    result = run_module('source_patch', dict(root=str(root), patches=patches), tmpdir, check_mode=False, diff=True)
    assert result['files'] == ['m.py'] and len(result['diff']) == 1 and [r['count'] for r in result['results']] == [1, 1]
    assert root.join('m.py').read() == 'A = 2\nB = 2\n' and mode_of(root.join('m.py')) == 0o600


def test_bad_input_fails_clearly(tmpdir):
    root = tree(tmpdir, {'m.py': 'A = 1\n'})
    same = run_module('source_patch', dict(root=str(root), patches=[dict(file='m.py', before='A', after='A')]),
                      tmpdir, check_mode=False)
    assert same['failed'] is True and 'before and after are the same text' in same['msg']
    missing = run_module('source_patch', dict(root=str(root), patches=[dict(file='n.py', before='A', after='B')]),
                         tmpdir, check_mode=False)
    assert missing['failed'] is True and 'n.py: no such file under %s' % root in missing['msg']
    not_dir = run_module('source_patch', dict(root=str(root.join('m.py')), patches=TORCHTUNE), tmpdir, check_mode=False)
    assert not_dir['failed'] is True and 'is not a directory' in not_dir['msg']


def test_check_mode_before_the_checkout_exists_plans_the_patches(tmpdir):
    root = tmpdir.join('not-cloned-yet')
    result = run_module('source_patch', dict(root=str(root), patches=TORCHAO), tmpdir, check_mode=True)
    assert result['changed'] is True and [r['state'] for r in result['results']] == ['planned', 'planned']
    real = run_module('source_patch', dict(root=str(root), patches=TORCHAO), tmpdir, check_mode=False)
    assert real['failed'] is True and not root.exists()
