# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pick a wheel from a package index and unpack one of its scripts, with the standard library only.

Used by the uv_fetch module to install uv's binary on a node that has neither pip nor venv (a
stock Ubuntu 22.04 without python3.10-venv). The formats, as pip reads them:

* the simple repository API: PEP 503 HTML (one ``<a href="URL#sha256=HEX">FILENAME</a>`` per file,
  ``data-yanked`` and ``data-requires-python`` attributes, relative URLs against the page) and
  PEP 691 JSON (``application/vnd.pypi.simple.v1+json``: ``files`` with ``filename``, ``url``,
  ``hashes``, ``yanked``);
* wheel file names (PEP 427/425): ``name-version(-build)?-pythons-abis-platforms.whl`` where each
  tag part may be a ``.``-separated set (``manylinux_2_17_x86_64.manylinux2014_x86_64``);
* Linux platform tags (PEP 600/656): ``manylinux_2_Y_ARCH`` runs on glibc >= 2.Y (the legacy
  ``manylinux1``/``2010``/``2014`` are 2.5/2.12/2.17), ``musllinux_1_Y_ARCH`` on musl >= 1.Y;
* a wheel's scripts live in ``<name>-<version>.data/scripts/`` (uv's binary: ``uv-0.9.5.data/scripts/uv``);
* pip's configuration files and ``PIP_*`` variables, for the ``proxy`` and ``cert`` settings.

Everything here is pure (no network, no process): the module does the I/O.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import re

try:
    from html.parser import HTMLParser
    from urllib.parse import urljoin, urlsplit, urlunsplit, unquote
    import configparser
except ImportError:  # pragma: no cover - Python 2 is not a supported target
    HTMLParser = object
    urljoin = urlsplit = urlunsplit = unquote = configparser = None

from ansible_collections.primus.trainenv.plugins.module_utils.common import normalize_name, wheel_name

JSON_TYPE = 'application/vnd.pypi.simple.v1+json'
ACCEPT = '%s, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01' % JSON_TYPE

_NAME_RE = re.compile(r'^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$')
_VERSION_RE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9.+!_-]*$')
_SHA256_RE = re.compile(r'^[0-9a-f]{64}$')
_WHEEL_RE = re.compile(r'^(?P<name>[^-]+)-(?P<version>[^-]+)(-(?P<build>\d[^-]*))?'
                       r'-(?P<pythons>[^-]+)-(?P<abis>[^-]+)-(?P<platforms>[^-]+)\.whl$')
# The legacy manylinux names and the glibc they stand for (PEP 600).
_LEGACY_MANYLINUX = {(2, 17): 'manylinux2014', (2, 12): 'manylinux2010', (2, 5): 'manylinux1'}
_LEGACY_ARCHS = {
    'manylinux2014': ('x86_64', 'i686', 'aarch64', 'armv7l', 'ppc64', 'ppc64le', 's390x'),
    'manylinux2010': ('x86_64', 'i686'),
    'manylinux1': ('x86_64', 'i686'),
}


class FetchError(Exception):
    """A request, an index page or a wheel that cannot be used; the message says what to do.

    kind: a short class of the cause (dns, refused, reset, timeout, tls, http <code>, hash, error).
    """

    def __init__(self, message, kind='error'):
        Exception.__init__(self, message)
        self.message = message
        self.kind = kind


def parse_pin(requirement):
    """('uv', '0.13.9') from 'uv==0.13.9'. Anything but an exact pin is refused (ValueError)."""
    text = (requirement or '').strip()
    name, sep, version = text.partition('==')
    name, version = name.strip(), version.strip()
    if not sep or not _NAME_RE.match(name) or not _VERSION_RE.match(version) or version.startswith('='):
        raise ValueError("requirement %r must pin one exact version, like uv==0.13.9" % (requirement,))
    return name, version


def split_credentials(url):
    """(url without user info, host[:port], user or None, password or None)."""
    parts = urlsplit(url)
    netloc = parts.netloc
    user = password = None
    if '@' in netloc:
        userinfo, netloc = netloc.rsplit('@', 1)
        user, _sep, password = userinfo.partition(':')
        user, password = unquote(user), unquote(password)
    clean = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    return clean, netloc.lower(), user, password


def project_url(index_url, name):
    """<index>/<normalized name>/ (the index URL with or without its trailing slash)."""
    return index_url.rstrip('/') + '/' + normalize_name(name) + '/'


def _file_entry(filename, url, sha256, yanked, requires_python):
    return {'filename': filename, 'url': url, 'sha256': sha256, 'yanked': yanked,
            'requires_python': requires_python}


