# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What a run of playbooks/primus.yml did, read from ansible-runner's job events (controller side).

ansible-runner writes one JSON file per event to ``<private data dir>/artifacts/<ident>/job_events/``
(``<counter>-<uuid>.json``). These pure functions turn a list of those events into per-host progress
(current stage, task counts, elapsed seconds), per-task and per-stage timings and counts (module runs,
pip processes); scripts/detached_run.py and tests/bench/bench.py print them. No callback plugin is
involved: the events are ansible-runner's own.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime
import json
import os
import re

# The include of each stage in playbooks/primus.yml is a task named "Stage <name>".
STAGE_TASK = re.compile(r'^Stage ([a-z0-9_]+)$')
# Before the first stage include every host is in the look at the node and preflight.
FIRST_STAGE = 'preflight'
RESULT_EVENTS = ('runner_on_ok', 'runner_on_failed', 'runner_on_skipped', 'runner_on_unreachable')
# Tasks the controller runs without sending a module to the node.
CONTROLLER_ONLY = frozenset((
    'ansible.builtin.set_fact', 'ansible.builtin.debug', 'ansible.builtin.assert', 'ansible.builtin.fail',
    'ansible.builtin.include_role', 'ansible.builtin.include_tasks', 'ansible.builtin.import_role',
    'ansible.builtin.include_vars', 'ansible.builtin.validate_argument_spec', 'ansible.builtin.add_host',
    'ansible.builtin.group_by', 'ansible.builtin.meta', 'ansible.builtin.set_stats'))
EVENT_FILE = re.compile(r'^(\d+)-[0-9A-Za-z-]+\.json$')


def parse_time(text):
    """Seconds since the epoch of an event's ISO 8601 ``created`` (ansible-runner writes UTC with +00:00)."""
    if not text:
        return None
    value = datetime.datetime.fromisoformat(text)
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.timezone.utc)
    return value.timestamp()


class EventReader:
    """Reads a job_events directory incrementally: each call of ``read()`` returns the events not yet
    returned, in counter order. A file ansible-runner is still writing (not valid JSON yet) is read on a
    later call; nothing is written."""

    def __init__(self, directory):
        self.directory = directory
        self.seen = set()

    def read(self):
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return []
        fresh = []
        for name in names:
            match = EVENT_FILE.match(name)
            if not match or name in self.seen:
                continue
            try:
                with open(os.path.join(self.directory, name)) as handle:
                    event = json.load(handle)
            except (ValueError, OSError):
                continue
            self.seen.add(name)
            fresh.append((int(match.group(1)), event))
        return [event for _counter, event in sorted(fresh, key=lambda pair: pair[0])]


def _host_state():
    return {'stage': FIRST_STAGE, 'stages': [FIRST_STAGE], 'task': '', 'ok': 0, 'changed': 0, 'failed': 0,
            'skipped': 0, 'unreachable': 0, 'first': None, 'last': None, 'stage_start': {}, 'failures': []}


class Progress:
    """Per-host progress of one playbook run, fed with events in counter order (``add``)."""

    def __init__(self):
        self.hosts = {}
        self.started = None
        self.last = None
        self.finished = False
        self.stats = {}
        self.playbook_pid = None

    def add(self, events):
        for event in events:
            self._add(event)
        return self

    def _add(self, event):
        kind = event.get('event', '')
        data = event.get('event_data') or {}
        created = parse_time(event.get('created'))
        if created is not None:
            self.started = created if self.started is None else min(self.started, created)
            self.last = created if self.last is None else max(self.last, created)
        if event.get('pid') and kind.startswith(('playbook_on_', 'runner_on_')):
            self.playbook_pid = event['pid']
        if kind == 'playbook_on_stats':
            self.finished = True
            self.stats = {key: dict(data.get(key) or {}) for key in ('ok', 'changed', 'failures', 'dark', 'skipped')}
            return
        host = data.get('host')
        if not host or not kind.startswith('runner_on_'):
            return
        state = self.hosts.setdefault(host, _host_state())
        if created is not None:
            state['first'] = created if state['first'] is None else min(state['first'], created)
            state['last'] = created if state['last'] is None else max(state['last'], created)
        task = data.get('task') or ''
        stage = STAGE_TASK.match(task)
        if stage and kind in ('runner_on_start', 'runner_on_ok') and stage.group(1) not in state['stages']:
            state['stage'] = stage.group(1)
            state['stages'].append(stage.group(1))
            state['stage_start'][stage.group(1)] = created
        if kind == 'runner_on_start':
            state['task'] = task
            return
        if kind not in RESULT_EVENTS:
            return
        result = data.get('res') or {}
        if kind == 'runner_on_ok':
            state['ok'] += 1
            state['changed'] += 1 if result.get('changed') else 0
        elif kind == 'runner_on_skipped':
            state['skipped'] += 1
        elif kind == 'runner_on_unreachable':
            state['unreachable'] += 1
            state['failures'].append((state['stage'], task, one_line(result.get('msg', 'unreachable'))))
        elif data.get('ignore_errors'):
            state['ok'] += 1
        else:
            state['failed'] += 1
            state['failures'].append((state['stage'], task, one_line(result.get('msg', ''))))

    def stage_seconds(self, host):
        """[(stage, seconds)] of a host in the order they ran; the last one ends at the host's last event."""
        state = self.hosts[host]
        starts = [(stage, state['first'] if stage == FIRST_STAGE else state['stage_start'].get(stage))
                  for stage in state['stages']]
        out = []
        for index, (stage, start) in enumerate(starts):
            end = starts[index + 1][1] if index + 1 < len(starts) else state['last']
            if start is not None and end is not None:
                out.append((stage, max(0.0, end - start)))
        return out


