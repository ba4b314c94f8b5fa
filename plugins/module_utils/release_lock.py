# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The release lock: every file a converge installs from the pins' indexes, with its sha256.

Standard library only (pip_constrained imports it on the node; tools/release_lock.py and the index
probe use it too). A lock is JSON beside the pins file (``<release>.lock.json``)::

    {"lock_version": 1, "release": "v26.5", "python_version": "3.12", "generated": "...",
     "files": [{"filename", "name", "version", "index", "url", "size", "sha256"}, ...]}

pip_constrained gets the lock as ``locked_hashes`` ({file name: [sha256, ...]}): a file is known by
its name, so the same bytes served by a site mirror under another URL still match. pip's hash-checking
mode takes hashes from requirements only (not from constraints files), so a locked install is planned
first (``pip install --dry-run --report``): every file of the plan that comes from an index must be in
the lock with the hash the index states, else nothing is installed and the message names each file;
then exactly the plan is installed with ``--require-hashes --no-deps`` from a requirements file whose
every line carries the locked ``--hash``, so pip also refuses bytes that differ from the lock although
the index states the old hash. Local files of the plan (wheels this run built) carry the hash of their
bytes; a VCS checkout or a directory cannot be hashed by pip and is installed after it, without its
dependencies (the plan holds them), its commit being the pins'.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import re

try:
    from html.parser import HTMLParser
    from urllib.parse import unquote, urlsplit
except ImportError:  # pragma: no cover - Python 2 is not supported
    HTMLParser = object
    unquote = urlsplit = None

from ansible_collections.primus.trainenv.plugins.module_utils.common import file_sha256, normalize_name, redact_url

LOCK_VERSION = 1
SHA256 = re.compile(r'^[0-9a-f]{64}$')
COMMIT = re.compile(r'^[0-9a-f]{40}$')
# A VCS requirement's repository (pip's download_info url, without the git+ prefix): no option, no whitespace.
VCS_URL = re.compile(r'^(https?|ssh|file)://[^\s]+$')
# What direct_target writes into a git+...#egg=<name>&subdirectory=<dir> requirement: a PEP 508 project name, and a
# relative path without a fragment separator, space or '..' (read from a package's metadata and pip's report).
PROJECT_NAME = re.compile(r'^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$')
SUBDIRECTORY = re.compile(r'^(?!/)(?!.*(^|/)\.\.(/|$))[^\s#&?]+$')
# The nightly's date in a version (rocm7.15.0a20260720, 10.0.0a20260801): what a missing file is listed by.
NIGHTLY = re.compile(r'a(20\d{2})(\d{2})(\d{2})')
FIELDS = ('filename', 'name', 'version', 'index', 'url', 'size', 'sha256')


class LockError(ValueError):
    """A lock that cannot be used; the message names the file and the fix."""


