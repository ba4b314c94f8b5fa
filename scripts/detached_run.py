# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Detached runs of playbooks/primus.yml with ansible-runner: the run goes on when the terminal that
started it (an SSH session to the controller) goes away, and any later terminal follows or stops it.

    python scripts/detached_run.py start NAME [-i INVENTORY] [-e @VARS.yml] [-e KEY=VALUE] [--tags T]
                                             [--limit PATTERN] [--check] [--diff] [--forks N] [--env KEY=VALUE]
    python scripts/detached_run.py attach NAME [--interval SECONDS]   follow it until it ends (Ctrl-C leaves it running)
    python scripts/detached_run.py status NAME                        one look: per host stage, task counts, elapsed
    python scripts/detached_run.py stop NAME [--grace SECONDS]        stop it (its bases' locks go stale: the next run
                                                                      on each takes the lock over)
    python scripts/detached_run.py list                               the runs and their state

Each run is an ansible-runner private data dir, RUNS_DIR/NAME (RUNS_DIR: --runs-dir, else $PRIMUS_RUNS_DIR, else
~/.primus-trainenv/runs): `ansible-runner start` daemonises ansible-playbook there, writes its pid to NAME/pid,
its output to NAME/artifacts/run/stdout and one JSON file per event to NAME/artifacts/run/job_events/; attach and
status only read those files, so killing them never touches the run. The run gets this shell's PATH (the
controller's bin directory first), HOME, locale, SSH_AUTH_SOCK and every PRIMUS_*, PIP_* and ANSIBLE_* variable,
plus --env KEY=VALUE; nothing else of the environment (ansible-runner records the environment in
artifacts/run/command).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import argparse
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
COLLECTION = os.path.dirname(HERE)


def _collections_root():
    """Where `ansible_collections` is importable from: the installed collection's tree, or the clone's .collections."""
    parts = COLLECTION.split(os.sep)
    if len(parts) > 3 and parts[-3] == 'ansible_collections':
        return os.sep.join(parts[:-3])
    return os.path.join(COLLECTION, '.collections')


sys.path.insert(0, _collections_root())

from ansible_collections.primus.trainenv.plugins.plugin_utils import run_events  # noqa: E402  pylint: disable=wrong-import-position

IDENT = 'run'
NAME = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$')
TAGS = re.compile(r'^[A-Za-z0-9_]+(,[A-Za-z0-9_]+)*$')
ENV_NAME = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*$')
VAR_NAME = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*$')
PASSED_ENV = ('HOME', 'USER', 'LOGNAME', 'LANG', 'TMPDIR', 'SSH_AUTH_SOCK', 'TZ')
PASSED_PREFIXES = ('PRIMUS_', 'PIP_', 'ANSIBLE_', 'LC_')
DONE = ('successful', 'failed', 'canceled', 'timeout')


class UsageError(Exception):
    """Bad input: the message names the setting, the value and the fix."""


def safe(value):
    """A value for a message: printable, shortened."""
    return run_events.one_line(repr(value), 120)


def check_name(name):
    if not NAME.match(name or ''):
        raise UsageError('run name %s: use 1-64 letters, digits, ".", "_" or "-", starting with a letter or digit '
                         '(it names the directory RUNS_DIR/NAME)' % safe(name))
    return name


def runs_dir(given):
    path = given or os.environ.get('PRIMUS_RUNS_DIR') or os.path.join('~', '.primus-trainenv', 'runs')
    path = os.path.expanduser(path)
    if not os.path.isabs(path) or any(c in path for c in '\n\r\0'):
        raise UsageError('runs directory %s (--runs-dir or PRIMUS_RUNS_DIR) must be an absolute path' % safe(path))
    if os.path.exists(path) and not os.path.isdir(path):
        raise UsageError('runs directory %s (--runs-dir or PRIMUS_RUNS_DIR) exists and is not a directory: '
                         'name another one' % safe(path))
    return path


def existing_file(what, path, dirs=False):
    """An absolute path to an existing file (or directory, when allowed), else a UsageError naming the option."""
    full = os.path.abspath(os.path.expanduser(path))
    if any(c in path for c in '\n\r\0') or not (os.path.isfile(full) or (dirs and os.path.isdir(full))):
        raise UsageError('%s %s: no such file%s; give the path of an existing one' % (
            what, safe(path), ' or directory' if dirs else ''))
    return full


def check_text(what, value, pattern=None, hint=''):
    if value is None:
        return None
    if not value or any(ord(c) < 32 for c in value) or (pattern is not None and not pattern.match(value)):
        raise UsageError('%s %s is not valid%s' % (what, safe(value), ': ' + hint if hint else ''))
    return value


