# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Site mirrors (primus_mirrors): pure functions.

The setting maps each index of the release pins (``indexes``: pypi, torch, te) and each git remote
prefix (``git``) to a site mirror::

    primus_mirrors:
      indexes: {pypi: https://artifactory.example/api/pypi/pypi/simple}
      git: {"https://github.com/": "https://git-mirror.example/github/"}

``apply`` returns the pins with each mirrored index replaced and every ``git+<prefix>`` requirement
URL of the pins rewritten, plus the git configuration that rewrites the prefixes for every git
command of the run (``url.<mirror>.insteadOf <prefix>`` as GIT_CONFIG_COUNT/KEY/VALUE variables,
git 2.31+): clones, submodules (whose URLs live in the repositories' ``.gitmodules``), ls-remote and
pip's own git calls. No URL is part of a build key, so a mirror changes no key.

Every URL is checked: http or https (file for a local copy), a host, no whitespace or control
character, no leading ``-``, no query or fragment, and no credentials: a mirror that needs them gets
them from the environment or ``~/.netrc`` (pip and git both read it), never from a URL that would be
written to logs and command lines. A git prefix and its mirror end with ``/`` (a prefix without it
would also rewrite ``https://github.com.evil/``).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

try:
    from urllib.parse import urlsplit
except ImportError:  # pragma: no cover - Python 2 is not supported on the controller
    from urlparse import urlsplit  # type: ignore

from ansible_collections.primus.trainenv.plugins.module_utils.common import redact_url

SETTING = 'primus_mirrors'
SCHEMES = ('http', 'https', 'file')
_BAD_CHARS = re.compile(r'[\s\x00-\x1f\x7f"\'<>\\`]')


class MirrorError(ValueError):
    """A primus_mirrors value that cannot be used; the message names the entry and the fix."""


def url_problem(value, where, git=False):
    """Why `value` is not a usable mirror or prefix URL ('' when it is)."""
    if not isinstance(value, str) or not value:
        return '%s must be a URL string, got %r' % (where, value)
    shown = redact_url(value)
    if _BAD_CHARS.search(value):
        return '%s %r has whitespace, a quote or a control character' % (where, shown)
    if value.startswith('-'):
        return '%s %r starts with "-"' % (where, shown)
    parts = urlsplit(value)
    if parts.scheme not in SCHEMES:
        return '%s %r is not an http(s) or file URL' % (where, shown)
    if '@' in parts.netloc:
        return ('%s %r carries credentials: give them through the environment or ~/.netrc (pip and git read it) '
                'and remove user:password@ from the URL' % (where, shown))
    if parts.scheme != 'file' and not parts.hostname:
        return '%s %r has no host' % (where, shown)
    if parts.query or parts.fragment or '?' in value or '#' in value:
        return '%s %r has a query or fragment' % (where, shown)
    if git and not value.endswith('/'):
        return '%s %r must end with "/" (a git prefix is matched as text)' % (where, shown)
    return ''


def problems(mirrors, pins):
    """Every problem of a primus_mirrors value against the pins (empty list: usable)."""
    if mirrors in (None, ''):
        return []
    if not isinstance(mirrors, dict):
        return ['%s must be a mapping with indexes and git, got %s' % (SETTING, type(mirrors).__name__)]
    out = []
    unknown = sorted(set(mirrors) - {'indexes', 'git'})
    if unknown:
        out.append('%s has unknown keys %s (allowed: indexes, git)' % (SETTING, ', '.join(map(str, unknown))))
    indexes = mirrors.get('indexes') or {}
    gits = mirrors.get('git') or {}
    if not isinstance(indexes, dict):
        out.append('%s.indexes must be a mapping of index name to URL' % SETTING)
        indexes = {}
    if not isinstance(gits, dict):
        out.append('%s.git must be a mapping of remote prefix to mirror prefix' % SETTING)
        gits = {}
    known = sorted((pins or {}).get('indexes') or {})
    for name, url in sorted(indexes.items(), key=lambda kv: str(kv[0])):
        if name not in known:
            out.append('%s.indexes.%s: the release pins have no index %s (they have: %s)'
                       % (SETTING, name, name, ', '.join(known)))
            continue
        problem = url_problem(url, '%s.indexes.%s' % (SETTING, name))
        if problem:
            out.append(problem)
    for prefix, url in sorted(gits.items(), key=lambda kv: str(kv[0])):
        for value, where in ((prefix, '%s.git key' % SETTING), (url, '%s.git[%s]' % (SETTING, redact_url(str(prefix))))):
            problem = url_problem(value, where, git=True)
            if problem:
                out.append(problem)
    return out


def _rewrite_git(text, gits):
    """`text` with each git+<prefix> rewritten to git+<mirror> (longest prefix first)."""
    for prefix in sorted(gits, key=len, reverse=True):
        if 'git+' + prefix in text:
            return text.replace('git+' + prefix, 'git+' + gits[prefix])
    return text


def _walk(value, gits):
    if isinstance(value, str):
        return _rewrite_git(value, gits)
    if isinstance(value, list):
        return [_walk(v, gits) for v in value]
    if isinstance(value, dict):
        return dict((k, _walk(v, gits)) for k, v in value.items())
    return value


def git_environment(gits):
    """GIT_CONFIG_COUNT/KEY_n/VALUE_n: url.<mirror>.insteadOf <prefix> for each git prefix."""
    if not gits:
        return {}
    env = {'GIT_CONFIG_COUNT': str(len(gits))}
    for n, prefix in enumerate(sorted(gits)):
        env['GIT_CONFIG_KEY_%d' % n] = 'url.%s.insteadOf' % gits[prefix]
        env['GIT_CONFIG_VALUE_%d' % n] = prefix
    if any(not re.match(r'^[a-z]+://', m) for m in gits.values()):
        # a wheelhouse's bundles are local paths: git refuses local submodule clones unless told to allow them
        env['GIT_CONFIG_KEY_%d' % len(gits)] = 'protocol.file.allow'
        env['GIT_CONFIG_VALUE_%d' % len(gits)] = 'always'
        env['GIT_CONFIG_COUNT'] = str(len(gits) + 1)
    return env


def wheelhouse_mirrors(pins, path):
    """The mirrors of an offline wheelhouse at `path` (tools/wheelhouse.py): each index of the pins to its
    ``file://<path>/<index>/simple``, and each git host of the pins' sources to its bundles
    ``<path>/git/<host>/`` (a plain path: git clones a bundle file from it)."""
    root = path.rstrip('/')
    indexes = dict((name, 'file://%s/%s/simple' % (root, name)) for name in sorted((pins or {}).get('indexes') or {}))
    gits = {}
    for source in ((pins or {}).get('sources') or {}).values():
        parts = urlsplit(str(source.get('repo', '')))
        if parts.scheme in ('http', 'https') and parts.netloc:
            gits['%s://%s/' % (parts.scheme, parts.netloc)] = '%s/git/%s/' % (root, parts.netloc)
    return {'indexes': indexes, 'git': gits}


def apply(pins, mirrors, use_pip_config=False, wheelhouse=''):
    """{'pins', 'git_environment', 'pypi_index_url', 'mirrored'} for the run; raises MirrorError.

    wheelhouse: the directory of an offline wheelhouse (already path-checked); it replaces every index and git
    host, so that nothing is fetched from the network, and cannot be combined with mirrors.

    pypi_index_url: what the PyPI calls pass as --index-url: the pins' (or its mirror's) PyPI index,
    except with use_pip_config and no PyPI mirror, where it is empty so that pip's own configured index
    (pip.conf, PIP_INDEX_URL) applies - a site mirror there is not overridden by pypi.org.

    trusted_hosts: the host[:port] of each plain-http index mirror, for pip's --trusted-host (PIP_TRUSTED_HOST). pip
    ignores an http index whose host is not this machine's ("not a trusted or secure host"); the setting names the
    mirror, so the run trusts it, as pip's own message suggests.
    """
    found = problems(mirrors, pins)
    if found:
        raise MirrorError('; '.join(found) + '. Fix %s (docs/mirrors.md).' % SETTING)
    if wheelhouse and mirrors:
        raise MirrorError('%s and primus_wheelhouse are both set: a wheelhouse is used offline, without mirrors; '
                          'drop one of them' % SETTING)
    mirrors = wheelhouse_mirrors(pins, wheelhouse) if wheelhouse else (mirrors or {})
    indexes = dict(mirrors.get('indexes') or {})
    gits = dict(mirrors.get('git') or {})
    # _walk builds new dicts and lists: a copy. Not a deep copy: the pins arrive as ansible-core's lazy containers,
    # whose deep copy copies their templar, and with it plugin loaders that warn of a deprecation (ansible-core 2.21).
    out = _walk(pins, gits)
    out['indexes'] = dict(out.get('indexes') or {})
    out['indexes'].update(indexes)
    pypi = out['indexes'].get('pypi', '')
    if use_pip_config and 'pypi' not in indexes:
        pypi = ''
    trusted = sorted(set(urlsplit(url).netloc for url in indexes.values() if urlsplit(url).scheme == 'http'))
    return {'pins': out, 'git_environment': git_environment(gits), 'pypi_index_url': pypi,
            'mirrored': sorted(indexes) + sorted(gits), 'trusted_hosts': trusted}