def load(text, where='the lock'):
    """The lock of a JSON text, checked: {'release', 'files': [...], 'vcs': [...] (optional)}."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise LockError('%s is not JSON: %s. Re-generate it with tools/release_lock.py' % (where, exc))
    if not isinstance(data, dict) or data.get('lock_version') != LOCK_VERSION or not isinstance(data.get('files'), list):
        raise LockError('%s is not a primus.trainenv release lock (lock_version %d with a files list). Re-generate it '
                        'with tools/release_lock.py' % (where, LOCK_VERSION))
    for n, entry in enumerate(data['files']):
        if not isinstance(entry, dict) or any(k not in entry for k in FIELDS) or not SHA256.match(str(entry['sha256'])):
            raise LockError('%s: files[%d] needs %s with a sha256 of 64 hex digits' % (where, n, ', '.join(FIELDS)))
    for n, entry in enumerate(data.get('vcs') or []):
        if (not isinstance(entry, dict) or entry.get('vcs') != 'git' or not VCS_URL.match(str(entry.get('url', '')))
                or not COMMIT.match(str(entry.get('commit', '')))):
            raise LockError('%s: vcs[%d] needs vcs git, an http(s), ssh or file url and a commit of 40 hex digits'
                            % (where, n))
    return data


def hashes_by_filename(lock):
    """{file name: [sha256, ...]} of a lock (a name served by two indexes may have two hashes)."""
    out = {}
    for entry in lock.get('files') or []:
        hashes = out.setdefault(entry['filename'], [])
        if entry['sha256'] not in hashes:
            hashes.append(entry['sha256'])
    return out


def nightly_date(filename):
    """'YYYY-MM-DD' of the nightly a file name carries, or ''."""
    match = NIGHTLY.search(filename or '')
    return '%s-%s-%s' % match.groups() if match else ''


# ---- a pip report against the lock --------------------------------------------------------------

def _file_path(url):
    parts = urlsplit(url)
    return unquote(parts.path) if parts.scheme == 'file' else None


def report_items(report):
    """Each install entry of a pip report (format 1) as {name, version, url, sha256, kind}.

    kind: index (a file of an index), file (a local archive), direct (a VCS checkout, a directory or a
    remote URL named directly: not lockable by file name). A VCS checkout also has vcs (git, ...), commit and
    repo (the repository's URL): the wheelhouse bundles that repository."""
    out = []
    for entry in report.get('install') or []:
        meta = entry.get('metadata') or {}
        info = entry.get('download_info') or {}
        url = info.get('url') or ''
        archive = info.get('archive_info')
        hashes = (archive or {}).get('hashes') or {}
        sha = hashes.get('sha256')
        if not sha and (archive or {}).get('hash', '').startswith('sha256='):
            sha = archive['hash'].split('=', 1)[1]
        if archive is not None and _file_path(url):
            kind = 'file'
        elif archive is not None and not entry.get('is_direct'):
            kind = 'index'
        else:
            kind = 'direct'
        item = {'name': meta.get('name', ''), 'version': str(meta.get('version', '')), 'url': url,
                'sha256': sha or '', 'kind': kind}
        vcs = info.get('vcs_info')
        if isinstance(vcs, dict) and vcs.get('vcs') and vcs.get('commit_id'):
            # PEP 610 gives the repository's URL without pip's git+ prefix; strip one if a pip writes it.
            prefix = '%s+' % vcs['vcs']
            item.update(vcs=str(vcs['vcs']), commit=str(vcs['commit_id']),
                        repo=url[len(prefix):] if url.startswith(prefix) else url)
            if info.get('subdirectory'):
                item['subdirectory'] = str(info['subdirectory'])
        out.append(item)
    return out


def direct_target(item):
    """What pip installs a direct item of a plan from: a VCS checkout as `git+<repo>@<commit>#egg=<name>` (and the
    subdirectory pip recorded; the report's URL is the repository's, without git+ and the revision: given alone, pip
    would download it as an archive. Not `name @ git+file:///...`: pip 23 refuses a PEP 508 URL without a
    host), else its URL (a directory or an archive named directly). LockError for a name, repository, commit or
    subdirectory that would not stay one requirement."""
    if item.get('vcs') and item.get('repo') and item.get('commit'):
        name, subdirectory = str(item.get('name') or ''), item.get('subdirectory')
        if (not PROJECT_NAME.match(name) or not VCS_URL.match(str(item['repo'])) or not COMMIT.match(str(item['commit']))
                or (subdirectory and not SUBDIRECTORY.match(str(subdirectory)))):
            raise LockError('the git requirement %r of pip\'s plan (%s at %s, subdirectory %r) cannot be given to pip '
                            'again as it is' % (name, item['repo'], item['commit'], subdirectory or ''))
        target = '%s+%s@%s#egg=%s' % (item['vcs'], item['repo'], item['commit'], normalize_name(name))
        return target + ('&subdirectory=%s' % subdirectory if subdirectory else '')
    return item['url']


def filename_of(url):
    return unquote(urlsplit(url).path.rsplit('/', 1)[-1])


def check_items(items, locked):
    """The problems of a plan against the lock: [{file, name, version, problem, sha256, locked}]."""
    problems = []
    for item in items:
        if item['kind'] != 'index':
            continue
        filename = filename_of(item['url'])
        allowed = locked.get(filename)
        if not allowed:
            problems.append(dict(file=filename, name=item['name'], version=item['version'], problem='not_locked',
                                 sha256=item['sha256'], locked=[]))
        elif item['sha256'] and item['sha256'] not in allowed:
            # (an index that states no hash: pip checks the downloaded bytes against the locked hash)
            problems.append(dict(file=filename, name=item['name'], version=item['version'], problem='changed',
                                 sha256=item['sha256'], locked=list(allowed)))
    return problems


def describe(problems):
    """One message for the problems of check_items: each file named, and what to do."""
    changed = [p for p in problems if p['problem'] == 'changed']
    unlocked = [p for p in problems if p['problem'] == 'not_locked']
    parts = []
    if changed:
        parts.append('changed under the same name (the lock was made from other bytes): %s'
                     % '; '.join('%s has sha256 %s, the lock says %s' % (p['file'], p['sha256'], ' or '.join(p['locked']))
                                 for p in changed))
    if unlocked:
        names = ['%s (%s==%s)' % (p['file'], p['name'], p['version']) for p in unlocked]
        parts.append('not in the lock: %s' % ', '.join(names))
    return ('the release lock refuses this install - %s. Nothing was installed. A file that changed under its name is '
            'not the file this release was built and tested with: find out why the index serves other bytes (a site '
            'mirror that rebuilt it, a re-published nightly), or re-lock the release (docs/offline.md, "When '
            'the nightly disappears").' % ' - '.join(parts))


def _quote_path(path):
    if any(c.isspace() for c in path):
        raise LockError('local file %r has whitespace in its path: it cannot be written to a requirements file' % path)
    return path


def hashed_requirements(items, locked):
    """(requirements text, direct items): the lines of a --require-hashes install of exactly the plan.

    Index files carry their locked hashes, local files the hash of their bytes; direct items are returned
    for an install of their own."""
    lines = []
    direct = []
    for item in items:
        if item['kind'] == 'index':
            hashes = locked.get(filename_of(item['url'])) or []
            lines.append('%s==%s %s' % (normalize_name(item['name']), item['version'],
                                        ' '.join('--hash=sha256:%s' % h for h in hashes)))
        elif item['kind'] == 'file':
            path = _file_path(item['url'])
            lines.append('%s --hash=sha256:%s' % (_quote_path(path), file_sha256(path)))
        else:
            direct.append(item)
    return ''.join(line + '\n' for line in lines), direct


# ---- index pages (the probe and the tools) --------------------------------------------------------

class _Links(HTMLParser):
    def __init__(self):
        HTMLParser.__init__(self)
        self.files = {}

    def handle_starttag(self, tag, attrs):
        if tag != 'a':
            return
        href = dict(attrs).get('href') or ''
        url, fragment = (href.split('#', 1) + [''])[:2]
        sha = fragment.split('=', 1)[1] if fragment.startswith('sha256=') else ''
        name = filename_of(url)
        if name:
            self.files[name] = {'href': url, 'sha256': sha}


def parse_simple_page(text):
    """{file name: {'href', 'sha256'}} of a PEP 503 project page."""
    parser = _Links()
    parser.feed(text)
    parser.close()
    return parser.files


def probe_groups(lock, indexes):
    """{(index name, project): [entries]} of the lock, for the indexes the pins (and mirrors) name."""
    groups = {}
    for entry in lock.get('files') or []:
        if entry['index'] in indexes:
            groups.setdefault((entry['index'], normalize_name(entry['name'])), []).append(entry)
    return groups


def probe_verdicts(groups, pages):
    """The locked files an index no longer lists (or lists with another hash).

    pages: {(index, project): {file name: {'href', 'sha256'}} or None when the page could not be read}.
    Returns [{index, file, date, problem}] with problem missing | changed | unreadable."""
    out = []
    for key in sorted(groups):
        page = pages.get(key)
        for entry in groups[key]:
            if page is None:
                problem = 'unreadable'
            elif entry['filename'] not in page:
                problem = 'missing'
            elif page[entry['filename']]['sha256'] and page[entry['filename']]['sha256'] != entry['sha256']:
                problem = 'changed'
            else:
                continue
            out.append({'index': key[0], 'file': entry['filename'], 'date': nightly_date(entry['filename']),
                        'problem': problem})
    return out


def probe_message(verdicts, indexes, release):
    """One message: the missing files by index and nightly date, and what to do."""
    lines = []
    by_index = {}
    for v in verdicts:
        by_index.setdefault(v['index'], {}).setdefault(v['date'] or 'undated', []).append(v)
    for index in sorted(by_index):
        for date in sorted(by_index[index]):
            files = by_index[index][date]
            lines.append('%s (%s), %s: %s' % (index, redact_url(indexes.get(index, '')),
                                              'nightly %s' % date if date != 'undated' else 'no nightly date',
                                              ', '.join('%s (%s)' % (v['file'], v['problem']) for v in files)))
    return ('%d locked file(s) of release %s are no longer served as locked - %s. Nothing was downloaded. Fix: re-lock '
            'the release from an index date that is complete (tools/relock.py, docs/offline.md "When the nightly disappears"), '
            'or install from a wheelhouse or a site mirror that still has them (docs/mirrors.md); '
            'primus_index_probe: false skips this check.' % (len(verdicts), release, ' | '.join(lines)))