def run_command(args):
    """The ansible-playbook options of a start (each checked), as a list."""
    cmdline = []
    for extra in args.extra_vars or []:
        if extra.startswith('@'):
            cmdline += ['-e', '@' + existing_file('-e @FILE (extra vars file)', extra[1:])]
            continue
        key, sep, _value = extra.partition('=')
        if not sep or not VAR_NAME.match(key):
            raise UsageError('-e %s: give @FILE (a YAML or JSON file of variables) or KEY=VALUE with KEY a variable name '
                             '(e.g. -e primus_base=/home/me/envs/primus-env)' % safe(extra))
        check_text('-e %s' % key, extra)
        cmdline += ['-e', extra]
    if args.tags:
        cmdline += ['--tags', check_text('--tags', args.tags, TAGS, 'comma-separated stage names (e.g. venv,torch)')]
    if args.skip_tags:
        cmdline += ['--skip-tags', check_text('--skip-tags', args.skip_tags, TAGS, 'comma-separated stage names')]
    if args.limit:
        cmdline += ['--limit', check_text('--limit', args.limit, re.compile(r'^\S+$'), 'a host pattern without spaces')]
    if args.forks is not None:
        if not 1 <= args.forks <= 10000:
            raise UsageError('--forks %s: give a number from 1 to 10000' % safe(args.forks))
        cmdline += ['--forks', str(args.forks)]
    cmdline += ['--check'] if args.check else []
    cmdline += ['--diff'] if args.diff else []
    return cmdline


def run_environment(extra):
    """The environment of the detached run: what it needs of this one, the controller first on PATH, and --env."""
    env = {key: value for key, value in os.environ.items() if key in PASSED_ENV or key.startswith(PASSED_PREFIXES)}
    env['PATH'] = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get('PATH', '/usr/bin:/bin')])
    env.setdefault('ANSIBLE_NOCOLOR', '1')
    env.setdefault('ANSIBLE_FORCE_COLOR', '0')
    for item in extra or []:
        key, sep, value = item.partition('=')
        if not sep or not ENV_NAME.match(key) or any(ord(c) < 32 for c in value):
            raise UsageError('--env %s: give KEY=VALUE with KEY an environment variable name (e.g. --env '
                             'PIP_CONFIG_FILE=/dev/null)' % safe(item))
        env[key] = value
    return env


# --------------------------------------------------------------------------- the run's files

class Run:
    def __init__(self, root, name):
        self.name = check_name(name)
        self.dir = os.path.join(root, name)
        self.artifacts = os.path.join(self.dir, 'artifacts', IDENT)

    def exists(self):
        return os.path.isfile(os.path.join(self.dir, 'primus-run.json'))

    def require(self):
        if not self.exists():
            raise UsageError('no detached run %s in %s (start one with: detached_run.py start %s; list them with: '
                             'detached_run.py list)' % (safe(self.name), safe(os.path.dirname(self.dir)), self.name))
        return self

    def read(self, name):
        try:
            with open(os.path.join(self.artifacts, name)) as handle:
                return handle.read().strip()
        except OSError:
            return None

    def daemon_pid(self):
        """The pid of the ansible-runner daemon while it runs (checked to be that process), else None."""
        try:
            with open(os.path.join(self.dir, 'pid')) as handle:
                pid = int(handle.readline())
        except (OSError, ValueError):
            return None
        args = process_args(pid)
        if args and any('ansible_runner' in a or 'ansible-runner' in a for a in args) and self.dir in args:
            return pid
        return None

    def stopped(self):
        try:
            with open(os.path.join(self.dir, 'stopped.json')) as handle:
                return json.load(handle)
        except (OSError, ValueError):
            return None

    def status(self):
        """starting, running, successful, failed, canceled, timeout, stopped, or lost (the daemon died unseen)."""
        final = self.read('status')
        if self.stopped():
            return 'stopped'
        if final in DONE:
            return final
        if self.daemon_pid():
            return 'running' if os.path.isdir(os.path.join(self.artifacts, 'job_events')) else 'starting'
        return 'lost'

    def rc(self):
        value = self.read('rc')
        return int(value) if value and value.lstrip('-').isdigit() else None


def process_args(pid):
    try:
        with open('/proc/%d/cmdline' % pid, 'rb') as handle:
            return handle.read().decode('utf-8', 'replace').split('\0')[:-1]
    except (OSError, ValueError):
        return []


