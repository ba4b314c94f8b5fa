# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Requirement items for pip_constrained: `name` entries, requirements/constraints files, `src`.

Every function takes `pk`, a pip_packaging.Packaging, so this file imports without `packaging`.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import re

ARCHIVE_EXTENSIONS = ('.whl', '.tar.gz', '.tgz', '.tar.bz2', '.tbz', '.tar.xz', '.txz', '.tar', '.zip')
VCS_SCHEMES = ('git', 'hg', 'svn', 'bzr')
_URL = re.compile(r'^[A-Za-z][A-Za-z0-9+.-]*://|^file:')
_ENV_VAR = re.compile(r'\$\{(?P<var>[A-Z0-9_]+)\}')
_COMMENT = re.compile(r'(^|\s+)#.*$')
_SDIST = re.compile(r'^(?P<name>.+?)-(?P<version>\d[^-]*)$')

# Options of a requirements file that change how pip runs but not what is asked for.
_OPTIONS_WITH_VALUE = ('-i', '--index-url', '--extra-index-url', '-f', '--find-links', '--trusted-host',
                       '--no-binary', '--only-binary', '--use-feature', '--config-settings', '--global-option',
                       '--hash')
_OPTIONS_FLAG = ('--no-index', '--pre', '--prefer-binary', '--require-hashes')


class RequirementError(Exception):
    pass


class Item(object):
    """One thing asked for.

    kind:
      req      a PEP 508 requirement; `url` is set for `name @ url`
      file     a wheel or sdist (path or URL) known by the name and version in its file name
      vcs      a VCS URL (git+https://...@rev); name from `name @` or #egg=, may be None
      archive  another URL to an archive; matched through PEP 610 direct_url.json
      dir      a local project directory; name/version when its metadata is static
      editable -e <dir or VCS URL>
    """

    def __init__(self, kind, text, origin, req=None, name=None, version=None, url=None,
                 vcs=None, rev=None, path=None, marker=None, extras=()):
        self.kind = kind
        self.text = text
        self.origin = origin
        self.req = req
        self.name = name
        self.version = version
        self.url = url
        self.vcs = vcs
        self.rev = rev
        self.path = path
        self.marker = marker
        self.extras = tuple(sorted(extras))

    def __repr__(self):
        return 'Item(%s, %r)' % (self.kind, self.text)


def _strip_fragment(url):
    base, _sep, fragment = url.partition('#')
    params = {}
    for part in fragment.split('&'):
        if '=' in part:
            key, value = part.split('=', 1)
            params[key] = value
    return base, params


def split_vcs_url(url):
    """git+https://host/repo.git@rev#egg=x -> ('git', 'https://host/repo.git', 'rev', {'egg': 'x'})."""
    base, params = _strip_fragment(url)
    vcs = None
    scheme, sep, rest = base.partition('://')
    if not sep:
        return None, base, None, params
    if '+' in scheme:
        vcs, scheme = scheme.split('+', 1)
    netloc, slash, path = rest.partition('/')
    rev = None
    if '@' in path:
        path, rev = path.rsplit('@', 1)
    return vcs, '%s://%s%s%s' % (scheme, netloc, slash, path), rev, params


def normalize_url(url):
    """Compare URLs without credentials, trailing slashes or the scheme's case."""
    scheme, sep, rest = url.partition('://')
    if not sep:
        return url.rstrip('/')
    netloc, slash, path = rest.partition('/')
    if '@' in netloc:
        netloc = netloc.rsplit('@', 1)[1]
    return ('%s://%s%s%s' % (scheme.lower(), netloc.lower(), slash, path)).rstrip('/')


def _archive_name(basename):
    lower = basename.lower()
    for ext in ARCHIVE_EXTENSIONS:
        if lower.endswith(ext):
            return ext
    return None


def _file_item(pk, text, origin, location, marker, is_url):
    """A wheel/sdist given by path or URL: name and version from the file name."""
    base = _strip_fragment(location)[0].split('?', 1)[0]
    basename = base.rstrip('/').rsplit('/', 1)[-1]
    ext = _archive_name(basename)
    if ext == '.whl':
        try:
            name, version, _build, _tags = pk.parse_wheel_filename(basename)
        except (pk.InvalidWheelFilename, pk.InvalidVersion) as exc:
            raise RequirementError('%s: not a valid wheel file name: %s' % (origin, exc))
        return Item('file', text, origin, name=str(name), version=str(version), url=location if is_url else None,
                    path=None if is_url else location, marker=marker)
    stem = basename[:-len(ext)]
    match = _SDIST.match(stem)
    if match:
        try:
            version = pk.Version(match.group('version'))
            return Item('file', text, origin, name=pk.canonicalize_name(match.group('name')), version=str(version),
                        url=location if is_url else None, path=None if is_url else location, marker=marker)
        except pk.InvalidVersion:
            pass
    return Item('archive', text, origin, url=location, path=None if is_url else location, marker=marker)


