# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""One run per PRIMUS_BASE: the lock file ``$PRIMUS_BASE/.primus.lock``, safe on NFS without flock.

The lock is created the classic NFS-safe way: the record is written to a file of a unique name
next to it, that file is hard-linked to the lock's name, and the link count of the unique file
(2 when the link was made, whatever the reply said) decides who holds it. Where hard links are
not supported, ``O_CREAT | O_EXCL`` is used instead.

The record (JSON) says who holds the base: the run id, the controller (host, machine and boot
id, the ansible-playbook pid and its start time, the user there), the inventory host, the node's
host name and user, and since when. Only the controller can tell whether that ansible-playbook
process is still alive (``judge``); the node side only creates, replaces and removes the file.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import errno
import hashlib
import json
import os
import signal
import stat
import time

LOCK_NAME = '.primus.lock'
FORMAT = 1
# link() errors that mean "no hard links here" rather than "the lock exists".
NO_HARD_LINKS = set(getattr(errno, name) for name in ('EPERM', 'EOPNOTSUPP', 'ENOTSUP', 'EXDEV', 'EMLINK')
                    if hasattr(errno, name))
# Every task of a run that holds a base's lock runs with this variable set to the run's id (playbooks/primus.yml).
RUN_ENV = 'PRIMUS_TRAINENV_RUN'
OWNER_FIELDS = ('run_id', 'controller_host', 'controller_machine_id', 'controller_boot_id', 'controller_pid',
                'controller_pid_start', 'controller_user', 'inventory_host')


def lock_path(base):
    return os.path.join(base, LOCK_NAME)


def now_utc():
    return time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())


# --------------------------------------------------------------------------- the controller side

def _read_text(path):
    try:
        with open(path) as handle:
            return handle.read().strip()
    except (IOError, OSError):
        return ''


def process_start(pid, proc='/proc'):
    """The start time of a running process in clock ticks since boot (field 22 of /proc/<pid>/stat); '' when
    there is no such process or it has exited (a zombie, state Z or X, is not running)."""
    text = _read_text(os.path.join(proc, str(pid), 'stat'))
    # The command name (field 2) is in parentheses and may hold spaces or parentheses itself.
    fields = text[text.rfind(')') + 2:].split() if ')' in text else []
    if len(fields) <= 19 or fields[0] in ('Z', 'X'):
        return ''
    return fields[19]


def controller_identity(pid, host, user, proc='/proc', machine_id_file='/etc/machine-id'):
    """Who this run is, as recorded in the lock; the run id is the same for every host of one run."""
    identity = {
        'controller_host': host,
        'controller_machine_id': _read_text(machine_id_file),
        'controller_boot_id': _read_text(os.path.join(proc, 'sys', 'kernel', 'random', 'boot_id')),
        'controller_pid': int(pid),
        'controller_pid_start': process_start(pid, proc),
        'controller_user': user,
    }
    fields = ('controller_host', 'controller_machine_id', 'controller_boot_id', 'controller_pid', 'controller_pid_start')
    seed = '|'.join(str(identity[k]) for k in fields)
    identity['run_id'] = hashlib.sha256(seed.encode('utf-8')).hexdigest()[:12]
    return identity


def _pid_exists(pid):
    try:
        os.kill(pid, 0)
    except OSError as exc:
        return exc.errno == errno.EPERM
    return True


