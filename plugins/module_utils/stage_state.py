# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Stage stamps and prerequisites: when is a stage done on a base, and what must run first.

A stage that finishes writes ``$PRIMUS_BASE/state/<stage>.json`` (a *stamp*)::

    {"format": 1, "stage": "torch", "release": "v26.5",
     "key": {...the inputs that define the stage's result...},
     "key_id": "<first 16 hex digits of sha256 of the canonical JSON of key>",
     "finished": "2026-12-02T17:30:00Z", "host": "node1", "outputs": {...}}

A stage is *done* on a base when its stamp is valid, its key_id is the key_id of the key the
current run would build with, and every stage it requires is done too. Pure functions only:
the modules read and write files, the filters call these.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import hashlib
import json
import os
import re
import stat

from collections.abc import Mapping

from ansible_collections.primus.trainenv.plugins.module_utils.common import normalize_name

STAMP_FORMAT = 1
STAMP_FIELDS = ('format', 'stage', 'release', 'key', 'key_id', 'finished', 'host', 'outputs')
# A stage name is also a file name under state/: nothing else is read or written there.
STAGE_NAME = re.compile(r'^[a-z][a-z0-9_]*$')


class StageError(ValueError):
    """A stage map, key or stamp that cannot be used; the message names what and where."""


# The fields of one entry of the stage registry (roles/primus/vars/main.yml, primus_stages) and their defaults.
REGISTRY_FIELDS = {'name': None, 'requires': (), 'optional': False, 'read_only': False, 'pip': True}


def registry(entries):
    """The views of the stage registry, validated: {'order': [names], 'optional': [...], 'read_only': [...],
    'pip': [stages that run pip], 'requires': {stage: [stages]}}.

    entries: the ordered list of {name, requires, optional, read_only, pip}; every stage a stage requires must come
    before it in the list (so the order itself is a valid build order)."""
    if not isinstance(entries, (list, tuple)) or not entries:
        raise StageError('the stage registry must be a non-empty list of stages')
    views = {'order': [], 'optional': [], 'read_only': [], 'pip': [], 'requires': {}}
    for index, entry in enumerate(entries):
        where = 'stage registry entry %d' % (index + 1)
        if not isinstance(entry, Mapping):
            raise StageError('%s is not a mapping' % where)
        unknown = sorted(set(entry) - set(REGISTRY_FIELDS))
        if unknown:
            known = ', '.join(sorted(REGISTRY_FIELDS))
            raise StageError('%s has unknown fields %s (known: %s)' % (where, ', '.join(unknown), known))
        name = entry.get('name')
        if not isinstance(name, str) or not STAGE_NAME.match(name):
            raise StageError('%s: name %r is not a stage name (lower case letters, digits and _)' % (where, name))
        if name in views['requires']:
            raise StageError('%s: stage %s is listed twice' % (where, name))
        requires = entry.get('requires', REGISTRY_FIELDS['requires'])
        if not isinstance(requires, (list, tuple)) or not all(isinstance(r, str) for r in requires):
            raise StageError('stage %s: requires must be a list of stage names' % name)
        later = [r for r in requires if r not in views['requires']]
        if later:
            raise StageError('stage %s requires %s, which %s not listed before it' % (
                name, _join(later), 'is' if len(later) == 1 else 'are'))
        for flag in ('optional', 'read_only', 'pip'):
            if not isinstance(entry.get(flag, REGISTRY_FIELDS[flag]), bool):
                raise StageError('stage %s: %s must be true or false, got %r' % (name, flag, entry[flag]))
        views['order'].append(name)
        views['requires'][name] = list(requires)
        for flag in ('optional', 'read_only', 'pip'):
            if entry.get(flag, REGISTRY_FIELDS[flag]):
                views[flag].append(name)
    return views


def run_plan(entries, run_tags, skip_tags, check_mode=False):
    """The registry's views plus what this run does: 'stages' (selected by --tags/--skip-tags, in order), 'named'
    (those of them --tags names: asked for by name, not only as a part of all) and 'lock' (the run may change the
    base: not check mode, and a stage that is not read-only runs).

    With 'all' (no --tags) every stage that is not optional runs; an optional stage (tagged ``never`` in the
    playbook) runs only when named or with --tags never. 'tagged' selects the non-optional stages too;
    'untagged' selects none. Skip tags remove stages."""
    views = registry(entries)
    run = set(_tags(run_tags) or ['all'])
    skip = set(_tags(skip_tags))
    stages = []
    for stage in views['order']:
        if stage in views['optional']:
            selected = stage in run or 'never' in run
        else:
            selected = bool(run & set(['all', 'tagged', stage]))
        if selected and stage not in skip and not (stage in views['optional'] and 'never' in skip):
            stages.append(stage)
    views['stages'] = stages
    views['named'] = [stage for stage in stages if stage in run]
    views['lock'] = not check_mode and bool([s for s in stages if s not in views['read_only']])
    return views


def _tags(value):
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]