def parse_marker(pk, text, origin):
    if not text:
        return None
    try:
        return pk.Marker(text)
    except pk.InvalidMarker as exc:
        raise RequirementError('%s: invalid environment marker %r: %s' % (origin, text, exc))


def classify(pk, text, origin, base_dir=None, editable=False):
    """Turn one requirement string into an Item (raises RequirementError)."""
    text = text.strip()
    if not text:
        raise RequirementError('%s: empty requirement' % origin)
    if editable:
        location, _sep, marker_text = text.partition('; ') if _URL.match(text) else (text, '', '')
        marker = parse_marker(pk, marker_text.strip(), origin)
        if _URL.match(location):
            vcs, url, rev, params = split_vcs_url(location)
            return Item('editable', text, origin, name=params.get('egg'), url=url, vcs=vcs, rev=rev, marker=marker)
        path = location if os.path.isabs(location) or base_dir is None else os.path.join(base_dir, location)
        return Item('editable', text, origin, path=os.path.normpath(path), marker=marker)

    if _URL.match(text):
        location, _sep, marker_text = text.partition('; ')
        marker = parse_marker(pk, marker_text.strip(), origin)
        scheme = location.split(':', 1)[0].lower()
        if '+' in scheme and scheme.split('+', 1)[0] in VCS_SCHEMES:
            vcs, url, rev, params = split_vcs_url(location)
            name = params.get('egg')
            return Item('vcs', text, origin, name=pk.canonicalize_name(name) if name else None,
                        url=url, vcs=vcs, rev=rev, marker=marker)
        if scheme == 'file':
            local = location[len('file://'):] if location.startswith('file://') else location[len('file:'):]
            local = _strip_fragment(local)[0]
            if os.path.isdir(local):
                return Item('dir', text, origin, path=local, marker=marker)
        if _archive_name(_strip_fragment(location)[0].split('?', 1)[0]):
            return _file_item(pk, text, origin, location, marker, True)
        return Item('archive', text, origin, url=location, marker=marker)

    head = text.split(';', 1)[0].strip()
    marker_text = text.split(';', 1)[1].strip() if ';' in text else ''
    looks_like_path = (head.startswith(('.', '/', '~')) or os.sep in head) and ' @ ' not in head and '@' not in head.split('/')[0]
    if _archive_name(head) and ' @ ' not in text and '@' not in head:
        path = os.path.expanduser(head)
        if base_dir is not None and not os.path.isabs(path):
            path = os.path.join(base_dir, path)
        return _file_item(pk, text, origin, path, parse_marker(pk, marker_text, origin), False)
    if looks_like_path:
        path = os.path.expanduser(head)
        if base_dir is not None and not os.path.isabs(path):
            path = os.path.join(base_dir, path)
        return Item('dir', text, origin, path=os.path.normpath(path), marker=parse_marker(pk, marker_text, origin))

    try:
        req = pk.Requirement(text)
    except pk.InvalidRequirement as exc:
        raise RequirementError('%s: invalid requirement %r: %s' % (origin, text, exc))
    name = pk.canonicalize_name(req.name)
    if req.url:
        url = req.url
        scheme = url.split(':', 1)[0].lower()
        if '+' in scheme and scheme.split('+', 1)[0] in VCS_SCHEMES:
            vcs, base, rev, _params = split_vcs_url(url)
            return Item('vcs', text, origin, req=req, name=name, url=base, vcs=vcs, rev=rev,
                        marker=req.marker, extras=req.extras)
        if _archive_name(_strip_fragment(url)[0].split('?', 1)[0]) == '.whl':
            item = _file_item(pk, text, origin, url, req.marker, True)
            item.extras = tuple(sorted(req.extras))
            return item
        if url.startswith('file:'):
            local = _strip_fragment(url[len('file://'):] if url.startswith('file://') else url[len('file:'):])[0]
            if os.path.isdir(local):
                return Item('dir', text, origin, req=req, name=name, path=local, marker=req.marker, extras=req.extras)
        return Item('archive', text, origin, req=req, name=name, url=url, marker=req.marker, extras=req.extras)
    return Item('req', text, origin, req=req, name=name, marker=req.marker, extras=req.extras)


def _logical_lines(text):
    """pip's preprocessing: join continuations, drop comments. Yields (line number, line)."""
    pending = []
    start = None
    for number, raw in enumerate(text.splitlines(), 1):
        if start is None:
            start = number
        if raw.endswith('\\') and not _COMMENT.match(raw):
            pending.append(raw[:-1])
            continue
        pending.append(raw)
        line = _COMMENT.sub('', ''.join(pending)).strip()
        pending = []
        first, start = start, None
        if line:
            yield first, line
    if pending:
        line = _COMMENT.sub('', ''.join(pending)).strip()
        if line:
            yield start, line