def judge(holder, here, proc='/proc'):
    """(verdict, detail) about a lock record, seen from this controller (``here``, with inventory_host).

    ours      this run on this inventory host holds it (acquiring again is fine)
    same_run  this run holds it for another inventory host (nodes sharing one PRIMUS_BASE)
    alive     a run from this controller that is still running
    stale     a run from this controller whose ansible-playbook process is gone (or the controller rebooted)
    elsewhere a run from another controller: cannot be checked from here
    unreadable the lock file is not a lock record
    """
    if not isinstance(holder, dict) or not holder.get('run_id'):
        return 'unreadable', 'it is not a lock record of primus.trainenv'
    if holder.get('run_id') == here['run_id']:
        if holder.get('inventory_host') == here.get('inventory_host'):
            return 'ours', ''
        return 'same_run', ''
    same_host = holder.get('controller_host') == here['controller_host']
    if same_host and holder.get('controller_machine_id') and here.get('controller_machine_id'):
        same_host = holder['controller_machine_id'] == here['controller_machine_id']
    if not same_host:
        return 'elsewhere', ''
    if holder.get('controller_boot_id') and here.get('controller_boot_id') \
            and holder['controller_boot_id'] != here['controller_boot_id']:
        return 'stale', '%s has rebooted since' % here['controller_host']
    try:
        pid = int(holder.get('controller_pid'))
    except (TypeError, ValueError):
        return 'unreadable', 'its controller_pid %r is not a number' % (holder.get('controller_pid'),)
    recorded = str(holder.get('controller_pid_start') or '')
    if os.path.isdir(proc) and os.path.exists(os.path.join(proc, 'self')):
        start = process_start(pid, proc)
        if not start:
            return 'stale', 'ansible-playbook pid %d is no longer running' % pid
        if recorded and start != recorded:
            return 'stale', 'pid %d is now another process (the ansible-playbook that took the lock is gone)' % pid
        return 'alive', ''
    if _pid_exists(pid):
        return 'alive', ''
    return 'stale', 'ansible-playbook pid %d is no longer running' % pid


def _ago(since, now=None):
    try:
        then = time.mktime(time.strptime(since, '%Y-%m-%dT%H:%M:%SZ')) - time.timezone
    except (TypeError, ValueError):
        return ''
    seconds = int((now if now is not None else time.time()) - then)
    if seconds < 0:
        return ''
    if seconds < 120:
        return ', %d s ago' % seconds
    if seconds < 7200:
        return ', %d min ago' % (seconds // 60)
    return ', %.1f h ago' % (seconds / 3600.0)


def describe(holder, now=None):
    """'user trainer on node gpu07 (inventory host node7), ansible-playbook pid 4242 on controller login1 by
    trainer, since 2026-12-02T17:30:00Z (3 min ago), run 1a2b3c4d5e6f'."""
    return ('user %s on node %s (inventory host %s), ansible-playbook pid %s on controller %s run by %s, since %s%s, '
            'run id %s' % (holder.get('user', '?'), holder.get('node_host', '?'), holder.get('inventory_host', '?'),
                           holder.get('controller_pid', '?'), holder.get('controller_host', '?'),
                           holder.get('controller_user', '?'), holder.get('since', '?'),
                           _ago(holder.get('since'), now), holder.get('run_id', '?')))


def refusal(base, verdict, holder, here, now=None):
    """The message of a run that cannot take the lock: who holds it and how to clear it."""
    lock = lock_path(base)
    if verdict == 'unreadable':
        why = holder.get('problem') or 'it is not a lock record of primus.trainenv'
        if holder.get('kind', 'file') != 'file':
            # Not a file this collection ever makes: nothing is suggested for removal (it may be someone's data).
            return ("PRIMUS_BASE %s cannot be locked: %s is in the way (%s). primus.trainenv only ever writes a regular "
                    "file there. Fix: look at what it is and move it out of the base (mv '%s' '%s.moved'), or choose "
                    "another PRIMUS_BASE, then run again. Nothing was changed." % (base, lock, why, lock, lock))
        return ("PRIMUS_BASE %s is locked by %s, which cannot be read as a lock of primus.trainenv (%s). If no run is "
                "using this base, remove that file: rm -f '%s', then run again." % (base, lock, why, lock))
    who = describe(holder, now)
    if verdict == 'same_run':
        return ("PRIMUS_BASE %s is already being built in this same run for inventory host %s (%s). Nodes that share "
                "one PRIMUS_BASE (a shared filesystem) must not build it at the same time: give each node its own "
                "primus_base (for example a path with {{ inventory_hostname }} in it), or build it once with "
                "--limit %s." % (base, holder.get('inventory_host'), who, holder.get('inventory_host')))
    if verdict == 'alive':
        return ("PRIMUS_BASE %s is in use by another run: %s. Two runs on one base would break each other; this one "
                "changed nothing. Wait for that run to finish (or stop it: kill %s on %s), then run again."
                % (base, who, holder.get('controller_pid'), holder.get('controller_host')))
    return ("PRIMUS_BASE %s is locked by a run from another controller host: %s. Whether that run is still going "
            "cannot be checked from %s, so the lock is not taken over. If it is running, wait for it. If it is not "
            "(it was killed, or %s went down), remove the lock on %s: rm '%s', then run again."
            % (base, who, here['controller_host'], holder.get('controller_host'), holder.get('node_host', 'the node'),
               lock))


# --------------------------------------------------------------------------- the node side

# A lock record is a few hundred bytes; more is not a record (and is not read).
MAX_RECORD = 64 * 1024


def read_lock(path):
    """(record, problem): record None and problem '' when there is no lock.

    Only a regular file is opened (a FIFO would block the read forever, a device or a directory is no record), and
    with O_NONBLOCK, so a file swapped for a FIFO in between cannot block either. A record that cannot be used is
    described by what it is ({'kind': ...}), never by its content."""
    try:
        lst = os.lstat(path)
    except OSError as exc:
        # No lock, or a base that cannot be reached at all (preflight explains the base, not its lock).
        if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.EACCES, errno.ENAMETOOLONG):
            return None, ''
        return {'kind': 'unknown'}, 'it cannot be looked at (%s)' % (exc.strerror or exc)
    kind = file_kind(lst.st_mode)
    if kind != 'file':
        return {'kind': kind}, 'it is %s, not a lock file' % KIND_WORDS[kind]
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, 'O_NONBLOCK', 0) | getattr(os, 'O_NOFOLLOW', 0))
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return {'kind': 'other'}, 'it is not a regular file'
            data = os.read(fd, MAX_RECORD + 1)
        finally:
            os.close(fd)
    except (IOError, OSError) as exc:
        if exc.errno == errno.ENOENT:
            return None, ''
        return {'kind': 'file'}, 'it cannot be read (%s)' % (exc.strerror or exc)
    if len(data) > MAX_RECORD:
        return {'kind': 'file'}, 'it is larger than a lock record (more than %d bytes)' % MAX_RECORD
    try:
        record = json.loads(data.decode('utf-8'))
    except ValueError:
        return {'kind': 'file'}, 'it is not a JSON lock record'
    if not isinstance(record, dict):
        return {'kind': 'file'}, 'it is not a JSON object'
    return record, ''


