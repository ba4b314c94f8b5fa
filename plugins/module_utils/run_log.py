# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The stage logs ($PRIMUS_BASE/logs/<stage>.log): one file per run, rotated, written as the output comes.

A log written by a run of the playbook starts with the line `### primus.trainenv run <run id>` (the id every task
of a locked run carries in PRIMUS_TRAINENV_RUN). The first write of another run moves the file to <log>.1 (<log>.1
to <log>.2, ...; the oldest beyond `keep` files is removed), so a re-run never erases the log of the run before,
failed or not. Without a run id (the module run on its own) the log is appended to, as before.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import stat

RUN_ENV = 'PRIMUS_TRAINENV_RUN'
HEADER = '### primus.trainenv run %s\n'
DEFAULT_KEEP = 5
LOG_MODE = 0o640
LOG_DIR_MODE = 0o750

# The options of primus.trainenv.build_wait (its action plugin and the module of the same name).
WAIT_OPTIONS = dict(
    jid=dict(type='str', required=True),
    log_path=dict(type='path', required=True),
    stage=dict(type='str', default=''),
    step=dict(type='str'),
    timeout=dict(type='int', required=True),
    poll=dict(type='int', default=15),
    stamp=dict(type='path'),
)


def rotated(path, keep):
    """The files of a log, newest first: path, path.1, ..., path.<keep-1>."""
    return [path] + ['%s.%d' % (path, n) for n in range(1, max(1, keep))]


def first_line(path):
    try:
        with open(path, 'rb') as handle:
            return handle.readline(200).decode('utf-8', 'replace')
    except (IOError, OSError):
        return None


def needs_rotation(path, run_id):
    """True when path holds a log that is not this run's (another run's, or one without a header)."""
    if not run_id:
        return False
    line = first_line(path)
    return bool(line) and line != HEADER % run_id


def rotate(path, keep):
    """path -> path.1 -> path.2 ...; the file beyond the last kept one is removed. keep counts path itself."""
    names = rotated(path, keep)
    if os.path.exists(names[-1]):
        os.remove(names[-1])
    for older, newer in reversed(list(zip(names[1:], names[:-1]))):
        if os.path.exists(newer):
            os.rename(newer, older)


def open_log(path, run_id=None, keep=DEFAULT_KEEP):
    """The log opened for appending (binary, unbuffered writes by the caller), after the rotation a new run needs.

    Created with mode 0640 (its directory 0750); an existing file loses any permission for others. A new file of a
    run starts with the run's header line.
    """
    parent = os.path.dirname(path)
    if parent and not os.path.isdir(parent):
        os.makedirs(parent)
        os.chmod(parent, LOG_DIR_MODE)
    if needs_rotation(path, run_id):
        rotate(path, keep)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, LOG_MODE)
    info = os.fstat(fd)
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o007 or mode & 0o020:
        os.fchmod(fd, mode & LOG_MODE)
    handle = os.fdopen(fd, 'a')
    if run_id and info.st_size == 0:
        handle.write(HEADER % run_id)
        handle.flush()
    return handle


def open_for_module(module, path, keep=DEFAULT_KEEP):
    """A module's log_path opened as open_log does for this run (its id in PRIMUS_TRAINENV_RUN); None without a path, or
    when it cannot be opened, which the module warns about (a log is never a reason to fail the task)."""
    if not path:
        return None
    try:
        return open_log(path, os.environ.get(RUN_ENV), keep)
    except (IOError, OSError) as exc:
        module.warn('cannot append to log_path %s: %s' % (path, exc))
        return None


def last_line(path, limit=65536):
    """(size, the last non-empty line of the file) - what a progress line shows of a running build."""
    try:
        with open(path, 'rb') as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - limit))
            text = handle.read().decode('utf-8', 'replace')
    except (IOError, OSError):
        return None, ''
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return size, (lines[-1][:300] if lines else '')


# ---- the wait for a build (primus.trainenv.build_wait) ------------------------------------------------------------

QUICK_POLLS = (1, 2, 4, 8)


def poll_delays(poll):
    """Seconds to sleep before each poll: 1, 2, 4, 8 (a short build is not waited on for long), then poll for ever."""
    for delay in QUICK_POLLS:
        yield min(delay, poll)
    while True:
        yield poll


def duration(seconds):
    """1h 02m 05s, 2m 05s, 7s."""
    seconds = int(round(seconds or 0))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return '%dh %02dm %02ds' % (hours, minutes, secs)
    if minutes:
        return '%dm %02ds' % (minutes, secs)
    return '%ds' % secs


def progress_line(where, elapsed, estimate, log_path, last):
    """The console line of one poll of a running build."""
    took = ' (last build %s)' % duration(estimate) if estimate else ''
    return '%s - %s elapsed%s - log %s%s' % (where, duration(elapsed), took, log_path, (' - %s' % last) if last else '')


def timeout_message(where, timeout, log_path):
    return ("%s: the build ran longer than source_build_timeout (%d s%s) and was stopped: the job, pip and every "
            "process it started were killed. Its output up to then: %s. Fix: if the build is only slow (fewer "
            "parallel jobs, a busy node), give it more time (-e source_build_timeout=SECONDS) and run the stage "
            "again; if the log's last lines repeat or stand still, the build hangs."
            % (where, timeout, ', %s' % duration(timeout) if timeout >= 60 else '', log_path))


def overdue_message(where, timeout, elapsed, log_path):
    return ("%s: the build is still running %s after it started, past source_build_timeout (%d s) when Ansible's async "
            "wrapper should have stopped it; it was left running. Its output: %s. Fix: look for the build's processes "
            "on the node (they carry PRIMUS_TRAINENV_RUN in their environment) and stop them, then run the stage again."
            % (where, duration(elapsed), timeout, log_path))