def _expand(line, environ):
    return _ENV_VAR.sub(lambda m: environ.get(m.group('var'), m.group(0)), line)


def _split_option(line):
    """'-r x', '-rx', '--requirement=x', '--requirement x' -> ('--requirement'/'-r', 'x')."""
    if line.startswith('--'):
        if '=' in line.split(None, 1)[0]:
            opt, value = line.split('=', 1)
            return opt, value.strip()
        parts = line.split(None, 1)
        return parts[0], (parts[1].strip() if len(parts) > 1 else '')
    parts = line.split(None, 1)
    if len(parts[0]) > 2:
        return parts[0][:2], (parts[0][2:] + (' ' + parts[1] if len(parts) > 1 else '')).strip()
    return parts[0], (parts[1].strip() if len(parts) > 1 else '')


def _requirement_part(line):
    """Drop per-requirement options (--hash=..., --config-settings ...) like pip does."""
    tokens = line.split(' ')
    kept = []
    for token in tokens:
        if token.startswith('-'):
            break
        kept.append(token)
    return ' '.join(kept).strip()


def read_requirements_file(pk, path, environ=None, constraint=False, _seen=None, read=None):
    """Parse a requirements (or constraints) file the way pip does.

    Returns (items, constraint_items). Nested -r files keep the kind of their parent; -c files
    are always constraints. Relative -r/-c paths are relative to the including file; relative
    project paths are relative to the working directory, like pip.
    """
    environ = os.environ if environ is None else environ
    read = read or _read_text
    seen = set() if _seen is None else _seen
    real = os.path.realpath(path)
    if real in seen:
        return [], []
    seen.add(real)
    try:
        text = read(path)
    except (IOError, OSError) as exc:
        raise RequirementError('cannot read %s: %s' % (path, exc))
    items, constraints = [], []
    base = os.path.dirname(os.path.abspath(path))
    for number, line in _logical_lines(text):
        origin = '%s:%d' % (path, number)
        line = _expand(line, environ)
        if line.startswith('-'):
            opt, value = _split_option(line)
            if opt in ('-r', '--requirement', '-c', '--constraint'):
                nested = value if os.path.isabs(value) or _URL.match(value) else os.path.join(base, value)
                if _URL.match(nested):
                    raise RequirementError('%s: remote requirement files are not supported: %s' % (origin, value))
                sub_items, sub_constraints = read_requirements_file(
                    pk, nested, environ, constraint or opt in ('-c', '--constraint'), seen, read)
                items.extend(sub_items)
                constraints.extend(sub_constraints)
            elif opt in ('-e', '--editable'):
                target = constraints if constraint else items
                target.append(classify(pk, value, origin, editable=True))
            elif opt in _OPTIONS_WITH_VALUE or opt in _OPTIONS_FLAG:
                continue
            else:
                raise RequirementError('%s: unsupported option in requirements file: %s' % (origin, opt))
            continue
        item = classify(pk, _requirement_part(line), origin)
        (constraints if constraint else items).append(item)
    return items, constraints


def _read_text(path):
    with open(path, 'rb') as handle:
        return handle.read().decode('utf-8')


def read_pkg_info(path):
    """Name and Version headers of a PKG-INFO/METADATA file, or (None, None)."""
    try:
        text = _read_text(path)
    except (IOError, OSError, UnicodeDecodeError):
        return None, None
    import email.parser  # pylint: disable=import-outside-toplevel  # only for src trees with PKG-INFO
    headers = email.parser.Parser().parsestr(text, headersonly=True)
    return headers.get('Name'), headers.get('Version')


def static_project_identity(pk, src, toml_loads=None):
    """(name, version, how) of a source tree when knowable without running its build backend.

    pyproject.toml [project] with a literal `version` (not listed in `dynamic`) wins; else a
    PKG-INFO at the root (an unpacked sdist). Otherwise (None, None, reason).
    """
    pyproject = os.path.join(src, 'pyproject.toml')
    if os.path.isfile(pyproject):
        if toml_loads is None:
            reason = 'no TOML parser to read pyproject.toml'
        else:
            try:
                data = toml_loads(_read_text(pyproject))
            except Exception as exc:  # pylint: disable=broad-except
                raise RequirementError('%s: cannot parse: %s' % (pyproject, exc))
            project = data.get('project') if isinstance(data, dict) else None
            if isinstance(project, dict) and project.get('name') and project.get('version') \
                    and 'version' not in (project.get('dynamic') or []):
                return pk.canonicalize_name(project['name']), str(pk.Version(str(project['version']))), 'pyproject.toml'
            reason = 'pyproject.toml has no static [project] name and version'
    else:
        reason = 'no pyproject.toml'
    name, version = read_pkg_info(os.path.join(src, 'PKG-INFO'))
    if name and version:
        return pk.canonicalize_name(name), version, 'PKG-INFO'
    return None, None, reason