KIND_WORDS = {'dir': 'a directory', 'fifo': 'a named pipe (FIFO)', 'link': 'a symbolic link', 'socket': 'a socket',
              'device': 'a device', 'other': 'not a regular file', 'file': 'a regular file'}


def file_kind(mode):
    """'file', 'dir', 'link', 'fifo', 'socket', 'device' or 'other' of an lstat mode."""
    for test, kind in ((stat.S_ISREG, 'file'), (stat.S_ISDIR, 'dir'), (stat.S_ISLNK, 'link'), (stat.S_ISFIFO, 'fifo'),
                       (stat.S_ISSOCK, 'socket'), (stat.S_ISCHR, 'device'), (stat.S_ISBLK, 'device')):
        if test(mode):
            return kind
    return 'other'


def _unique(path, record):
    return '%s.%s.%s.%d.tmp' % (path, record.get('node_host', 'node'), record.get('run_id', 'run'), os.getpid())


def create(path, record):
    """Create the lock with record; True when this call made it."""
    tmp = _unique(path, record)
    data = (json.dumps(record, indent=2, sort_keys=True) + '\n').encode('utf-8')
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.chmod(tmp, 0o644)
        try:
            os.link(tmp, path)
        except OSError as exc:
            if exc.errno in NO_HARD_LINKS:
                return _create_exclusive(path, data)
            # On NFS the link may have been made although the reply was lost: the link count decides.
            if os.stat(tmp).st_nlink != 2 and exc.errno != errno.EEXIST:
                raise
        return os.stat(tmp).st_nlink == 2
    finally:
        os.unlink(tmp)


