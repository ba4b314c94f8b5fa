# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The release and its pins file, checked on the controller before Ansible reads the file.

A release name becomes a file name (``releases/<release>.yml``) and a path (``modulefiles/primus/<release>``), so
it is held to RELEASE_NAME; so is every name under ``sources:``, which becomes a stage, a checkout directory and a
state file. The pins file must be a regular file of YAML with one ``primus_pins`` mapping that the release file's
schema accepts (plugin_utils/release_schema.py: every key, its type and allowed values; unknown keys refused). A
message names the file, the key and the fix; it quotes nothing of a file that is not a pins file (it could be any
file the controller can read).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import errno
import os
import stat

import yaml

from ansible_collections.primus.trainenv.plugins.module_utils.safe_paths import visible
from ansible_collections.primus.trainenv.plugins.plugin_utils import release_schema

# v26.5, 26.5rc1, v26.5-hotfix.2: a letter or digit first, then letters, digits and . _ -; never '..' or '/'.
RELEASE_NAME = release_schema.RELEASE_NAME
MAX_BYTES = 1024 * 1024
TYPE_WORDS = {str: 'a string', list: 'a list', dict: 'a mapping', int: 'a number', float: 'a number',
              bool: 'true or false', type(None): 'empty'}


RELEASES_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), 'roles',
                            'primus', 'vars', 'releases')


def shipped_releases(releases_dir=RELEASES_DIR):
    """The releases this collection ships (a pins file each), sorted."""
    if not os.path.isdir(releases_dir):
        return []
    return sorted(n[:-4] for n in os.listdir(releases_dir) if n.endswith('.yml') and RELEASE_NAME.match(n[:-4]))


def release_problem(release, label):
    """Why a release name cannot be used ('' if it can)."""
    if not isinstance(release, str) or not RELEASE_NAME.match(release) or '..' in release:
        shown = visible(release) if isinstance(release, str) else TYPE_WORDS.get(type(release), 'a value')
        return ("%s %s is not a release name: it must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter "
                "or digit (such as v26.5), because it becomes a file name under releases/ and modulefiles/. Fix: set it "
                "to a release this collection ships (%s)" % (label, shown, ', '.join(shipped_releases())))
    return ''


def file_problem(path, label):
    """Why the pins file cannot be read ('' if it can): it must be a regular file (not a FIFO, device or directory,
    whose reading would block or make no sense) of at most MAX_BYTES."""
    try:
        st = os.stat(path)
    except OSError as exc:
        return '%s %s cannot be used: %s' % (label, visible(path), 'it does not exist' if exc.errno == errno.ENOENT else
                                             (exc.strerror or 'it cannot be looked at'))
    if stat.S_ISDIR(st.st_mode):
        return '%s %s is a directory, not a pins file' % (label, visible(path))
    if not stat.S_ISREG(st.st_mode):
        return '%s %s is not a regular file (a FIFO or a device), so it is not read' % (label, visible(path))
    if st.st_size > MAX_BYTES:
        return '%s %s is %d bytes, larger than any pins file (at most %d)' % (label, visible(path), st.st_size, MAX_BYTES)
    if not os.access(path, os.R_OK):
        return '%s %s cannot be read by this user (permission denied)' % (label, visible(path))
    return ''


def load(path):
    """(data, problem) of the YAML file; problem names the line and column of a syntax error, never the text."""
    try:
        with open(path, 'rb') as handle:
            raw = handle.read(MAX_BYTES + 1)
        text = raw.decode('utf-8')
    except UnicodeDecodeError as exc:
        return None, 'is not UTF-8 text (byte %d)' % exc.start
    except (IOError, OSError) as exc:
        return None, 'cannot be read (%s)' % (exc.strerror or exc)
    try:
        return yaml.safe_load(text), ''
    except yaml.YAMLError as exc:
        mark = getattr(exc, 'problem_mark', None)
        where = ' at line %d, column %d' % (mark.line + 1, mark.column + 1) if mark is not None else ''
        return None, 'is not valid YAML%s (%s)' % (where, getattr(exc, 'problem', None) or 'a syntax error')


def shape_problem(data, stages=None):
    """Why the loaded YAML is not a pins file ('' if it is): a top-level primus_pins mapping valid against the release
    file's schema (plugin_utils/release_schema.py); the message names each wrong key path, what it holds and what is
    expected."""
    if not isinstance(data, dict) or 'primus_pins' not in data:
        # What it holds is described by its type only: its keys could be any file's content (/etc/shadow's lines).
        return 'has no top-level primus_pins mapping (it holds %s)' % (
            'a mapping of other keys' if isinstance(data, dict) else TYPE_WORDS.get(type(data), 'a value'))
    if len(data) > 1:
        return 'has top-level keys other than primus_pins (a pins file holds only primus_pins)'
    found = release_schema.problems(data['primus_pins'], stages)
    return ('does not match the release file format: ' + release_schema.message(found)) if found else ''


def problem(release_file, release, releases_dir, stages=None):
    """The message that stops the run before the pins are read, or ''."""
    if release_file:
        if not isinstance(release_file, str):
            return 'primus_release_file must be a path, got %s. Fix: give the path of a pins file.' % TYPE_WORDS.get(
                type(release_file), 'a value')
        if not os.path.isabs(release_file):
            return ('primus_release_file must be an absolute path, got %s. Fix: give the full path of the pins file.'
                    % visible(release_file))
        path, label, fix = release_file, 'primus_release_file', (
            'correct the file (docs/releases.md, "The release file", lists every key), or leave primus_release_file '
            'empty to use primus_release')
    else:
        found = release_problem(release, 'primus_release')
        if found:
            return found + '.'
        path, label = os.path.join(releases_dir, release + '.yml'), 'primus_release %s: the pins file' % release
        fix = 'set primus_release to a release this collection ships (%s)' % ', '.join(shipped_releases(releases_dir))
    found = file_problem(path, label)
    if found:
        return '%s. Fix: %s.' % (found, fix)
    data, found = load(path)
    if not found:
        found = shape_problem(data, stages)
    if found:
        return '%s %s %s. Fix: %s.' % (label, visible(path), found, fix)
    return ''
