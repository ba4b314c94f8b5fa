# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""primus.trainenv.run_report (documented in plugins/modules/run_report.py): the run's record on the controller.

It runs on the controller only (no module is sent to a node): checks the report directory (primus_report_dir) and
the drift fields before a run builds anything, and at the end writes the summary, the manifests of the hosts and the
drift report there. The decisions are plugin_utils/fleet_report.py's; this plugin only checks the directory and writes.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import pwd
import re

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible_collections.primus.trainenv.plugins.module_utils.modes import current, make_dirs, restrict_umask, write_atomic
from ansible_collections.primus.trainenv.plugins.module_utils.safe_paths import check_dir, private_dir_problem
from ansible_collections.primus.trainenv.plugins.plugin_utils import fleet_report

LABEL = 'primus_report_dir'
_UNSAFE_NAME = re.compile(r'[^A-Za-z0-9._@%+=,-]')


def default_dir(environ=None):
    """$XDG_STATE_HOME/primus-trainenv, else ~/.local/state/primus-trainenv (of the user running ansible-playbook)."""
    environ = os.environ if environ is None else environ
    state = environ.get('XDG_STATE_HOME') or os.path.join(os.path.expanduser('~'), '.local', 'state')
    return os.path.join(state, 'primus-trainenv')


def file_name(host):
    """A host's manifest file name: its inventory name with anything but safe characters replaced by _."""
    name = _UNSAFE_NAME.sub('_', str(host)) or '_'
    return '_' + name if name.startswith('.') else name


def _owner(uid):
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def report_dir(value):
    """The checked, normalised report directory; AnsibleActionFail naming the setting, the value and the fix."""
    given = value if value else default_dir()
    if isinstance(given, str) and (given == '~' or given.startswith('~/')):
        given = os.path.expanduser(given)
    checked = check_dir(given, LABEL, example='~/primus-reports')
    if checked['problem']:
        raise AnsibleActionFail('%s. Fix: %s. It is a directory of the controller (the machine running '
                                'ansible-playbook), owned by you.' % (checked['problem'], checked['fix']))
    path = checked['path']
    try:
        lst = os.lstat(path)
    except OSError:
        lst = None
    problem = private_dir_problem(lst, os.getuid(), _owner)
    if problem:
        raise AnsibleActionFail('%s %s %s. The run summary and the drift report are written only into a directory of '
                                'your own. Fix: set %s to a directory you own (e.g. -e %s=~/primus-reports), or fix '
                                'this one (chmod go-w, or remove it).' % (LABEL, path, problem, LABEL, LABEL))
    return path


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(('dir', 'state', 'fields', 'default_fields', 'summary', 'drift', 'manifests'))

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        _validated, args = self.validate_argument_spec(argument_spec=dict(
            dir=dict(type='str', default=''),
            state=dict(type='str', choices=['checked', 'written'], default='written'),
            fields=dict(type='raw'),
            default_fields=dict(type='dict', default={}),
            summary=dict(type='dict'),
            drift=dict(type='dict'),
            manifests=dict(type='dict', default={}),
        ))
        path = report_dir(args['dir'])
        try:
            fields = fleet_report.drift_fields(args['default_fields'], args['fields'])
        except fleet_report.ReportError as exc:
            raise AnsibleActionFail(str(exc))
        result.update(changed=False, path=path, fields=fields, written=[], unchanged=[])
        if args['state'] == 'checked':
            result['msg'] = 'the run summary and the drift report go to %s' % path
            return result
        if not args['summary']:
            raise AnsibleActionFail('run_report: summary is required with state=written')
        # What an earlier run recorded of the hosts this run has no record of (a later serial batch, a --limit).
        args['summary'] = fleet_report.with_last_known(args['summary'], _read_json(os.path.join(path, 'summary.json')))
        documents = [('summary.json', _json(args['summary'])),
                     ('summary.txt', '\n'.join(fleet_report.summary_lines(args['summary'])) + '\n')]
        for host, manifest in sorted(args['manifests'].items()):
            if isinstance(manifest, dict):
                documents.append((os.path.join('manifests', file_name(host) + '.json'), _json(manifest)))
        if args['drift']:
            documents += [('drift.json', _json(args['drift'])),
                          ('drift.md', fleet_report.drift_markdown(args['drift'], args['summary']))]
        restrict_umask()
        try:
            make_dirs(path, 0o700)
            for name, text in documents:
                target = os.path.join(path, name)
                data = text.encode('utf-8')
                if current(target) == (data, 0o644):
                    result['unchanged'].append(target)
                    continue
                write_atomic(target, data, 0o644, 0o700)
                result['written'].append(target)
        except (IOError, OSError) as exc:
            raise AnsibleActionFail('cannot write the run report into %s (%s): %s. Fix: make it writable for you or set '
                                    '%s to another directory of yours.' % (path, LABEL, exc, LABEL))
        result['changed'] = bool(result['written'])
        result['summary_path'] = os.path.join(path, 'summary.txt')
        result['summary'] = args['summary']
        lines = fleet_report.summary_lines(args['summary'], console=True) + ['']
        if args['drift']:
            result['drift_path'] = os.path.join(path, 'drift.md')
            lines += fleet_report.drift_lines(args['drift'], summary=args['summary'])
        else:
            lines.append('drift: no host wrote a manifest in this run (run the manifest or verify stage: --tags verify)')
        lines.append('written on the controller: %s (summary.json, summary.txt%s)'
                     % (path, ', manifests/, drift.json, drift.md' if args['drift'] else ''))
        result['lines'] = lines
        return result


def _read_json(path, limit=16 * 1024 * 1024):
    """The JSON document at path, or None when it is absent, too large or not JSON (it is only a hint)."""
    try:
        if os.path.islink(path) or os.path.getsize(path) > limit:
            return None
        with open(path) as handle:
            return json.load(handle)
    except (IOError, OSError, ValueError):
        return None


def _json(value):
    return json.dumps(value, indent=2, sort_keys=True, default=str) + '\n'