class _SimpleHTML(HTMLParser):
    def __init__(self):
        HTMLParser.__init__(self, convert_charrefs=True)
        self.anchors = []
        self._current = None

    def handle_starttag(self, tag, attrs):
        if tag == 'a':
            self._current = (dict(attrs), [])
            self.anchors.append(self._current)

    def handle_endtag(self, tag):
        if tag == 'a':
            self._current = None

    def handle_data(self, data):
        if self._current is not None:
            self._current[1].append(data)


def parse_simple_html(text, page_url):
    """The files of a PEP 503 project page: [{filename, url, sha256, yanked, requires_python}].

    url is absolute (resolved against page_url, fragment removed); sha256 is the lower-case hex
    of a ``#sha256=`` fragment or None; yanked is False or the reason (True when none is given).
    """
    parser = _SimpleHTML()
    parser.feed(text or '')
    parser.close()
    files = []
    for attrs, data in parser.anchors:
        href = attrs.get('href')
        if not href:
            continue
        url, _sep, fragment = urljoin(page_url, href).partition('#')
        filename = ''.join(data).strip() or unquote(urlsplit(url).path.rsplit('/', 1)[-1])
        sha256 = None
        for item in fragment.split('&'):
            key, _sep, value = item.partition('=')
            if key == 'sha256' and _SHA256_RE.match(value.lower()):
                sha256 = value.lower()
        yanked = attrs['data-yanked'] or True if 'data-yanked' in attrs else False
        files.append(_file_entry(filename, url, sha256, yanked, attrs.get('data-requires-python')))
    return files


def parse_simple_json(data, page_url):
    """The files of a PEP 691 project page (already decoded JSON), in the form of parse_simple_html."""
    if not isinstance(data, dict) or not isinstance(data.get('files'), list):
        raise FetchError('the index answered JSON without a "files" list (not a PEP 691 project page)')
    files = []
    for item in data['files']:
        if not isinstance(item, dict) or not item.get('filename') or not item.get('url'):
            continue
        hashes = item.get('hashes') if isinstance(item.get('hashes'), dict) else {}
        sha256 = str(hashes.get('sha256', '')).lower() or None
        if sha256 and not _SHA256_RE.match(sha256):
            sha256 = None
        yanked = item.get('yanked', False)
        files.append(_file_entry(item['filename'], urljoin(page_url, item['url']).partition('#')[0], sha256,
                                 yanked or False, item.get('requires-python')))
    return files


def parse_wheel_filename(filename):
    """{name, version, build, pythons, abis, platforms} (tag parts as sets), or None for a non-wheel."""
    match = _WHEEL_RE.match(filename)
    if not match:
        return None
    return {
        'name': match.group('name'), 'version': match.group('version'), 'build': match.group('build'),
        'pythons': set(match.group('pythons').split('.')), 'abis': set(match.group('abis').split('.')),
        'platforms': set(match.group('platforms').split('.')),
    }


def _version_tuple(text):
    parts = []
    for part in (text or '').strip().split('.'):
        if not part.isdigit():
            break
        parts.append(int(part))
    return tuple(parts)


def linux_platform_tags(machine, libc, libc_version):
    """Linux platform tags a binary wheel may have on this node, best first (as pip orders them).

    libc 'glibc' 2.Y: manylinux_2_Y_ARCH down to manylinux_2_0 (with the legacy alias after its
    version), then linux_ARCH. libc 'musl' 1.Y: musllinux_1_Y_ARCH down to musllinux_1_0, then
    linux_ARCH. Any other libc: linux_ARCH only.
    """
    arch = {'amd64': 'x86_64', 'arm64': 'aarch64'}.get(machine.lower(), machine.lower())
    if arch in ('i386', 'i486', 'i586'):
        arch = 'i686'
    version = _version_tuple(libc_version)
    tags = []
    if libc == 'glibc' and len(version) >= 2 and version[0] == 2:
        for minor in range(version[1], -1, -1):
            tags.append('manylinux_2_%d_%s' % (minor, arch))
            legacy = _LEGACY_MANYLINUX.get((2, minor))
            if legacy and arch in _LEGACY_ARCHS[legacy]:
                tags.append('%s_%s' % (legacy, arch))
    elif libc == 'musl' and len(version) >= 2 and version[0] == 1:
        for minor in range(version[1], -1, -1):
            tags.append('musllinux_1_%d_%s' % (minor, arch))
    tags.append('linux_%s' % arch)
    return tags


def python_tags(major, minor):
    """Interpreter-independent tags a script-only wheel may carry for this Python (py3, py310, ...)."""
    return ['py%d%d' % (major, minor), 'py%d' % major] + ['py%d%d' % (major, m) for m in range(minor - 1, -1, -1)]


