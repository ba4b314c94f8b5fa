# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Stage stamps, key ids and prerequisites (module_utils/stage_state.py, filter plugins/filter/stages.py)."""
import collections
import hashlib
import json

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.primus.trainenv.plugins.filter import stages as stage_filters
from ansible_collections.primus.trainenv.plugins.module_utils import stage_state

import stage_registry

VIEWS = stage_registry.views()
ENTRIES = stage_registry.entries()
REQUIRES = VIEWS['requires']
ORDER = VIEWS['order']
PIP = VIEWS['pip']

VENV_KEY = {'release': 'v26.5', 'python': '3.12', 'packages': ['pip==26.3', 'wheel==0.45.1']}
TORCH_KEY = {'release': 'v26.5', 'python': '3.12', 'packages': ['torch==2.12.0+rocm7.15.0a20260720'],
             'archs': ['gfx942']}


def sha16(text):
    return hashlib.sha256(text.encode('utf-8')).hexdigest()[:16]


def stamp(stage, key, **extra):
    data = stage_state.make_stamp(stage, 'v26.5', key, {'distributions': {}}, 'node1', '2026-12-02T17:30:00Z')
    data.update(extra)
    data['problem'] = stage_state.stamp_problem(stage, data)
    return data


# --- key ids ----------------------------------------------------------------------------------

def test_key_id_is_the_sha256_of_the_canonical_json():
    key = {'python': '3.12', 'archs': ['gfx942', 'gfx950'], 'release': 'v26.5', 'n': 1, 'flag': True, 'x': None}
    expected = sha16('{"archs":["gfx942","gfx950"],"flag":true,"n":1,"python":"3.12","release":"v26.5","x":null}')
    assert stage_state.key_id(key) == expected
    assert stage_filters.stage_key_id(key) == expected
    assert len(expected) == 16 and int(expected, 16) >= 0


def test_key_id_ignores_mapping_order_but_not_list_order():
    forward = collections.OrderedDict([('a', 1), ('b', ['x', 'y'])])
    backward = collections.OrderedDict([('b', ['x', 'y']), ('a', 1)])
    assert stage_state.key_id(forward) == stage_state.key_id(backward)
    assert stage_state.key_id({'a': 1, 'b': ['y', 'x']}) != stage_state.key_id(forward)


def test_key_id_keeps_unicode_as_utf8():
    assert stage_state.key_id({'name': 'gfx942 – µ'}) == sha16('{"name":"gfx942 – µ"}')


@pytest.mark.parametrize('bad, words', [
    (['not', 'a', 'mapping'], 'must be a mapping'),
    ({'archs': {'gfx942'}}, 'key.archs: a set is not a JSON value'),
    ({1: 'x'}, 'the name 1 is not a string'),
])
def test_key_id_refuses_what_json_cannot_say(bad, words):
    with pytest.raises(stage_state.StageError) as err:
        stage_state.key_id(bad)
    assert words in str(err.value)
    with pytest.raises(AnsibleFilterError):
        stage_filters.stage_key_id(bad)


# --- stamps -----------------------------------------------------------------------------------

def test_make_stamp_has_every_field():
    data = stage_state.make_stamp('torch', 'v26.5', TORCH_KEY, {'distributions': {'torch': '2.12.0'}}, 'n1', 'T')
    assert sorted(data) == sorted(stage_state.STAMP_FIELDS)
    assert data['key_id'] == stage_state.key_id(TORCH_KEY) and data['format'] == 1
    with pytest.raises(stage_state.StageError):
        stage_state.make_stamp('../etc', 'v26.5', TORCH_KEY, {}, 'n1', 'T')


def test_same_result_ignores_time_and_host_only():
    old = stage_state.make_stamp('torch', 'v26.5', TORCH_KEY, {'d': {'torch': '1'}}, 'n1', '2026-01-01T00:00:00Z')
    assert stage_state.same_result(old, stage_state.make_stamp('torch', 'v26.5', TORCH_KEY, {'d': {'torch': '1'}}, 'n2', 'later'))
    assert not stage_state.same_result(old, stage_state.make_stamp('torch', 'v26.5', TORCH_KEY, {'d': {'torch': '2'}}, 'n1', 'x'))
    assert not stage_state.same_result(old, stage_state.make_stamp('torch', 'v26.5', dict(TORCH_KEY, archs=['gfx950']),
                                                                   {'d': {'torch': '1'}}, 'n1', 'x'))
    assert not stage_state.same_result({}, old) and not stage_state.same_result(None, old)


