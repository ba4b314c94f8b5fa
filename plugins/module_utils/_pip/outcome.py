# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What pip did (before/after sets, diff) and what its failure output says (conflicts, builds)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.primus.trainenv.plugins.module_utils.common import normalize_name
from ansible_collections.primus.trainenv.plugins.module_utils._pip.report import version_action

CATEGORIES = ('added', 'removed', 'upgraded', 'downgraded', 'replaced')
_ACTION_TO_CATEGORY = {'install': 'added', 'upgrade': 'upgraded', 'downgrade': 'downgraded',
                       'replace': 'replaced'}


def compare(pk, before, after):
    """Differences between two {key: (name, version)} sets.

    Returns {added: [{name, version}], removed: [{name, version}],
    upgraded/downgraded/replaced: [{name, before, after}]}, each sorted by name.
    replaced = same public version, different local label (2.12.0+cpu -> 2.12.0+rocm...).
    """
    out = dict((c, []) for c in CATEGORIES)
    for key in sorted(set(before) | set(after)):
        old = before.get(key)
        new = after.get(key)
        if old is None:
            out['added'].append({'name': new[0], 'version': new[1]})
        elif new is None:
            out['removed'].append({'name': old[0], 'version': old[1]})
        elif old[1] != new[1]:
            action = version_action(pk, old[1], new[1])
            if action == 'reinstall':  # equal versions spelled differently: not a change
                continue
            out[_ACTION_TO_CATEGORY[action]].append({'name': new[0], 'before': old[1], 'after': new[1]})
    return out


def any_change(changes):
    return any(changes.get(c) for c in CATEGORIES)


def diff_lines(before, after):
    """Ansible diff with only the `name==version` lines that differ, sorted by name."""
    keys = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    old = ''.join('%s==%s\n' % before[k] for k in keys if k in before)
    new = ''.join('%s==%s\n' % after[k] for k in keys if k in after)
    return {'before': old, 'after': new}


def summary(changes):
    parts = []
    for cat in CATEGORIES:
        if changes.get(cat):
            parts.append('%d %s' % (len(changes[cat]), cat))
    return ', '.join(parts) if parts else 'no change'


def tail(text, lines=30):
    if not text:
        return ''
    return '\n'.join(text.rstrip('\n').splitlines()[-lines:])


# ---- failures ------------------------------------------------------------------------------

_CAUSE_HEADER = 'The conflict is caused by:'
_CONSTRAINT_CAUSE = re.compile(r'^The user requested \(constraint\) (?P<req>.+)$')
_USER_CAUSE = re.compile(r'^The user requested (?P<req>[^(].*)$')
_DEPENDS_CAUSE = re.compile(r'^(?P<name>\S+) (?P<version>\S+) depends on (?P<req>.+)$')


def conflict_causes(stdout, stderr=''):
    """The lines under pip's 'The conflict is caused by:' (stripped), in order."""
    causes = []
    text = '%s\n%s' % (stdout or '', stderr or '')
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if line.strip() != _CAUSE_HEADER:
            continue
        for follow in lines[index + 1:]:
            if not follow.strip():
                break
            if not follow.startswith((' ', '\t')):
                break
            causes.append(follow.strip())
        break
    return causes


def subprocess_output(stdout, stderr, lines=15):
    """The build's own output that pip frames with '[N lines of output]' ... '[end of output]'."""
    text = '%s\n%s' % (stdout or '', stderr or '')
    blocks = re.findall(r'\[\d+ lines? of output\]\n(.*?)\n\s*\[end of output\]', text, re.S)
    if not blocks:
        return []
    return [line.strip() for line in blocks[-1].splitlines() if line.strip()][-lines:]


_DEBUG_TIMESTAMP = re.compile(r'^\d{4}-\d\d-\d\dT[\d:,.]+ ')
_BUILD_START = re.compile(r'^\s*Running command (?P<what>.+)$')
_BUILD_END = re.compile(r'^\s*(?:ERROR: |error: subprocess-exited-with-error|.*: finished with status )')


