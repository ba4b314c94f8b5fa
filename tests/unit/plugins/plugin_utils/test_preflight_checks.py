# -*- coding: utf-8 -*-
"""preflight's checks before the lock (plugin_utils/preflight_checks.py and the preflight_problems filter)."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.primus.trainenv.plugins.filter.checks import preflight_problems
from ansible_collections.primus.trainenv.plugins.filter.decisions import _arch_list as arch_list
from ansible_collections.primus.trainenv.plugins.filter.path_check import path_check
from ansible_collections.primus.trainenv.plugins.plugin_utils.preflight_checks import problems

BASE = '/home/u/envs/primus-env'
VENV_PY = BASE + '/venv/bin/python'
GOOD = {
    'settings': {'base': BASE, 'te_mode': '', 'python': '', 'arch_override': '', 'max_jobs': '', 'jit_cache': 'auto',
                 'min_free_gib': 60, 'build_tools': ['git', 'make'], 'compilers': ['g++', 'c++', 'clang++']},
    'inputs': {'base': path_check(BASE, 'PRIMUS_BASE'), 'venv': path_check(BASE + '/venv', 'primus_venv_dir (VENV_DIR)'),
               'python': path_check('', 'PRIMUS_PYTHON (primus_python)', 'command')},
    'node': {'path': BASE, 'user': 'u', 'creatable': True, 'problem': '', 'nearest_existing': '/home/u',
             'nearest_is_dir': True, 'free_bytes': 100 * 1024 ** 3,
             'private_dirs': {'build': {'path': '/tmp/primus-build-u', 'problem': '', 'owner': 'u'},
                              'cache': {'path': '/tmp/primus-cache-u', 'problem': '', 'owner': 'u'}},
             'interpreters': {VENV_PY: {'exists': False, 'version': '', 'error': 'does not exist'}},
             'commands': {'git': '/usr/bin/git', 'make': '/usr/bin/make', 'g++': '/usr/bin/g++'}},
    'pins': {'python_version': '3.12', 'release': 'v26.5', 'te': {'min_glibc_for_wheel': '2.38'}},
    'paths': {'base': BASE, 'venv': BASE + '/venv', 'venv_python': VENV_PY, 'state': BASE + '/state'},
}


def facts(**changes):
    """GOOD with changes given as 'section__key' (two levels) or 'section' (whole section)."""
    result = copy.deepcopy(GOOD)
    for name, value in changes.items():
        section, key = (name.split("__", 1) + [""])[:2]
        if key:
            result[section][key] = value
        else:
            result[section] = value
    return result


def test_a_good_node_has_no_problem():
    assert problems(facts()) == []
    assert preflight_problems(facts()) == []
    # Settings given as numbers or left empty are fine.
    assert problems(facts(settings__max_jobs=16, settings__min_free_gib='7.5', settings__te_mode='source',
                          settings__arch_override='gfx942;gfx950')) == []


@pytest.mark.parametrize('changes, message', [
    ({'settings__base': ''}, "PRIMUS_BASE is not set. Export it to a writable directory on a disk with tens of GB free"),
    ({'settings__base': None}, 'PRIMUS_BASE is not set.'),
    ({'settings__base': '~/envs/p'}, "PRIMUS_BASE must be an absolute path, got '~/envs/p'. Build stages work in "
                                     "subdirectories and the venv records absolute paths, so a relative base breaks "
                                     "them (~ is not expanded here). Fix: export PRIMUS_BASE=\"$HOME/envs/p\""),
    ({'settings__base': 'envs/p'}, "PRIMUS_BASE must be an absolute path, got 'envs/p'. Build stages work in "
                                   "subdirectories and the venv records absolute paths, so a relative base breaks them. "
                                   "Fix: export PRIMUS_BASE=\"$HOME/envs/p\" or another absolute path."),
    ({'settings__te_mode': 'Wheel'}, "PRIMUS_TE_MODE must be one of auto, wheel, source (got 'Wheel'). Fix: unset it "
                                     "(auto picks the wheel on glibc >= 2.38, else a source build)"),
    ({'settings__max_jobs': '0x10'}, "MAX_JOBS (primus_max_jobs) must be a positive integer, got '0x10'."),
    ({'settings__max_jobs': -4}, "MAX_JOBS (primus_max_jobs) must be a positive integer, got '-4'."),
    ({'settings__jit_cache': 'nfs'}, "primus_jit_cache must be one of auto, node, base (got 'nfs')."),
    ({'settings__min_free_gib': '60G'}, "primus_min_free_gib must be a number of GiB, got '60G'. Fix: e.g. "
                                        "-e primus_min_free_gib=60."),
    ({'node__free_bytes': 3 * 1024 ** 3}, "PRIMUS_BASE %s is on a filesystem with 3.0 GiB free (at /home/u), less than "
                                          "primus_min_free_gib=60 GiB." % BASE),
    ({'node__creatable': False, 'node__problem': '/home/u is not writable by user u'},
     "PRIMUS_BASE %s cannot be used by user u: /home/u is not writable by user u. Fix: choose a PRIMUS_BASE under a "
     "directory you own (e.g. \"$HOME/envs/primus-env\"), or make /home/u writable for u. Nothing was created." % BASE),
    ({'node__commands': {'git': '/usr/bin/git'}},
     "The source builds need git, make and a C++ compiler; not found on PATH: make, a C++ compiler (g++, c++, clang++)."),
])
def test_each_bad_setting_is_named_with_its_fix(changes, message):
    found = problems(facts(**changes))
    assert len(found) == 1 and found[0].startswith(message), found


def test_a_bad_arch_override_says_what_arch_list_would_refuse():
    found = problems(facts(settings__arch_override='gfx942;gfx95x'))
    with pytest.raises(AnsibleFilterError) as err:
        arch_list('gfx942;gfx95x')
    assert found == ["GPU arch override 'gfx942;gfx95x': %s. Fix primus_arch_override (or PYTORCH_ROCM_ARCH), for "
                     "example gfx942;gfx950, or leave it empty to detect the node's GPUs." % err.value]


def test_directory_problems_are_all_named_but_not_those_of_the_default_venv_under_a_bad_base():
    bad_base = '/srv/$(id)'
    inputs = {'base': path_check(bad_base, 'PRIMUS_BASE'), 'venv': path_check(bad_base + '/venv', 'primus_venv_dir'),
              'workspace': path_check('/w s', 'primus_workspace_dir'), 'python': path_check('', 'p', 'command')}
    found = problems(facts(inputs=inputs, settings__base=bad_base))
    assert found[0].startswith(inputs['base']['problem'] + '. Fix: ' + inputs['base']['fix'] + '. ')
    assert inputs['workspace']['problem'] in found[0] and inputs['venv']['problem'] not in found[0]
    assert found[0].endswith('Nothing was created or changed.')


def test_a_foreign_build_or_cache_directory_names_its_owner_or_the_fix():
    dirs = {'build': {'path': '/tmp/primus-build-u', 'problem': 'is owned by mallory', 'owner': 'mallory'},
            'cache': {'path': '/tmp/c', 'problem': 'is writable by others', 'owner': 'u'}}
    found = problems(facts(node__private_dirs=dirs))
    assert found == [
        'The build directory /tmp/primus-build-u (primus_build_dir (SRC_DIR)) is owned by mallory. It is never adopted: '
        'whoever can write it can change what gets built and installed. Fix: set primus_build_dir to a directory of '
        'your own on local disk, or ask mallory (or an admin) to remove /tmp/primus-build-u. '
        'The cache directory /tmp/c (primus_cache_dir) is writable by others. It is never adopted: whoever can write '
        'it can change what gets installed from the pip/uv caches. Fix: set primus_cache_dir to a directory of your '
        'own on local disk, or fix it (chmod go-w, or replace the link by a directory) if it is yours. '
        'Nothing was created or changed.']


def test_a_megatron_checkout_another_user_can_change_is_refused_before_anything_runs():
    refusals = {'/srv/b/Primus': 'The Megatron checkout /srv/b/Primus cannot be built in by user u: /srv/b/Primus is '
                                 'owned by bob (uid 1001), not by you. Fix: ...',
                '/home/u/Primus': 'The Megatron checkout /home/u/Primus cannot be built in by user u: ...'}
    found = problems(facts(node__megatron_checkouts=refusals))
    assert found == [refusals['/home/u/Primus'] + ' ' + refusals['/srv/b/Primus'] + ' Nothing was created or changed.']
    assert problems(facts(node__megatron_checkouts={})) == []


def test_a_shared_wheel_store_another_user_owns_is_refused():
    """Every node installs what the shared wheel store holds: it is a directory the run writes, the user's own."""
    dirs = {'wheel_store': {'path': '/nfs/store', 'problem': 'is owned by bob (uid 1001), not by you'},
            'state': {'path': BASE + '/state', 'problem': ''}}
    found = problems(facts(node__written_dirs=dirs))
    assert len(found) == 1 and found[0].startswith(
        'The shared wheel store directory /nfs/store (primus_wheel_store_shared) is owned by bob (uid 1001), not by '
        'you. Every directory a run writes must be a real directory of your own'), found


