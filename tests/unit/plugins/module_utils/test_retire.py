# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Retiring a base (module_utils/retire.py): only a base this collection built for this user, never the current one, a
locked one or one in use; what goes is the base and its modulefile link, and an interrupted removal is finished."""
import json
import os
import subprocess
import sys
import time

import pytest

from ansible_collections.primus.trainenv.plugins.module_utils import retire, stage_state


def base(tmp_path, name='primus-v26.5', release='v26.5'):
    path = tmp_path / name
    (path / 'state').mkdir(parents=True)
    (path / 'venv' / 'bin').mkdir(parents=True)
    (path / 'modulefiles' / 'primus').mkdir(parents=True)
    (path / 'modulefiles' / 'primus' / release).write_text('#%Module\n')
    (path / 'env.sh').write_text('# env\n')
    for stage in ('venv', 'torch'):
        stamp = stage_state.make_stamp(stage, release, {'release': release}, {}, 'node1', '2026-01-01T00:00:00Z')
        (path / 'state' / (stage + '.json')).write_text(json.dumps(stamp))
    return str(path)


def test_a_base_goes_with_its_modulefile_link_and_nothing_else(tmp_path):
    old, new = base(tmp_path), base(tmp_path, 'primus-v26.5.1', 'v26.5.1')
    modules = tmp_path / 'privatemodules' / 'primus'
    modules.mkdir(parents=True)
    os.symlink(os.path.join(old, 'modulefiles', 'primus', 'v26.5'), str(modules / 'v26.5'))
    os.symlink(os.path.join(new, 'modulefiles', 'primus', 'v26.5.1'), str(modules / 'v26.5.1'))
    current = tmp_path / 'primus-current'
    os.symlink(new, str(current))
    found = retire.plan(old, os.geteuid(), str(current), str(tmp_path / 'privatemodules'))
    assert found['release'] == 'v26.5'
    assert [name for name, _size in found['entries']] == ['env.sh', 'modulefiles', 'state', 'venv']
    assert found['modulefile_links'] == [str(modules / 'v26.5')]
    assert os.path.isdir(old)      # planning removes nothing
    retire.remove(found)
    assert not os.path.lexists(old) and not os.path.lexists(retire.retiring_path(old))
    assert not os.path.lexists(str(modules / 'v26.5')) and os.path.islink(str(modules / 'v26.5.1'))
    assert os.path.isdir(new) and os.path.realpath(str(current)) == new


@pytest.mark.parametrize('make, words', [
    (lambda t: str(t / 'nothing'), 'does not exist'),
    (lambda t: (t / 'plain').mkdir() or str(t / 'plain'), 'is not a base this collection built'),
    (lambda t: os.symlink(base(t), str(t / 'link')) or str(t / 'link'), 'is a symbolic link'),
    (lambda t: 'relative/base', 'is not an absolute, normalised path'),
    (lambda t: str(t) + '/x/../y', 'is not an absolute, normalised path'),
])
def test_what_is_not_a_base_is_refused(tmp_path, make, words):
    with pytest.raises(retire.RetireError, match=words):
        retire.plan(make(tmp_path), os.geteuid())


def test_the_current_base_is_refused(tmp_path):
    old = base(tmp_path)
    os.symlink(old, str(tmp_path / 'current'))
    with pytest.raises(retire.RetireError, match='is the current base'):
        retire.plan(old, os.geteuid(), str(tmp_path / 'current'))
    assert os.path.isdir(old)


def test_a_locked_base_is_refused(tmp_path):
    old = base(tmp_path)
    with open(os.path.join(old, '.primus.lock'), 'w') as handle:
        json.dump({'format': 1, 'run_id': 'r1', 'controller_host': 'login1', 'controller_user': 'me',
                   'inventory_host': 'n1', 'since': '2026-01-01T00:00:00Z'}, handle)
    with pytest.raises(retire.RetireError, match='is locked'):
        retire.plan(old, os.geteuid())


def test_a_base_a_process_runs_from_is_refused(tmp_path):
    old = base(tmp_path)
    job = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'], cwd=os.path.join(old, 'venv'))
    try:
        time.sleep(0.2)
        with pytest.raises(retire.RetireError, match='process %d \\(its working directory\\)' % job.pid):
            retire.plan(old, os.geteuid())
        env = dict(os.environ, VIRTUAL_ENV=os.path.join(old, 'venv'))
        other = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'], env=env)
        try:
            time.sleep(0.2)
            assert (other.pid, 'its environment (VIRTUAL_ENV or PRIMUS_BASE)') in retire.processes_using(old)
        finally:
            other.kill()
    finally:
        job.kill()
        job.wait()
    assert retire.processes_using(old) == [] or all(pid != job.pid for pid, _w in retire.processes_using(old))


def test_an_interrupted_removal_is_finished(tmp_path):
    old = base(tmp_path)
    os.rename(old, retire.retiring_path(old))
    found = retire.plan(old, os.geteuid())
    assert found['resume'] == retire.retiring_path(old)
    retire.remove(found)
    assert not os.path.lexists(retire.retiring_path(old))
