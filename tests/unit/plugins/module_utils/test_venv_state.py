# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What is at the venv path (module_utils/venv_state.py): ours and finished, interrupted, adoptable, foreign."""
import os
import sys

import pytest

from ansible_collections.primus.trainenv.plugins.module_utils import venv_state

HEADER = venv_state.MARKER_HEADER + ': this venv was made by the venv stage of this collection; do not edit.\n'


def make_venv(root, cfg=True, python=True, pip=True, marker=None, extra=()):
    """A venv-shaped directory: pyvenv.cfg, bin/python (a link to this interpreter), site-packages/pip."""
    sp = root / 'lib' / 'python3.12' / 'site-packages'
    sp.mkdir(parents=True)
    if cfg:
        (root / 'pyvenv.cfg').write_text('home = /usr/bin\nversion = 3.12.1\n')
    if python:
        (root / 'bin').mkdir()
        os.symlink(sys.executable, str(root / 'bin' / 'python'))
    if pip:
        (sp / 'pip').mkdir()
        (sp / 'pip' / '__init__.py').write_text('')
    if marker is not None:
        (root / venv_state.MARKER).write_text(marker)
    for name in extra:
        (root / name).write_text('x')
    return str(root)


def kind(path, pip_ok=True):
    calls = []

    def pip_works(python):
        calls.append(python)
        return (True, '') if pip_ok else (False, 'its pip does not run (ModuleNotFoundError: No module named pip)')

    obs = venv_state.inspect(path, pip_works)
    return venv_state.classify(obs) + (calls,)


def test_absent_and_empty_are_created(tmp_path):
    assert kind(str(tmp_path / 'venv'))[:2] == ('absent', '')
    (tmp_path / 'venv').mkdir()
    assert kind(str(tmp_path / 'venv'))[:2] == ('empty', '')


def test_ours_and_complete_is_ready_without_running_pip(tmp_path):
    path = make_venv(tmp_path / 'venv', marker=HEADER + 'state = complete\npython = 3.12\n')
    found, problem, calls = kind(path)
    assert (found, problem, calls) == ('ready', '', [])


@pytest.mark.parametrize('layout, missing', [
    (dict(pip=False), 'no pip'),
    (dict(cfg=False, pip=False), 'no pyvenv.cfg, no pip'),
    (dict(cfg=False, python=False, pip=False), 'no pyvenv.cfg, no bin/python, no pip'),
    (dict(), 'its marker says "creating"'),
])
def test_our_interrupted_creation_is_recreated(tmp_path, layout, missing):
    path = make_venv(tmp_path / 'venv', marker=HEADER + 'state = creating\npython = 3.12\n', **layout)
    found, problem, _calls = kind(path)
    assert found == 'interrupted' and found in venv_state.RECREATE
    assert problem == 'the venv at %s was being created by an earlier run that did not finish (%s)' % (path, missing)


def test_ours_complete_but_broken_is_recreated(tmp_path):
    path = make_venv(tmp_path / 'venv', pip=False, marker=HEADER + 'state = complete\n')
    assert kind(path)[:2] == ('broken', 'the venv at %s, made by primus.trainenv, has lost pip' % path)


def test_a_seed_built_venv_with_working_pip_is_adopted(tmp_path):
    path = make_venv(tmp_path / 'venv')
    found, problem, calls = kind(path)
    assert (found, problem) == ('adoptable', '') and calls == [os.path.join(path, 'bin', 'python')]


def test_a_venv_of_someone_else_without_a_working_pip_is_refused(tmp_path):
    path = make_venv(tmp_path / 'venv')
    found, problem, _calls = kind(path, pip_ok=False)
    assert found == 'foreign'
    assert "it cannot be adopted: its pip does not run (ModuleNotFoundError" in problem and "rm -rf '%s'" % path in problem
    no_pip = make_venv(tmp_path / 'other', pip=False)
    assert 'cannot be adopted: no pip' in kind(no_pip)[1]


def test_a_directory_that_is_not_a_venv_is_refused_naming_what_it_holds(tmp_path):
    path = make_venv(tmp_path / 'venv', cfg=False, pip=False, extra=['notes.txt'])
    found, problem, calls = kind(path)
    assert found == 'foreign' and calls == []
    assert problem.startswith('%s is not a venv (it has no pyvenv.cfg; it holds bin, lib, notes.txt)' % path)
    assert 'nor into any interpreter it points at' in problem and 'primus_venv_dir' in problem


def test_a_file_and_an_unreadable_marker_are_refused(tmp_path):
    (tmp_path / 'venv').write_text('not a directory')
    found, problem, _calls = kind(str(tmp_path / 'venv'))
    assert found == 'foreign' and 'exists and is not a directory' in problem
    path = make_venv(tmp_path / 'other', marker='state = complete\n')
    found, problem, _calls = kind(path)
    assert found == 'foreign' and "does not start with '# primus.trainenv'" in problem
    path = make_venv(tmp_path / 'third', marker=HEADER + 'state = half\n')
    assert 'has no state = creating or complete line' in kind(path)[1]


def test_pip_debris_is_found_in_site_packages(tmp_path):
    path = make_venv(tmp_path / 'venv', marker=HEADER + 'state = complete\n')
    sp = tmp_path / 'venv' / 'lib' / 'python3.12' / 'site-packages'
    (sp / '~orch').mkdir()
    (sp / '~orch-2.12.0.dist-info').mkdir()
    (sp / '~ip').write_text('')
    info = sp / 'torch-2.12.0.dist-info'
    info.mkdir()
    (info / 'RECORD').write_text('')
    (info / 'RECORDa1b2c3.tmp').write_text('')
    (sp / 'keep.tmp').write_text('')           # not in a dist-info: not pip's
    (sp / 'torch').mkdir()
    obs = venv_state.inspect(path)
    assert sorted(obs['debris']) == sorted([str(sp / '~ip'), str(sp / '~orch'), str(sp / '~orch-2.12.0.dist-info'),
                                            str(info / 'RECORDa1b2c3.tmp')])
    assert venv_state.classify(obs)[0] == 'ready'