def test_same_result_ignores_how_long_the_stage_took():
    old = stage_state.make_stamp('te', 'v26.5', TORCH_KEY, {'commit': 'a', 'seconds': 2710.0}, 'n1', 'T')
    assert stage_state.same_result(old, stage_state.make_stamp('te', 'v26.5', TORCH_KEY, {'commit': 'a', 'seconds': 1.2}, 'n1', 'U'))
    assert stage_state.same_result(old, stage_state.make_stamp('te', 'v26.5', TORCH_KEY, {'commit': 'a'}, 'n1', 'U'))
    assert not stage_state.same_result(old, stage_state.make_stamp('te', 'v26.5', TORCH_KEY, {'commit': 'b', 'seconds': 2710.0},
                                                                   'n1', 'U'))


@pytest.mark.parametrize('change, words', [
    ({'format': 2}, 'its format is 2'),
    ({'stage': 'venv'}, "it names stage 'venv'"),
    ({'key_id': '0' * 16}, 'does not match its key'),
    ({'outputs': []}, 'not a mapping'),
])
def test_stamp_problems(change, words):
    data = stage_state.make_stamp('torch', 'v26.5', TORCH_KEY, {}, 'n1', 'T')
    assert stage_state.stamp_problem('torch', data) == ''
    data.update(change)
    assert words in stage_state.stamp_problem('torch', data)


def test_read_stamps(tmp_path):
    good = stage_state.make_stamp('venv', 'v26.5', VENV_KEY, {}, 'n1', 'T')
    (tmp_path / 'venv.json').write_text(json.dumps(good))
    edited = dict(stage_state.make_stamp('torch', 'v26.5', TORCH_KEY, {}, 'n1', 'T'))
    edited['key']['archs'] = ['gfx950']
    (tmp_path / 'torch.json').write_text(json.dumps(edited))
    (tmp_path / 'te.json').write_text('{"format": 1, "stage": "te", "ke')
    (tmp_path / '.venv.json.x1y2').write_text('a temporary file of a writer')
    (tmp_path / 'Not-A-Stage.json').write_text('{}')
    stamps = stage_state.read_stamps(str(tmp_path))
    assert sorted(stamps) == ['te', 'torch', 'venv']
    assert stamps['venv']['problem'] == '' and stamps['venv']['key_id'] == good['key_id']
    assert 'does not match its key' in stamps['torch']['problem']
    assert stamps['te']['problem'].startswith('it cannot be read as JSON')
    assert stage_state.read_stamps(str(tmp_path / 'absent')) == {}


# --- status and prerequisites -----------------------------------------------------------------

KEYS = {'venv': VENV_KEY, 'torch': TORCH_KEY}


def test_status_current_stale_missing_invalid_nokey():
    stamps = {'venv': stamp('venv', VENV_KEY), 'torch': stamp('torch', dict(TORCH_KEY, archs=['gfx950'])),
              'mamba': stamp('mamba', {'commit': 'abc'}), 'te': {'problem': 'it cannot be read as JSON (x)'}}
    status = stage_state.stage_status(stamps, KEYS, REQUIRES)
    assert status['venv'] == {'done': True, 'stamp': 'current', 'reason': '', 'key_id': stage_state.key_id(VENV_KEY)}
    assert status['torch']['stamp'] == 'stale' and not status['torch']['done']
    assert 'archs ["gfx950"] -> ["gfx942"]' in status['torch']['reason']
    assert status['mamba']['stamp'] == 'nokey' and not status['mamba']['done']
    assert status['te']['stamp'] == 'invalid' and 'unusable' in status['te']['reason']
    assert status['flash_attn'] == {'done': False, 'stamp': 'missing', 'reason': 'not done on this base', 'key_id': ''}
    assert set(ORDER) - {'verify'} <= set(status)


def test_a_stage_is_not_done_when_what_it_needs_is_not():
    stamps = {'venv': stamp('venv', VENV_KEY), 'torch': stamp('torch', TORCH_KEY)}
    assert stage_state.stage_status(stamps, KEYS, REQUIRES)['torch']['done']
    gone = stage_state.stage_status(stamps, KEYS, REQUIRES, {'venv': 'there is no venv at /b/venv'})
    assert gone['venv'] == dict(gone['venv'], done=False, stamp='current', reason='there is no venv at /b/venv')
    assert gone['torch']['stamp'] == 'current' and not gone['torch']['done']
    assert gone['torch']['reason'] == 'it needs venv, which is not done'
    never = stage_state.stage_status({}, KEYS, REQUIRES, {'venv': 'there is no venv at /b/venv'})
    assert never['venv'] == dict(never['venv'], done=False, stamp='missing', reason='there is no venv at /b/venv')