def test_interpreters_primus_python_and_an_existing_venv_of_another_version():
    interpreters = {'/opt/py': {'exists': True, 'version': '3.11', 'error': ''},
                    '/bin/sh': {'exists': True, 'version': '', 'error': 'is not a Python interpreter'},
                    VENV_PY: {'exists': True, 'version': '3.10', 'error': ''}}
    found = problems(facts(settings__python='/opt/py', node__interpreters=interpreters))
    assert found[0] == ("PRIMUS_PYTHON=/opt/py is not Python 3.12: it is Python 3.11. Fix: point PRIMUS_PYTHON "
                        "(primus_python) at a Python 3.12 interpreter, or unset it to use python3.12 on PATH or let uv "
                        "provide one.")
    assert found[1] == ("existing venv at %s/venv is Python 3.10, but v26.5 requires 3.12. The pinned torch nightly "
                        "ships a cp312 Linux wheel only, so an older venv cannot be upgraded in place. Fix: remove it "
                        "(rm -rf '%s/venv'), then run the same ansible-playbook command again. Nothing was changed or "
                        "deleted." % (BASE, BASE))
    # a venv path outside the base (a system or pyenv prefix given as primus_venv_dir) is never to be deleted
    outside = problems(facts(node__interpreters={'/usr/bin/python': {'exists': True, 'version': '3.11', 'error': ''}},
                             paths__venv='/usr', paths__venv_python='/usr/bin/python'))[0]
    assert 'rm ' not in outside and "mv '/usr' '/usr.old'" in outside
    assert problems(facts(settings__python='/bin/sh', node__interpreters=interpreters))[0].startswith(
        'PRIMUS_PYTHON=/bin/sh is not Python 3.12: it is not a Python interpreter.')


