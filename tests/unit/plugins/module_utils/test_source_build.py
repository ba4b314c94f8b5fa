# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Source-build decisions (module_utils/source_build.py, filters in plugins/filter/sources.py), the
stages whose own distribution is gone (stage_state.outputs_missing) and the venv's installed set."""
import copy
import os

import pytest
import yaml

from ansible.errors import AnsibleFilterError
from ansible_collections.primus.trainenv.plugins.filter import sources as source_filters
from ansible_collections.primus.trainenv.plugins.module_utils import source_build, stage_state, venv_state

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
with open(os.path.join(ROOT, 'roles', 'primus', 'vars', 'releases', 'v26.5.yml')) as _handle:
    PINS = yaml.safe_load(_handle)['primus_pins']
SOURCES = PINS['sources']
BUILT = ['flash_attn', 'te', 'torchtune', 'torchao', 'grouped_gemm', 'causal_conv1d', 'mamba']
GG = '2046cc1a27cb2575f5869d0b7361272de9dd8814'
MAMBA = '3515896db00cf73538f694c0f5909ab86f3e3611'
CONTEXT = {'python_tag': 'cp312', 'torch': PINS['versions']['torch'], 'glibc': '2.36', 'archs': ['gfx942'],
           'build_dir': '/tmp/primus-build-me', 'cache_dir': '/tmp/primus-cache-me', 'workspace': '/home/me/env/workspace'}


def commits():
    found = dict((name, s['ref']) for name, s in SOURCES.items() if s['ref_kind'] == 'commit')
    found.update(grouped_gemm=GG, mamba=MAMBA)
    return found


def plans(context=None, sources=None):
    return source_filters.source_plans(sources or SOURCES, BUILT, commits(), context or CONTEXT)


def test_every_source_of_the_release_is_usable_and_each_built_stage_says_what_it_installs():
    for name, source in SOURCES.items():
        assert source_build.check_source(name, source) == [], name
    found = plans()
    assert {n: p['distribution'] for n, p in found.items()} == {
        'flash_attn': 'flash_attn', 'te': 'transformer_engine', 'torchtune': 'torchtune', 'torchao': 'torchao',
        'grouped_gemm': 'grouped_gemm', 'causal_conv1d': 'causal_conv1d', 'mamba': 'mamba_ssm'}


def test_the_build_variables_are_the_arch_list_in_each_builds_form_and_te_gets_nvte_only():
    both = plans(dict(CONTEXT, archs=['gfx950', 'gfx942']))
    assert both['flash_attn']['env'] == {'GPU_ARCHS': 'gfx942;gfx950'}
    assert both['te']['env'] == {'GPU_ARCHS': 'gfx942;gfx950', 'NVTE_ROCM_ARCH': 'gfx942;gfx950',
                                 'NVTE_FRAMEWORK': 'pytorch', 'NVTE_USE_ROCM': '1', 'NVTE_USE_HIPBLASLT': '1'}
    for name in ('torchtune', 'torchao', 'grouped_gemm', 'causal_conv1d', 'mamba'):
        assert not [v for v in both[name]['env'] if v.startswith('NVTE_')], name
    assert source_build.build_env({'arch_env': {'HIP_ARCHITECTURES': 'csv'}}, ['gfx942', 'gfx950']) == {
        'HIP_ARCHITECTURES': 'gfx942,gfx950'}


def test_an_arch_change_changes_the_keys_of_the_arch_dependent_builds_only():
    one, two = plans(), plans(dict(CONTEXT, archs=['gfx942', 'gfx950']))
    changed = {name for name in BUILT if one[name]['key_id'] != two[name]['key_id']}
    assert changed == set(BUILT) - {'torchtune'}
    # The same inputs give the same key, whatever the order of the arch list.
    assert plans(dict(CONTEXT, archs=['gfx950', 'gfx942']))['te']['key_id'] == two['te']['key_id']


@pytest.mark.parametrize('what, change', [
    ('commit', lambda s, c: c.update(grouped_gemm='f' * 40)),
    ('patch text', lambda s, c: s['torchtune']['patches'][0].update(after='use_grouped_mm = None')),
    ('build isolation', lambda s, c: s['torchtune']['build'].update(isolation=False)),
    ('build variable', lambda s, c: s['grouped_gemm']['build'].update(env={'CK_TILE': '1'})),
    ('submodules', lambda s, c: s['grouped_gemm'].update(submodules=False)),
])
def test_each_input_of_a_build_changes_its_key_and_nothing_else(what, change):
    sources, found = copy.deepcopy(SOURCES), commits()
    change(sources, found)
    before = plans()
    after = source_filters.source_plans(sources, BUILT, found, CONTEXT)
    changed = [name for name in BUILT if before[name]['key_id'] != after[name]['key_id']]
    assert len(changed) == 1, (what, changed)
    assert after[changed[0]]['wheel_dir'] == '/tmp/primus-cache-me/wheels/%s/%s' % (changed[0], after[changed[0]]['key_id'])


def test_the_torch_version_python_and_glibc_are_part_of_every_key_and_no_url_is():
    base = plans()
    for field, value in (('torch', '2.13.0+rocm7.16'), ('python_tag', 'cp313'), ('glibc', '2.39')):
        other = plans(dict(CONTEXT, **{field: value}))
        assert all(base[n]['key_id'] != other[n]['key_id'] for n in BUILT), field
    for plan in base.values():
        assert 'github.com' not in stage_state.canonical_json(plan['key'])