def choose_wheel(files, name, version, platforms, pythons):
    """(file, platform tag) of the best wheel of name==version for this node.

    Best: the earliest tag of ``platforms``; a wheel must carry one of ``pythons`` and the ABI
    ``none`` (a script-only wheel such as uv's). A yanked file is taken only when no other
    fits (pip takes yanked files for an exact pin too). Raises FetchError listing what exists.
    """
    wanted = normalize_name(name)
    rank = dict((tag, i) for i, tag in enumerate(platforms))
    candidates = []
    same_version = []   # every file of that version, wheel or not, for the message
    for entry in files:
        wheel = parse_wheel_filename(entry['filename'])
        if wheel is None:
            sdist = re.match(r'^(.+)-%s\.(tar\.gz|zip)$' % re.escape(version), entry['filename'])
            if sdist and normalize_name(sdist.group(1)) == wanted:
                same_version.append(entry['filename'])
            continue
        if normalize_name(wheel['name']) != wanted or wheel['version'] != version:
            continue
        same_version.append(entry['filename'])
        if 'none' not in wheel['abis'] or not wheel['pythons'] & set(pythons):
            continue
        fitting = [rank[tag] for tag in wheel['platforms'] if tag in rank]
        if fitting:
            candidates.append((bool(entry['yanked']), min(fitting), entry['filename'], entry))
    if not candidates:
        if not same_version:
            raise FetchError('the index has no file of %s==%s' % (name, version))
        raise FetchError('no wheel of %s==%s fits this node (platform %s); the index has: %s'
                         % (name, version, platforms[0] if platforms else '?', ', '.join(sorted(same_version))))
    candidates.sort(key=lambda c: c[:3])
    _yanked, best_rank, _filename, entry = candidates[0]
    return entry, platforms[best_rank]


def script_member(names, name, version, script):
    """The archive path of <script> in the wheel's .data/scripts directory, or None."""
    wanted = '%s-%s.data/scripts/%s' % (wheel_name(name), version, script)
    for member in names:
        if member == wanted or member.lower() == wanted.lower():
            return member
    return None


def musl_version(loader_output):
    """'1.2.4' from the musl loader's usage text ("musl libc (x86_64)\\nVersion 1.2.4\\n..."), else None."""
    lines = (loader_output or '').splitlines()
    if not lines or not lines[0].strip().startswith('musl libc'):
        return None
    for line in lines[1:]:
        match = re.match(r'^\s*Version\s+(\d+\.\d+(?:\.\d+)?)', line)
        if match:
            return match.group(1)
    return None


def pip_config_files(environ, home):
    """pip's configuration files in the order pip loads them (later ones win), or [] when
    PIP_CONFIG_FILE is os.devnull (pip then loads none)."""
    given = environ.get('PIP_CONFIG_FILE')
    if given == os.devnull:
        return []
    files = []
    xdg_dirs = environ.get('XDG_CONFIG_DIRS') or '/etc/xdg'
    files += [os.path.join(d, 'pip', 'pip.conf') for d in reversed(xdg_dirs.split(':')) if d]
    files.append('/etc/pip.conf')
    files.append(os.path.join(home, '.pip', 'pip.conf'))
    files.append(os.path.join(environ.get('XDG_CONFIG_HOME') or os.path.join(home, '.config'), 'pip', 'pip.conf'))
    if environ.get('VIRTUAL_ENV'):
        files.append(os.path.join(environ['VIRTUAL_ENV'], 'pip.conf'))
    if given:
        files.append(given)
    return files


def pip_settings(files, environ):
    """{'proxy': ..., 'cert': ...} as pip would use them for `pip download`/`install`: the
    [global], [download] and [install] sections of ``files`` (pip_config_files; later ones win,
    missing or unreadable ones are skipped), then PIP_PROXY and PIP_CERT of ``environ``."""
    settings = {}
    for path in files:
        parser = configparser.RawConfigParser()
        try:
            parser.read(path)
        except configparser.Error as exc:
            raise FetchError('pip configuration %s cannot be read: %s' % (path, str(exc).splitlines()[0]))
        for section in ('global', 'download', 'install'):
            for key in ('proxy', 'cert'):
                if parser.has_option(section, key):
                    settings[key] = parser.get(section, key).strip()
    for key in ('proxy', 'cert'):
        if environ.get('PIP_' + key.upper()):
            settings[key] = environ['PIP_' + key.upper()]
    return dict((k, v) for k, v in settings.items() if v)


def classify_error(reason):
    """A short class for a failed request's reason text: dns, refused, reset, timeout, tls or other."""
    text = str(reason).lower()
    if 'name or service not known' in text or 'nodename nor servname' in text or 'temporary failure in name' in text \
            or 'no address associated' in text or 'getaddrinfo' in text:
        return 'dns'
    if 'refused' in text:
        return 'refused'
    if 'reset' in text or 'broken pipe' in text or 'remote end closed' in text:
        return 'reset'
    if 'timed out' in text or 'timeout' in text:
        return 'timeout'
    if 'certificate' in text or 'ssl' in text or 'tls' in text:
        return 'tls'
    return 'other'
