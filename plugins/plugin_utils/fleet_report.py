# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The run summary and the drift report (controller only; pure functions, exposed by plugins/filter/report.py).

Run summary: every host of a run records, after its stages, what each stage of the stage registry did in this run
(``run_record``): ``done`` (already converged on the base), ``built`` (built or changed by this run), ``installed``
(installed from a wheel another host built, when the run says so), ``ran`` (a stage without a build key: manifest,
verify), ``skipped`` (not selected), ``failed``, ``not reached`` (after a failure) or ``would build`` (check mode), with
the seconds it took in this run. ``run_failure`` turns the failed task of a host into one sanitised line, the stage and
the log path. ``run_summary`` puts the hosts together and ``summary_lines`` prints them as tables.

Drift report: fields are JMESPath expressions over the manifest (``drift_fields`` checks them); a field whose value is
a mapping on every host (distributions, build keys, checkouts) is compared per key. For each field the hosts that do
not hold the majority value are listed, and, for a field given as a plain path of the manifest, the hosts whose value
differs from the release pins at that path (``drift_pins``: the exact ``name==version`` pins, the commits, the
release).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import re

from collections import Counter
from collections.abc import Mapping

from ansible_collections.primus.trainenv.plugins.module_utils.common import Redactor, normalize_name
from ansible_collections.primus.trainenv.plugins.module_utils.manifest import SECRET_NAME

try:
    import jmespath
    from jmespath.exceptions import JMESPathError
    HAS_JMESPATH = True
except ImportError:  # pragma: no cover - a dependency of the collection (requirements/controller.txt)
    jmespath = None
    JMESPathError = Exception
    HAS_JMESPATH = False

try:
    from packaging.version import InvalidVersion, Version
except ImportError:  # pragma: no cover - a dependency of the collection
    Version = None
    InvalidVersion = ValueError

FORMAT = 1
# What a stage did in this run, in the order the tables show them.
STATUSES = ('done', 'built', 'installed', 'would build', 'ran', 'skipped', 'failed', 'not reached')
# Always shown as columns (the others only when some stage has them).
MAIN_STATUSES = ('done', 'built', 'installed', 'skipped')
# What a host's record says of its base beside the stages: the release, the base, the current link and what it points
# to (primus_current_link; after the run).
HOST_FIELDS = ('release', 'base', 'current_link', 'current_target')
CAUSE_MAX = 300
# Hosts listed one per line on the console; a larger fleet shows its failed hosts only (summary.txt has all).
CONSOLE_HOSTS = 50
# Before the stages: the settings, the checks, the lock, the facts and the plan.
PREFLIGHT = 'preflight'
# A plain path of the manifest (release, distributions, plan.ck_atomic_fp32): such a field is also compared with the pins.
PLAIN_PATH = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$')
FIELD_NAME = re.compile(r'^[A-Za-z0-9_][A-Za-z0-9_.-]*$')
_LOG_PATH = re.compile(r'(/[^\s\'"()\[\],;]+\.log)\b')
_SECRET_ASSIGNMENT = re.compile(r'\b([A-Za-z_][A-Za-z0-9_]*)=(\S+)')
_CONTROL = re.compile(r'[\x00-\x1f\x7f]+')
_GENERIC = ('non-zero return code', 'the command exited with a non-zero return code.', 'one or more items failed')
_PIN = re.compile(r'^\s*([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?\s*==\s*([^\s;,=<>!~*]+)\s*$')


class ReportError(ValueError):
    """A drift field or an input the report cannot use; the message names it and the fix."""


# --------------------------------------------------------------------------- the failure of a host

def _redact(text):
    redact = Redactor()
    redact.add_from([text])
    text = redact.text(text)
    return _SECRET_ASSIGNMENT.sub(lambda m: '%s=****' % m.group(1) if SECRET_NAME.search(m.group(1)) else m.group(0), text)


def one_line(text, limit=CAUSE_MAX):
    """The first non-empty line of text, credentials redacted, control characters gone, at most limit characters."""
    lines = [line.strip() for line in str(text or '').splitlines() if line.strip()]
    line = _CONTROL.sub(' ', _redact(lines[0] if lines else ''))
    line = re.sub(r'\s+', ' ', line).strip()
    return line if len(line) <= limit else line[:limit - 3].rstrip() + '...'


