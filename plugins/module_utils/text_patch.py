# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Verified text patches: the ck_jit_compile.sh "mv" patch and literal replacements in source trees.

The seed patches with sed and (except for ck_jit) never checks that anything matched, so a
changed upstream file silently goes unpatched. Here every patch is decided on the text first:
it applies (and how often), it is already there, or it no longer matches - and the last is an
error naming the file and the texts expected. After writing, the file is read back and decided
again; a patch that did not take is an error too.

Pure functions on text, plus the one atomic write the modules share (a temporary file beside
the target, the target's mode, a rename). Runs on the target with Python 3.8+; standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import hashlib
import os
import re
import stat

from collections.abc import Mapping

from ansible_collections.primus.trainenv.plugins.module_utils.modes import write_atomic
from ansible_collections.primus.trainenv.plugins.module_utils.stage_state import StageError, canonical_json

# --- ck_jit_compile.sh (Primus setup.sh patch_te_ck_jit; the later v26.7 setup.sh accepts upstream's own fix) ----------------------------------------------

CK_JIT_RELPATH = 'transformer_engine/lib/ck_jit/ck_jit_compile.sh'
CK_JIT_NAME = 'ck_jit_compile.sh'
# The command of the line, without its indentation: as shipped, as the seed's sed leaves it.
CK_JIT_UNPATCHED = 'mv -n "$_TMP_SO" "$OUTPUT"'
CK_JIT_PATCHED = 'mv -n "$_TMP_SO" "$OUTPUT" 2>/dev/null || true'
# The seed's whole lines (4 spaces of indentation inside `if [ ! -f "$OUTPUT" ]; then`).
CK_JIT_BEFORE_LINE = '    ' + CK_JIT_UNPATCHED
CK_JIT_AFTER_LINE = '    ' + CK_JIT_PATCHED
# Upstream's own fix (later releases): the lost race is tolerated when the winner's file is there,
# `mv -n "$_TMP_SO" "$OUTPUT" || [ -f "$OUTPUT" ]`, with or without 2>/dev/null, [ ], [[ ]] or test,
# -f or -e, an optional ; and an optional trailing comment.
_UPSTREAM_FIXED = re.compile(
    r'^mv -n "\$_TMP_SO" "\$OUTPUT"(?:\s+2>\s*/dev/null)?\s*\|\|\s*'
    r'(?:\[\s+-[ef]\s+"\$OUTPUT"\s+\]|\[\[\s+-[ef]\s+"\$OUTPUT"\s+\]\]|test\s+-[ef]\s+"\$OUTPUT")'
    r'\s*;?\s*(?:#.*)?$')
# Any line that moves the temporary .so: shown when no line is in a known form.
_MV_OF_TMP = re.compile(r'(?:^|[\s;&|(!])mv\s.*\$\{?_TMP_SO\b')
_INDENT = re.compile(r'^([ \t]*)(.*?)(\r?\n)?$', re.S)

CK_JIT_NOT_PRESENT = 'ck_jit_compile.sh not present, nothing to patch'


class PatchError(ValueError):
    """A patch that cannot be applied; the message names the file, what was expected and the fix."""


def _split_line(line):
    """(indentation, command, line ending) of one line of splitlines(True)."""
    indent, body, ending = _INDENT.match(line).groups()
    return indent, body, ending or ''


def ck_jit_classify(text):
    """Decide the ck_jit_compile.sh text: {'state', 'unpatched', 'patched', 'upstream_fixed', 'unknown'}.

    The line lists hold 1-based line numbers (``unknown``: (number, line) pairs). ``state`` is
    ``patched`` when a line needs the patch (the caller applies it), ``already_patched`` when the
    seed's patched line is there, ``upstream_fixed`` when only upstream's own fix is, and
    ``unrecognized`` when no line is in a known form (``unknown`` then lists the lines that move ``$_TMP_SO``
    in another form, the evidence for the message). Other moves of ``$_TMP_SO`` beside a known line are left
    as they are, as the seed's sed leaves them.
    """
    found = dict(unpatched=[], patched=[], upstream_fixed=[], unknown=[])
    for number, line in enumerate(text.splitlines(True), 1):
        _indent, body, _ending = _split_line(line)
        if body == CK_JIT_UNPATCHED:
            found['unpatched'].append(number)
        elif body == CK_JIT_PATCHED:
            found['patched'].append(number)
        elif _UPSTREAM_FIXED.match(body):
            found['upstream_fixed'].append(number)
        elif _MV_OF_TMP.search(body) and not body.lstrip().startswith('#'):
            found['unknown'].append((number, body))
    if found['unpatched']:
        state = 'patched'
    elif found['patched']:
        state = 'already_patched'
    elif found['upstream_fixed']:
        state = 'upstream_fixed'
    else:
        state = 'unrecognized'
    found['state'] = state
    return found


def ck_jit_unrecognized_message(path, found):
    """What, why and the fix, for a ck_jit_compile.sh this patch does not know."""
    if found['unknown']:
        seen = 'it has ' + '; '.join("line %d: '%s'" % (number, body) for number, body in found['unknown'])
    else:
        seen = 'it has no line that moves "$_TMP_SO"'
    return ("%s is not in a form the ck_jit patch knows: %s. Expected the line '%s' (as shipped), '%s' "
            "(patched) or upstream's fix '%s || [ -f \"$OUTPUT\" ]'. The TransformerEngine build changed the "
            "script: check that concurrent CK JIT compiles still tolerate losing the race to publish the .so, "
            "then teach the ck_jit patch (plugins/module_utils/text_patch.py) the new form"
            % (path, seen, CK_JIT_BEFORE_LINE, CK_JIT_AFTER_LINE, CK_JIT_UNPATCHED))


def ck_jit_apply(text):
    """(new text, number of lines patched): every unpatched line gets `2>/dev/null || true`, indentation kept."""
    out, count = [], 0
    for line in text.splitlines(True):
        indent, body, ending = _split_line(line)
        if body == CK_JIT_UNPATCHED:
            line = indent + CK_JIT_PATCHED + ending
            count += 1
        out.append(line)
    return ''.join(out), count


# --- literal replacements in a source tree -------------------------------------------------------

def _pieces(text, before, after):
    """text cut at every `after` when `after` contains `before` (so the patched text is not patched
    again), else [text]; the separator is `after` or None."""
    if before in after:
        return text.split(after), after
    return [text], None


def count_pending(text, before, after):
    """Occurrences of `before` still to replace (those inside an occurrence of `after` do not count)."""
    pieces, _sep = _pieces(text, before, after)
    return sum(piece.count(before) for piece in pieces)


def replace_literal(text, before, after):
    """(new text, count) with every pending `before` replaced by `after`."""
    pieces, sep = _pieces(text, before, after)
    count = sum(piece.count(before) for piece in pieces)
    replaced = [piece.replace(before, after) for piece in pieces]
    return (sep.join(replaced) if sep is not None else replaced[0]), count


def literal_state(text, before, after):
    """'pending' (before is there), 'already_patched' (only after is) or 'mismatch' (neither)."""
    if count_pending(text, before, after):
        return 'pending'
    if after in text:
        return 'already_patched'
    return 'mismatch'


def mismatch_message(file, before, after):
    return ("the patch no longer matches: %s has neither '%s' nor '%s'. The source at the pinned commit differs "
            "from what the patch was written for: compare the file with the patch and update the patch in the "
            "release's pins (roles/primus/vars/releases/<release>.yml)" % (file, before, after))


def check_patches(patches):
    """The patches as plain [{'file', 'before', 'after'}] (checked); PatchError names the bad one."""
    checked = []
    for index, patch in enumerate(patches or []):
        where = 'patches[%d]' % index
        if not isinstance(patch, Mapping):
            raise PatchError('%s is not a mapping of file, before and after' % where)
        extra = sorted(set(patch) - {'file', 'before', 'after'})
        if extra:
            raise PatchError('%s has unknown keys %s; a patch has file, before and after' % (where, ', '.join(extra)))
        values = {}
        for key in ('file', 'before', 'after'):
            value = patch.get(key)
            if not isinstance(value, str) or not value:
                raise PatchError('%s.%s must be a non-empty string, got %r' % (where, key, value))
            values[key] = value
        if values['before'] == values['after']:
            raise PatchError("%s (%s): before and after are the same text '%s'; such a patch changes nothing"
                             % (where, values['file'], values['before']))
        check_relative(values['file'], where)
        for other_index, other in enumerate(checked):
            if other['file'] == values['file'] and _interferes(other, values):
                raise PatchError("patches[%d] and %s both patch %s and the later one undoes or rewrites what the "
                                 "earlier one wrote ('%s' -> '%s', then '%s' -> '%s'): neither could be verified nor "
                                 "stay idempotent; merge them into one patch"
                                 % (other_index, where, values['file'], other['before'], other['after'],
                                    values['before'], values['after']))
        checked.append(values)
    return checked


def _interferes(first, later):
    """Does the later patch consume the text the first one wrote, or write back the text it replaced?"""
    return (later['before'] in first['after'] or first['after'] in later['before']
            or first['before'] in later['after'])


def patch_hash(patches):
    """sha256 (hex) of the canonical JSON of the checked patches list: a build key can include it."""
    try:
        text = canonical_json(check_patches(patches))
    except StageError as exc:
        raise PatchError(str(exc))
    return hashlib.sha256(text.encode('utf-8')).hexdigest()


def check_relative(file, where='file'):
    """A patch's file names a path under the root: relative, no `..`, no empty or NUL parts."""
    if '\x00' in file:
        raise PatchError('%s %r contains a NUL byte' % (where, file))
    if os.path.isabs(file):
        raise PatchError("%s '%s' is absolute; give it relative to the source tree's root" % (where, file))
    parts = file.split('/')
    if '..' in parts:
        raise PatchError("%s '%s' leaves the source tree (it has '..'); give a path inside the root" % (where, file))
    if any(part in ('', '.') for part in parts):
        raise PatchError("%s '%s' is not a plain relative path (empty or '.' part)" % (where, file))


def resolve_inside(root, file):
    """The real path of root/file; PatchError when a symlink takes it outside root or it is no regular file."""
    check_relative(file)
    real_root = os.path.realpath(root)
    real = os.path.realpath(os.path.join(real_root, file))
    if os.path.commonpath([real_root, real]) != real_root:
        raise PatchError("%s leads outside %s (a symlink points to %s); refusing to patch a file outside the "
                         "source tree" % (file, root, real))
    if not os.path.exists(real):
        raise PatchError('%s: no such file under %s; the source tree at the pinned commit has no such file: '
                         'update the patch in the release pins' % (file, root))
    if not os.path.isfile(real):
        raise PatchError('%s under %s is not a regular file' % (file, root))
    return real


# --- reading and writing -------------------------------------------------------------------------

def read_text(path):
    """(text, mode) of a file; bytes that are not UTF-8 survive a round trip (surrogateescape)."""
    with open(path, 'rb') as handle:
        data = handle.read()
    return data.decode('utf-8', 'surrogateescape'), stat.S_IMODE(os.stat(path).st_mode)


def write_text_atomic(path, text, mode):
    """Write text to path through a temporary file beside it, with the given mode, then rename."""
    write_atomic(path, text.encode('utf-8', 'surrogateescape'), mode)


def diff_text(text):
    """Text for a diff: not-UTF-8 bytes shown as replacement characters."""
    return text.encode('utf-8', 'surrogateescape').decode('utf-8', 'replace')
