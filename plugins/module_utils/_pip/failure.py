# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Why a pip run failed, read from pip's own output, and what to do about it.

pip reports an index it could not read only as "No matching distribution found": the cause
("Could not fetch URL <url>: <reason> - skipping") is logged at debug level. pip_constrained
therefore runs pip with `--log FILE` and classifies from the console output plus the debug lines
of that file (pip 22.2 to 26 word them as below: urllib3 2's NameResolutionError, errno 111/104,
ReadTimeoutError, "too many 503 error responses", "<code> Client/Server Error", "HTTP error <code>
while getting", SSL errors, proxy errors).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

try:
    from urllib.parse import urlsplit
except ImportError:  # pragma: no cover
    from urlparse import urlsplit  # type: ignore

from ansible_collections.primus.trainenv.plugins.module_utils.common import normalize_name

# Classes of network failures, most specific first (a TLS failure also says "connection").
_NETWORK = (
    ('tls', re.compile(r'SSLError|\[SSL|CERTIFICATE_VERIFY_FAILED|problem confirming the ssl certificate'
                       r'|Failed to establish a secure connection|ssl-verification-failed', re.I)),
    ('proxy', re.compile(r'ProxyError|proxy connection error|Failed to connect to proxy|Tunnel connection failed')),
    ('dns', re.compile(r'NameResolutionError|Failed to resolve|Name or service not known'
                       r'|Temporary failure in name resolution|nodename nor servname|No address associated with hostname'
                       r'|getaddrinfo failed|\[Errno -[235]\]')),
    ('refused', re.compile(r'Connection refused|ConnectionRefusedError|\[Errno 111\]')),
    ('reset', re.compile(r'ConnectionResetError|\[Errno 104\]|Connection reset by peer|closed without a reply'
                         r'|RemoteDisconnected|Connection aborted|IncompleteRead|BrokenPipeError|\[Errno 32\]'
                         r'|not enough bytes were received')),
    ('timeout', re.compile(r'Read timed out|ReadTimeoutError|ConnectTimeoutError|timed out'
                           r"|didn't respond within|connection-timeout")),
    ('http', re.compile(r'too many (?P<a>\d{3}) error responses|(?P<b>\d{3}) (?:Client|Server) Error'
                        r'|HTTP error (?P<c>\d{3})|(?P<d>\d{3}) Error, Credentials not correct')),
)
_FETCH = re.compile(r'Could not fetch URL (?P<url>\S+?):? (?P<reason>.*?)(?: - skipping)?$')
_RETRYING = re.compile(r"Retrying \(Retry\(.*?after connection broken by '(?P<reason>.*)': (?P<path>\S+)")
_NOT_FOUND = (re.compile(r'No matching distribution found for (?P<req>\S+)'),
              re.compile(r'Could not find a version that satisfies the requirement (?P<req>\S+)'))
_TIMESTAMP = re.compile(r'^\d{4}-\d\d-\d\dT[\d:,.]+ ')
_URL = re.compile(r'\b(?:https?|file)://[^\s\'"<>)]+')
_HOST = re.compile(r"host='(?P<host>[^']+)'(?:, port=(?P<port>\d+))?")
_RESOLVE = re.compile(r"(?:Failed to resolve(?: IP address for)?|resolve) '(?P<host>[^']+)'")
_CONNECT = re.compile(r'Failed to connect to (?:proxy )?(?P<host>[^\s:/]+(?::\d+)?)')

_OTHER = (
    ('conflict', re.compile(r'ResolutionImpossible|conflicting dependencies|The conflict is caused by')),
    ('hash_mismatch', re.compile(r'THESE PACKAGES DO NOT MATCH THE HASHES')),
    ('build_failed', re.compile(r'Failed building wheel|subprocess-exited-with-error|metadata-generation-failed'
                                r'|Failed to build ')),
)
_LATE = (
    ('not_installable', re.compile(r'is not installable|Could not open requirements file|does not exist')),
    ('externally_managed', re.compile(r'externally-managed-environment')),
    ('no_pip', re.compile(r'No module named pip')),
)
# What a compiler or linker says when a build fails: gcc/clang/hipcc (`file:line:col: error: ...`,
# `fatal error:`), nvcc/MSVC style (`file(line): error ...`), and ld (`/usr/bin/ld: cannot find -lx`).
_COMPILER_ERROR = re.compile(r'^\S+?:\d+(?::\d+)?: (?:fatal )?error: \S|^\S+?\(\d+\): (?:catastrophic |fatal )?error\b')
_LINKER_ERROR = re.compile(r'^(?:\S*/)?(?:ld|ld\.\w+|lld)(?::| error:) (?!warning)'
                           r'(?:cannot find |.*undefined reference|.*error: )')
NETWORK_CLASSES = tuple(name for name, _pattern in _NETWORK)
RETRYABLE_HTTP = (408, 425, 429, 500, 502, 503, 504, 520, 521, 522, 523, 524, 525, 526, 527, 529)


class Failure(object):
    """category, the host it concerns, pip's decisive line, the HTTP status, whether to retry."""

    attempts = 1  # how many pip runs ended this way (set by the retry loop)

    def __init__(self, category, decisive='', host=None, status=None):
        self.category = category
        self.decisive = decisive
        self.host = host
        self.status = status

    @property
    def transient(self):
        if self.category in ('reset', 'timeout'):
            return True
        return self.category == 'http' and self.status in RETRYABLE_HTTP

    @property
    def label(self):
        if self.category == 'http' and self.status:
            return 'http %d' % self.status
        return self.category

    def as_dict(self):
        return {'class': self.category, 'host': self.host, 'status': self.status, 'decisive': self.decisive,
                'transient': self.transient}


def clean(line):
    line = _TIMESTAMP.sub('', line.strip())
    if line.endswith(' - skipping'):
        line = line[:-len(' - skipping')]
    return line[:400]


def host_of(text):
    """host[:port] named in a line of pip output (URL first, then urllib3's host='...')."""
    match = _URL.search(text)
    if match:
        try:
            netloc = urlsplit(match.group(0)).netloc
        except ValueError:
            netloc = ''
        netloc = netloc.rsplit('@', 1)[-1]
        if netloc:
            return netloc
    for pattern in (_HOST, _RESOLVE, _CONNECT):
        match = pattern.search(text)
        if match:
            host = match.group('host')
            port = match.groupdict().get('port')
            return '%s:%s' % (host, port) if port else host
    return None


def _network_class(text):
    for name, pattern in _NETWORK:
        match = pattern.search(text)
        if match:
            status = None
            if name == 'http':
                status = int(next(g for g in match.groups() if g))
            return name, status
    return None, None


def _evidence(console, debug):
    """[(line, url path or None, host or None)] of lines that say why an index or file could not be fetched."""
    out = []
    previous = []
    for line in (debug or '').splitlines() + (console or '').splitlines():
        fetch = _FETCH.search(line)
        retry = _RETRYING.search(line)
        if fetch:
            url = fetch.group('url')
            out.append((clean(line), urlsplit(url).path if '://' in url else None, host_of(line)))
        elif retry:
            out.append((clean(line), retry.group('path'), host_of(line)))
        elif _network_class(line)[0]:
            # pip 26's diagnostic errors put the host on the line before the cause:
            # "x Failed to connect to HOST while fetching URL" / "-> [Errno 111] Connection refused".
            host = host_of(line) or next((host_of(p) for p in reversed(previous) if host_of(p)), None)
            out.append((clean(line.lstrip(' \u2570\u2500>\u00d7')), None, host))
        previous = (previous + [line])[-2:]
    return out


def classify(console, debug='', default_host=None):
    """A Failure for a failed pip run (console = stdout + stderr, debug = pip's --log file)."""
    text = console or ''
    for name, pattern in _OTHER:
        match = pattern.search(text)
        if match:
            # With --log the build's own output is only in pip's debug log.
            decisive = (compiler_error(text) or compiler_error(debug)) if name == 'build_failed' else None
            return Failure(name, decisive or _decisive_error(text) or clean(match.group(0)))
    evidence = _evidence(console, debug)
    not_found = _NOT_FOUND[0].search(text) or _NOT_FOUND[1].search(text)
    if not_found:
        wanted = normalize_name(re.split(r'[<>=!~;\[ (]', not_found.group('req'))[0])
        about = [(line, host) for line, path, host in evidence
                 if path is None or path.rstrip('/').rsplit('/', 1)[-1].lower() == wanted]
        for line, host in about:
            category, status = _network_class(line)
            if category and not (category == 'http' and status == 404):
                return Failure(category, line, host or default_host, status)
        where, host = about[0] if about else ('', None)
        return Failure('not_found', clean(not_found.group(0)), host or default_host,
                       404 if where and _network_class(where) == ('http', 404) else None)
    for line, _path, host in evidence:
        category, status = _network_class(line)
        return Failure(category, line, host or default_host, status)
    for name, pattern in _LATE:
        match = pattern.search(text)
        if match:
            return Failure(name, _decisive_error(text) or clean(match.group(0)))
    return Failure('pip_error', _decisive_error(text))


def compiler_error(text):
    """The last error line of a compiler (else of the linker) in a build's output, or None.

    pip indents the build's output inside its "[N lines of output]" frame; the line is returned
    stripped. A linker line is chosen only when no compiler line is there (a link fails after
    compiling fine; `collect2: error: ld returned 1 exit status` only echoes ld's own line).
    """
    compiler, linker = None, None
    for line in (text or '').splitlines():
        line = clean(line).strip()
        if _COMPILER_ERROR.search(line):
            compiler = line
        elif _LINKER_ERROR.search(line):
            linker = line
    return compiler or linker


def _decisive_error(text):
    errors = [clean(line) for line in text.splitlines() if line.startswith(('ERROR:', 'error:'))]
    return errors[-1] if errors else ''


PROXY_HINT = ('if this node reaches the internet only through a proxy or mirror, configure it for pip (pip.conf, '
              'https_proxy) and set primus_pip_use_config: true (module option use_pip_config: true)')


def advice(failure, attempts=1):
    """The first line of a failure message: class, host, and the fix."""
    host = failure.host or 'the index'
    tries = ' (%d attempts)' % attempts if attempts > 1 else ''
    category = failure.category
    if category == 'dns':
        return ('[dns] %s: the host name does not resolve%s. Check the index URL and this node\'s network and DNS; %s.'
                % (host, tries, PROXY_HINT))
    if category == 'refused':
        return ('[refused] %s: nothing accepts connections there (index down or wrong port)%s. Check that the index '
                'runs and the URL; %s.' % (host, tries, PROXY_HINT))
    if category == 'reset':
        return ('[reset] %s: the connection was reset%s, a flaky network or an overloaded index. Run again later; '
                'check the firewall, or %s.' % (host, tries, PROXY_HINT))
    if category == 'timeout':
        return ('[timeout] %s did not answer in time%s. Run again later; check the network, or %s.'
                % (host, tries, PROXY_HINT))
    if category == 'http':
        status = failure.status or 0
        if status in (401, 403):
            fix = ('the index refused the credentials: check the user and token in the index URL (or the netrc/'
                   'keyring pip uses with primus_pip_use_config: true)')
        elif status >= 500 or status in RETRYABLE_HTTP:
            fix = 'the index is failing; run again later'
        else:
            fix = 'check the index URL'
        return '[http %d] %s answered HTTP %d%s: %s.' % (status, host, status, tries, fix)
    if category == 'tls':
        return ('[tls] %s: the TLS certificate could not be verified%s. Give pip the CA bundle (PIP_CERT in the '
                'environment option, or pip.conf with primus_pip_use_config: true), or fix the proxy that '
                'intercepts TLS.' % (host, tries))
    if category == 'proxy':
        return ('[proxy] the proxy for %s failed%s. Check the proxy settings (https_proxy, pip.conf with '
                'primus_pip_use_config: true).' % (host, tries))
    if category == 'not_found':
        return ('[not_found] no version on %s satisfies the request: check the pin, the index URL and whether it '
                'needs pre=true (pre-releases, nightly builds).' % host)
    return '[%s]' % category