def children(pid):
    out = []
    for entry in os.listdir('/proc'):
        if entry.isdigit():
            try:
                with open('/proc/%s/stat' % entry) as handle:
                    fields = handle.read().rsplit(')', 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[1]) == pid:
                out.append(int(entry))
    return out


def same_command(argv):
    """Processes whose command line is argv (ansible-playbook's forked workers keep its command line)."""
    return [int(entry) for entry in os.listdir('/proc') if entry.isdigit() and argv and process_args(int(entry)) == argv]


def alive(pid):
    """True while pid runs (a zombie, which an init that does not reap may keep, is not running)."""
    try:
        with open('/proc/%d/stat' % pid) as handle:
            return handle.read().rsplit(')', 1)[1].split()[0] not in ('Z', 'X')
    except (OSError, IndexError):
        return False


# --------------------------------------------------------------------------- commands

def cmd_start(args, root):
    run = Run(root, args.name)
    playbook = existing_file('--playbook', args.playbook or os.path.join(COLLECTION, 'playbooks', 'primus.yml'))
    inventory = existing_file('-i/--inventory', args.inventory, dirs=True) if args.inventory else None
    cmdline = run_command(args)
    env = run_environment(args.env)
    if os.path.exists(run.dir):
        raise UsageError('a run named %s exists already in %s (status: %s); pick another name, or look at it with: '
                         'detached_run.py status %s' % (safe(run.name), safe(root), run.status() if run.exists() else
                                                        'not a detached run', run.name))
    os.makedirs(root, mode=0o700, exist_ok=True)
    os.mkdir(run.dir, 0o700)
    with open(os.path.join(run.dir, 'primus-run.json'), 'w') as handle:
        json.dump({'name': run.name, 'playbook': playbook, 'inventory': inventory, 'options': cmdline,
                   'project_dir': COLLECTION, 'started': time.time()}, handle, indent=1)
    argv = [sys.executable, '-m', 'ansible_runner', 'start', run.dir, '--ident', IDENT, '-p', playbook,
            '--project-dir', COLLECTION]
    if inventory:
        argv += ['--inventory', inventory]
    if cmdline:
        argv += ['--cmdline', ' '.join(shlex.quote(part) for part in cmdline)]
    proc = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise UsageError('ansible-runner start failed (rc %d): %s' % (proc.returncode, (proc.stderr or proc.stdout).strip()))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not run.daemon_pid() and run.read('status') is None:
        time.sleep(0.1)
    pid = run.daemon_pid()
    if not pid and run.read('status') is None:
        raise UsageError('the detached run %s did not start; see %s' % (run.name, os.path.join(run.dir, 'daemon.log')))
    print('started detached run %s (ansible-runner pid %s) in %s' % (run.name, pid or '-', run.dir))
    print('follow it: detached_run.py attach %s   (Ctrl-C or a dropped session leaves it running)' % run.name)
    print('stop it:   detached_run.py stop %s' % run.name)
    return 0


def snapshot(run, reader, progress):
    progress.add(reader.read())
    return run.status()


def cmd_status(args, root):
    run = Run(root, args.name).require()
    progress = run_events.Progress()
    status = snapshot(run, run_events.EventReader(os.path.join(run.artifacts, 'job_events')), progress)
    print('\n'.join(run_events.format_progress(progress, describe(run, status), time.time(), run.name)))
    return 0


def describe(run, status):
    rc = run.rc()
    if status == 'stopped':
        return 'stopped at %s' % time.strftime('%H:%M:%S', time.localtime(run.stopped().get('time', 0)))
    return status + (' (rc %d)' % rc if rc is not None and status in DONE else '')


def cmd_attach(args, root):
    run = Run(root, args.name).require()
    reader = run_events.EventReader(os.path.join(run.artifacts, 'job_events'))
    progress = run_events.Progress()
    shown = None
    last_print = 0.0
    while True:
        status = snapshot(run, reader, progress)
        lines = run_events.format_progress(progress, describe(run, status), time.time(), run.name)
        # Elapsed times change every second: print when stages, counts or failures changed, or every 60 s.
        key = [re.sub(r'elapsed \S+|\(.*\)$', '', line) for line in lines]
        now = time.monotonic()
        if status not in ('starting', 'running'):
            progress.add(reader.read())
            print('\n'.join(run_events.format_progress(progress, describe(run, status), time.time(), run.name)))
            print('output: %s' % os.path.join(run.artifacts, 'stdout'))
            return run.rc() if run.rc() is not None else 1
        if key != shown and now - last_print >= args.interval or now - last_print >= 60:
            print(time.strftime('%H:%M:%S ') + '\n'.join(lines))
            sys.stdout.flush()
            shown, last_print = key, now
        time.sleep(min(args.interval, 1.0))


