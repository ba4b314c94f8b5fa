# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Requirement items for pip_constrained: `name` entries, requirements/constraints files, `src`.

Each rule follows pip's own code (pip/_internal/req/req_file.py and req/constructors.py), so the
offline decision reads a requirement exactly as the pip that runs afterwards would:
- requirements files: byte-order marks and PEP 263 coding lines, `\\` continuations joined before
  comments are removed (a comment line after a continuation ends it), `${VAR}` expanded from the
  environment pip receives (unset or empty variables stay literal), per-requirement options cut off;
- a line is a URL (pip's schemes), else a path when it looks like one (a separator or a leading
  `.`) or names an archive, else a PEP 508 requirement; markers follow `;` (`; ` after a URL), and
  an empty marker is no marker;
- wheel file names are read from the unquoted URL path (`%2B` is `+`).

A file's content is shown in a message only when it is a file the task names (requirements, constraints) that the user
running pip owns (FileTrust): a refusal of a line of any other file - one a `-r`/`-c` line includes, `-r /etc/shadow` -
names the file, the line number and what is wrong (RequirementError.what), never the line. A file a `-r`/`-c` line
includes must be the user's own (FileTrust.problem): a file another user can write could make pip install, and
build, anything with this user's rights, so it is not read at all.

Every function takes `pk`, a _pip.libs.Packaging, so this file imports without `packaging`.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import codecs
import os
import re
import shlex
import stat

try:
    from urllib.parse import unquote, urlsplit
except ImportError:  # pragma: no cover - Python 2 is not supported by this collection
    from urllib import unquote  # type: ignore
    from urlparse import urlsplit  # type: ignore

ARCHIVE_EXTENSIONS = ('.whl', '.tar.gz', '.tgz', '.tar.bz2', '.tbz', '.tar.xz', '.txz', '.tlz', '.tar.lz',
                      '.tar.lzma', '.tar', '.zip')
VCS_NAMES = ('git', 'hg', 'svn', 'bzr')
# pip's vcs.all_schemes plus its plain URL schemes (pip/_internal/vcs/versioncontrol.py is_url).
URL_SCHEMES = ('http', 'https', 'file', 'ftp',
               'bzr+http', 'bzr+https', 'bzr+ssh', 'bzr+sftp', 'bzr+ftp', 'bzr+lp', 'bzr+file',
               'git+http', 'git+https', 'git+ssh', 'git+git', 'git+file',
               'hg+file', 'hg+http', 'hg+https', 'hg+ssh', 'hg+static-http',
               'svn+ssh', 'svn+http', 'svn+https', 'svn+svn', 'svn+file')
_SCHEME = re.compile(r'^[A-Za-z][A-Za-z0-9+.-]*:')
_ENV_VAR = re.compile(r'(?P<var>\$\{(?P<name>[A-Z0-9_]+)\})')
_COMMENT = re.compile(r'(^|\s+)#.*$')
_SDIST = re.compile(r'^(?P<name>.+?)-(?P<version>\d[^-]*)$')
_EXTRAS = re.compile(r'^(.+)(\[[^\]]+\])$')
_PEP263 = re.compile(br'coding[:=]\s*([-\w.]+)')
_BOMS = ((codecs.BOM_UTF8, 'utf-8'), (codecs.BOM_UTF32, 'utf-32'), (codecs.BOM_UTF32_BE, 'utf-32-be'),
         (codecs.BOM_UTF32_LE, 'utf-32-le'), (codecs.BOM_UTF16, 'utf-16'), (codecs.BOM_UTF16_BE, 'utf-16-be'),
         (codecs.BOM_UTF16_LE, 'utf-16-le'))

# The options pip reads in a requirements or constraints file (pip 26.3 req_file.build_parser), each with
# whether it takes a value. A long option may be abbreviated to any unique prefix, as pip's optparse allows.
FILE_OPTIONS = {
    '--index-url': True, '--pypi-url': True, '--extra-index-url': True, '--no-index': False, '--constraint': True,
    '--requirement': True, '--editable': True, '--find-links': True, '--no-binary': True, '--only-binary': True,
    '--prefer-binary': False, '--require-hashes': False, '--no-require-hashes': False, '--pre': False,
    '--all-releases': True, '--only-final': True, '--trusted-host': True, '--use-feature': True, '--hash': True,
    '--config-settings': True,
}
FILE_SHORT = {'-i': '--index-url', '-c': '--constraint', '-r': '--requirement', '-e': '--editable',
              '-f': '--find-links', '-C': '--config-settings'}