def plain(value, where='key'):
    """value as plain JSON types (dict, list, str, int, float, bool, None); anything else is an error."""
    if isinstance(value, Mapping):
        result = {}
        for name, item in value.items():
            if not isinstance(name, str):
                raise StageError('%s: the name %r is not a string' % (where, name))
            result[str(name)] = plain(item, '%s.%s' % (where, name))
        return result
    if isinstance(value, (list, tuple)):
        return [plain(item, '%s[%d]' % (where, index)) for index, item in enumerate(value)]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, str):
        return str(value)
    if isinstance(value, (int, float)):
        return value
    raise StageError('%s: a %s is not a JSON value (%r)' % (where, type(value).__name__, value))


def canonical_json(value):
    """The one text of a value: sorted keys, no spaces, UTF-8 as is."""
    return json.dumps(plain(value), sort_keys=True, separators=(',', ':'), ensure_ascii=False)


def key_id(key):
    """First 16 hex digits of the sha256 of the canonical JSON of a stage key (a mapping)."""
    if not isinstance(key, Mapping):
        raise StageError('a stage key must be a mapping, got %s' % type(key).__name__)
    return hashlib.sha256(canonical_json(key).encode('utf-8')).hexdigest()[:16]


def make_stamp(stage, release, key, outputs, host, finished):
    if not STAGE_NAME.match(stage or ''):
        raise StageError('%r is not a stage name (lower case letters, digits and _)' % (stage,))
    return {
        'format': STAMP_FORMAT, 'stage': stage, 'release': str(release), 'key': plain(key),
        'key_id': key_id(key), 'finished': finished, 'host': host, 'outputs': plain(outputs, 'outputs'),
    }


def _lasting(outputs):
    """outputs without how long the stage took (a stamp keeps the time of the run that built the result)."""
    if isinstance(outputs, Mapping):
        return dict((k, v) for k, v in outputs.items() if k != 'seconds')
    return outputs


def same_result(old, new):
    """Whether two stamps record the same result (the time and host of writing, and outputs.seconds, do not count)."""
    if not isinstance(old, Mapping) or not isinstance(new, Mapping):
        return False
    fields = ('format', 'stage', 'release', 'key', 'key_id')
    try:
        return (all(canonical_json(old.get(f)) == canonical_json(new.get(f)) for f in fields)
                and canonical_json(_lasting(old.get('outputs'))) == canonical_json(_lasting(new.get('outputs'))))
    except StageError:
        return False


