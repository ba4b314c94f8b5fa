# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""preflight_problems: preflight's checks before the lock; pins_file_problem: the release and its pins file;
check_results, check_processes, launch_result: verify's verdicts (each documented in a YAML file of its name next to this one).

The logic of preflight_problems is plugins/plugin_utils/preflight_checks.py.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import signal

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError
from ansible_collections.primus.trainenv.plugins.plugin_utils import preflight_checks, release_pins


def preflight_problems(facts):
    """The message of every failing check of the inputs and of what node_info found, in order."""
    try:
        return preflight_checks.problems(facts)
    except (KeyError, TypeError, AttributeError) as exc:
        raise AnsibleFilterError('preflight_problems: the facts lack %s (settings, inputs, node, pins and paths are '
                                 'needed, as roles/primus publishes them)' % exc)


def pins_file_problem(release_file, release, releases_dir, stages=None):
    """Why the release or its pins file cannot be used, before Ansible reads it ('' when it can)."""
    return release_pins.problem(release_file, release, releases_dir, stages)


def _last(lines):
    lines = [line for line in (lines or []) if line.strip()]
    return lines[-1].strip() if lines else ''


def check_processes(run, names):
    """{name: {name, rc, stdout, stderr, stdout_lines, stderr_lines}} of each of ``names``: the checks the one command
    ``run`` (its registered result) started, each in its own process, and printed as a JSON list of {name, rc, stdout,
    stderr}. When that command itself failed (or printed no such list), each of ``names`` fails with its error."""
    if not isinstance(run, Mapping):
        raise AnsibleFilterError('check_processes: the registered result of the checks command is needed, got %r' % (run,))
    try:
        results = json.loads(run.get('stdout') or '') if run.get('rc') == 0 else None
    except ValueError:
        results = None
    if isinstance(results, list) and all(isinstance(r, Mapping) for r in results):
        found = dict((r.get('name'), r) for r in results)
    else:
        why = (_last((run.get('stderr') or '').splitlines()) or run.get('msg')
               or ('it printed no results' if run.get('rc') == 0 else 'exit status %s' % run.get('rc')))
        failed = {'rc': run.get('rc') if run.get('rc') else 1, 'stdout': '', 'stderr': 'the checks could not be run: %s' % why}
        found = dict((name, dict(failed, name=name)) for name in names or [])
    out = {}
    for name in names or []:
        result = found.get(name) or {'name': name, 'rc': 1, 'stdout': '', 'stderr': 'the checks command did not run it'}
        out[name] = dict(result, stdout_lines=(result.get('stdout') or '').splitlines(),
                         stderr_lines=(result.get('stderr') or '').splitlines())
    return out


def _run_results(run, checks, done):
    """The per-check results of the one command that ran each check in its own process (check_processes), in the
    order of ``checks`` (those whose stage is done)."""
    names = [c.get('name') for c in checks or [] if c.get('stage') in (done or [])]
    found = check_processes(run, names)
    return [found[name] for name in names]


def check_results(results, checks, done, reasons=None):
    """verify's verdict of each check: {name, stage, status (ok | failed | not built), detail}.

    results: the registered results of the checks that ran - a loop over ``checks`` (each item a check with name,
    stage and optionally stderr_forbids: text on stderr that fails a check that exited 0), or the registered result
    of one command that ran each check in its own process and printed [{name, rc, stdout, stderr}] as JSON; checks:
    every check; done: the stages done on the base; reasons: {stage: {reason}} of the stages that are not."""
    if isinstance(results, Mapping):
        results = _run_results(results, checks, done)
    named = dict((c.get('name'), c) for c in checks or [])
    out = []
    for result in results or []:
        check = result.get('item') or named.get(result.get('name')) or {}
        forbids = check.get('stderr_forbids') or ''
        forbidden = bool(forbids) and forbids in (result.get('stderr') or '')
        rc = result.get('rc')
        stdout_lines = result.get('stdout_lines', (result.get('stdout') or '').splitlines())
        stderr_lines = result.get('stderr_lines', (result.get('stderr') or '').splitlines())
        if rc == 0 and not forbidden:
            status, detail = 'ok', _last(stdout_lines)
        elif rc == 0:
            status, detail = 'failed', 'stderr says: ' + forbids
        else:
            status, detail = 'failed', _last(stderr_lines) or 'exit status %s' % rc
        out.append({'name': check.get('name'), 'stage': check.get('stage'), 'status': status, 'detail': detail})
    for check in checks or []:
        if check.get('stage') in (done or []):
            continue
        reason = ((reasons or {}).get(check.get('stage')) or {}).get('reason') or 'not done on this base'
        out.append({'name': check.get('name'), 'stage': check.get('stage'), 'status': 'not built',
                    'detail': 'stage %s: %s' % (check.get('stage'), reason)})
    return out


def launch_result(result, missing):
    """verify's verdict of the launch check: {name: launch, stage, status, detail}. A process killed by a signal is
    named by the signal (SIGABRT, SIGSEGV ...) and the import it was in (the last "launch: <what>" line it printed).

    result: the registered result of the check (skipped when ``missing``: the stages it needs that are not done)."""
    verdict = {'name': 'launch', 'stage': 'verify'}
    if missing:
        return dict(verdict, status='not built', detail='needs stages %s, not done on this base' % ', '.join(missing))
    rc = result.get('rc')
    steps = [line[len('launch: '):] for line in (result.get('stdout_lines') or []) if line.startswith('launch: ')]
    if rc == 0:
        return dict(verdict, status='ok', detail=steps[-1] if steps else 'ok')
    where = ('while importing %s' % steps[-1]) if steps else 'before the first import'
    if isinstance(rc, int) and rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = 'signal %d' % -rc
        how = 'the process was killed by %s (exit status %d) %s' % (name, rc, where)
    else:
        how = 'the process exited %s %s' % (rc, where)
    error = _last(result.get('stderr_lines'))
    copies = [line[len('launch-copies: '):].split() for line in (result.get('stdout_lines') or [])
              if line.startswith('launch-copies: ')]
    cause = ('; %s installed as separate files (%s): a process that loads two copies of one LLVM-based library '
             'registers its options twice and aborts - a release links them (installed_fixes); re-run the playbook to '
             'apply its fixes again' % (', '.join(sorted(set(os.path.basename(c[0]) for c in copies))),
                                        '; '.join(', '.join(c) for c in copies))) if copies else ''
    return dict(verdict, status='failed', detail=how + (': ' + error if error else '') + cause)


class FilterModule(object):
    """primus.trainenv preflight checks."""

    def filters(self):
        return {'preflight_problems': preflight_problems, 'check_results': check_results,
                'check_processes': check_processes, 'launch_result': launch_result, 'pins_file_problem': pins_file_problem}