# Options of a file that change where distributions come from: refused like the same options in extra_args
# (the task's index_url, extra_index_urls, find_links and no_index say where they come from).
FILE_REFUSED = {'--index-url': 'index_url', '--pypi-url': 'index_url', '--extra-index-url': 'extra_index_urls',
                '--find-links': 'find_links', '--no-index': 'no_index'}


class RequirementError(Exception):
    """What is wrong with a requirement. ``what``: the same without any text of the line, for a line of a file whose
    content is never shown (None: the message itself holds none)."""

    def __init__(self, message, what=None):
        super(RequirementError, self).__init__(message)
        self.what = what


# What a refusal of a line whose text is not shown says when the error did not say it without the text.
UNSHOWN = 'not a line pip reads in a requirements file'


class FileTrust(object):
    """Whose a requirements or constraints file is, for the user running pip (uid): ``problem(path)`` is '' for a
    regular file that user owns and no other user can write (group write only for the user's own group, own_group_of),
    else why not; stat_fn is os.stat (a symlink is judged by what it points to)."""

    def __init__(self, uid, stat_fn=os.stat, owner_name=None, own_group_of=None):
        self.uid = uid
        self.stat_fn = stat_fn
        self.owner_name = owner_name or str
        self.own_group_of = own_group_of or (lambda gid: False)

    def problem(self, path):
        try:
            st = self.stat_fn(path)
        except OSError:
            return ''   # the read reports it
        if not stat.S_ISREG(st.st_mode):
            return 'is not a regular file'
        if st.st_uid != self.uid:
            return 'is owned by %s (uid %d), not by you' % (self.owner_name(st.st_uid), st.st_uid)
        mode = stat.S_IMODE(st.st_mode)
        if st.st_mode & stat.S_IWOTH:
            return 'is writable by every user (mode %04o)' % mode
        if st.st_mode & stat.S_IWGRP and not self.own_group_of(st.st_gid):
            return 'is writable by its group, gid %d, which holds other users (mode %04o)' % (st.st_gid, mode)
        return ''


class Item(object):
    """One thing asked for.

    kind:
      req      a PEP 508 requirement from an index
      file     a wheel or sdist (path or URL) known by the name and version in its file name
      vcs      a VCS URL (git+https://...@rev); name from `name @` or #egg=, may be None
      archive  another URL to an archive; matched through PEP 610 direct_url.json
      dir      a local project directory; name/version when its metadata is static
      editable -e <dir or VCS URL>
    url is the location for every kind given by URL (`name @ url` included); path is the local
    file or directory. requires/provides_extra are the item's own metadata when it is known
    without the installed copy (a local wheel's METADATA, a project's static pyproject.toml);
    None means "not known offline".
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
        self.requires = None
        self.provides_extra = None
        self.subdirectory = None    # #subdirectory= of a URL: the project inside the repository or archive

    @property
    def is_wheel(self):
        return self.kind == 'file' and _archive_ext(self.path or self.url or '') == '.whl'

    def __repr__(self):
        return 'Item(%s, %r)' % (self.kind, self.text)


# ---- URLs ---------------------------------------------------------------------------------------

def is_url(text):
    """pip's is_url: a scheme pip fetches from or a VCS scheme."""
    try:
        scheme = urlsplit(text).scheme
    except ValueError:
        return False
    return bool(scheme) and scheme.lower() in URL_SCHEMES


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
    """Compare URLs without credentials, trailing slashes, quoting or the scheme's and host's case."""
    scheme, sep, rest = url.partition('://')
    if not sep:
        return unquote(url).rstrip('/')
    netloc, slash, path = rest.partition('/')
    if '@' in netloc:
        netloc = netloc.rsplit('@', 1)[1]
    return ('%s://%s%s%s' % (scheme.lower(), netloc.lower(), slash, unquote(path))).rstrip('/')


def url_path(url):
    """Local path of a file: URL (file:///x, file:/x, file://localhost/x), unquoted."""
    base = _strip_fragment(url)[0]
    rest = base[len('file:'):]
    if rest.startswith('//'):
        netloc, _slash, path = rest[2:].partition('/')
        rest = '/' + path if netloc in ('', 'localhost') else '//%s/%s' % (netloc, path)
    return unquote(rest)


def _archive_ext(location):
    lower = location.lower()
    for ext in ARCHIVE_EXTENSIONS:
        if lower.endswith(ext):
            return ext
    return None


