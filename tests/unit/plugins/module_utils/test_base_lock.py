# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The lock on PRIMUS_BASE (module_utils/base_lock.py): create, race, take over, release, judge, explain."""
import json
import multiprocessing
import os
import signal
import socket
import stat
import subprocess
import sys
import time

import pytest

from ansible_collections.primus.trainenv.plugins.module_utils import base_lock
from ansible_collections.primus.trainenv.plugins.module_utils.modes import make_dirs


def owner(run_id='run1', inventory_host='node1', **extra):
    record = {'run_id': run_id, 'inventory_host': inventory_host, 'controller_host': 'login1',
              'controller_pid': 4242, 'controller_user': 'trainer', 'node_host': 'gpu07', 'user': 'trainer',
              'since': '2026-12-02T17:30:00Z', 'format': 1}
    record.update(extra)
    return record


def test_acquire_creates_the_lock_once_and_leaves_no_temporary_file(tmp_path):
    path = base_lock.lock_path(str(tmp_path))
    assert base_lock.acquire(path, owner()) == (True, owner())
    with open(path) as handle:
        assert json.load(handle) == owner()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
    assert os.listdir(str(tmp_path)) == [base_lock.LOCK_NAME]
    # The same run on the same inventory host again: still ours.
    acquired, holder = base_lock.acquire(path, owner())
    assert acquired and holder == owner()
    # Another run, or this run for another inventory host: refused, with the holder.
    assert base_lock.acquire(path, owner(run_id='run2')) == (False, owner())
    assert base_lock.acquire(path, owner(inventory_host='node2')) == (False, owner())
    assert os.listdir(str(tmp_path)) == [base_lock.LOCK_NAME]


def _race(args):
    base, index, start = args
    while time.time() < start:
        pass
    return base_lock.acquire(base_lock.lock_path(base), owner(run_id='run%d' % index))[0]


def test_of_many_concurrent_runs_exactly_one_gets_the_lock(tmp_path):
    start = time.time() + 0.5
    with multiprocessing.get_context('fork').Pool(8) as pool:
        results = pool.map(_race, [(str(tmp_path), i, start) for i in range(16)])
    assert results.count(True) == 1
    assert os.listdir(str(tmp_path)) == [base_lock.LOCK_NAME]


def test_without_hard_links_it_falls_back_to_exclusive_create(tmp_path, monkeypatch):
    def no_links(src, dst):
        raise OSError(base_lock.errno.EPERM, 'Operation not permitted')
    monkeypatch.setattr(base_lock.os, 'link', no_links)
    path = base_lock.lock_path(str(tmp_path))
    assert base_lock.acquire(path, owner())[0]
    assert base_lock.acquire(path, owner(run_id='run2')) == (False, owner())
    assert os.listdir(str(tmp_path)) == [base_lock.LOCK_NAME]


def test_a_lost_nfs_reply_is_decided_by_the_link_count(tmp_path, monkeypatch):
    """NFS: link() may fail on the client although the server made the link; the link count tells."""
    real_link = os.link

    def link_then_lose_the_reply(src, dst):
        real_link(src, dst)
        raise OSError(base_lock.errno.EIO, 'Input/output error')
    monkeypatch.setattr(base_lock.os, 'link', link_then_lose_the_reply)
    path = base_lock.lock_path(str(tmp_path))
    assert base_lock.acquire(path, owner()) == (True, owner())
    assert os.listdir(str(tmp_path)) == [base_lock.LOCK_NAME]


def test_a_real_error_is_not_mistaken_for_a_held_lock(tmp_path, monkeypatch):
    def failing_link(src, dst):
        raise OSError(base_lock.errno.EIO, 'Input/output error')
    monkeypatch.setattr(base_lock.os, 'link', failing_link)
    with pytest.raises(OSError) as err:
        base_lock.acquire(base_lock.lock_path(str(tmp_path)), owner())
    assert err.value.errno == base_lock.errno.EIO
    assert os.listdir(str(tmp_path)) == [], 'the unique file is removed'


def test_release_removes_only_our_own_lock(tmp_path):
    path = base_lock.lock_path(str(tmp_path))
    base_lock.acquire(path, owner())
    assert base_lock.release(path, 'run2', 'node1') == (False, owner())
    assert base_lock.release(path, 'run1', 'node2') == (False, owner())
    assert os.path.exists(path)
    assert base_lock.release(path, 'run1', 'node1') == (True, owner())
    assert not os.path.exists(path)
    assert base_lock.release(path, 'run1', 'node1') == (False, None)