def one_line(text, width=160):
    text = ' '.join(str(text).split())
    return text if len(text) <= width else text[:width - 3] + '...'


def format_progress(progress, status, now, name=''):
    """The lines `attach` and `status` print: the run, then one line per host, then the failures."""
    elapsed = (now if not progress.finished else (progress.last or now)) - (progress.started or now)
    lines = ['run %s: %s, %d host(s), %s elapsed' % (name or '?', status, len(progress.hosts), seconds_text(elapsed))]
    width = max([len(host) for host in progress.hosts] + [4])
    for host in sorted(progress.hosts):
        state = progress.hosts[host]
        end = state['last'] if progress.finished or status not in ('running', 'starting') else now
        lines.append('  %-*s  stage %-14s done %-4d changed %-4d failed %-3d%s elapsed %s%s' % (
            width, host, state['stage'], state['ok'] + state['skipped'], state['changed'], state['failed'],
            (' unreachable %d ' % state['unreachable']) if state['unreachable'] else '',
            seconds_text((end or now) - (state['first'] or now)),
            ('  (%s)' % one_line(state['task'], 70)) if state['task'] and not progress.finished else ''))
    for host in sorted(progress.hosts):
        for stage, task, msg in progress.hosts[host]['failures']:
            lines.append('  FAILED %s [%s] %s: %s' % (host, stage, task, msg))
    return lines


def seconds_text(seconds):
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return '%ds' % seconds
    if seconds < 3600:
        return '%dm%02ds' % divmod(seconds, 60)
    return '%dh%02dm%02ds' % (seconds // 3600, seconds % 3600 // 60, seconds % 60)


def task_results(events):
    """[{host, task, action, role, status, changed, seconds, result}] of every task result (items excluded)."""
    out = []
    for event in events:
        kind = event.get('event', '')
        if kind not in RESULT_EVENTS:
            continue
        data = event.get('event_data') or {}
        out.append({'host': data.get('host', ''), 'task': data.get('task', ''), 'action': data.get('resolved_action') or '',
                    'role': data.get('role', ''), 'status': kind[len('runner_on_'):],
                    'changed': bool((data.get('res') or {}).get('changed')), 'seconds': float(data.get('duration') or 0.0),
                    'result': data.get('res') or {}})
    return out


def module_runs(results):
    """How many task results ran a module on a node (not skipped, not a controller-only action)."""
    return sum(1 for r in results if r['status'] in ('ok', 'failed') and r['action'] not in CONTROLLER_ONLY)


def pip_processes(results):
    """How many pip processes the run started: every command pip_constrained reports having run, and every
    command of another task whose argv runs pip (``-m pip`` or a ``pip`` executable)."""
    count = 0
    for r in results:
        if r['action'] == 'primus.trainenv.pip_constrained':
            count += len(r['result'].get('commands') or [])
            continue
        argv = r['result'].get('cmd')
        if isinstance(argv, list) and r['status'] in ('ok', 'failed') and _runs_pip(argv):
            count += 1
    return count


def _runs_pip(argv):
    argv = [str(arg) for arg in argv]
    if any(argv[i] == '-m' and argv[i + 1] == 'pip' for i in range(len(argv) - 1)):
        return True
    return any(re.match(r'^pip(3(\.\d+)?)?$', os.path.basename(arg)) for arg in argv)