def _file_name(location, is_url_location):
    base = _strip_fragment(location)[0].split('?', 1)[0] if is_url_location else location
    name = base.rstrip('/').rsplit('/', 1)[-1]
    return unquote(name) if is_url_location else name


# ---- items ----------------------------------------------------------------------------------------

def _file_item(pk, text, origin, location, marker, is_url_location, req=None):
    """A wheel/sdist given by path or URL: name and version from the (unquoted) file name."""
    basename = _file_name(location, is_url_location)
    ext = _archive_ext(basename)
    path = None
    if not is_url_location:
        path = location
    elif location.lower().startswith('file:'):
        path = url_path(location)
    if ext == '.whl':
        try:
            name, version, _build, _tags = pk.parse_wheel_filename(basename)
        except (pk.InvalidWheelFilename, pk.InvalidVersion) as exc:
            raise RequirementError('%s: not a valid wheel file name %r: %s' % (origin, basename, exc),
                                   'not a valid wheel file name')
        item = Item('file', text, origin, req=req, name=pk.canonicalize_name(str(name)), version=str(version),
                    url=location if is_url_location else None, path=path, marker=marker)
        return item
    stem = basename[:-len(ext)] if ext else basename
    match = _SDIST.match(stem)
    if match:
        try:
            version = str(pk.Version(match.group('version')))
            return Item('file', text, origin, req=req, name=pk.canonicalize_name(match.group('name')), version=version,
                        url=location if is_url_location else None, path=path, marker=marker)
        except pk.InvalidVersion:
            pass
    return Item('archive', text, origin, req=req, url=location if is_url_location else None, path=path, marker=marker)


def parse_marker(pk, text, origin):
    if not text:
        return None
    try:
        return pk.Marker(text)
    except pk.InvalidMarker as exc:
        raise RequirementError('%s: invalid environment marker %r: %s' % (origin, text, exc),
                               'an invalid environment marker')


def _installable_dir(path):
    return os.path.isfile(os.path.join(path, 'pyproject.toml')) or os.path.isfile(os.path.join(path, 'setup.py'))


def _dir_item(text, origin, path, marker, req=None, name=None, extras=(), url=None):
    if not _installable_dir(path):
        raise RequirementError("%s: directory %s is not installable: it has neither setup.py nor pyproject.toml"
                               % (origin, path), 'a directory that is not installable (no setup.py, no pyproject.toml)')
    return Item('dir', text, origin, req=req, name=name, path=os.path.normpath(path), marker=marker, extras=extras,
                url=url)


def link_item(pk, text, origin, location, marker, req=None, name=None, extras=()):
    """Classify a URL (given alone or as `name @ url`), with its #subdirectory= fragment."""
    item = _link_item(pk, text, origin, location, marker, req, name, extras)
    item.subdirectory = _strip_fragment(location)[1].get('subdirectory') or None
    return item


def _link_item(pk, text, origin, location, marker, req=None, name=None, extras=()):
    scheme = location.split(':', 1)[0].lower()
    if '+' in scheme and scheme.split('+', 1)[0] in VCS_NAMES:
        vcs, url, rev, params = split_vcs_url(location)
        egg = params.get('egg')
        item = Item('vcs', text, origin, req=req, name=name or (pk.canonicalize_name(egg) if egg else None),
                    url=url, vcs=vcs, rev=rev, marker=marker, extras=extras)
        return item
    if scheme == 'file':
        local = url_path(location)
        if os.path.isdir(local):
            return _dir_item(text, origin, local, marker, req=req, name=name, extras=extras, url=location)
        if not _archive_ext(_file_name(location, True)):
            # pip would open it as an archive and fail with its raw unpacking error (file:///etc/passwd).
            raise RequirementError('%s: %s is a local file that is neither a wheel, an sdist archive (.tar.gz, .zip) nor '
                                   'a project directory, so pip cannot install it; give the path of a .whl or of a '
                                   'project directory' % (origin, location),
                                   'a local file that is neither a wheel, an sdist archive nor a project directory')
    if _archive_ext(_file_name(location, True)):
        item = _file_item(pk, text, origin, location, marker, True, req=req)
        item.extras = tuple(sorted(extras))
        if name and item.name and item.name != name:
            raise RequirementError('%s: the URL names %s, not %s' % (origin, item.name, name),
                                   'a URL whose file is another distribution than the name before it')
        return item
    egg = _strip_fragment(location)[1].get('egg')
    return Item('archive', text, origin, req=req, name=name or (pk.canonicalize_name(egg) if egg else None),
                url=location, marker=marker, extras=extras)


