# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Fixes to files a wheel installs, declared by a release (``primus_pins.installed_fixes``), applied in the venv.

Two kinds, each decided on the file as it is before anything is written:

- a link (``link_to``): the file becomes a symlink to another installed file (relative, so the venv's own path is not
  written into it). Upstream's case: rocm-sdk-core and rocm-sdk-devel both ship ``lib/libamd_comgr.so.3``; two
  separate copies loaded into one process register LLVM's static constructors twice and the process aborts, one file
  reached through two names is loaded once.
- a line (``before``, ``after``): a literal replacement, as the source patches (text_patch).

A later pip run that reinstalls the package puts the original back; the fix is decided again then. States:
``applied``; ``pending`` (the original is there: applying changes it); ``not_installed`` (the file's directory or
the file is not there: the package is not installed yet); ``broken`` (what is there is neither the original nor
the fix, or the link's target is missing: the package changed, the fix must be reviewed). Standard library only,
Python 3.8+.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import stat

from ansible_collections.primus.trainenv.plugins.module_utils import text_patch
from ansible_collections.primus.trainenv.plugins.module_utils.modes import hold_point

APPLIED, PENDING, NOT_INSTALLED, BROKEN = 'applied', 'pending', 'not_installed', 'broken'


class FixError(ValueError):
    """A fix that cannot be decided or applied; the message names the fix, the file and what to do."""


def kind(fix):
    return 'link' if fix.get('link_to') else 'line'


def _inside(site, relpath, what):
    """site/relpath, refused when it is not a plain relative path or its directory leads outside site."""
    try:
        text_patch.check_relative(relpath, what)
    except text_patch.PatchError as exc:
        raise FixError(str(exc))
    path = os.path.join(site, relpath)
    real_site = os.path.realpath(site)
    real_dir = os.path.realpath(os.path.dirname(path))
    if os.path.commonpath([real_site, real_dir]) != real_site:
        raise FixError('%s %s leads outside %s (its directory resolves to %s): refusing to change a file outside the '
                       "venv's site-packages" % (what, relpath, site, real_dir))
    return path


def decide(site, fix):
    """(state, why, before, after) of one fix: why says what is there, before/after the diff texts ('' for none)."""
    path = _inside(site, fix['path'], 'path')
    if kind(fix) == 'link':
        target = _inside(site, fix['link_to'], 'link_to')
        link_text = os.path.relpath(target, os.path.dirname(path))
        wanted = 'a link to %s' % link_text
        if not os.path.isdir(os.path.dirname(path)):
            return NOT_INSTALLED, '%s is not installed (no directory %s)' % (fix['path'], os.path.dirname(
                fix['path']) or '.'), '', ''
        if not os.path.isfile(target):
            return BROKEN, ('%s (what %s is to link to) is not installed, or not a file' % (
                fix['link_to'], fix['path'])), '', ''
        try:
            st = os.lstat(path)
        except OSError:
            return PENDING, '%s is missing' % fix['path'], '(no file)\n', wanted + '\n'
        if stat.S_ISLNK(st.st_mode):
            current = os.readlink(path)
            if os.path.exists(path) and os.path.samefile(path, target):
                return APPLIED, '%s is %s' % (fix['path'], 'a link to ' + current), '', ''
            return PENDING, '%s is a link to %s, not to %s' % (fix['path'], current, fix['link_to']), (
                'a link to %s\n' % current), wanted + '\n'
        if stat.S_ISREG(st.st_mode):
            if os.path.samefile(path, target):
                return APPLIED, '%s is %s itself (a hard link)' % (fix['path'], fix['link_to']), '', ''
            return PENDING, '%s is a second regular file (%d bytes), not a link to %s' % (
                fix['path'], st.st_size, fix['link_to']), 'a regular file of %d bytes\n' % st.st_size, wanted + '\n'
        return BROKEN, '%s is neither a file nor a link' % fix['path'], '', ''
    if not os.path.lexists(path):
        return NOT_INSTALLED, '%s is not installed' % fix['path'], '', ''
    real = os.path.realpath(path)
    if os.path.commonpath([os.path.realpath(site), real]) != os.path.realpath(site) or not os.path.isfile(real):
        return BROKEN, '%s is not a regular file inside site-packages' % fix['path'], '', ''
    text, _mode = text_patch.read_text(real)
    state = text_patch.literal_state(text, fix['before'], fix['after'])
    if state == 'pending':
        after, _count = text_patch.replace_literal(text, fix['before'], fix['after'])
        return PENDING, '%s has the line %s' % (fix['path'], fix['before']), text_patch.diff_text(
            text), text_patch.diff_text(after)
    if state == 'already_patched':
        return APPLIED, '%s has the line %s' % (fix['path'], fix['after']), '', ''
    return BROKEN, '%s has neither %s nor %s' % (fix['path'], fix['before'], fix['after']), '', ''


def apply(site, fix):
    """Apply one pending fix (decided again first); returns the state after it, which is APPLIED or raises."""
    state, why, _before, _after = decide(site, fix)
    if state != PENDING:
        return state
    path = os.path.join(site, fix['path'])
    if kind(fix) == 'link':
        target = os.path.join(site, fix['link_to'])
        tmp = os.path.join(os.path.dirname(path), '.%s.primus-link' % os.path.basename(path))
        if os.path.lexists(tmp):
            os.unlink(tmp)
        os.symlink(os.path.relpath(target, os.path.dirname(path)), tmp)
        hold_point('write:' + os.path.basename(path))   # the link made, not yet in place
        os.rename(tmp, path)
    else:
        real = os.path.realpath(path)
        text, mode = text_patch.read_text(real)
        after, _count = text_patch.replace_literal(text, fix['before'], fix['after'])
        text_patch.write_text_atomic(real, after, mode)
    again = decide(site, fix)
    if again[0] != APPLIED:
        raise FixError('the fix %s of %s did not take: after writing, %s' % (fix['name'], fix['path'], again[1]))
    return APPLIED


def broken_message(fix, why):
    """The failure of a fix whose file is neither the original nor the fixed one."""
    stage = fix.get('stage', 'torch')
    return ('[%s] the fix %s cannot be applied: %s. The package that installs %s changed since the release was '
            'written; review the fix in the release file (installed_fixes) against the installed file, or re-run '
            '--tags %s to reinstall the release\'s packages' % (stage, fix['name'], why, fix['path'], stage))


def run(site, fixes, check_mode=False, installed_required=False):
    """Decide every fix, then (not in check mode, and only when none is broken) apply the pending ones. Returns
    (results, diffs, failure): results [{name, kind, path, state, why, changed}], diffs for Ansible's diff, failure ''
    or the first message. installed_required: a fix whose file is not installed is a failure (the stage that installs
    it has run)."""
    results, diffs, pending = [], [], []
    for fix in fixes:
        state, why, before, after = decide(site, fix)
        stage = fix.get('stage', 'torch')
        results.append(dict(name=fix['name'], kind=kind(fix), path=fix['path'], state=state, why=why,
                            changed=state == PENDING))
        if state == BROKEN:
            return results, [], broken_message(fix, why)
        if state == NOT_INSTALLED and installed_required and not check_mode:
            return results, [], ('[%s] the fix %s cannot be applied: %s, although stage %s installs it. Re-run '
                                 '--tags %s' % (stage, fix['name'], why, stage, stage))
        if state == PENDING:
            header = os.path.join(site, fix['path'])
            diffs.append(dict(before_header=header, after_header=header, before=before, after=after))
            pending.append((results[-1], fix))
    if not check_mode:
        for entry, fix in pending:
            entry['state'] = apply(site, fix)
    return results, diffs, ''
