# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""text_patch: the ck_jit_compile.sh decision and patch (as the seed's sed does it, verified) and
literal replacements in source trees (every occurrence, idempotent, no escape from the root)."""

import ast
import hashlib
import json
import os
import shutil
import stat
import subprocess

import pytest

from ansible_collections.primus.trainenv.plugins.module_utils import text_patch as tp

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))

# The seed's sed (Primus setup.sh patch_te_ck_jit): `|` as delimiter, `\|\|` for the literal ||, anchored with $.
SEED_SED = r's|    mv -n "$_TMP_SO" "$OUTPUT"$|    mv -n "$_TMP_SO" "$OUTPUT" 2>/dev/null \|\| true|'


def world_ck_jit():
    """The ck_jit_compile.sh the world's TE wheels ship (tests/world/lib/packages.py CK_JIT), read without importing."""
    with open(os.path.join(ROOT, 'tests', 'world', 'lib', 'packages.py')) as handle:
        tree = ast.parse(handle.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, 'id', None) for t in node.targets] == ['CK_JIT']:
            return ast.literal_eval(node.value)
    raise AssertionError('CK_JIT not found in the world')


def with_line(line):
    """The world's script with its mv line replaced by `line` (indentation included)."""
    text = world_ck_jit()
    assert text.count(tp.CK_JIT_BEFORE_LINE + '\n') == 1
    return text.replace(tp.CK_JIT_BEFORE_LINE + '\n', line + '\n')


# --- ck_jit_compile.sh ---------------------------------------------------------------------------

def test_the_world_script_needs_the_patch_on_its_mv_line():
    text = world_ck_jit()
    found = tp.ck_jit_classify(text)
    line = text.splitlines().index(tp.CK_JIT_BEFORE_LINE) + 1
    assert found == dict(state='patched', unpatched=[line], patched=[], upstream_fixed=[], unknown=[])


@pytest.mark.skipif(shutil.which('sed') is None, reason='needs sed')
def test_the_patch_gives_exactly_what_the_seeds_sed_gives():
    text = world_ck_jit()
    sed = subprocess.run(['sed', SEED_SED], input=text, capture_output=True, text=True, check=True).stdout
    patched, count = tp.ck_jit_apply(text)
    assert count == 1 and patched == sed and patched != text
    assert tp.CK_JIT_AFTER_LINE + '\n' in patched.splitlines(True)
    assert tp.ck_jit_classify(patched)['state'] == 'already_patched'
    assert tp.ck_jit_apply(patched) == (patched, 0), 'patched exactly once'


@pytest.mark.parametrize('indent', ['', '  ', '        ', '\t'])
def test_other_indentation_is_kept(indent):
    patched, count = tp.ck_jit_apply(with_line(indent + tp.CK_JIT_UNPATCHED))
    assert count == 1 and indent + tp.CK_JIT_PATCHED + '\n' in patched.splitlines(True)


def test_crlf_line_endings_survive():
    text = world_ck_jit().replace('\n', '\r\n')
    patched, count = tp.ck_jit_apply(text)
    assert count == 1 and tp.CK_JIT_AFTER_LINE + '\r\n' in patched.splitlines(True)
    assert patched.count('\r\n') == text.count('\r\n') and '\n' not in patched.replace('\r\n', '')


@pytest.mark.parametrize('line', [
    '    mv -n "$_TMP_SO" "$OUTPUT" || [ -f "$OUTPUT" ]',
    '    mv -n "$_TMP_SO" "$OUTPUT" 2>/dev/null || [ -f "$OUTPUT" ]',
    '    mv -n "$_TMP_SO" "$OUTPUT"  ||  [[ -e "$OUTPUT" ]]',
    '    mv -n "$_TMP_SO" "$OUTPUT" || test -f "$OUTPUT"; # lost the race: the winner published it',
])
def test_upstreams_own_fix_is_recognised_and_left_alone(line):
    text = with_line(line)
    found = tp.ck_jit_classify(text)
    assert found['state'] == 'upstream_fixed' and found['upstream_fixed'] == [10]
    assert tp.ck_jit_apply(text) == (text, 0)