def _looks_like_path(text):
    return os.sep in text or text.startswith('.') or (os.altsep is not None and os.altsep in text)


def classify(pk, text, origin, base_dir=None, editable=False):
    """Turn one requirement string into an Item, as pip's parse_req_from_line reads it.

    base_dir: the directory pip runs in (relative paths are relative to it, like pip; default: cwd).
    Raises RequirementError with the origin, what is wrong and, where it helps, how to fix it.
    """
    text = text.strip()
    if not text:
        raise RequirementError('%s: empty requirement' % origin)
    base_dir = base_dir or os.getcwd()
    if editable:
        return _editable_item(pk, text, origin, base_dir)

    sep = '; ' if is_url(text) else ';'
    marker = None
    head = text
    if sep in text:
        head, marker_text = text.split(sep, 1)
        marker = parse_marker(pk, marker_text.strip(), origin)
    head = head.strip()

    if is_url(head):
        return link_item(pk, text, origin, head, marker)

    path = os.path.normpath(os.path.join(base_dir, head))
    match = _EXTRAS.match(path)
    plain, extras = (match.group(1).rstrip(), _extras(match.group(2))) if match else (path, ())
    if _looks_like_path(head) and os.path.isdir(plain):
        return _dir_item(text, origin, plain, marker, extras=extras)
    if _archive_ext(plain):
        if os.path.isfile(plain):
            item = _file_item(pk, text, origin, plain, marker, False)
            item.extras = tuple(sorted(extras))
            return item
        before_at = head.split('@', 1)
        if not (len(before_at) == 2 and not _looks_like_path(before_at[0])):
            raise RequirementError('%s: %s looks like a file name, but %s does not exist' % (origin, head, plain),
                                   'a file name of a file that does not exist')
    elif _looks_like_path(head) and not _SCHEME.match(head) and ' @ ' not in head and '@' not in head.split('/')[0]:
        if os.path.exists(plain):
            raise RequirementError("%s: %s is neither an installable directory nor an archive" % (origin, head),
                                   'a path that is neither an installable directory nor an archive')
        raise RequirementError('%s: %s looks like a path, but %s does not exist' % (origin, head, plain),
                               'a path that does not exist')

    try:
        req = pk.Requirement(head)
    except pk.InvalidRequirement as exc:
        hint = ''
        if '=' in head and not re.search(r'[<>!=~]=|===|[<>]', head):
            hint = ' (= is not a valid operator; did you mean ==?)'
        raise RequirementError('%s: invalid requirement %r: %s%s' % (origin, head, exc, hint),
                               'not a valid requirement (PEP 508: a name, then extras, versions or a marker)%s' % hint)
    if req.marker is not None:
        marker = req.marker
    name = pk.canonicalize_name(req.name)
    if req.url:
        return link_item(pk, text, origin, req.url, marker, req=req, name=name, extras=req.extras)
    return Item('req', text, origin, req=req, name=name, marker=marker, extras=req.extras)


def _extras(text):
    return tuple(sorted(e.strip().lower() for e in text.strip('[]').split(',') if e.strip()))


def _editable_item(pk, text, origin, base_dir):
    """-e <path[extras]> | -e <vcs url>#egg=name | -e name @ <url>, as pip's parse_editable."""
    marker = None
    try:
        req = pk.Requirement(text)
    except pk.InvalidRequirement:
        req = None
    if req is not None and req.url:
        location, name, extras, marker = req.url, pk.canonicalize_name(req.name), req.extras, req.marker
    else:
        match = _EXTRAS.match(text)
        location, extras = (match.group(1).rstrip(), _extras(match.group(2))) if match else (text, ())
        name = None
        local = os.path.normpath(os.path.join(base_dir, location))
        if not _SCHEME.match(location) and os.path.isdir(local):
            item = _dir_item(text, origin, local, None, extras=extras)
            item.kind = 'editable'
            return item
    if location.lower().startswith('file:'):
        local = url_path(location)
        item = _dir_item(text, origin, local, marker, name=name, extras=extras)
        item.kind = 'editable'
        return item
    scheme = location.split(':', 1)[0].lower()
    if not ('+' in scheme and scheme.split('+', 1)[0] in VCS_NAMES):
        raise RequirementError('%s: %s is not a valid editable requirement: give a local project directory or a '
                               'VCS URL (git+https://...)' % (origin, text), 'not a valid editable requirement')
    vcs, url, rev, params = split_vcs_url(location)
    egg = params.get('egg')
    name = name or (pk.canonicalize_name(egg) if egg else None)
    if not name:
        raise RequirementError("%s: cannot tell the name of %s: write it as 'name @ %s'" % (origin, text, location),
                               'an editable VCS URL without a name')
    return Item('editable', text, origin, req=req, name=name, url=url, vcs=vcs, rev=rev, marker=marker, extras=extras)