def test_kept_checkouts_live_in_the_workspace_and_transient_ones_in_the_build_dir():
    found = source_filters.source_plans(SOURCES, ['flash_attn', 'aiter'], commits(), CONTEXT)
    assert found['flash_attn']['src'] == '/tmp/primus-build-me/flash_attn'
    assert found['aiter']['src'] == '/home/me/env/workspace/aiter' and found['aiter']['keep'] is True


@pytest.mark.parametrize('change, message', [
    (lambda s: s.update(ref='abc123'), "is not a full 40-hex commit"),
    (lambda s: s.update(ref_kind='branch', ref='--upload-pack=evil'), 'is not a branch name'),
    (lambda s: s.update(repo='--config=x'), 'starts with "-"'),
    (lambda s: s['build'].update(speed='fast'), 'unknown fields speed'),
    (lambda s: s['build'].update(arch_env={'GPU_ARCHS': 'semicolons'}), 'want NAME: list|csv'),
    (lambda s: s['build'].update(env={'bad name': '1'}), 'is not a variable name'),
    (lambda s: s.update(patches=[{'file': 'x.py', 'before': 'a'}]), 'needs file, before and after'),
])
def test_a_pins_entry_that_cannot_be_built_from_is_an_error_naming_it(change, message):
    source = copy.deepcopy(SOURCES['flash_attn'])
    change(source)
    with pytest.raises(AnsibleFilterError, match='sources.flash_attn'):
        source_filters.source_plans({'flash_attn': source}, ['flash_attn'], commits(), CONTEXT)
    assert any(message in p for p in source_build.check_source('flash_attn', source))


def test_a_floating_branch_without_a_resolved_commit_cannot_be_planned():
    with pytest.raises(AnsibleFilterError, match='sources.mamba: no resolved commit'):
        source_filters.source_plans(SOURCES, ['mamba'], {}, CONTEXT)


LS_REMOTE = ('%s\trefs/heads/rocm\n' % GG) + ('%s\trefs/heads/rocm-old\n' % ('a' * 40))


def test_ls_remote_output_gives_the_branch_commit_and_nothing_for_a_missing_or_similar_branch():
    assert source_build.ls_remote_commit(LS_REMOTE, 'rocm') == GG
    assert source_build.ls_remote_commit(LS_REMOTE, 'roc') == ''
    assert source_build.ls_remote_commit('', 'rocm') == ''
    assert source_build.ls_remote_commit('warning: redirecting\n', 'rocm') == ''


def test_floating_branches_are_resolved_only_when_not_recorded_or_asked():
    stamps = {'grouped_gemm': {'key': {'commit': GG}}, 'mamba': {'key': {}}}
    names = ['flash_attn', 'grouped_gemm', 'mamba']
    assert source_build.floating_to_resolve(names, SOURCES, stamps, False) == ['mamba']
    assert source_build.floating_to_resolve(names, SOURCES, stamps, True) == ['grouped_gemm', 'mamba']
    assert source_build.floating_to_resolve(names, SOURCES, {}, False) == ['grouped_gemm', 'mamba']


def test_the_commits_of_a_run_report_a_moved_branch():
    moved = 'b' * 40
    stamps = {'grouped_gemm': {'key': {'commit': GG}}}
    result = source_build.source_commits(SOURCES, stamps, {'grouped_gemm': '%s\trefs/heads/rocm\n' % moved})
    assert result['commits']['grouped_gemm'] == moved
    assert result['commits']['flash_attn'] == SOURCES['flash_attn']['ref']
    assert result['commits']['mamba'] == ''
    assert result['moves'] == {'grouped_gemm': {'from': GG, 'to': moved, 'ref': 'rocm'}}
    kept = source_build.source_commits(SOURCES, stamps, {})
    assert kept['commits']['grouped_gemm'] == GG and kept['moves'] == {}


def test_a_stage_whose_own_distribution_is_gone_or_replaced_is_named_with_why():
    stamps = {'flash_attn': {'outputs': {'distributions': {'flash-attn': '2.8.3'}}},
              'torchao': {'outputs': {'distributions': {'torchao': '0.14.0.dev0+gitabc'}}},
              'mamba': {'outputs': {}}}
    own = {'flash_attn': ['flash_attn'], 'torchao': ['torchao'], 'mamba': ['mamba_ssm'], 'te': ['transformer_engine']}
    gone = stage_state.outputs_missing(stamps, own, {'torchao': '0.15.0'})
    assert gone == {'flash_attn': 'flash_attn 2.8.3, which it installed, is no longer installed',
                    'torchao': 'torchao 0.14.0.dev0+gitabc, which it installed, is now 0.15.0'}
    assert stage_state.outputs_missing(stamps, own, {'Flash_Attn': '2.8.3', 'torchao': '0.14.0.dev0+gitabc'}) == {}


def test_the_venv_distributions_are_read_from_the_dist_info_names(tmp_path):
    site = tmp_path / 'lib' / 'python3.12' / 'site-packages'
    for entry in ('flash_attn-2.8.3.dist-info', 'torch-2.12.0+rocm7.15.0a20260720.dist-info', 'Mamba_SSM-2.2.5.dist-info',
                  'torch', 'README.txt', 'broken.dist-info'):
        (site / entry).mkdir(parents=True)
    assert venv_state.distributions(venv_state.site_packages(str(tmp_path))) == {
        'flash-attn': '2.8.3', 'torch': '2.12.0+rocm7.15.0a20260720', 'mamba-ssm': '2.2.5'}