def test_problems_come_in_check_order_and_the_space_check_waits_for_a_valid_threshold():
    found = problems(facts(settings__te_mode='x', settings__max_jobs='y', node__commands={}))
    assert [m.split(' ')[0] for m in found] == ['PRIMUS_TE_MODE', 'MAX_JOBS', 'The']
    assert len(problems(facts(settings__min_free_gib='lots', node__free_bytes=0))) == 1


def test_the_filter_names_missing_facts():
    with pytest.raises(AnsibleFilterError) as err:
        preflight_problems({'settings': GOOD['settings']})
    assert 'preflight_problems: the facts lack' in str(err.value)


TE_SHORT = {'repo': 'https://user:tok@github.com/ROCm/TransformerEngine.git', 'ref': '2a26bf8', 'ref_kind': 'short_commit'}
TE_FULL = '2a26bf8' + 'c' * 33


@pytest.mark.parametrize('given, source, words', [
    ('', TE_SHORT, ''),
    (TE_FULL, dict(TE_SHORT, ref=TE_FULL, ref_kind='commit'), ''),          # roles/primus used it
    ('2a26bf8', TE_SHORT, "primus_te_source_ref '2a26bf8' is not a full commit (40 lower-case hex digits)"),
    ('1' * 40, TE_SHORT, "primus_te_source_ref '%s' does not start with the commit the release names for TE (2a26bf8)"
     % ('1' * 40)),
    ('1' * 40, dict(TE_SHORT, ref='a' * 40, ref_kind='commit'), 'does not start with the commit the release names'),
    ('1' * 40, dict(TE_SHORT, ref='main', ref_kind='branch'), "cannot pin the release's TE branch main"),
])
def test_the_te_source_ref_must_complete_the_releases_commit(given, source, words):
    found = problems(facts(settings__te_source_ref=given, pins__sources={'te': source}))
    if not words:
        assert found == []
        return
    assert len(found) == 1 and found[0].startswith('primus_te_source_ref ') and words in found[0], found
    assert 'tok' not in found[0] and 'Nothing was created or changed.' in found[0]


def test_a_base_of_another_release_is_not_built_over():
    stamps = {'venv': {'release': 'v26.5', 'key_id': 'a'}, 'torch': {'release': 'v26.5', 'key_id': 'b'},
              'broken': {'problem': 'it cannot be read as JSON (x)'}}
    found = problems(facts(node__stamps=stamps, pins__release='v26.5.1'))
    assert len(found) == 1, found
    assert found[0].startswith("PRIMUS_BASE '%s' holds release v26.5 (recorded by stages torch venv), and this run is for "
                               "release v26.5.1." % BASE), found[0]
    assert '-e primus_base=/home/u/envs/primus-v26.5.1' in found[0] and '-e primus_release=v26.5' in found[0]
    assert problems(facts(node__stamps=stamps, pins__release='v26.5')) == []
    assert problems(facts(node__stamps={}, pins__release='v26.5.1')) == []