def stamp_problem(stage, data):
    """Why a stamp read from state/<stage>.json cannot be trusted ('' when it can)."""
    if not isinstance(data, Mapping):
        return 'it is not a JSON object'
    if data.get('format') != STAMP_FORMAT:
        return 'its format is %r, not %d' % (data.get('format'), STAMP_FORMAT)
    if data.get('stage') != stage:
        return 'it names stage %r' % (data.get('stage'),)
    if not isinstance(data.get('key'), Mapping) or not isinstance(data.get('outputs'), Mapping):
        return 'its key or outputs is not a mapping'
    try:
        computed = key_id(data['key'])
    except StageError as exc:
        return str(exc)
    if data.get('key_id') != computed:
        return 'its key_id %r does not match its key (%s): it was edited' % (data.get('key_id'), computed)
    return ''


# A stamp is a few kilobytes; a file much larger is not one of ours (and is not read whole).
MAX_STAMP = 1024 * 1024


def stamp_file_problem(path, uid):
    """Why the file of a stamp is not one a run of this user wrote ('' if it is): it must be a regular file (not a
    symlink that points anywhere, not a FIFO that would block the read) owned by ``uid``."""
    try:
        lst = os.lstat(path)
    except OSError as exc:
        return 'it cannot be looked at (%s)' % (exc.strerror or exc)
    if stat.S_ISLNK(lst.st_mode):
        return 'it is a symbolic link, not a stamp a run wrote'
    if not stat.S_ISREG(lst.st_mode):
        return 'it is not a regular file'
    if uid is not None and lst.st_uid != uid:
        return 'it is owned by uid %d, not by you' % lst.st_uid
    return ''


def read_stamps(state_dir, uid=None):
    """{stage: stamp} of every state/<stage>.json; an unusable one has a non-empty 'problem' (also one that is not a
    regular file of ``uid``'s, when given: stamp_file_problem)."""
    stamps = {}
    try:
        names = sorted(os.listdir(state_dir))
    except OSError:
        return stamps
    for name in names:
        stage, ext = os.path.splitext(name)
        if ext != '.json' or not STAGE_NAME.match(stage):
            continue
        path = os.path.join(state_dir, name)
        unsafe = stamp_file_problem(path, uid)
        if unsafe:
            stamps[stage] = {'problem': unsafe}
            continue
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, 'O_NONBLOCK', 0) | getattr(os, 'O_NOFOLLOW', 0))
            try:
                raw = os.read(fd, MAX_STAMP + 1)
            finally:
                os.close(fd)
            if len(raw) > MAX_STAMP:
                raise ValueError('larger than %d bytes' % MAX_STAMP)
            data = json.loads(raw.decode('utf-8'))
        except (IOError, OSError, ValueError) as exc:
            # The reason, never the content (JSON errors quote no text; a decode error is named by its class).
            why = exc.strerror if isinstance(exc, (IOError, OSError)) else type(exc).__name__ if \
                isinstance(exc, UnicodeDecodeError) else str(exc).split(':', maxsplit=1)[0]
            stamps[stage] = {'problem': 'it cannot be read as JSON (%s)' % why}
            continue
        problem = stamp_problem(stage, data)
        entry = dict(data) if isinstance(data, Mapping) else {}
        entry['problem'] = problem
        stamps[stage] = entry
    return stamps


def _short(value, limit=60):
    text = canonical_json(value)
    return text if len(text) <= limit else text[:limit - 3] + '...'


def key_change(old, new):
    """'archs ["gfx942"] -> ["gfx942","gfx950"]; ...' for the fields of two keys that differ."""
    old = old if isinstance(old, Mapping) else {}
    changes = []
    for name in sorted(set(old) | set(new)):
        if name not in old:
            changes.append('%s added' % name)
        elif name not in new:
            changes.append('%s removed' % name)
        elif canonical_json(old[name]) != canonical_json(new[name]):
            changes.append('%s %s -> %s' % (name, _short(old[name]), _short(new[name])))
    return '; '.join(changes)


def _check_map(requires):
    if not isinstance(requires, Mapping):
        raise StageError('the stage requirement map must be a mapping of stage: [stages]')
    for stage, needs in requires.items():
        if not isinstance(needs, (list, tuple)) or not all(isinstance(n, str) for n in needs):
            raise StageError('requirements of stage %r must be a list of stage names, got %r' % (stage, needs))