def test_take_over_replaces_only_the_named_stale_lock(tmp_path):
    path = base_lock.lock_path(str(tmp_path))
    base_lock.acquire(path, owner(run_id='dead'))
    # Not the run we think is stale: left as it is.
    assert base_lock.take_over(path, 'other', owner(run_id='me')) == (False, owner(run_id='dead'), None)
    assert base_lock.read_lock(path)[0] == owner(run_id='dead')
    acquired, holder, replaced = base_lock.take_over(path, 'dead', owner(run_id='me'))
    assert (acquired, holder, replaced) == (True, owner(run_id='me'), owner(run_id='dead'))
    assert os.listdir(str(tmp_path)) == [base_lock.LOCK_NAME]
    # Gone in between: just taken.
    os.unlink(path)
    assert base_lock.take_over(path, 'dead', owner(run_id='me2'))[:2] == (True, owner(run_id='me2'))


def test_read_lock_of_garbage(tmp_path):
    path = base_lock.lock_path(str(tmp_path))
    assert base_lock.read_lock(path) == (None, '')
    with open(path, 'w') as handle:
        handle.write('held by bob')
    # What the file holds is never returned (it could be anyone's secret): only what kind of thing it is.
    assert base_lock.read_lock(path) == ({'kind': 'file'}, 'it is not a JSON lock record')
    acquired, holder = base_lock.acquire(path, owner())
    assert not acquired and holder['problem'] == 'it is not a JSON lock record'
    assert base_lock.judge(holder, owner())[0] == 'unreadable'


def test_read_lock_of_a_fifo_or_a_directory_does_not_block_or_suggest_rm(tmp_path):
    path = base_lock.lock_path(str(tmp_path))
    os.mkfifo(path)   # opening a FIFO for reading blocks until a writer comes: read_lock must not open it
    assert base_lock.read_lock(path) == ({'kind': 'fifo'}, 'it is a named pipe (FIFO), not a lock file')
    os.unlink(path)
    os.mkdir(path)
    holder, problem = base_lock.read_lock(path)
    assert holder == {'kind': 'dir'} and problem == 'it is a directory, not a lock file'
    message = base_lock.refusal(str(tmp_path), 'unreadable', dict(holder, problem=problem), {})
    assert 'rm ' not in message and "mv '%s' '%s.moved'" % (path, path) in message


def test_make_dirs_uses_the_mode_not_the_umask(tmp_path):
    old = os.umask(0)
    try:
        created = make_dirs(str(tmp_path / 'a' / 'b' / 'base'))
    finally:
        os.umask(old)
    assert created == [str(tmp_path / 'a'), str(tmp_path / 'a' / 'b'), str(tmp_path / 'a' / 'b' / 'base')]
    assert all(stat.S_IMODE(os.stat(d).st_mode) == 0o755 for d in created)
    assert make_dirs(str(tmp_path / 'a')) == []


# --- the controller side --------------------------------------------------------------------

def fake_proc(tmp_path, pid, comm, start, boot='boot-1', state='S'):
    proc = tmp_path / 'proc'
    (proc / 'self').mkdir(parents=True, exist_ok=True)
    (proc / 'sys' / 'kernel' / 'random').mkdir(parents=True, exist_ok=True)
    (proc / 'sys' / 'kernel' / 'random' / 'boot_id').write_text(boot + '\n')
    (proc / str(pid)).mkdir()
    rest = [state] + ['0'] * 18 + [str(start)] + ['0'] * 30
    (proc / str(pid) / 'stat').write_text('%d (%s) %s\n' % (pid, comm, ' '.join(rest)))
    return str(proc)


def test_process_start_reads_field_22_even_with_odd_command_names(tmp_path):
    proc = fake_proc(tmp_path, 77, 'ansible-playbook) (x', 123456)
    assert base_lock.process_start(77, proc) == '123456'
    assert base_lock.process_start(78, proc) == ''
    zombie = fake_proc(tmp_path / 'z', 79, 'ansible-playbook', 123456, state='Z')
    assert base_lock.process_start(79, zombie) == ''
    # This very process, on this machine.
    if os.path.exists('/proc/self/stat'):
        assert base_lock.process_start(os.getpid()).isdigit()