def test_the_seed_example_message():
    status = stage_state.stage_status({'venv': stamp('venv', VENV_KEY)}, KEYS, REQUIRES)
    stages = {'requires': REQUIRES, 'order': ORDER, 'status': status, 'run': ['te'], 'pip': PIP}
    check = stage_state.start('te', stages, {})
    assert check['missing'] == ['torch', 'flash_attn']
    assert check['message'].startswith(
        'te needs torch and flash_attn: run --tags torch,flash_attn first, or --tags torch,flash_attn,te. '
        'On this base: torch: not done on this base; flash_attn: not done on this base.')


def test_stages_run_earlier_in_the_same_run_count():
    status = stage_state.stage_status({}, KEYS, REQUIRES)
    stages = {'requires': REQUIRES, 'order': ORDER, 'status': status, 'run': ['venv', 'torch', 'flash_attn', 'te'],
              'pip': PIP}
    assert stage_state.start('te', stages, {}) == {'missing': [], 'message': '', 'debris': []}
    # A stage later in the run does not count for an earlier one.
    assert stage_state.start('torch', dict(stages, run=['torch', 'venv']), {})['missing'] == ['venv']


def test_every_requirement_of_the_seed_map():
    """te and turbo need one more stage each; cleanup only the venv (it removes tilelang whatever installed it);
    every other built stage needs venv and torch."""
    special = {
        'venv': [], 'torch': ['venv'],
        'te': ['venv', 'torch', 'flash_attn'],
        'turbo': ['venv', 'torch', 'aiter'],
        'cleanup': ['venv'], 'manifest': ['venv'],
        'verify': [],
    }
    for stage in ORDER:
        assert stage_state.needed(stage, REQUIRES) == special.get(stage, ['venv', 'torch']), stage
    # Each requirement comes earlier in the playbook than the stage that needs it.
    for stage, needs in REQUIRES.items():
        assert all(ORDER.index(n) < ORDER.index(stage) for n in needs), stage


def test_a_missing_stage_is_named_with_why():
    stamps = {'venv': stamp('venv', VENV_KEY), 'torch': stamp('torch', dict(TORCH_KEY, archs=['gfx950']))}
    status = stage_state.stage_status(stamps, KEYS, REQUIRES)
    stages = {'requires': REQUIRES, 'order': ORDER, 'status': status, 'run': ['turbo'], 'pip': PIP}
    message = stage_state.start('turbo', stages, {})['message']
    assert message.startswith('turbo needs torch and aiter: run --tags torch,aiter first, or --tags torch,aiter,turbo.')
    assert 'torch: done for other inputs (archs ["gfx950"] -> ["gfx942"])' in message


def test_cycles_and_bad_maps_are_errors():
    with pytest.raises(stage_state.StageError) as err:
        stage_state.needed('a', {'a': ['b'], 'b': ['a']})
    assert 'cycle: a -> b -> a' in str(err.value)
    with pytest.raises(AnsibleFilterError):
        stage_filters.stage_status({}, {}, {'a': 'b'})
    with pytest.raises(stage_state.StageError) as err:
        stage_state.start('te', {'requires': REQUIRES}, {})
    assert 'has no' in str(err.value)
    with pytest.raises(stage_state.StageError) as err:
        stage_state.start('../te', {'requires': REQUIRES, 'order': ORDER, 'status': {}, 'run': [], 'pip': PIP}, {})
    assert 'not a stage name' in str(err.value)


DEBRIS = ['/b/venv/lib/python3.12/site-packages/~orch', '/b/venv/lib/python3.12/site-packages/pip-26.dist-info/R1.tmp']