def cmd_stop(args, root):
    run = Run(root, args.name).require()
    status = run.status()
    daemon = run.daemon_pid()
    if not daemon:
        print('run %s is not running (%s)' % (run.name, describe(run, status)))
        return 0
    progress = run_events.Progress().add(run_events.EventReader(os.path.join(run.artifacts, 'job_events')).read())
    playbook = [pid for pid in children(daemon) if any('ansible-playbook' in a for a in process_args(pid)[:2])]
    playbook_argv = process_args(playbook[0]) if playbook else []
    # ansible-playbook stops as on Ctrl-C: it ends its workers and exits; ansible-runner then records the end.
    for pid in playbook:
        os.kill(pid, signal.SIGINT)
    deadline = time.monotonic() + args.grace
    while time.monotonic() < deadline and alive(daemon):
        time.sleep(0.2)
    if alive(daemon):
        # ansible-runner's own stop: SIGKILL to the daemon's process group.
        subprocess.run([sys.executable, '-m', 'ansible_runner', 'stop', run.dir], capture_output=True, check=False)
    for pid in playbook + same_command(playbook_argv):
        if alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    with open(os.path.join(run.dir, 'stopped.json'), 'w') as handle:
        json.dump({'time': time.time(), 'hosts': {h: s['stage'] for h, s in progress.hosts.items()}}, handle)
    print('stopped run %s; where each host was:' % run.name)
    for host in sorted(progress.hosts):
        print('  %s: stage %s' % (host, progress.hosts[host]['stage']))
    print('Each PRIMUS_BASE it was building is still locked by this run, which no longer exists: the next run on it takes '
          'the lock over, stops what this run left running on the node (an async build) and converges the base.')
    return 0


def cmd_list(_args, root):
    names = sorted(os.listdir(root)) if os.path.isdir(root) else []
    runs = [Run(root, name) for name in names if NAME.match(name)]
    runs = [run for run in runs if run.exists()]
    if not runs:
        print('no detached runs in %s' % root)
    for run in runs:
        print('%-30s %s' % (run.name, describe(run, run.status())))
    return 0


def parser():
    top = argparse.ArgumentParser(prog='detached_run.py', description=__doc__.split('\n\n', maxsplit=1)[0])
    top.add_argument('--runs-dir', help='where the runs live (default $PRIMUS_RUNS_DIR or ~/.primus-trainenv/runs)')
    sub = top.add_subparsers(dest='command', required=True)
    start = sub.add_parser('start', help='start playbooks/primus.yml detached')
    start.add_argument('name')
    start.add_argument('-i', '--inventory')
    start.add_argument('-e', '--extra-vars', action='append', help='@FILE or KEY=VALUE (repeatable)')
    start.add_argument('--tags')
    start.add_argument('--skip-tags')
    start.add_argument('--limit')
    start.add_argument('--forks', type=int)
    start.add_argument('--check', action='store_true')
    start.add_argument('--diff', action='store_true')
    start.add_argument('--env', action='append', help='KEY=VALUE for the run\'s environment (repeatable)')
    start.add_argument('--playbook', help='another playbook (default: the collection\'s playbooks/primus.yml)')
    attach = sub.add_parser('attach', help='follow a run until it ends (killing this never harms the run)')
    attach.add_argument('name')
    attach.add_argument('--interval', type=float, default=5.0, help='seconds between updates (default 5)')
    sub.add_parser('status', help='one look at a run').add_argument('name')
    stop = sub.add_parser('stop', help='stop a run')
    stop.add_argument('name')
    stop.add_argument('--grace', type=float, default=30.0, help='seconds ansible-playbook gets to stop (default 30)')
    sub.add_parser('list', help='the runs and their state')
    return top


def main(argv=None):
    args = parser().parse_args(argv)
    try:
        root = runs_dir(args.runs_dir)
        if getattr(args, 'interval', 1.0) <= 0 or getattr(args, 'grace', 1.0) < 0:
            raise UsageError('--interval must be above 0 and --grace at least 0')
        return {'start': cmd_start, 'attach': cmd_attach, 'status': cmd_status, 'stop': cmd_stop,
                'list': cmd_list}[args.command](args, root)
    except UsageError as error:
        print('detached_run.py %s: %s' % (args.command, error), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == '__main__':
    sys.exit(main())