def check_name_entry(pk, text, origin, base_dir=None):
    """A `name` entry of the module: a requirement, an existing path or a URL, never a pip option."""
    if not isinstance(text, str):
        text = str(text)
    stripped = text.strip()
    if stripped.startswith('-'):
        raise RequirementError('%s: %r starts with "-": a name is a requirement, a path or a URL, never a pip option '
                               '(use requirements, constraints, index_url, ... or extra_args)' % (origin, text))
    if '\n' in text or '\r' in text or '\0' in text:
        raise RequirementError('%s: %r contains a line break or NUL: give one requirement per list entry'
                               % (origin, text))
    return classify(pk, stripped, origin, base_dir)


# ---- requirements files -----------------------------------------------------------------------------

def decode_requirements(data):
    """pip's _decode_req_file: a BOM wins, then a PEP 263 coding line in the first two lines, then UTF-8."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return data[len(bom):].decode(encoding)
    for line in data.split(b'\n')[:2]:
        if line[0:1] == b'#':
            match = _PEP263.search(line)
            if match is not None:
                return data.decode(match.group(1).decode('ascii'))
    return data.decode('utf-8')


def logical_lines(text):
    """pip's join_lines + ignore_comments: yields (first line number, line)."""
    joined = []
    pending = []
    first = None
    for number, line in enumerate(text.splitlines(), 1):
        if not line.endswith('\\') or _COMMENT.match(line):
            if _COMMENT.match(line):
                line = ' ' + line  # so that the comment is always removed below
            if pending:
                pending.append(line)
                joined.append((first, ''.join(pending)))
                pending = []
            else:
                joined.append((number, line))
        else:
            if not pending:
                first = number
            pending.append(line.strip('\\'))
    if pending:
        joined.append((first, ''.join(pending)))
    for number, line in joined:
        line = _COMMENT.sub('', line).strip()
        if line:
            yield number, line


def expand_env(line, environ):
    """pip's expand_env_variables: ${NAME} from the environment pip runs with; unset or empty stays."""
    for var, name in _ENV_VAR.findall(line):
        value = environ.get(name)
        if value:
            line = line.replace(var, value)
    return line


def parse_option_line(line, origin):
    """An option line of a requirements file as pip reads it: shlex-split, then optparse with pip's file options.

    Returns [(long option, value or None)]: `-r x`, `-rx`, `--requirement=x`, `--req x`, `-c "a b.txt"` alike.
    """
    try:
        tokens = shlex.split(line)
    except ValueError as exc:
        raise RequirementError('%s: cannot split the options %r: %s' % (origin, line, exc),
                               'an option line that cannot be split (unbalanced quotes)')
    out = []
    while tokens:
        token = tokens.pop(0)
        if token.startswith('--'):
            name, sep, value = token.partition('=')
            hits = [o for o in FILE_OPTIONS if o == name] or [o for o in FILE_OPTIONS if o.startswith(name)]
            if len(hits) != 1:
                raise RequirementError('%s: %s option in requirements file: %s' % (
                    origin, 'ambiguous' if hits else 'unsupported', name),
                    'an ambiguous option' if hits else 'an option pip does not read in a requirements file')
            option = hits[0]
            if not FILE_OPTIONS[option]:
                if sep:
                    raise RequirementError('%s: %s takes no value' % (origin, option))
                out.append((option, None))
                continue
            if not sep:
                if not tokens:
                    raise RequirementError('%s: %s needs a value' % (origin, option))
                value = tokens.pop(0)
            out.append((option, value))
        elif token.startswith('-') and token[:2] in FILE_SHORT:
            option = FILE_SHORT[token[:2]]
            value = token[2:]
            if not value:
                if not tokens:
                    raise RequirementError('%s: %s needs a value' % (origin, token))
                value = tokens.pop(0)
            out.append((option, value))
        else:
            raise RequirementError('%s: unsupported option in requirements file: %s' % (origin, token),
                                   'an option pip does not read in a requirements file')
    return out