def build_output(debug, lines=400):
    """The output of the last build pip ran, read from pip's --log file (timestamps removed).

    With --log, pip counts the build's output as shown (it went to the log at debug level) and the
    console only says "See above for output": this is the only place the compiler's lines are.
    """
    found, open_block = [], False
    for line in (debug or '').splitlines():
        line = _DEBUG_TIMESTAMP.sub('', line)
        if _BUILD_START.match(line):
            found, open_block = [], True   # pip stops at the first failing build: the last one is it
        elif open_block and _BUILD_END.match(line):
            open_block = False
        elif open_block and line.strip():
            found.append(line[2:] if line.startswith('  ') else line)
    return found[-lines:]


def resolver_warnings(stdout, stderr, expected=()):
    """pip's post-install 'dependency resolver does not currently take into account' block, as one warning.

    expected: distribution names (any spelling) whose conflict lines ("<name> <version> requires ..., but you have ...")
    are the release's known state: they are left out of the warning (no warning when nothing else is left).
    """
    return resolver_conflicts(stdout, stderr, expected)[0]


def resolver_conflicts(stdout, stderr, expected=()):
    """([the warning, or none], [the conflict lines of an expected distribution]) of pip's post-install block."""
    text = '%s\n%s' % (stdout or '', stderr or '')
    lines = text.splitlines()
    wanted = set(normalize_name(name) for name in expected)
    for index, line in enumerate(lines):
        if "pip's dependency resolver does not currently take into account" in line:
            block, known = [line.replace('ERROR: ', '', 1)], []
            for follow in lines[index + 1:]:
                if not follow.strip() or follow.startswith(('ERROR:', 'WARNING:', 'Successfully')):
                    break
                if normalize_name(follow.strip().split(' ', 1)[0]) in wanted:
                    known.append(follow.strip())
                else:
                    block.append(follow.strip())
            return ([' '.join(block)] if len(block) > 1 or not known else []), known
    return [], []


def _local_kind(version):
    local = version.split('+', 1)[1] if '+' in version else ''
    if local.startswith('rocm'):
        return 'ROCm '
    if local.startswith('cu'):
        return 'CUDA '
    if local == 'cpu':
        return 'CPU '
    return ''


def explain_conflict(pk, causes, constraint_items, probe):
    """One sentence naming the constrained distributions a conflict would replace.

    causes: conflict_causes(); constraint_items: the parsed constraints (with origin file:line).
    Returns (sentence or None, [{name, pin, file, installed, wanted_by}]).
    """
    pinned = []
    wanted = []
    for cause in causes:
        match = _CONSTRAINT_CAUSE.match(cause)
        if match:
            pinned.append(match.group('req').strip())
            continue
        match = _DEPENDS_CAUSE.match(cause)
        if match:
            wanted.append((match.group('name'), match.group('version'), match.group('req').strip()))
    involved = []
    for pin in pinned:
        try:
            req = pk.Requirement(pin)
        except pk.InvalidRequirement:
            continue
        key = pk.canonicalize_name(req.name)
        source = None
        for item in constraint_items:
            name = item.name or (pk.canonicalize_name(item.req.name) if item.req is not None else None)
            if name == key:
                source = item.origin.rsplit(':', 1)[0]
                break
        dist = probe.dists.get(key)
        wanted_by = ['%s %s (%s)' % (n, v, r) for n, v, r in wanted if _names(pk, r) == key]
        involved.append({'name': req.name, 'pin': pin, 'file': source,
                         'installed': dist.version if dist is not None else None, 'wanted_by': wanted_by})
    if not involved:
        return None, involved
    parts = []
    for entry in involved:
        version = entry['pin'].split('==', 1)[1] if '==' in entry['pin'] else ''
        where = ' from %s' % entry['file'] if entry['file'] else ''
        text = 'the pinned %s%s (%s%s)' % (_local_kind(version), entry['name'], entry['pin'], where)
        if entry['wanted_by']:
            text += ' to satisfy %s' % ', '.join(entry['wanted_by'])
        parts.append(text)
    sentence = 'This install would replace %s; pip refused.' % '; and '.join(parts)
    return sentence, involved


def _names(pk, requirement_text):
    try:
        return pk.canonicalize_name(pk.Requirement(requirement_text).name)
    except pk.InvalidRequirement:
        return None