@pytest.mark.parametrize('line', [
    # The seed's grep would call this "already patched"; under `set -e` a lost race still aborts.
    '    mv -n "$_TMP_SO" "$OUTPUT" 2>/dev/null',
    '    mv "$_TMP_SO" "$OUTPUT"',
    '    mv -f "${_TMP_SO}" "$OUTPUT"',
    '    mv -n "$_TMP_SO" "$OUTPUT" || [ -f "$OTHER" ]',
    '    if ! mv -n "$_TMP_SO" "$OUTPUT"; then exit 1; fi',
])
def test_an_unknown_form_of_the_mv_line_is_unrecognized(line):
    found = tp.ck_jit_classify(with_line(line))
    assert found['state'] == 'unrecognized' and found['unknown'] == [(10, line.strip())]
    message = tp.ck_jit_unrecognized_message('/v/ck_jit_compile.sh', found)
    assert message.startswith('/v/ck_jit_compile.sh is not in a form the ck_jit patch knows: it has line 10: ')
    assert "Expected the line '%s'" % tp.CK_JIT_BEFORE_LINE in message and tp.CK_JIT_AFTER_LINE in message


def test_another_move_beside_the_known_line_is_left_as_the_seeds_sed_leaves_it():
    text = with_line(tp.CK_JIT_BEFORE_LINE + '\n    mv "$_TMP_SO" "$OUTPUT.bak"')
    found = tp.ck_jit_classify(text)
    assert found['state'] == 'patched' and found['unpatched'] == [10] and found['unknown'] == [(11, 'mv "$_TMP_SO" "$OUTPUT.bak"')]
    patched, count = tp.ck_jit_apply(text)
    assert count == 1 and patched == text.replace(tp.CK_JIT_BEFORE_LINE + '\n', tp.CK_JIT_AFTER_LINE + '\n')
    assert tp.ck_jit_classify(patched)['state'] == 'already_patched'


def test_a_script_without_the_line_is_unrecognized_and_says_so():
    text = with_line('    cp "$_TMP_SO" "$OUTPUT"')
    found = tp.ck_jit_classify(text)
    assert found['state'] == 'unrecognized' and found['unknown'] == []
    assert 'it has no line that moves "$_TMP_SO"' in tp.ck_jit_unrecognized_message('f', found)


def test_a_commented_mv_is_ignored_and_a_patched_file_stays_patched():
    text = with_line('    # mv "$_TMP_SO" "$OUTPUT" used to fail here\n' + tp.CK_JIT_AFTER_LINE)
    assert tp.ck_jit_classify(text)['state'] == 'already_patched'


# --- literal replacements ------------------------------------------------------------------------

def test_every_occurrence_is_replaced_and_counted():
    text = 'a = 1\nuse_grouped_mm = True\nx(use_grouped_mm = True)\n'
    new, count = tp.replace_literal(text, 'use_grouped_mm = True', 'use_grouped_mm = False')
    assert count == 2 and new == 'a = 1\nuse_grouped_mm = False\nx(use_grouped_mm = False)\n'
    assert tp.literal_state(new, 'use_grouped_mm = True', 'use_grouped_mm = False') == 'already_patched'
    assert tp.literal_state(text, 'use_grouped_mm = True', 'use_grouped_mm = False') == 'pending'
    assert tp.literal_state('nothing\n', 'use_grouped_mm = True', 'use_grouped_mm = False') == 'mismatch'


def test_a_patch_that_appends_to_its_text_applies_once():
    before, after = 'mv -n a b', 'mv -n a b || true'
    once, count = tp.replace_literal('x\nmv -n a b\nmv -n a b\n', before, after)
    assert count == 2 and once == 'x\nmv -n a b || true\nmv -n a b || true\n'
    assert tp.literal_state(once, before, after) == 'already_patched'
    assert tp.replace_literal(once, before, after) == (once, 0)
    half = 'mv -n a b || true\nmv -n a b\n'
    assert tp.replace_literal(half, before, after) == ('mv -n a b || true\nmv -n a b || true\n', 1)