def _create_exclusive(path, data):
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except OSError as exc:
        if exc.errno == errno.EEXIST:
            return False
        raise
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    os.chmod(path, 0o644)
    return True


def acquire(path, record, attempts=3):
    """(acquired, holder): holder is the record now in the lock (ours when acquired)."""
    holder, problem = None, ''
    for _attempt in range(attempts):
        if create(path, record):
            return True, record
        holder, problem = read_lock(path)
        if holder is not None:
            if problem:
                holder = dict(holder, problem=problem)
            if holder.get('run_id') == record['run_id'] and holder.get('inventory_host') == record.get('inventory_host'):
                return True, holder
            return False, holder
        # The holder released it between our two steps: try again.
    return False, holder or {'problem': problem or 'the lock kept changing'}


def take_over(path, stale_run_id, record):
    """Replace the lock of run stale_run_id with ours: (acquired, holder, replaced record or None).

    The stale lock is renamed aside first (atomic: of two runs taking it over, one wins); if what was
    moved is not the stale lock (it changed in between), it is put back.
    """
    aside = '%s.stale.%s.%d' % (path, record['run_id'], os.getpid())
    try:
        os.rename(path, aside)
    except OSError as exc:
        if exc.errno != errno.ENOENT:
            raise
        moved = None
    else:
        moved, _problem = read_lock(aside)
        if not moved or moved.get('run_id') != stale_run_id:
            try:
                os.link(aside, path)
            except OSError:
                pass
            os.unlink(aside)
            return False, moved, None
        os.unlink(aside)
    acquired, holder = acquire(path, record)
    return acquired, holder, moved


def run_processes(run_id, proc='/proc', uid=None):
    """[(pid, start, command)] of the processes of uid (default: this process's) that belong to run run_id:
    their environment holds RUN_ENV=run_id, which every task of a run that holds the lock passes on to
    the modules it starts and to their children (pip, compilers, an async task's wrapper)."""
    if not run_id:
        return []
    uid = os.geteuid() if uid is None else uid
    wanted = ('%s=%s' % (RUN_ENV, run_id)).encode('utf-8')
    found = []
    for entry in sorted(os.listdir(proc), key=lambda name: (len(name), name)):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            if os.stat(os.path.join(proc, entry)).st_uid != uid:
                continue
            with open(os.path.join(proc, entry, 'environ'), 'rb') as handle:
                if wanted not in handle.read().split(b'\0'):
                    continue
            with open(os.path.join(proc, entry, 'cmdline'), 'rb') as handle:
                command = handle.read().replace(b'\0', b' ').decode('utf-8', 'replace').strip()
        except (IOError, OSError):
            continue   # gone meanwhile, or not ours to read
        start = process_start(entry, proc)
        if start:
            found.append((int(entry), start, command[:300]))
    return found


def stop_processes(processes, proc='/proc', grace=5.0, kill=os.kill):
    """SIGTERM each (pid, start, command), SIGKILL what is still there after grace seconds; a pid whose
    start time changed is another process by now and is left alone. [{'pid', 'command', 'signal'}]."""
    stopped = {}
    pending = list(processes)
    for signame, wait in (('SIGTERM', grace), ('SIGKILL', 5.0)):
        sent = []
        for pid, start, command in pending:
            if process_start(pid, proc) != start:
                continue
            try:
                kill(pid, getattr(signal, signame))
            except OSError:
                continue
            sent.append((pid, start))
            stopped[pid] = {'pid': pid, 'command': command, 'signal': signame}
        deadline = time.time() + wait
        while sent and time.time() < deadline:
            time.sleep(0.1)
            sent = [(pid, start) for pid, start in sent if process_start(pid, proc) == start]
        pending = [p for p in pending if (p[0], p[1]) in sent]
        if not pending:
            break
    return [stopped[pid] for pid in sorted(stopped)]


def release(path, run_id, inventory_host):
    """(released, holder): the lock is removed only when it is this run's for this inventory host."""
    holder, _problem = read_lock(path)
    if holder is None:
        return False, None
    if holder.get('run_id') == run_id and holder.get('inventory_host') == inventory_host:
        os.unlink(path)
        return True, holder
    return False, holder
