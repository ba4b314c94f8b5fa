# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Small helpers that several modules and module_utils of this collection share.

Standard library only: modules import this on the target, with whatever python 3 runs them, and
tests/bootstrap_pip.py imports it (through wheel_fetch) before any venv exists.

Distribution names: normalize_name is PEP 503's form (what packaging.utils.canonicalize_name
returns), wheel_name the form of wheel file names and .dist-info/.data directories.

Credentials in URLs (`https://user:token@host/...`), redacted the way pip redacts them: pip's
redact_netloc keeps the user and replaces the password with `****`; a URL with a user and no
password (`https://TOKEN@host`) has the user replaced, since that is where a token goes. The same
is done to every text pip_constrained returns or logs (commands, output, messages, plans) and to
the manifest, and the secrets found are also handed to Ansible's no_log_values, so a copy that
escapes the URL form (the task's own arguments in `invocation`) is masked too.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import hashlib
import re

_NAME_SEPARATORS = re.compile(r'[-_.]+')


def normalize_name(name):
    """PEP 503 form of a distribution name: runs of -, _ and . become one -, lower case."""
    return _NAME_SEPARATORS.sub('-', name).lower()


def wheel_name(name):
    """A distribution name as wheel file names and .dist-info/.data directories spell it: runs of -, _ and . become _."""
    return _NAME_SEPARATORS.sub('_', name)


def file_sha256(path):
    """The sha256 (hex) of a file's content, read 1 MiB at a time."""
    digest = hashlib.sha256()
    with open(path, 'rb') as handle:
        for block in iter(lambda: handle.read(1 << 20), b''):
            digest.update(block)
    return digest.hexdigest()


REDACTED = '****'
# scheme://userinfo@ ; userinfo has no '/' or whitespace and ends at the last '@' before them, as pip
# splits a netloc (a user name may carry a raw '@': https://me@corp.com:TOKEN@host/simple).
_USERINFO = re.compile(r'(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/\s\'"<>]+)@')
# A user name alone is treated as a secret outside URLs only when it is long enough to be a token
# (not `git` of git+ssh://git@github.com, which is everywhere in version strings such as +git...).
MIN_BARE_USER_SECRET = 8


def _split(userinfo):
    user, sep, password = userinfo.partition(':')
    return user, (password if sep else None)


def secrets_in(text):
    """Secrets of every URL with credentials in `text`: passwords, and users that carry a token."""
    out = set()
    for match in _USERINFO.finditer(text or ''):
        user, password = _split(match.group('userinfo'))
        if password:
            out.add(password)
        elif len(user) >= MIN_BARE_USER_SECRET:
            out.add(user)
    return out


def redact_url(text):
    """pip's redaction of every URL in `text`: user:****@ or ****@."""
    def repl(match):
        user, password = _split(match.group('userinfo'))
        if password is not None:
            if password == REDACTED:
                return match.group(0)
            return '%s%s:%s@' % (match.group('scheme'), user, REDACTED)
        if user == REDACTED:
            return match.group(0)
        return '%s%s@' % (match.group('scheme'), REDACTED)
    return _USERINFO.sub(repl, text)


class Redactor(object):
    """Redacts URLs and the secrets they carried from strings, lists and dicts."""

    def __init__(self, secrets=()):
        self.secrets = set(s for s in secrets if s)

    def add_from(self, values):
        for value in values:
            if isinstance(value, str):
                self.secrets.update(secrets_in(value))
            elif isinstance(value, dict):
                self.add_from(list(value.values()))
            elif isinstance(value, (list, tuple)):
                self.add_from(value)

    def text(self, value):
        if not value:
            return value
        value = redact_url(value)
        for secret in sorted(self.secrets, key=len, reverse=True):
            value = value.replace(secret, REDACTED)
        return value

    def __call__(self, value):
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self(v) for v in value]
        if isinstance(value, tuple):
            return tuple(self(v) for v in value)
        if isinstance(value, dict):
            return dict((k, self(v)) for k, v in value.items())
        return value