def _failed_item(result):
    for item in result.get('results') or []:
        if isinstance(item, Mapping) and item.get('failed'):
            return item
    return None


def _message(result):
    item = _failed_item(result)
    if item is not None:
        result = item
    msg = str(result.get('msg') or '')
    first = one_line(msg)
    if first.lower() in _GENERIC or not first:
        detail = [line for line in str(result.get('stderr') or result.get('stdout') or '').splitlines() if line.strip()]
        if detail:
            first = '%s: %s' % (first or 'failed', detail[-1])
    return first, msg + '\n' + str(result.get('stderr') or '')


def failure(result, task, run, started, logs_dir=''):
    """{stage, task, cause, log, stopped} of a host's failed task (ansible_failed_result, ansible_failed_task).

    The stage is the stage tag of the task, else the stage started last in this run, else preflight (the settings,
    checks, lock and plan before the stages). Without a failed task (any_errors_fatal stopped this host because
    another failed) the cause says so. The log is the first *.log path the failure names, else the stage's own log
    under logs_dir."""
    run = run if isinstance(run, Mapping) else {}
    order = list(run.get('order') or [])
    started = started if isinstance(started, Mapping) else {}
    task = task if isinstance(task, Mapping) else {}
    tags = task.get('tags') or []
    stage = next((tag for tag in tags if tag in order), None)
    if stage is None and started:
        stage = max(started, key=lambda name: started[name])
    stage = stage or PREFLIGHT
    if not isinstance(result, Mapping) or not result:
        return {'stage': stage, 'task': '', 'stopped': True, 'log': '',
                'cause': 'stopped because another host failed (any_errors_fatal)'}
    cause, text = _message(result)
    found = _LOG_PATH.search(text)
    log = found.group(1) if found else ''
    if not log and logs_dir and stage != PREFLIGHT:
        log = '%s/%s.log' % (logs_dir.rstrip('/'), stage)
    return {'stage': stage, 'task': one_line(task.get('name') or task.get('action') or ''), 'stopped': False,
            'cause': cause or 'failed (no message)', 'log': _redact(log)}


# --------------------------------------------------------------------------- one host's record