@pytest.mark.parametrize('stage, run, kind, removes', [
    # The first stage of the run that runs pip removes the debris, in a venv that is ours or adopted.
    ('venv', ['venv', 'torch'], 'ready', True),
    ('venv', ['venv', 'torch'], 'adoptable', True),
    ('torch', ['torch', 'te'], 'ready', True),
    # Not a later pip stage, nor a first stage that runs no pip, nor a venv that is not ours.
    ('torch', ['venv', 'torch'], 'ready', False),
    ('manifest', ['manifest'], 'ready', False),
    ('venv', ['venv', 'torch'], 'foreign', False),
    ('venv', ['venv', 'torch'], 'interrupted', False),
    ('venv', ['venv', 'torch'], 'absent', False),
])
def test_pips_debris_is_removed_by_the_first_pip_stage_of_the_run_only(stage, run, kind, removes):
    status = stage_state.stage_status({'venv': stamp('venv', VENV_KEY)}, KEYS, REQUIRES)
    stages = {'requires': REQUIRES, 'order': ORDER, 'status': status, 'run': run, 'pip': PIP}
    plan = stage_state.start(stage, stages, {'kind': kind, 'debris': DEBRIS})
    assert plan['debris'] == (DEBRIS if removes else [])


def run_stages(run, skip):
    return stage_state.run_plan(ENTRIES, run, skip)['stages']


def test_the_plan_lists_verify_last_and_torchrec_only_when_asked():
    every = run_stages(['all'], [])
    assert every[-1] == 'verify' and 'torchrec' not in every and every == stage_registry.default_stages()
    assert run_stages(['torchrec', 'verify'], []) == ['torchrec', 'verify']
    assert run_stages(['preflight'], []) == []


DEFAULT = [s for s in ORDER if s != 'torchrec']


@pytest.mark.parametrize('run, skip, stages', [
    (['all'], [], DEFAULT),
    ([], [], DEFAULT),
    (['preflight'], [], []),
    (['te'], [], ['te']),
    (['torch', 'venv'], [], ['venv', 'torch']),
    (['all'], ['te', 'aiter'], [s for s in DEFAULT if s not in ('te', 'aiter')]),
    (['torchrec'], [], ['torchrec']),
    (['all', 'torchrec'], [], ORDER),
    (['tagged'], [], DEFAULT),
    (['untagged'], [], []),
    (['never'], [], ['torchrec']),
    (['verify'], [], ['verify']),
    (['all', 'torchrec'], ['torchrec'], DEFAULT),
])
def test_run_stages(run, skip, stages):
    assert run_stages(run, skip) == stages


@pytest.mark.parametrize('run, skip, named', [
    (['all'], [], []), ([], [], []), (['tagged'], [], []), (['te'], [], ['te']), (['all', 'pydeps'], [], ['pydeps']),
    (['pydeps', 'venv'], ['pydeps'], ['venv']), (['torchrec'], [], ['torchrec']), (['never'], [], []),
])
def test_the_stages_named_by_tags(run, skip, named):
    """A stage asked for by name (pydeps asks the nltk data server again then), not only as a part of all."""
    assert stage_state.run_plan(ENTRIES, run, skip)['named'] == named


@pytest.mark.parametrize('run, check, lock', [
    (['all'], False, True), (['all'], True, False), (['verify'], False, False), (['preflight'], False, False),
    (['te', 'verify'], False, True),
])
def test_a_run_locks_only_when_it_may_change_the_base(run, check, lock):
    assert stage_state.run_plan(ENTRIES, run, [], check)['lock'] is lock


@pytest.mark.parametrize('entries, message', [
    ([], 'non-empty list'),
    ([{'name': 'a'}, {'name': 'a'}], 'listed twice'),
    ([{'name': 'b', 'requires': ['a']}, {'name': 'a'}], 'b requires a, which is not listed before it'),
    ([{'name': 'A'}], 'not a stage name'),
    ([{'name': 'a', 'pip': 'yes'}], 'pip must be true or false'),
    ([{'name': 'a', 'needs': []}], 'unknown fields needs'),
    ([{'name': 'a', 'requires': 'venv'}], 'requires must be a list'),
])
def test_a_bad_registry_is_refused_naming_the_entry(entries, message):
    with pytest.raises(stage_state.StageError) as err:
        stage_state.registry(entries)
    assert message in str(err.value)


# --- settled stages (skipped as a whole by the playbook) ----------------------------------------