def needed(stage, requires):
    """Every stage that stage needs, directly or through another (a cycle is an error)."""
    _check_map(requires)
    result = []

    def visit(name, path):
        for need in requires.get(name, []):
            if need in path:
                raise StageError('the stage requirements form a cycle: %s' % ' -> '.join(path + [need]))
            visit(need, path + [need])
            if need not in result:
                result.append(need)

    visit(stage, [stage])
    return result


def stage_status(stamps, keys, requires, unavailable=None):
    """{stage: {'done', 'stamp', 'reason', 'key_id'}} for every stage named in keys, requires or stamps.

    stamp: current (valid, key_id of the current key) | stale (another key) | missing | invalid
    | nokey (no current key is defined for the stage, so no stamp can be trusted).
    done: the stamp is current, the stage is not in ``unavailable`` ({stage: why its result is gone, which is
    then the reason whatever the stamp says}) and every stage it needs is done.
    """
    stamps = stamps or {}
    keys = keys or {}
    unavailable = unavailable or {}
    _check_map(requires)
    names = []
    for group in (requires, keys, stamps):
        for name in group:
            if name not in names:
                names.append(name)
        if group is requires:
            for needs in requires.values():
                for name in needs:
                    if name not in names:
                        names.append(name)
    status = {}
    for name in names:
        stamp = stamps.get(name)
        current = key_id(keys[name]) if name in keys else ''
        if stamp is None:
            state, reason = 'missing', 'not done on this base'
        elif stamp.get('problem'):
            state, reason = 'invalid', 'its stamp state/%s.json is unusable: %s' % (name, stamp['problem'])
        elif name not in keys:
            state, reason = 'nokey', 'no build key is defined for it in this release'
        elif stamp.get('key_id') != current:
            state, reason = 'stale', 'done for other inputs (%s)' % (key_change(stamp.get('key'), keys[name]) or 'key changed')
        else:
            state, reason = 'current', ''
        if unavailable.get(name):
            reason = unavailable[name]
        status[name] = {'stamp': state, 'key_id': current, 'reason': reason,
                        'done': state == 'current' and not unavailable.get(name)}
    for name in names:
        if status[name]['done']:
            gone = [n for n in needed(name, requires) if not status.get(n, {}).get('done')]
            if gone:
                status[name]['done'] = False
                status[name]['reason'] = 'it needs %s, which %s not done' % (
                    _join(gone), 'is' if len(gone) == 1 else 'are')
    return status


def settled(status, run, pip, venv, busy=None):
    """The stages of this run that are done and have nothing else to do: the playbook skips each one's include as a
    block (one skipped task, none of the stage role's tasks, no round trip to the node).

    status: stage_status's verdicts; run: this run's stages, in order; pip: the stages that run pip; venv: node_info's
    look at the venv (the first pip stage of the run removes a killed pip's debris, so it is not settled while there
    is any); busy: {stage: why it has work although it is done} (a generated file to rewrite, data to fetch...).
    A stage that is not done, or whose stamp key differs, is never settled: it runs."""
    if not isinstance(status, Mapping):
        raise StageError('the stage status must be a mapping of stage: verdict')
    busy = busy or {}
    if not isinstance(busy, Mapping):
        raise StageError('the busy stages must be a mapping of stage: reason')
    venv = venv or {}
    first_pip = [name for name in run or [] if name in (pip or [])][:1]
    debris = bool(venv.get('debris')) and venv.get('kind') in ('ready', 'adoptable')
    return [name for name in run or []
            if (status.get(name) or {}).get('done') is True and not busy.get(name)
            and not (debris and [name] == first_pip)]