def _number(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _installed(given):
    """{stage: builder} of the stages whose every wheel was installed from the store or cache (not built here)."""
    if not isinstance(given, Mapping):
        return {}
    origins = {}
    for name, value in given.items():
        if isinstance(value, Mapping):
            stage = str(value.get('stage') or name)
            origin = str(value.get('origin') or 'store')
            builder = str(value.get('builder') or ('wheel cache' if origin == 'cache' else ''))
        else:
            stage, origin, builder = str(name), 'store', str(value or '')
        origins.setdefault(stage, []).append((origin, builder))
    return dict((stage, ', '.join(sorted(set(b for _o, b in found if b))) or 'wheel store')
                for stage, found in origins.items() if all(o in ('store', 'cache') for o, _b in found))


def wheel_origins(installed):
    """{compiled, cache, store} counts of the components whose wheel this host compiled, took from its wheel cache,
    or took from the wheel store, from the source-build role's events {component: {origin: built|cache|store}}."""
    counts = {'compiled': 0, 'cache': 0, 'store': 0}
    for value in (installed or {}).values() if isinstance(installed, Mapping) else ():
        origin = str(value.get('origin') or 'store') if isinstance(value, Mapping) else 'store'
        counts['compiled' if origin == 'built' else origin if origin in counts else 'store'] += 1
    return counts


def run_record(run, status, started, ended, failed=None, check_mode=False, installed=None, host=None):
    """What each stage of the registry did on one host in this run, with its seconds.

    run: primus_run (order, stages, read_only); status: preflight_stages.status (which stages were done before the
    run); started: primus_stage_started (controller time each stage started); ended: the time of the record;
    failed: failure() of the host, if it failed; installed (optional): where the wheels of this host came from -
    {stage: builder host}, or the source-build role's events {component: {stage, origin: built|store|cache, builder}};
    a stage all of whose wheels came from the wheel store or cache counts as installed (with the builder);
    host (optional): {release, base, current_link, current_target} of this host, kept in the record as they are."""
    run = run if isinstance(run, Mapping) else {}
    status = status if isinstance(status, Mapping) else {}
    started = dict((k, _number(v)) for k, v in (started or {}).items() if _number(v) is not None)
    raw_installed = installed
    installed = _installed(installed)
    failed = failed if isinstance(failed, Mapping) and failed else None
    selected = set(run.get('stages') or [])
    read_only = set(run.get('read_only') or [])
    order = list(run.get('order') or [])
    times = sorted(started.values())
    end = _number(ended)
    stages = []
    for stage in order:
        entry = {'stage': stage, 'status': '', 'seconds': None}
        verdict = status.get(stage) if isinstance(status.get(stage), Mapping) else {}
        # A stage without a build key (manifest, verify) is neither done nor built: it ran.
        keyless = (stage in read_only or not verdict or verdict.get('stamp') == 'nokey'
                   or ('key_id' in verdict and not verdict['key_id']))
        if stage not in selected:
            entry['status'] = 'skipped'
        elif failed and failed.get('stage') == stage:
            entry['status'] = 'failed'
        elif stage in started:
            if keyless:
                entry['status'] = 'ran'
            elif verdict.get('done'):
                entry['status'] = 'done'
            elif stage in installed:
                entry['status'] = 'installed'
                entry['builder'] = installed[stage]
            else:
                entry['status'] = 'would build' if check_mode else 'built'
        elif failed:
            entry['status'] = 'not reached'
        else:
            # Not started, and the run went on: done (its include was skipped) or a stage without a start (verify).
            entry['status'] = 'done' if verdict.get('done') else 'ran' if keyless else 'not reached'
        if stage in started and entry['status'] != 'failed':
            later = [t for t in times if t > started[stage]]
            finish = later[0] if later else (None if failed else end)
            if finish is not None:
                entry['seconds'] = round(max(0.0, finish - started[stage]), 1)
        stages.append(entry)
    counts = Counter(entry['status'] for entry in stages)
    record = {'result': ('stopped' if failed.get('stopped') else 'failed') if failed else 'ok',
              'stages': stages, 'counts': dict((s, counts.get(s, 0)) for s in STATUSES),
              'seconds': round(sum(e['seconds'] for e in stages if e['seconds'] is not None), 1),
              'failure': failed, 'wheels': wheel_origins(raw_installed)}
    for key in HOST_FIELDS:
        if isinstance(host, Mapping) and host.get(key) is not None:
            record[key] = str(host[key])
    return record


# --------------------------------------------------------------------------- the fleet

def _releases(hosts):
    """{release: [hosts]}: each host's release, or the one last known of it, or 'unknown'."""
    releases = {}
    for name, record in sorted(hosts.items()):
        release = record.get('release') or (record.get('last_known') or {}).get('release')
        releases.setdefault(release or 'unknown', []).append(name)
    return releases


def with_last_known(summary, previous):
    """The summary with `last_known` for each host without a record in this run: its release, base and current link
    as the summary an earlier run wrote (summary.json) recorded them, with that run's time - so a rolling move's
    summary names the release of the hosts a later batch has not reached yet."""
    if not isinstance(summary, Mapping):
        return summary
    out = dict(summary)
    earlier = (previous or {}).get('hosts') if isinstance(previous, Mapping) else None
    hosts = dict((name, dict(record)) for name, record in (summary.get('hosts') or {}).items())
    for name, record in hosts.items():
        known = (earlier or {}).get(name) if isinstance(earlier, Mapping) else None
        if record.get('result') != 'no record' or not isinstance(known, Mapping):
            continue
        if known.get('result') == 'no record':
            last = known.get('last_known')
        else:
            last = dict((k, known[k]) for k in HOST_FIELDS if known.get(k) is not None)
            if last:
                last['generated'] = str(previous.get('generated') or '')
        if isinstance(last, Mapping) and last:
            record['last_known'] = dict(last)
    out['hosts'] = hosts
    out['releases'] = _releases(hosts)
    return out


def run_summary(records, batch=None, generated=''):
    """The run's summary over every host: {format, generated, hosts, stages, failed, counts, releases}.

    records: {host: run_record() or None (no record: unreachable, stopped outside the stages, or in a later serial
    batch)}; batch: the hosts of the current batch (a host without a record outside it has not run yet)."""
    hosts = {}
    batch = set(batch or [])
    for name in sorted(records or {}):
        record = records[name]
        if isinstance(record, Mapping) and record.get('stages') is not None:
            hosts[name] = dict(record)
        else:
            hosts[name] = {'result': 'no record', 'stages': [], 'counts': dict((s, 0) for s in STATUSES),
                           'seconds': 0.0, 'failure': None,
                           'reason': ('unreachable, or stopped outside the stages (see its error above)'
                                      if name in batch or not batch else 'not run yet (a later serial batch)')}
    order = []
    for record in hosts.values():
        for entry in record['stages']:
            if entry['stage'] not in order:
                order.append(entry['stage'])
    stages = []
    for stage in order:
        row = dict((s, 0) for s in STATUSES)
        seconds = []
        for record in hosts.values():
            for entry in record['stages']:
                if entry['stage'] == stage:
                    row[entry['status']] += 1
                    if entry['seconds'] is not None:
                        seconds.append(entry['seconds'])
        row['stage'] = stage
        row['seconds'] = max(seconds) if seconds else None
        stages.append(row)
    failed = [dict(host=name, **record['failure']) for name, record in hosts.items() if record.get('failure')]
    counts = Counter(record['result'] for record in hosts.values())
    return {'format': FORMAT, 'generated': generated, 'hosts': hosts, 'stages': stages, 'failed': failed,
            'counts': dict(hosts=len(hosts), **dict(counts)), 'releases': _releases(hosts)}


def _seconds(value):
    return '-' if value is None else '%.1f' % value


def _table(header, rows, left=(0,)):
    """Aligned columns: those in left to the left, the others (numbers) to the right."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    lines = []
    for row in [header] + rows:
        cells = [str(cell).ljust(width) if i in left else str(cell).rjust(width)
                 for i, (cell, width) in enumerate(zip(row, widths))]
        lines.append('  '.join(cells).rstrip())
    return lines


def summary_lines(summary, console=False):
    """The summary as text tables: per stage (how many hosts did what, the longest seconds), then per host.

    console: a fleet larger than CONSOLE_HOSTS lists only its hosts that did not end ok (summary.txt lists all)."""
    hosts = summary.get('hosts') or {}
    counts = summary.get('counts') or {}
    others = ', '.join('%d %s' % (n, k) for k, n in sorted(counts.items()) if k != 'hosts')
    lines = ['Run summary: %d host(s)%s' % (counts.get('hosts', len(hosts)), (' - ' + others) if others else '')]
    all_stages = summary.get('stages') or []
    # A stage no host selected is named on one line, not given a row.
    stages = [row for row in all_stages if row.get('skipped', 0) < sum(row.get(s, 0) for s in STATUSES)]
    shown = [s for s in STATUSES if s in MAIN_STATUSES or any(row.get(s) for row in stages)]
    header = ['stage'] + list(shown) + ['seconds']
    rows = [[row['stage']] + [row.get(s, 0) for s in shown] + [_seconds(row.get('seconds'))] for row in stages]
    lines += _table(header, rows)
    unselected = [row['stage'] for row in all_stages if row not in stages]
    if unselected:
        lines.append('not selected on any host: %s' % ' '.join(unselected))
    lines.append('')
    listed = sorted(hosts.items())
    if console and len(listed) > CONSOLE_HOSTS:
        listed = [(name, record) for name, record in listed if record.get('result') != 'ok']
        lines.append('%d hosts: the %d that did not end ok are listed (all of them in summary.txt)' % (len(hosts), len(listed)))
    header = ['host', 'result', 'release', 'done', 'built', 'installed', 'skipped', 'compiled', 'cache', 'store',
              'seconds', 'failed stage: cause (log)']
    rows = []
    for name, record in listed:
        record_counts = record.get('counts') or {}
        wheels = record.get('wheels') or {}
        problem = record.get('failure')
        if problem:
            text = '%s: %s%s' % (problem.get('stage'), problem.get('cause'),
                                 (' (log: %s)' % problem['log']) if problem.get('log') else '')
        else:
            text = record.get('reason', '-')
        release = record.get('release') or ('(%s)' % record['last_known']['release'] if (
            record.get('last_known') or {}).get('release') else '-')
        rows.append([name, record.get('result', '?'), release] + [record_counts.get(s, 0) for s in MAIN_STATUSES]
                    + [wheels.get(k, 0) for k in ('compiled', 'cache', 'store')]
                    + [_seconds(record.get('seconds')), text])
    lines += _table(header, rows, left=(0, 1, 2, 11))
    releases = summary.get('releases') or {}
    if releases:
        lines += ['', 'Releases: ' + '; '.join('%s on %s' % (release, ', '.join(sorted(names)))
                                               for release, names in sorted(releases.items()))]
    links = []
    for name, record in listed:
        info = record if record.get('base') else (record.get('last_known') or {})
        if info.get('base'):
            target = info.get('current_target')
            link = info.get('current_link')
            here = bool(target) and target.rstrip('/') == info['base'].rstrip('/')
            links.append('  %s: base %s%s%s' % (
                name, info['base'],
                ('; %s -> %s%s' % (link, target or '(nothing)', ' (this base)' if here else '')) if link
                else '; no current link',
                ' (as of the run of %s)' % info['generated'] if info is not record and info.get('generated') else ''))
    if links:
        lines += ['Bases and current links (after the run):'] + links
    return lines


# --------------------------------------------------------------------------- drift

def _require_jmespath():
    if not HAS_JMESPATH:
        raise ReportError('the drift report needs the Python library jmespath on the controller (a dependency of '
                          'primus.trainenv): pip install jmespath, in the Python that runs ansible-playbook')


def drift_fields(defaults, extra=None):
    """The field set: defaults updated by extra ({name: expression}; an empty value removes a default field), every
    expression compiled. Returns {name: expression}; a bad name or expression raises ReportError naming it."""
    _require_jmespath()
    fields = {}
    for source, given in (('the default drift fields', defaults), ('primus_drift_fields', extra)):
        if given is None:
            continue
        if not isinstance(given, Mapping):
            raise ReportError('%s must be a mapping of field name -> JMESPath expression over the manifest, got %s. '
                              'Fix: e.g. primus_drift_fields: {torch: "distributions.torch"}'
                              % (source, type(given).__name__))
        for name, expression in given.items():
            if not isinstance(name, str) or not FIELD_NAME.match(name):
                raise ReportError('%s: the field name %r is not usable; use letters, digits, _, . and -' % (source, name))
            if expression in (None, ''):
                fields.pop(name, None)
                continue
            if not isinstance(expression, str):
                raise ReportError('%s.%s must be a JMESPath expression (a string), got %s %r'
                                  % (source, name, type(expression).__name__, expression))
            try:
                jmespath.compile(expression)
            except JMESPathError as exc:
                raise ReportError('%s.%s: %r is not a valid JMESPath expression (%s). Fix the expression (see '
                                  'https://jmespath.org/specification.html), e.g. "distributions.torch"'
                                  % (source, name, expression, one_line(str(exc).replace('\n', ' '))))
            fields[name] = expression
    return fields


def _canonical(value):
    return json.dumps(value, sort_keys=True, separators=(',', ':'), default=str)


def _same(value, pin):
    if _canonical(value) == _canonical(pin):
        return True
    if Version is not None and isinstance(value, str) and isinstance(pin, str):
        try:
            return Version(value) == Version(pin)
        except InvalidVersion:
            return False
    return False


def drift_pins(pins, stages=None):
    """The parts of the release pins a manifest can be compared with, in the manifest's shape:
    {release, distributions: {name: version} of every exact name==version pin of the pins' sections named after a stage
    (names PEP 503-normalised; a name pinned to two versions is left out, as is a pin per GPU arch),
    checkouts: {stage: commit} of the sources pinned to a commit}.

    stages: only the sections and sources of these stages (a host's built stages: a pin holds once its stage ran).
    The names the pins list under drift_superseded are left out: a later stage of the release replaces those pins by
    design (upstream's order), so every converged host differs from them."""
    pins = pins if isinstance(pins, Mapping) else {}
    versions = {}

    def walk(value, counted):
        if isinstance(value, str):
            match = _PIN.match(value)
            if match and '{' not in value and counted:
                versions.setdefault(normalize_name(match.group(1)), set()).add(match.group(3))
        elif isinstance(value, Mapping):
            for item in value.values():
                walk(item, counted)
        elif isinstance(value, (list, tuple)):
            for item in value:
                walk(item, counted)
    for section, value in pins.items():
        if section not in ('sources', 'indexes', 'pip_forbid', 'uv', 'versions') and isinstance(value, Mapping):
            walk(value, stages is None or section in stages)
    superseded = set(normalize_name(str(n)) for n in pins.get('drift_superseded') or [])
    out = {'distributions': dict((name, found.pop()) for name, found in sorted(versions.items())
                                 if len(found) == 1 and name not in superseded),
           'checkouts': dict((name, source['ref']) for name, source in sorted((pins.get('sources') or {}).items())
                             if isinstance(source, Mapping) and source.get('ref_kind') == 'commit' and source.get('ref')
                             and (stages is None or name in stages))}
    if pins.get('release'):
        out['release'] = str(pins['release'])
    return out


def _evaluate(expression, document):
    return jmespath.search(expression, document)


def _plain(value):
    """value as plain JSON types (jmespath's functions know dict, list, str... by their exact type)."""
    return json.loads(json.dumps(value, default=str))


def drift_report(manifests, fields, pins=None, generated=''):
    """{format, generated, hosts, no_manifest, fields, compared, drift, errors} over {host: manifest or None}.

    pins: the release pins (primus_pins); each host is compared with drift_pins() of the stages its manifest records
    as built (build_keys).

    drift: one entry per (expanded) field where some host differs from the majority or from the pin -
    {field, expression, majority, tie, pin (when pinned), values: [{value, hosts}], differ: {host: value},
    off_pin: {host: value}}. A tie (no value held by more hosts than every other) lists every host in differ."""
    fields = drift_fields(fields)
    with_manifest = dict((h, _plain(m)) for h, m in (manifests or {}).items() if isinstance(m, Mapping))
    hosts = sorted(with_manifest)
    release_pins = _plain(pins) if isinstance(pins, Mapping) else {}
    pinned = dict((h, drift_pins(release_pins, list((with_manifest[h].get('build_keys') or {}))) if release_pins else {})
                  for h in hosts)
    drift, errors, compared = [], [], 0
    for name in sorted(fields):
        expression = fields[name]
        values = {}
        for host in hosts:
            try:
                values[host] = _evaluate(expression, with_manifest[host])
            except JMESPathError as exc:
                errors.append({'field': name, 'host': host, 'error': one_line(str(exc))})
                values[host] = None
        plain_path = PLAIN_PATH.match(expression) and release_pins
        pin_values = dict((h, _evaluate(expression, pinned[h]) if plain_path else None) for h in hosts)
        present = [v for v in values.values() if v is not None]
        if present and all(isinstance(v, Mapping) for v in present):
            keys = sorted(set(k for v in present for k in v))
            expanded = [('%s.%s' % (name, key), dict((h, (values[h] or {}).get(key)) for h in hosts),
                         dict((h, p.get(key) if isinstance(p, Mapping) else None) for h, p in pin_values.items()))
                        for key in keys]
        else:
            expanded = [(name, values, dict((h, None if isinstance(p, Mapping) else p) for h, p in pin_values.items()))]
        for field, by_host, pins_by_host in expanded:
            compared += 1
            entry = _compare(field, expression, by_host, pins_by_host)
            if entry:
                drift.append(entry)
    return {'format': FORMAT, 'generated': generated, 'hosts': hosts,
            'no_manifest': sorted(h for h in (manifests or {}) if h not in with_manifest),
            'fields': dict(fields), 'compared': compared, 'drift': drift, 'errors': errors}


def _compare(field, expression, by_host, pins_by_host):
    groups = {}
    for host in sorted(by_host):
        groups.setdefault(_canonical(by_host[host]), []).append(host)
    ranked = sorted(groups.items(), key=lambda item: (-len(item[1]), item[1]))
    tie = len(ranked) > 1 and len(ranked[0][1]) == len(ranked[1][1])
    majority_key = None if tie else ranked[0][0]
    differ = dict((h, by_host[h]) for key, members in ranked if key != majority_key for h in members)
    # The pin of the field (the same for every host that has one: one release).
    pin = next((p for _h, p in sorted(pins_by_host.items()) if p is not None), None)
    off_pin = dict((h, v) for h, v in sorted(by_host.items())
                   if v is not None and pins_by_host.get(h) is not None and not _same(v, pins_by_host[h]))
    if not differ and not off_pin:
        return None
    entry = {'field': field, 'expression': expression, 'majority': None if tie else json.loads(majority_key),
             'tie': tie, 'values': [{'value': json.loads(key), 'hosts': members} for key, members in ranked],
             'differ': differ, 'off_pin': off_pin}
    if pin is not None:
        entry['pin'] = pin
    return entry


def _show(value):
    text = 'absent' if value is None else value if isinstance(value, str) else _canonical(value)
    return text.replace('|', '\\|').replace('\n', ' ')


def _code(text):
    """Markdown inline code of text, which may itself hold backticks (JMESPath literals)."""
    return '`` %s ``' % text if '`' in text else '`%s`' % text


def host_rows(summary):
    """[(host, release, base, current link -> target, as of)] of every host of a run summary: this run's record, else
    what was last known of it (with that run's time)."""
    rows = []
    for name, record in sorted(((summary or {}).get('hosts') or {}).items()):
        info, when = record, 'this run'
        if not record.get('release') and record.get('last_known'):
            info, when = record['last_known'], 'the run of %s' % (record['last_known'].get('generated') or '?')
        if not info.get('release'):
            continue
        link = info.get('current_link')
        target = info.get('current_target') or '(nothing)'
        here = bool(info.get('current_target')) and str(info['current_target']).rstrip('/') == str(
            info.get('base') or '').rstrip('/')
        rows.append((name, str(info['release']), str(info.get('base') or '-'),
                     ('%s -> %s%s' % (link, target, ' (this base)' if here else '')) if link else '-', when))
    return rows


def drift_markdown(report, summary=None):
    """The drift report as Markdown: each host's release, base and current link (from the run summary), what was
    compared, then one table row per host that differs."""
    hosts = report.get('hosts') or []
    lines = ['# Drift report', '',
             '%d host(s) with a manifest: %s.' % (len(hosts), ', '.join(hosts) or 'none')]
    rows = host_rows(summary)
    if rows:
        lines += ['', '| host | release | base | current link | as of |', '|---|---|---|---|---|']
        lines += ['| %s |' % ' | '.join(_show(cell) for cell in row) for row in rows]
        lines.append('')
    if report.get('no_manifest'):
        lines.append('No manifest from this run (failed or not run): %s.' % ', '.join(report['no_manifest']))
    lines.append('%d field(s) compared (%d values after expanding mappings); %d differ.'
                 % (len(report.get('fields') or {}), report.get('compared', 0), len(report.get('drift') or [])))
    lines.append('')
    if not report.get('drift'):
        lines.append('No host differs from the majority or from the release pins.')
    else:
        lines += ['| field | majority | pin | host | its value | differs from |', '|---|---|---|---|---|---|']
        for entry in report['drift']:
            majority = 'tie' if entry.get('tie') else _show(entry.get('majority'))
            pin = _show(entry['pin']) if 'pin' in entry else '-'
            for host in sorted(set(entry['differ']) | set(entry['off_pin'])):
                value = entry['differ'].get(host, entry['off_pin'].get(host))
                what = ' and '.join(w for w, hit in (('majority', host in entry['differ']), ('pin', host in entry['off_pin']))
                                    if hit)
                lines.append('| %s | %s | %s | %s | %s | %s |' % (_show(entry['field']), majority, pin, host, _show(value), what))
    if report.get('errors'):
        lines += ['', 'Fields that could not be evaluated on a host (value taken as absent):']
        lines += ['- %s on %s: %s' % (e['field'], e['host'], e['error']) for e in report['errors']]
    lines += ['', 'Fields: ' + ', '.join('%s = %s' % (k, _code(v)) for k, v in sorted((report.get('fields') or {}).items()))]
    return '\n'.join(lines) + '\n'


def drift_lines(report, limit=20, summary=None):
    """A few console lines: each host's release (from the run summary), which fields differ on which hosts."""
    releases = (summary or {}).get('releases') or {}
    head = (['releases: ' + '; '.join('%s on %s' % (r, ', '.join(h)) for r, h in sorted(releases.items()))]
            if releases else [])
    return head + _drift_lines(report, limit)


def _drift_lines(report, limit):
    drift = report.get('drift') or []
    if not drift:
        return ['drift: no host differs from the majority or the release pins (%d values compared on %d hosts)'
                % (report.get('compared', 0), len(report.get('hosts') or []))]
    lines = ['drift: %d of %d values differ' % (len(drift), report.get('compared', 0))]
    for entry in drift[:limit]:
        hosts = sorted(set(entry['differ']) | set(entry['off_pin']))
        shown = ', '.join('%s=%s' % (h, _show(entry['differ'].get(h, entry['off_pin'].get(h)))) for h in hosts)
        lines.append('  %s: %s' % (entry['field'], shown))
    if len(drift) > limit:
        lines.append('  ... %d more in drift.md' % (len(drift) - limit))
    return lines
