# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A failed git command, read from what git printed: its class, git's own error lines and the fix of that class
(pure functions; git_checkout uses them).

Classes (``classify``), checked in this order, the first that matches wins:
  ownership         git refused a checkout another user owns (safe.directory)
  authentication    the server wants credentials or refused them (a private repository, or one that does not exist on
                    a server that hides which: GitHub answers both alike)
  not_a_repository  the URL names no repository (a local directory that is none, a 404 of the server)
  unknown_commit    the repository is there but has no such commit (never pushed there, or gone with a force-push)
  network           the server could not be reached or broke off (the only class worth trying again)
  other             anything else
The messages are git's with LC_ALL=C (git_checkout runs it so). Python 3.8+, standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.primus.trainenv.plugins.module_utils.common import redact_url

KINDS = ('ownership', 'authentication', 'not_a_repository', 'unknown_commit', 'network', 'other')
# Only a failure of the network is retried: the others fail the same way every time.
TRANSIENT = ('network',)

_RULES = (
    ('ownership', r'detected dubious ownership'),
    ('authentication', r'Authentication failed|could not read (Username|Password)|terminal prompts disabled'
                       r'|Permission denied \(publickey|Host key verification failed|returned error: 40[13]\b'
                       r'|HTTP Basic: Access denied|Invalid username or password'),
    ('not_a_repository', r'does not appear to be a git repository|repository \'[^\']*\' (not found|does not exist)'
                         r'|Repository not found|not a git repository|returned error: 404\b'),
    ('unknown_commit', r'not our ref|unadvertised object|Unable to find [0-9a-f]{40}|Cannot obtain needed object'
                       r'|reference is not a tree|did not match any file\(s\) known to git|couldn\'t find remote ref'
                       r'|unknown revision|bad object [0-9a-f]{40}'),
    ('network', r'unable to access|Could not resolve host|Could not resolve hostname|Failed to connect'
                r'|Connection refused|Connection timed out|Operation timed out|Connection reset|early EOF'
                r'|remote end hung up|RPC failed|returned error: 5\d\d\b|SSL|gnutls|[Pp]roxy|Network is unreachable'
                r'|No route to host|transfer closed|Could not read from remote repository'),
)

# What git prints besides its errors: progress, and advice that does not fit (safe.directory) or says nothing.
_NOISE = re.compile(r'^(Cloning into |remote: (Enumerating|Counting|Compressing|Total) |Receiving objects|Resolving deltas'
                    r'|Updating files|Please make sure you have the correct access rights|and the repository exists'
                    r'|To add an exception for this directory|git config --global --add safe\.directory'
                    r'|hint: |From |\s*\* )')
CAUSE_LINES = 4
CAUSE_CHARS = 600


def classify(text):
    """The class of a failure from git's output (stderr; stdout too when it helps)."""
    for kind, pattern in _RULES:
        if re.search(pattern, text or ''):
            return kind
    return 'other'


def cause(text):
    """git's own error lines, in order, without progress and advice: the first CAUSE_LINES, on one line, credentials in
    URLs redacted."""
    seen, lines = set(), []
    for line in redact_url(text or '').replace('\r', '\n').splitlines():
        line = line.strip()
        if not line or _NOISE.match(line) or line in seen:
            continue
        seen.add(line)
        lines.append(line.rstrip('.'))
    text = '; '.join(lines[:CAUSE_LINES])
    return text if len(text) <= CAUSE_CHARS else text[:CAUSE_CHARS - 3] + '...'


def fix(kind, repo, commit='', dest=''):
    """What to do about a failure of this class, for the repository repo (redacted) at commit (dest: the checkout)."""
    if kind == 'ownership':
        return ('%s belongs to another user, so git refuses to work in it (and so does this collection). Remove it as '
                'its owner (or ask an admin), then run again: it is cloned afresh' % (dest or 'the checkout'))
    if kind == 'authentication':
        return ('%s asks for credentials or refused the ones given, and a run never prompts for them. Give this user '
                'access that works without a prompt (an SSH key, or a git credential helper: `git ls-remote %s` in '
                'its shell must work), or use a mirror it can read (primus_mirrors). A repository that does not exist '
                'can look the same (GitHub answers both alike): check the URL too' % (repo, repo))
    if kind == 'not_a_repository':
        return ('check the repository URL: %s is not a git repository (a typo, a repository that moved, a mirror '
                'without it); give the right URL in the pins file (sources.<component>.repo) or the site mirror'
                % repo)
    if kind == 'unknown_commit':
        return ('%s has no commit %s: it was never pushed there, or a force-push removed it. Check the pin (the pins '
                'file\'s sources.<component>.ref) and that the repository is the one holding that commit (a fork?)'
                % (repo, commit or 'of that name'))
    if kind == 'network':
        return ('check the network (or the proxy) to the repository %s (`git ls-remote %s` as this user shows '
                'whether it answers)' % (repo, repo))
    return 'read git\'s output in the log; running the same git command by hand shows it too'