def test_only_done_stages_with_nothing_to_do_are_settled():
    stamps = {'venv': stamp('venv', VENV_KEY), 'torch': stamp('torch', TORCH_KEY)}
    status = stage_state.stage_status(stamps, KEYS, REQUIRES)
    venv = {'kind': 'ready', 'debris': []}
    assert stage_state.settled(status, ['venv', 'torch', 'te'], PIP, venv) == ['venv', 'torch']
    # A stage with work although done (a generated file to rewrite, say) runs.
    assert stage_state.settled(status, ['venv', 'torch'], PIP, venv, {'torch': 'env.sh differs', 'venv': ''}) == ['venv']
    # A stage of another key (stale), without a stamp, or needing a stage that is not done, is never settled.
    stale = stage_state.stage_status({'venv': stamp('venv', VENV_KEY), 'torch': stamp('torch', dict(TORCH_KEY, archs=['x']))},
                                     KEYS, REQUIRES)
    assert stage_state.settled(stale, ['venv', 'torch'], PIP, venv) == ['venv']
    gone = stage_state.stage_status(stamps, KEYS, REQUIRES, {'venv': 'there is no venv at /b/venv'})
    assert stage_state.settled(gone, ['venv', 'torch'], PIP, venv) == []
    # Only the run's stages, in its order.
    assert stage_state.settled(status, ['torch'], PIP, venv) == ['torch']


@pytest.mark.parametrize('run, kind, settled', [
    # The first pip stage of the run removes pip's debris from a venv that is ours or adopted: it runs.
    (['venv', 'torch'], 'ready', ['torch']),
    (['torch'], 'ready', []),
    (['venv', 'torch'], 'foreign', ['venv', 'torch']),
])
def test_the_stage_that_removes_pips_debris_is_not_settled(run, kind, settled):
    status = stage_state.stage_status({'venv': stamp('venv', VENV_KEY), 'torch': stamp('torch', TORCH_KEY)}, KEYS, REQUIRES)
    assert stage_state.settled(status, run, PIP, {'kind': kind, 'debris': DEBRIS}) == settled


def test_skipping_a_settled_stage_skips_nothing_its_start_would_do():
    """A settled stage's start would find no missing prerequisite and remove no debris: skipping it loses nothing."""
    stamps = dict((name, stamp(name, KEYS[name])) for name in KEYS)
    status = stage_state.stage_status(stamps, KEYS, REQUIRES)
    for debris in ([], DEBRIS):
        venv = {'kind': 'ready', 'debris': debris}
        run = list(ORDER)
        settled = stage_state.settled(status, run, PIP, venv)
        assert settled and (not debris or run[0] not in settled)
        for name in settled:
            plan = stage_state.start(name, {'requires': REQUIRES, 'order': ORDER, 'status': status, 'run': run, 'pip': PIP}, venv)
            assert plan['missing'] == [] and plan['debris'] == []


def test_settled_refuses_bad_input():
    with pytest.raises(AnsibleFilterError, match='stage_settled: the stage status must be a mapping'):
        stage_filters.stage_settled(['venv'], ['venv'], PIP, {})
    with pytest.raises(AnsibleFilterError, match='busy stages must be a mapping'):
        stage_filters.stage_settled({}, ['venv'], PIP, {}, ['venv'])


def test_files_to_write_compares_content_and_mode_with_what_node_info_found():
    sha = hashlib.sha256('export A=1\n'.encode('utf-8')).hexdigest()
    expected = {'/b/env.sh': 'export A=1\n', '/b/pip-constraints.txt': 'torch==2\n', '/b/mod': 'x', '/b/gone': 'y'}
    found = {'/b/env.sh': {'kind': 'file', 'mode': '0644', 'sha256': sha},
             '/b/pip-constraints.txt': {'kind': 'file', 'mode': '0644', 'sha256': sha},
             '/b/mod': {'kind': 'file', 'mode': '0600', 'sha256': hashlib.sha256(b'x').hexdigest()},
             '/b/gone': {'kind': '', 'mode': '', 'sha256': ''}}
    assert stage_state.files_to_write(expected, found) == ['/b/pip-constraints.txt', '/b/mod', '/b/gone']
    assert stage_state.files_to_write({'/b/env.sh': 'export A=1\n'}, found) == []
    # A path that was not looked at is written; a symlink to the right content is not a file of ours.
    assert stage_state.files_to_write({'/b/other': ''}, found) == ['/b/other']
    assert stage_state.files_to_write({'/b/env.sh': 'export A=1\n'}, {'/b/env.sh': dict(found['/b/env.sh'], kind='link')}) \
        == ['/b/env.sh']
    with pytest.raises(AnsibleFilterError, match='files_to_write: files_to_write needs'):
        stage_filters.files_to_write(['/b/env.sh'], found)