def _file_value(value):
    """A -r/-c value: a path, or a file: URL (pip reads those too)."""
    if value.lower().startswith('file:'):
        return url_path(value)
    return value


def _requirement_part(line):
    """pip's break_args_options: the requirement is everything before the first token starting with '-'."""
    kept = []
    for token in line.split(' '):
        if token.startswith('-'):
            break
        kept.append(token)
    return ' '.join(kept).strip()


def read_requirements_file(pk, path, environ=None, constraint=False, _seen=None, read=None, base_dir=None,
                           options=None, trust=None, _quote=True):
    """Parse a requirements (or constraints) file the way pip does.

    Returns (items, constraint_items). Nested -r files keep the kind of their parent; -c files
    are always constraints. Relative -r/-c paths are relative to the including file; relative
    project paths are relative to base_dir (pip's working directory), like pip.
    environ: the environment pip runs with (for ${VAR}); options: a list that collects the option
    lines (text) so callers can find credentials in them. trust: a FileTrust of the user running pip - a file a line
    includes must be that user's own (not read otherwise), and a line is shown in a message only when this file is
    that user's own; without one every file is read and this file's lines are shown. A nested file's lines are never
    shown.
    """
    environ = os.environ if environ is None else environ
    read = read or _read_bytes
    seen = set() if _seen is None else _seen
    real = os.path.realpath(path)
    if real in seen:
        return [], []
    seen.add(real)
    quote = _quote and (trust is None or not trust.problem(path))
    try:
        text = decode_requirements(read(path))
    except (IOError, OSError) as exc:
        raise RequirementError('cannot read %s: %s' % (path, (getattr(exc, 'strerror', None) or str(exc)).lower()))
    except UnicodeDecodeError as exc:
        raise RequirementError('cannot decode %s: it is not %s text (byte %d) (save it as UTF-8)'
                               % (path, exc.encoding, exc.start))
    except LookupError as exc:
        raise RequirementError('cannot decode %s: %s (save it as UTF-8)' % (path, exc) if quote else
                               'cannot decode %s: its coding line names an unknown encoding (save it as UTF-8)' % path)
    items, constraints = [], []
    base = os.path.dirname(os.path.abspath(path))
    for number, line in logical_lines(text):
        origin = '%s:%d' % (path, number)
        try:
            nested = _read_line(pk, expand_env(line, environ), origin, constraint, base, base_dir, options, items,
                                constraints)
        except RequirementError as exc:
            if quote:
                raise
            raise RequirementError('%s: %s (the line is not shown: %s is not a file of yours that the task names)'
                                   % (origin, exc.what or UNSHOWN, path), exc.what)
        for value, is_constraint in nested:
            problem = trust.problem(value) if trust is not None else ''
            if problem:
                raise RequirementError(
                    '%s: the file it includes, %s, %s. A file another user can change could make pip install (and '
                    'build) anything with your rights, so it is not read. Fix: copy what you need from it into a '
                    'file of your own' % (origin, value, problem), 'a file it includes %s' % problem)
            sub_items, sub_constraints = read_requirements_file(
                pk, value, environ, constraint or is_constraint, seen, read, base_dir, options, trust, _quote=False)
            items.extend(sub_items)
            constraints.extend(sub_constraints)
    return items, constraints


def _read_line(pk, line, origin, constraint, base, base_dir, options, items, constraints):
    """One logical line of a requirements file: its items and constraints appended, the files it includes returned
    as [(path, whether a -c)]."""
    nested = []
    if line.startswith('-'):
        if options is not None:
            options.append(line)
        for opt, value in parse_option_line(line, origin):
            if opt in FILE_REFUSED:
                raise RequirementError(
                    '%s: %s%s is refused: a requirements or constraints file must not change where '
                    'distributions come from; remove the line and use the option %s of the task'
                    % (origin, opt, ('=' + value) if value is not None else '', FILE_REFUSED[opt]),
                    '%s is refused: a requirements or constraints file must not change where distributions come '
                    'from; remove the line and use the option %s of the task' % (opt, FILE_REFUSED[opt]))
            if opt in ('--requirement', '--constraint'):
                value = _file_value(value)
                if _SCHEME.match(value) and not os.path.exists(value):
                    raise RequirementError('%s: remote requirement files are not supported: %s' % (origin, value),
                                           'a remote requirements file, which is not supported')
                nested.append((value if os.path.isabs(value) else os.path.join(base, value),
                               opt == '--constraint'))
            elif opt == '--editable':
                item = classify(pk, value, origin, base_dir, editable=True)
                if constraint:
                    raise RequirementError('%s: editable requirements are not allowed as constraints' % origin)
                items.append(item)
        return nested
    item = classify(pk, _requirement_part(line), origin, base_dir)
    if constraint:
        check_constraint(item)
        constraints.append(item)
    else:
        items.append(item)
    return nested


