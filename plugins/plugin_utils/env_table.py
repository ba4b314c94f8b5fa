# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one environment table, and its renderers for bash (env.sh), Tcl (the modulefile) and a plain
dict (the environment of a build step). Pure functions; standard library only.

The table (``roles/primus/vars/env.yml``) is ``{'conditions': {...}, 'entries': [...]}``.

An entry, in order of evaluation::

    name: VARIABLE            the environment variable
    how: force                always this value
         default              this value unless the variable is already set and not empty
         prepend / append     put the entries of ``values`` first / last in a list variable, each
                              entry once (``separator``, default ``:``)
         activate             the venv at ``value``: env.sh sources its bin/activate (so that
                              ``deactivate`` works); elsewhere VIRTUAL_ENV=value and value/bin
                              first on PATH, which is what activate does
    value: <value>            (force, default, activate)
    values: [<value>, ...]    (prepend, append)
    separator: ":"            (prepend, append)
    when: <condition id>      only when that condition of ``conditions`` holds where the
                              environment is used (env.sh: when it is sourced)
    private: true             (force, default) a directory that must be this user's own and
                              writable by nobody else; otherwise a private one is used instead

A value is a string (taken literally) or a list of parts, joined without separator: a string, or
``{ref: NAME}`` (the value of an earlier entry; ``form: csv`` turns ``;`` into ``,``), or
``{runtime: name}`` (known only where the environment is used: env.sh's and the modulefile's own
logic compute ``user``, ``archs`` (the detected GPU archs, else the release's default),
``atomic`` and ``max_jobs`` (from the node's CPUs and memory); a build environment gets them from the
caller).

A condition is ``{dir: <value>}`` or ``{file: <value>}``: that directory or file exists (checked where the
environment is used), or ``{decided: true|false}``: decided when the table is rendered (the playbook
knows, e.g. whether PRIMUS_BASE is on a network filesystem); its entries are written or left out.

Quoting: bash values are single-quoted (``'`` written ``'\\''``), references are ``"$NAME"``; Tcl
values are braced when they hold only plain characters, else double-quoted with every special
character escaped. Nothing in a value is ever code in either language.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

HOW = ('force', 'default', 'prepend', 'append', 'activate')
_NAME_RE = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*$')
_RUNTIME_RE = re.compile(r'^[a-z][a-z0-9_]*$')
_FORMS = ('csv',)
# Tcl words that need no quoting inside braces and read the same everywhere.
_TCL_PLAIN_RE = re.compile(r'^[A-Za-z0-9._+@%=,/:;-]+$')
_TCL_SPECIAL = set('\\$[]"{};')


class EnvTableError(ValueError):
    """The table is malformed, or a value cannot be rendered; the message names the entry."""


# ------------------------------------------------------------------ quoting

def sh_quote(value):
    """One bash word holding exactly value: single quotes, ' written as '\\''."""
    text = _text(value, 'a bash value')
    return "'" + text.replace("'", "'\\''") + "'"


def _tcl_escape(text):
    out = []
    for char in text:
        code = ord(char)
        if char in _TCL_SPECIAL:
            out.append('\\' + char)
        elif code < 0x20 or code == 0x7f or code > 0x7e:
            out.append('\\u%04x' % code if code < 0x10000 else '\\U%08x' % code)
        else:
            out.append(char)
    return ''.join(out)


def tcl_quote(value):
    """One Tcl word holding exactly value: {value} when value is plain, else "..." with escapes."""
    text = _text(value, 'a Tcl value')
    if text == '':
        return '{}'
    if _TCL_PLAIN_RE.match(text):
        return '{' + text + '}'
    return '"' + _tcl_escape(text) + '"'


def comment_text(value):
    """value made safe inside a bash or Tcl comment: one line, no backslash continuation, no braces.

    Printable ASCII stays; anything else, and \\ { }, becomes \\xNN or \\uNNNN.
    """
    out = []
    for char in str(value):
        code = ord(char)
        if ' ' <= char <= '~' and char not in '\\{}':
            out.append(char)
        elif code < 0x100:
            out.append('\\x%02x' % code)
        else:
            out.append('\\u%04x' % code if code < 0x10000 else '\\U%08x' % code)
    return ''.join(out)


def _text(value, what):
    if isinstance(value, bool) or value is None:
        raise EnvTableError('%s must be a string, got %r' % (what, value))
    text = value if isinstance(value, str) else str(value) if isinstance(value, (int, float)) else None
    if text is None:
        raise EnvTableError('%s must be a string, got %r' % (what, value))
    if '\x00' in text:
        raise EnvTableError('%s contains a NUL byte, which no environment variable can hold' % what)
    return text


# ------------------------------------------------------------------ the table

def _parts(value, where):
    """A value as a list of parts: ('lit', text) | ('ref', NAME, form) | ('rt', name)."""
    if isinstance(value, (list, tuple)):
        items = list(value)
    else:
        items = [value]
    parts = []
    for item in items:
        if isinstance(item, dict):
            if set(item) <= set(['ref', 'form']) and 'ref' in item:
                name = item['ref']
                form = item.get('form')
                if not isinstance(name, str) or not _NAME_RE.match(name):
                    raise EnvTableError('%s: reference %r is not a variable name' % (where, name))
                if form is not None and form not in _FORMS:
                    raise EnvTableError('%s: form %r of reference %s is not one of %s' % (where, form, name, ', '.join(_FORMS)))
                parts.append(('ref', name, form))
            elif set(item) == set(['runtime']):
                name = item['runtime']
                if not isinstance(name, str) or not _RUNTIME_RE.match(name):
                    raise EnvTableError('%s: runtime value %r is not a lower-case name' % (where, name))
                parts.append(('rt', name))
            else:
                raise EnvTableError('%s: a value part must be a string, {ref: NAME} or {runtime: name}, got %r'
                                    % (where, item))
        else:
            parts.append(('lit', _text(item, where)))
    return parts


def _decided(value, cid):
    """A decided condition's value: a bool, or the text of one (a rendered template gives 'True' / 'false')."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ('true', 'false'):
        return value.strip().lower() == 'true'
    raise EnvTableError('condition %s: decided must be true or false, got %r' % (cid, value))


def _entry_where(index, entry):
    name = entry.get('name') if isinstance(entry, dict) else None
    return 'entry %d (%s)' % (index + 1, name or '?')


def parse(table):
    """Validate the table; returns (conditions, entries) with every value as a list of parts.

    Raises EnvTableError naming the first problem: an unknown key or kind, a bad name, a reference
    to a variable not set earlier (or set only under another condition), an unknown condition, a
    list entry that holds its own separator.
    """
    if not isinstance(table, dict) or not isinstance(table.get('entries'), (list, tuple)):
        raise EnvTableError('the environment table must be a mapping with a list of entries')
    raw_conditions = table.get('conditions') or {}
    if not isinstance(raw_conditions, dict):
        raise EnvTableError('the conditions of the environment table must be a mapping')
    conditions = {}
    for cid, spec in raw_conditions.items():
        if not isinstance(spec, dict) or len(spec) != 1 or list(spec)[0] not in ('dir', 'file', 'decided'):
            raise EnvTableError('condition %s must be {dir: <value>}, {file: <value>} or {decided: true|false}, got %r'
                                % (cid, spec))
        kind = list(spec)[0]
        if kind == 'decided':
            conditions[cid] = (kind, _decided(spec[kind], cid))
        else:
            conditions[cid] = (kind, _parts(spec[kind], 'condition %s' % cid))

    allowed = {
        'force': set(['name', 'how', 'value', 'when', 'private']),
        'default': set(['name', 'how', 'value', 'when', 'private']),
        'prepend': set(['name', 'how', 'values', 'separator', 'when']),
        'append': set(['name', 'how', 'values', 'separator', 'when']),
        'activate': set(['name', 'how', 'value', 'when']),
    }
    defined = {}   # NAME -> the condition it was set under (None = always)
    entries = []
    for index, entry in enumerate(table['entries']):
        where = _entry_where(index, entry)
        if not isinstance(entry, dict):
            raise EnvTableError('%s must be a mapping' % where)
        how = entry.get('how')
        if how not in HOW:
            raise EnvTableError('%s: how must be one of %s, got %r' % (where, ', '.join(HOW), how))
        unknown = set(entry) - allowed[how]
        if unknown:
            raise EnvTableError('%s: unknown keys %s for how=%s' % (where, ', '.join(sorted(unknown)), how))
        name = entry.get('name')
        if not isinstance(name, str) or not _NAME_RE.match(name):
            raise EnvTableError('%s: name must be an environment variable name' % where)
        when = entry.get('when')
        if when is not None and when not in conditions:
            raise EnvTableError('%s: condition %r is not defined under conditions' % (where, when))
        item = {'name': name, 'how': how, 'when': when, 'private': bool(entry.get('private'))}
        if how in ('prepend', 'append'):
            separator = _text(entry.get('separator', ':'), '%s separator' % where)
            if len(separator) != 1:
                raise EnvTableError('%s: separator must be one character' % where)
            values = entry.get('values')
            if not isinstance(values, (list, tuple)) or not values:
                raise EnvTableError('%s: values must be a non-empty list' % where)
            item['separator'] = separator
            item['values'] = [_parts(v, where) for v in values]
            for parts in item['values']:
                for part in parts:
                    if part[0] == 'lit' and separator in part[1]:
                        raise EnvTableError('%s: %r holds the separator %r, so it would add entries of its own to %s'
                                            % (where, part[1], separator, name))
            used = item['values']
        else:
            if 'value' not in entry:
                raise EnvTableError('%s: value is missing' % where)
            item['value'] = _parts(entry['value'], where)
            used = [item['value']]
        if when is not None and conditions[when][0] != 'decided':
            used = used + [conditions[when][1]]
        for parts in used:
            for part in parts:
                if part[0] != 'ref':
                    continue
                if part[1] not in defined:
                    raise EnvTableError('%s: refers to %s, which no earlier entry sets' % (where, part[1]))
                if defined[part[1]] not in (None, when):
                    raise EnvTableError('%s: refers to %s, which is set only when %s holds'
                                        % (where, part[1], defined[part[1]]))
        if how in ('force', 'default'):
            defined.setdefault(name, when)
        elif how == 'activate':
            defined.setdefault('VIRTUAL_ENV', when)
        entries.append(item)
    return conditions, entries


def _groups(entries):
    """Consecutive entries with the same condition."""
    groups = []
    for entry in entries:
        if groups and groups[-1][0] == entry['when']:
            groups[-1][1].append(entry)
        else:
            groups.append((entry['when'], [entry]))
    return groups


# ------------------------------------------------------------------ bash

def _sh_value(parts, suffix=''):
    parts = parts + ([('lit', suffix)] if suffix else [])
    words = []
    for part in parts:
        if part[0] == 'lit':
            if part[1]:
                words.append(sh_quote(part[1]))
        elif part[0] == 'ref':
            words.append('"${%s//;/,}"' % part[1] if part[2] == 'csv' else '"$%s"' % part[1])
        else:
            words.append('"$_primus_%s"' % part[1])
    return ''.join(words) or "''"


def _render(table, open_condition, close, render_entry):
    """The table's lines in order, consecutive entries under one condition in one indented block."""
    conditions, entries = parse(table)
    lines = []
    for when, group in _groups(entries):
        pad = ''
        if when is not None and conditions[when][0] == 'decided':
            if not conditions[when][1]:
                continue
        elif when is not None:
            lines.append(open_condition(*conditions[when]))
            pad = '    '
        for entry in group:
            lines.extend(pad + line for line in render_entry(entry))
        if when is not None and conditions[when][0] != 'decided':
            lines.append(close)
    return '\n'.join(lines)


def _sh_entry(entry):
    name, how = entry['name'], entry['how']
    if how in ('prepend', 'append'):
        return ['_primus_add %s %s %s %s' % (name, sh_quote(entry['separator']), 'first' if how == 'prepend' else 'last',
                                             ' '.join(_sh_value(v) for v in entry['values']))]
    if how == 'activate':
        return ["# shellcheck disable=SC1091 # the venv's own activate script",
                '. %s' % _sh_value(entry['value'], '/bin/activate')]
    assign = '%s=%s' % (name, _sh_value(entry['value']))
    if how == 'default':
        assign = '[ -n "${%s:-}" ] || %s' % (name, assign)
    if entry['private']:
        return [assign, '_primus_private_dir %s; export %s' % (name, name)]
    return ['%s; export %s' % (assign, name) if how == 'default' else 'export ' + assign]


def render_sh(table):
    """The table as bash, for env.sh. Needs two functions from env.sh's own logic: _primus_add VAR SEP
    first|last VALUE... and _primus_private_dir VAR; and _primus_<runtime> variables."""
    return _render(table, lambda kind, parts: 'if [ %s %s ]; then' % ('-d' if kind == 'dir' else '-f', _sh_value(parts)),
                   'fi', _sh_entry)


# ------------------------------------------------------------------ Tcl

def _tcl_value(parts, suffix=''):
    parts = parts + ([('lit', suffix)] if suffix else [])
    if len(parts) == 1 and parts[0][0] == 'lit':
        return tcl_quote(parts[0][1])
    out = []
    for part in parts:
        if part[0] == 'lit':
            out.append(_tcl_escape(part[1]))
        elif part[0] == 'ref':
            ref = '$primus_env(%s)' % part[1]
            out.append('[string map {; ,} %s]' % ref if part[2] == 'csv' else ref)
        else:
            out.append('$primus_rt(%s)' % part[1])
    return '"' + ''.join(out) + '"'


def _tcl_entry(entry):
    name, how = entry['name'], entry['how']
    if how in ('prepend', 'append'):
        delim = '' if entry['separator'] == ':' else '-d %s ' % tcl_quote(entry['separator'])
        values = entry['values'] if how == 'append' else list(reversed(entry['values']))
        return ['%s-path %s%s %s' % (how, delim, name, _tcl_value(parts)) for parts in values]
    if how == 'activate':
        return ['setenv VIRTUAL_ENV [set primus_env(VIRTUAL_ENV) %s]' % _tcl_value(entry['value']),
                'prepend-path PATH "$primus_env(VIRTUAL_ENV)/bin"']
    value = _tcl_value(entry['value'])
    if how == 'default':
        value = '[primus_getenv %s %s]' % (name, value)
    if entry['private']:
        return ['set primus_env(%s) %s' % (name, value), 'primus_private_dir %s' % name,
                'setenv %s $primus_env(%s)' % (name, name)]
    return ['setenv %s [set primus_env(%s) %s]' % (name, name, value)]


def render_tcl(table):
    """The table as Tcl, for the modulefile. Needs the procs primus_getenv NAME DEFAULT and
    primus_private_dir NAME from the modulefile's own logic, and its primus_rt array."""
    def open_condition(kind, parts):
        return 'if {[file %s %s]} {' % ('isdirectory' if kind == 'dir' else 'isfile', _tcl_value(parts))
    return _render(table, open_condition, '}', _tcl_entry)


# ------------------------------------------------------------------ a plain dict

def _list_add(old, new_items, separator, first):
    kept = [e for e in (old or '').split(separator) if e]
    result = []
    if first:
        for item in new_items + kept:
            if item not in result:
                result.append(item)
    else:
        for item in kept + new_items:
            if item not in result:
                result.append(item)
    return separator.join(result)


def render_dict(table, runtime=None, conditions=None, inherit=None, overrides=None):
    """The table as {NAME: value} for a build step's environment.

    runtime: {name: value} for every {runtime: name} part used; conditions: {id: bool} for every
    dir/file condition used (the caller knows, e.g., whether the ROCm SDK is initialised; a decided
    condition holds as the table says, unless given here); inherit: the
    node's current values of the list variables (PATH, LD_LIBRARY_PATH, ...), needed for
    prepend/append entries (a missing one is an error: a build must not run with PATH lost);
    overrides: {NAME: value} replacing an entry's value where it is set (later references see the
    override), or added at the end for names the table does not set.
    ``default`` entries take the table's value: a build environment is exact, not inherited.
    """
    table_conditions, entries = parse(table)   # whether a dir/file condition holds is the caller's to say here
    runtime = runtime or {}
    known = dict((cid, spec[1]) for cid, spec in table_conditions.items() if spec[0] == 'decided')
    known.update(conditions or {})
    inherit = inherit or {}
    overrides = dict(overrides or {})
    env = {}

    def value(parts, where):
        out = []
        for part in parts:
            if part[0] == 'lit':
                out.append(part[1])
            elif part[0] == 'ref':
                if part[1] not in env:
                    raise EnvTableError('%s: %s is not set here (its condition does not hold)' % (where, part[1]))
                out.append(env[part[1]].replace(';', ',') if part[2] == 'csv' else env[part[1]])
            else:
                if part[1] not in runtime:
                    raise EnvTableError('%s: the runtime value %r was not given' % (where, part[1]))
                out.append(_text(runtime[part[1]], '%s runtime value %s' % (where, part[1])))
        return ''.join(out)

    def listed(name, where):
        if name in env:
            return env[name]
        if name not in inherit:
            raise EnvTableError("%s: the node's current %s is needed (pass it in inherit)" % (where, name))
        return _text(inherit[name] if inherit[name] is not None else '', '%s inherited %s' % (where, name))

    for when, group in _groups(entries):
        if when is not None:
            if when not in known:
                raise EnvTableError('condition %r: say whether it holds (conditions={%r: true|false})' % (when, when))
            if not known[when]:
                continue
        for entry in group:
            name, how = entry['name'], entry['how']
            where = 'variable %s' % name
            if how in ('force', 'default'):
                env[name] = _text(overrides.pop(name), where) if name in overrides else value(entry['value'], where)
            elif how in ('prepend', 'append'):
                items = [value(v, where) for v in entry['values']]
                env[name] = _list_add(listed(name, where), items, entry['separator'], how == 'prepend')
            else:
                env['VIRTUAL_ENV'] = value(entry['value'], where)
                env['PATH'] = _list_add(listed('PATH', where), [env['VIRTUAL_ENV'] + '/bin'], ':', True)
    for name, override in overrides.items():
        if not isinstance(name, str) or not _NAME_RE.match(name):
            raise EnvTableError('override %r is not an environment variable name' % (name,))
        env[name] = _text(override, 'override %s' % name)
    return env