def files_to_write(expected, found, mode='0644'):
    """The paths of ``expected`` ({path: content}) that writing them would change: node_info's look at each (``found``,
    {path: {kind, mode, sha256}}) shows another content or mode, or no regular file (or the path was not looked at)."""
    if not isinstance(expected, Mapping) or not isinstance(found, Mapping):
        raise StageError('files_to_write needs {path: content} and node_info\'s files {path: {kind, mode, sha256}}')
    out = []
    for path, content in expected.items():
        have = found.get(path) or {}
        digest = hashlib.sha256(str(content).encode('utf-8')).hexdigest()
        if have.get('kind') != 'file' or have.get('mode') != mode or have.get('sha256') != digest:
            out.append(path)
    return out


def _join(names):
    names = list(names)
    if len(names) <= 1:
        return ''.join(names)
    return '%s and %s' % (', '.join(names[:-1]), names[-1])


def missing_prerequisites(stage, requires, order, status, run):
    """The stages ``stage`` needs that are neither done on this base nor run before it in this run."""
    before = list(run[:list(run).index(stage)]) if stage in run else list(run)
    missing = [n for n in needed(stage, requires) if n not in before and not status.get(n, {}).get('done')]
    rank = dict((name, index) for index, name in enumerate(order))
    return sorted(missing, key=lambda n: (rank.get(n, len(rank)), n))


def prerequisite_message(stage, missing, status):
    """'te needs torch and flash_attn: run --tags torch,flash_attn first, or --tags torch,flash_attn,te. ...'"""
    if not missing:
        return ''
    tags = ','.join(missing)
    why = '; '.join('%s: %s' % (n, status.get(n, {}).get('reason') or 'not done on this base') for n in missing)
    return ('%s needs %s: run --tags %s first, or --tags %s,%s. On this base: %s. Nothing was changed by %s.'
            % (stage, _join(missing), tags, tags, stage, why, stage))


def start(stage, stages, venv):
    """What starting ``stage`` means in this run, from the preflight_stages fact and node_info's venv.

    {'missing': [stages it needs that are neither done nor run before it], 'message': the refusal or '',
     'debris': [what a killed pip left in the venv, to remove]}. The debris is removed by the first
    stage of the run that runs pip, and only from a venv that is ours or adopted (never a foreign one).
    """
    for field in ('requires', 'order', 'status', 'run', 'pip'):
        if field not in stages:
            raise StageError('the stages fact has no %s' % field)
    if not STAGE_NAME.match(str(stage)):
        raise StageError('%r is not a stage name' % (stage,))
    missing = missing_prerequisites(stage, stages['requires'], stages['order'], stages['status'], stages['run'])
    first_pip = [name for name in stages['run'] if name in stages['pip']][:1]
    venv = venv or {}
    debris = []
    if first_pip == [stage] and venv.get('kind') in ('ready', 'adoptable'):
        debris = list(venv.get('debris') or [])
    return {'missing': missing, 'message': prerequisite_message(stage, missing, stages['status']), 'debris': debris}


def _normal(name):
    return normalize_name(str(name))


def outputs_missing(stamps, own, installed):
    """{stage: why its result is gone} for each stage of ``own`` ({stage: [distribution names]})
    whose stamp recorded a version of one of them that is not installed now (``installed``:
    {normalised name: version}, node_info's venv distributions). A stage whose stamp is missing
    or records no version is left to the stamp's own verdict."""
    gone = {}
    if not isinstance(own, Mapping):
        raise StageError('own distributions must be a mapping of stage: [names]')
    installed = dict((_normal(k), v) for k, v in (installed or {}).items())
    for stage, names in own.items():
        stamp = (stamps or {}).get(stage) or {}
        recorded = dict((_normal(k), v) for k, v in
                        ((stamp.get('outputs') or {}).get('distributions') or {}).items())
        for name in names or []:
            want = recorded.get(_normal(name))
            if want is None:
                continue
            have = installed.get(_normal(name))
            if have != want:
                gone[stage] = ('%s %s, which it installed, is %s' % (name, want, 'no longer installed' if have is None
                                                                     else 'now %s' % have))
                break
    return gone