def check_constraint(item):
    """pip refuses unnamed, editable and extras constraints (check_invalid_constraint_type)."""
    if not item.name:
        raise RequirementError('%s: unnamed requirements are not allowed as constraints: %s' % (item.origin, item.text),
                               'an unnamed requirement, which is not allowed as a constraint')
    if item.kind == 'editable':
        raise RequirementError('%s: editable requirements are not allowed as constraints' % item.origin)
    if item.extras:
        raise RequirementError('%s: constraints cannot have extras: %s' % (item.origin, item.text),
                               'a requirement with extras, which a constraint cannot have')


def _read_bytes(path):
    with open(path, 'rb') as handle:
        return handle.read()


# ---- metadata of local artefacts ----------------------------------------------------------------------

def _headers(text):
    """Name/Version/Requires-Dist/Provides-Extra of a METADATA or PKG-INFO header block."""
    out = {}
    last = None
    for line in text.replace('\r\n', '\n').split('\n'):
        if not line.strip():
            break
        if line[:1] in (' ', '\t') and last is not None:
            out[last][-1] += ' ' + line.strip()
            continue
        key, sep, value = line.partition(':')
        if not sep:
            continue
        last = key.strip().lower()
        out.setdefault(last, []).append(value.strip())
    return out


def wheel_metadata(path):
    """(requires, provides_extra) from a local wheel's .dist-info/METADATA, or (None, None) if unreadable."""
    # Imported here: only a wheel given by path needs it, not every task's start-up.
    import zipfile  # pylint: disable=import-outside-toplevel
    try:
        with zipfile.ZipFile(path) as archive:
            names = [n for n in archive.namelist() if n.count('/') == 1 and n.endswith('.dist-info/METADATA')]
            if len(names) != 1:
                return None, None
            meta = _headers(archive.read(names[0]).decode('utf-8', 'replace'))
    except (IOError, OSError, zipfile.BadZipfile, KeyError):
        return None, None
    return meta.get('requires-dist') or [], meta.get('provides-extra') or []


def static_project_metadata(pk, src, toml_loads=None):
    """What a source tree provides when knowable without running its build backend.

    Returns a dict {name, version, requires, provides_extra, how} (None values when unknown) and
    `reason` when name/version are unknown. pyproject.toml [project] with a literal version wins
    (dependencies count only when not listed in `dynamic`); else a PKG-INFO at the root (an
    unpacked sdist).
    """
    out = {'name': None, 'version': None, 'requires': None, 'provides_extra': None, 'how': None, 'reason': None}
    pyproject = os.path.join(src, 'pyproject.toml')
    if os.path.isfile(pyproject):
        if toml_loads is None:
            out['reason'] = 'no TOML parser to read pyproject.toml'
        else:
            try:
                data = toml_loads(_read_bytes(pyproject).decode('utf-8'))
            except Exception as exc:  # pylint: disable=broad-except
                raise RequirementError('%s: cannot parse: %s' % (pyproject, exc))
            project = data.get('project') if isinstance(data, dict) else None
            dynamic = (project.get('dynamic') or []) if isinstance(project, dict) else []
            if isinstance(project, dict) and project.get('name') and project.get('version') \
                    and 'version' not in dynamic:
                out.update(name=pk.canonicalize_name(project['name']), version=str(pk.Version(str(project['version']))),
                           how='pyproject.toml')
                if 'dependencies' not in dynamic and 'optional-dependencies' not in dynamic:
                    requires = [str(r) for r in project.get('dependencies') or []]
                    extras = []
                    for extra, reqs in sorted((project.get('optional-dependencies') or {}).items()):
                        extras.append(extra)
                        for req in reqs:
                            requires.append(_with_extra(pk, str(req), extra))
                    out.update(requires=requires, provides_extra=extras)
                return out
            out['reason'] = 'pyproject.toml has no static [project] name and version'
    else:
        out['reason'] = 'no pyproject.toml'
    pkg_info = os.path.join(src, 'PKG-INFO')
    if os.path.isfile(pkg_info):
        try:
            meta = _headers(_read_bytes(pkg_info).decode('utf-8', 'replace'))
        except (IOError, OSError):
            meta = {}
        if meta.get('name') and meta.get('version'):
            out.update(name=pk.canonicalize_name(meta['name'][0]), version=meta['version'][0], how='PKG-INFO',
                       requires=meta.get('requires-dist') or [], provides_extra=meta.get('provides-extra') or [],
                       reason=None)
    return out