def test_the_run_id_is_the_same_for_every_host_of_a_run(tmp_path):
    proc = fake_proc(tmp_path, 77, 'ansible-playbook', 1000)
    machine = tmp_path / 'machine-id'
    machine.write_text('m1\n')
    first = base_lock.controller_identity(77, 'login1', 'trainer', proc, str(machine))
    again = base_lock.controller_identity(77, 'login1', 'trainer', proc, str(machine))
    assert first == again and len(first['run_id']) == 12
    assert first['controller_boot_id'] == 'boot-1' and first['controller_machine_id'] == 'm1'
    assert first['controller_pid_start'] == '1000'
    other = base_lock.controller_identity(78, 'login1', 'trainer', proc, str(machine))
    assert other['run_id'] != first['run_id']


def here(tmp_path, **extra):
    data = {'run_id': 'me', 'inventory_host': 'node1', 'controller_host': 'login1', 'controller_machine_id': 'm1',
            'controller_boot_id': 'boot-1'}
    data.update(extra)
    return data


@pytest.mark.parametrize('holder, verdict, detail', [
    (dict(run_id='me', inventory_host='node1'), 'ours', ''),
    (dict(run_id='me', inventory_host='node2'), 'same_run', ''),
    (dict(run_id='x', controller_host='login2', controller_machine_id='m2', controller_pid=77), 'elsewhere', ''),
    (dict(run_id='x', controller_host='login1', controller_machine_id='m9', controller_pid=77), 'elsewhere', ''),
    (dict(run_id='x', controller_host='login1', controller_machine_id='m1', controller_boot_id='boot-0',
          controller_pid=77), 'stale', 'login1 has rebooted since'),
    (dict(run_id='x', controller_host='login1', controller_pid=77, controller_pid_start='1000'), 'alive', ''),
    (dict(run_id='x', controller_host='login1', controller_pid=77, controller_pid_start='999'), 'stale',
     'pid 77 is now another process (the ansible-playbook that took the lock is gone)'),
    (dict(run_id='x', controller_host='login1', controller_pid=79, controller_pid_start='1000'), 'stale',
     'ansible-playbook pid 79 is no longer running'),
    (dict(run_id='x', controller_host='login1', controller_pid='many'), 'unreadable', "its controller_pid 'many'"),
    ({'raw': 'x'}, 'unreadable', 'it is not a lock record of primus.trainenv'),
])
def test_judge(tmp_path, holder, verdict, detail):
    proc = fake_proc(tmp_path, 77, 'ansible-playbook', 1000)
    found = base_lock.judge(holder, here(tmp_path), proc)
    assert found[0] == verdict
    assert found[1].startswith(detail)


def test_judge_with_real_processes():
    """A pid that has exited is stale; this process is alive (with its real start time)."""
    me = base_lock.controller_identity(os.getpid(), socket.gethostname(), 'u')
    alive = dict(me, run_id='other', inventory_host='n')
    assert base_lock.judge(alive, dict(me, inventory_host='n')) == ('alive', '')
    child = subprocess.Popen([sys.executable, '-c', 'pass'])
    child.wait()
    dead = dict(alive, controller_pid=child.pid, controller_pid_start='')
    assert base_lock.judge(dead, dict(me, inventory_host='n'))[0] == 'stale'


def test_messages_name_the_holder_and_the_fix():
    holder = owner(run_id='abc123', since='2026-12-02T17:30:00Z')
    now = time.mktime(time.strptime('2026-12-02T17:33:00Z', '%Y-%m-%dT%H:%M:%SZ')) - time.timezone
    who = base_lock.describe(holder, now)
    assert who == ('user trainer on node gpu07 (inventory host node1), ansible-playbook pid 4242 on controller '
                   'login1 run by trainer, since 2026-12-02T17:30:00Z, 3 min ago, run id abc123')
    alive = base_lock.refusal('/b', 'alive', holder, {'controller_host': 'login1'}, now)
    assert alive.startswith('PRIMUS_BASE /b is in use by another run: ' + who)
    assert 'kill 4242 on login1' in alive
    elsewhere = base_lock.refusal('/b', 'elsewhere', holder, {'controller_host': 'login9'}, now)
    assert 'cannot be checked from login9, so the lock is not taken over' in elsewhere
    assert "remove the lock on gpu07: rm '/b/.primus.lock'" in elsewhere
    shared = base_lock.refusal('/b', 'same_run', holder, {'controller_host': 'login1'}, now)
    assert 'already being built in this same run for inventory host node1' in shared and '--limit node1' in shared
    garbage = base_lock.refusal('/b', 'unreadable', {'kind': 'file', 'problem': 'it is not JSON'}, {}, now)
    assert "(it is not JSON). If no run is using this base, remove that file: rm -f '/b/.primus.lock'" in garbage


# --- what a dead run left running on the node -------------------------------------------------