def test_the_pinned_patches_pass_the_checks_and_hash_canonically():
    import yaml
    with open(os.path.join(ROOT, 'roles', 'primus', 'vars', 'releases', 'v26.5.yml')) as handle:
        pins = yaml.safe_load(handle)
    sources = pins['primus_pins']['sources']
    patches = sources['torchao']['patches']
    assert tp.check_patches(patches) == patches
    expected = hashlib.sha256(json.dumps(patches, sort_keys=True, separators=(',', ':')).encode()).hexdigest()
    assert tp.patch_hash(patches) == expected
    reordered = [dict(reversed(list(p.items()))) for p in patches]
    assert tp.patch_hash(reordered) == expected, 'key order does not matter'
    assert tp.patch_hash(list(reversed(patches))) != expected, 'patch order does'
    assert tp.patch_hash([dict(patches[0], after='pad_inner_dim: bool = None')]) != tp.patch_hash(patches[:1])


@pytest.mark.parametrize('patch, message', [
    (dict(file='../etc/x.py', before='a', after='b'), "leaves the source tree (it has '..')"),
    (dict(file='a/../../x.py', before='a', after='b'), "leaves the source tree"),
    (dict(file='/etc/passwd', before='a', after='b'), "is absolute"),
    (dict(file='a//b.py', before='a', after='b'), "not a plain relative path"),
    (dict(file='a.py', before='', after='b'), "patches[0].before must be a non-empty string"),
    (dict(file='a.py', before='same', after='same'), "before and after are the same text 'same'"),
    (dict(file='a.py', before='a', after='b', mode='0644'), "unknown keys mode"),
])
def test_bad_patches_are_refused_with_the_reason(patch, message):
    with pytest.raises(tp.PatchError) as info:
        tp.check_patches([patch])
    assert message in str(info.value)


def test_patches_that_rewrite_each_other_are_refused():
    with pytest.raises(tp.PatchError) as info:
        tp.check_patches([dict(file='a.py', before='A = 1', after='A = 2'), dict(file='a.py', before='A = 2', after='A = 3')])
    assert 'patches[0] and patches[1] both patch a.py' in str(info.value) and 'merge them' in str(info.value)
    # the same texts in two different files are independent
    tp.check_patches([dict(file='a.py', before='A = 1', after='A = 2'), dict(file='b.py', before='A = 2', after='A = 3')])


def test_resolve_inside_refuses_symlink_escapes(tmp_path):
    root, outside = tmp_path / 'src', tmp_path / 'outside.py'
    (root / 'pkg').mkdir(parents=True)
    outside.write_text('x = 1\n')
    (root / 'pkg' / 'real.py').write_text('x = 1\n')
    os.symlink(str(outside), str(root / 'pkg' / 'escape.py'))
    os.symlink('../..', str(root / 'pkg' / 'up'))
    os.symlink('real.py', str(root / 'pkg' / 'alias.py'))
    assert tp.resolve_inside(str(root), 'pkg/alias.py') == str(root / 'pkg' / 'real.py')
    for file in ('pkg/escape.py', 'pkg/up/outside.py'):
        with pytest.raises(tp.PatchError):
            tp.resolve_inside(str(root), file)
    with pytest.raises(tp.PatchError) as info:
        tp.resolve_inside(str(root), 'pkg/escape.py')
    assert 'leads outside' in str(info.value) and str(outside) in str(info.value)
    with pytest.raises(tp.PatchError) as info:
        tp.resolve_inside(str(root), 'pkg/missing.py')
    assert 'no such file' in str(info.value)
    with pytest.raises(tp.PatchError) as info:
        tp.resolve_inside(str(root), 'pkg')
    assert 'not a regular file' in str(info.value)


def test_atomic_write_keeps_the_mode_and_bytes_that_are_not_utf8(tmp_path):
    path = tmp_path / 'ck_jit_compile.sh'
    path.write_bytes(b'#!/bin/bash\n# caf\xe9\n')
    os.chmod(str(path), 0o750)
    text, mode = tp.read_text(str(path))
    assert mode == 0o750
    tp.write_text_atomic(str(path), text + 'echo ok\n', mode)
    assert path.read_bytes() == b'#!/bin/bash\n# caf\xe9\necho ok\n'
    assert stat.S_IMODE(os.stat(str(path)).st_mode) == 0o750
    assert os.listdir(str(tmp_path)) == ['ck_jit_compile.sh'], 'no temporary file left'
    assert tp.diff_text(text) == '#!/bin/bash\n# caf\ufffd\n'