def _with_extra(pk, text, extra):
    """'dep; python_version<"3"' for extra 'x' -> 'dep ; (python_version<"3") and extra == "x"'."""
    try:
        req = pk.Requirement(text)
    except pk.InvalidRequirement:
        return text
    marker = 'extra == "%s"' % extra
    if req.marker is not None:
        marker = '(%s) and %s' % (req.marker, marker)
    req.marker = None
    return '%s ; %s' % (req, marker)


class Request(object):
    """What a pip_constrained task asks for, read exactly as pip will read it."""

    def __init__(self):
        self.items = []             # requested items, for the decision
        self.constraints = []       # constraint items
        self.options = []           # option lines of the files (they may carry index credentials)
        self.src = None             # the src Item (name None when only pip can tell)
        self.src_source = None      # where src's name/version came from
        self.targets = []           # positional arguments for pip


def read_request(pk, params, environ, base_dir, toml_loads=None, trust=None):
    """The module's request: name entries, the requirements file, constraints files and src.

    params: the module parameters (name, requirements, constraints, src; paths already absolute);
    environ: the environment pip will run with (for ${VAR}); base_dir: pip's working directory;
    trust: the FileTrust of the user running pip (read_requirements_file).
    """
    request = Request()
    names = [check_name_entry(pk, text, 'name[%d]' % index, base_dir)
             for index, text in enumerate(params.get('name') or [])]
    for path in params.get('constraints') or []:
        sub_items, sub_constraints = read_requirements_file(pk, path, environ, constraint=True, base_dir=base_dir,
                                                            options=request.options, trust=trust)
        request.constraints.extend(sub_items + sub_constraints)
    if params.get('requirements'):
        sub_items, sub_constraints = read_requirements_file(pk, params['requirements'], environ, base_dir=base_dir,
                                                            options=request.options, trust=trust)
        request.items.extend(sub_items)
        request.constraints.extend(sub_constraints)
    for item in request.constraints:
        check_constraint(item)
    for item in names + request.items:
        if item.kind in ('dir', 'editable') and item.path and not item.vcs:
            _add_static_metadata(pk, item, toml_loads)
    if params.get('src'):
        request.src = _src_item(pk, params['src'], names, toml_loads, request)
        request.items.append(request.src)
        request.targets = [params['src']]
    else:
        request.items = names + request.items
        request.targets = list(params.get('name') or [])
    return request


def _add_static_metadata(pk, item, toml_loads):
    """A project directory's name, version and dependencies, when its metadata is static."""
    meta = static_project_metadata(pk, item.path, toml_loads)
    if meta['name'] and (item.name is None or item.name == meta['name']):
        item.name, item.version = meta['name'], meta['version']
        item.requires, item.provides_extra = meta['requires'], meta['provides_extra']


def _src_item(pk, src, names, toml_loads, request):
    """src with the best known name, version and dependencies: the caller's name pin, else static metadata."""
    if not os.path.isdir(src):
        raise RequirementError('src %s is not a directory' % src)
    item = Item('dir', src, 'src', path=src)
    meta = static_project_metadata(pk, src, toml_loads)
    named = [i for i in names if i.kind == 'req' and i.req is not None]
    if named:
        pins = [s for s in named[0].req.specifier if s.operator in ('==', '===') and '*' not in s.version]
        item.name, item.version = named[0].name, (pins[0].version if pins else None)
        request.src_source = 'name'
        if meta['name'] == item.name and meta['version'] and item.version and \
                pk.Version(meta['version']) == pk.Version(item.version):
            item.requires, item.provides_extra = meta['requires'], meta['provides_extra']
        if item.version is None:
            item.name = None
    elif meta['name']:
        item.name, item.version = meta['name'], meta['version']
        item.requires, item.provides_extra = meta['requires'], meta['provides_extra']
        request.src_source = meta['how']
    return item