# Run ids of this test process: processes an earlier, interrupted test run left behind never match them.
TAG = '%06x' % (os.getpid() % 0xffffff)


def spawn(run_id, script='sleep 60', **popen):
    """A process tree (bash, its child) of a run: RUN_ENV=run_id in its environment."""
    env = dict(os.environ, **{base_lock.RUN_ENV: run_id})
    proc = subprocess.Popen(['bash', '-c', script], env=env, **popen)
    return proc


def gone(proc, timeout=10):
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return False
    return True


def test_run_processes_finds_a_run_s_processes_and_their_children_only():
    mine = spawn('dead00001' + TAG, 'sleep 60 & wait')
    other = spawn('live00002' + TAG)
    try:
        deadline = time.time() + 60   # a guard against a hang, not a bound on the start (a loaded machine is slow)
        found = []
        # Until the child has exec'd sleep (between fork and exec it is a copy of bash, command line and all).
        while time.time() < deadline and not (len(found) == 2 and any(c == 'sleep 60' for _p, _s, c in found)):
            found = base_lock.run_processes('dead00001' + TAG)
            time.sleep(0.05)
        pids = [pid for pid, _start, _command in found]
        assert mine.pid in pids and len(pids) == 2, found   # bash and its sleep child
        assert other.pid not in pids
        assert all(start == base_lock.process_start(pid) for pid, start, _command in found)
        assert any(command == 'sleep 60' for _pid, _start, command in found)
        assert base_lock.run_processes('') == [], 'no run id, no processes (an unlocked run passes an empty one)'
        assert base_lock.run_processes('deadrun0000') == [], 'the whole id, not a prefix'
        assert base_lock.run_processes('dead00001' + TAG, uid=os.geteuid() + 1) == []
    finally:
        for proc in (mine, other):
            proc.kill()
            proc.wait()


class PollClock(object):
    """base_lock's time for stop_processes: it advances only by the function's own polls (each a real sleep), so
    "after the grace" and "before its deadline" are counted in polls, whatever the machine's load."""

    def __init__(self):
        self.now = 0.0

    def time(self):
        return self.now

    def sleep(self, seconds):
        time.sleep(seconds)
        self.now += seconds


def test_stop_processes_terminates_then_kills_what_ignores_sigterm(monkeypatch):
    polite = spawn('dead00003' + TAG, 'exec sleep 60')
    stubborn = spawn('dead00003' + TAG, "trap '' TERM; echo ready; while :; do sleep 0.1; done",
                     stdout=subprocess.PIPE, text=True)
    try:
        assert stubborn.stdout.readline() == 'ready\n'   # the trap is set
        found = [p for p in base_lock.run_processes('dead00003' + TAG) if p[0] in (polite.pid, stubborn.pid)]
        assert len(found) == 2
        clock, sent = PollClock(), []

        def kill(pid, sig):
            sent.append((pid, sig, clock.now))
            os.kill(pid, sig)
        monkeypatch.setattr(base_lock, 'time', clock)
        stopped = base_lock.stop_processes(found, grace=1.0, kill=kill)
        returned = clock.now
        monkeypatch.undo()
        # SIGTERM to both at once; SIGKILL only to the one that ignored it, and only once the grace was over.
        assert [(pid, sig) for pid, sig, _when in sent] == [
            (polite.pid, signal.SIGTERM), (stubborn.pid, signal.SIGTERM), (stubborn.pid, signal.SIGKILL)], sent
        assert sent[0][2] == sent[1][2] == 0.0 and sent[2][2] >= 1.0, sent
        # It returned because nothing was left, not at its SIGKILL wait's deadline (5 s of polls).
        assert not base_lock.process_start(polite.pid) and not base_lock.process_start(stubborn.pid)
        assert returned < sent[2][2] + 5.0, (returned, sent)
        assert {s['pid']: s['signal'] for s in stopped} == {polite.pid: 'SIGTERM', stubborn.pid: 'SIGKILL'}
        assert gone(polite) and gone(stubborn)
        assert polite.returncode == -15 and stubborn.returncode == -9
    finally:
        for proc in (polite, stubborn):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if stubborn.stdout:
            stubborn.stdout.close()


def test_stop_processes_leaves_a_reused_pid_alone():
    proc = spawn('dead00004' + TAG)
    try:
        sent = []
        stopped = base_lock.stop_processes([(proc.pid, 'not-its-start', 'sleep 60')], kill=lambda *a: sent.append(a))
        assert stopped == [] and sent == [] and proc.poll() is None
    finally:
        proc.kill()
        proc.wait()
