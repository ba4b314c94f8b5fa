# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The release file's schema: every key of ``primus_pins``, its type, the values it allows and what it means.

One schema validates every release file (the shipped ones in the unit tests, a user's ``primus_release_file`` and the
shipped one on every run, before Ansible reads it) and documents the format (``tools/docs_tables.py`` renders it).
A key the schema does not know is refused, so a typo in a key is never silently ignored; a problem names the key
path, what was found and what is expected. Values are shown only as far as a message needs them, with credentials
in URLs redacted (a pins file is the user's own input; what is not a pins file at all is refused before this).

Leaf checks use ``packaging`` (requirements, versions, names) - the parser pip itself uses.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import posixpath
import re
from collections import OrderedDict
from collections.abc import Mapping

try:
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name
    from packaging.version import InvalidVersion, Version
    HAS_PACKAGING = True
except ImportError:  # pragma: no cover - ansible-core requires packaging on every controller
    HAS_PACKAGING = False

from ansible_collections.primus.trainenv.plugins.module_utils.common import redact_url
from ansible_collections.primus.trainenv.plugins.module_utils.safe_paths import visible

RELEASE_NAME = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$')
SOURCE_NAME = re.compile(r'^[a-z][a-z0-9_]{0,63}$')
FIX_NAME = SOURCE_NAME
COMMIT = re.compile(r'^[0-9a-f]{40}$')
SHORT_COMMIT = re.compile(r'^[0-9a-f]{7,39}$')
# A branch name git accepts and that cannot be read as an option or a revision expression.
BRANCH = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._/-]*$')
ENV_NAME = re.compile(r'^[A-Z_][A-Z0-9_]*$')
DIR_NAME = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._-]*$')
GFX = re.compile(r'^gfx[0-9a-f]{3,5}$')
MAJOR_MINOR = re.compile(r'^3\.[0-9]{1,2}$')
DOTTED = re.compile(r'^[0-9]+(\.[0-9]+){1,3}$')
# A path below a directory of the node: letters, digits and . _ + - in each component, never '..' or absolute.
RELATIVE_PATH = re.compile(r'^[A-Za-z0-9._+-]+(/[A-Za-z0-9._+-]+)*$')
FORBID = re.compile(r'^[a-z0-9*?\[\]._-]+((==|!=)[A-Za-z0-9*?.+_-]+)?$')
URL_BAD = re.compile(r'[\s\x00-\x1f\x7f"\'<>\\`]')
URL = re.compile(r'^(https?|file)://[^/?#]*(/[^?#]*)?$')
GIT_URL = re.compile(r'^(https?|ssh|file|git)://[^?#]+$|^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^?#]+$')
ARCH_PLACEHOLDER = '{arch}'
MAX_SHOWN = 80
TYPE_WORDS = {str: 'a string', list: 'a list', dict: 'a mapping', int: 'a number', float: 'a number',
              bool: 'true or false', type(None): 'nothing (an empty value)'}


def found_word(value):
    """What was found, for a message: the type, and a short scalar's value (redacted, escaped)."""
    if isinstance(value, bool) or value is None:
        return TYPE_WORDS[type(value) if value is not None else type(None)] + (
            '' if value is None else ' (%s)' % str(value).lower())
    if isinstance(value, (int, float)):
        return 'the number %s' % value
    if isinstance(value, str):
        shown = redact_url(value)
        if len(shown) > MAX_SHOWN:
            shown = shown[:MAX_SHOWN] + '...'
        return 'the string %s' % visible(shown)
    if isinstance(value, Mapping):
        return 'a mapping'
    if isinstance(value, list):
        return 'a list'
    return 'a value of another kind'


# --------------------------------------------------------------------------- leaf checks: '' or why not


def _str_check(pattern, what):
    def check(value):
        return '' if pattern.match(value) else 'not %s' % what
    return check


def _requirement(value, template=False):
    text = value.replace(ARCH_PLACEHOLDER, 'gfx942') if template else value
    if template and ARCH_PLACEHOLDER not in value:
        return 'not a per-arch requirement: it has no %s' % ARCH_PLACEHOLDER
    if text.startswith('-'):
        return 'an option, not a requirement'
    if text.startswith('git+'):
        good = re.match(r'^(https?|ssh|file|git)://[^/\s]', text[4:]) and not URL_BAD.search(text)
        return '' if good else 'not a git+ URL pip can install'
    try:
        Requirement(text)
    except InvalidRequirement as exc:
        return 'not a requirement (%s)' % str(exc).splitlines()[0]
    return ''


def requirement(value):
    return _requirement(value)


def arch_requirement(value):
    return _requirement(value, template=True)


def pinned_requirement(value):
    """name==version, nothing else: the pip install of such a pin takes exactly one distribution."""
    found = _requirement(value)
    if found:
        return found
    req = Requirement(value)
    specs = list(req.specifier)
    if len(specs) != 1 or specs[0].operator != '==' or '*' in specs[0].version or req.marker or req.url:
        return 'not an exact pin (name==version)'
    return ''


def release_name(value):
    if not RELEASE_NAME.match(value) or '..' in value:
        return "not a release name (1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit)"
    return ''


def version(value):
    try:
        Version(value)
    except InvalidVersion:
        return 'not a PEP 440 version'
    return ''


def dist_name(value):
    if not re.match(r'^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$', value):
        return 'not a distribution name'
    return ''


def prefix_name(value):
    return '' if re.match(r'^[a-z0-9][a-z0-9._-]*$', value) else 'not a lower-case distribution name prefix'


def url(value):
    if URL_BAD.search(value) or not URL.match(value):
        return 'not an http(s) or file URL without whitespace, quotes, query or fragment'
    return ''


def git_url(value):
    if value.startswith('-') or URL_BAD.search(value) or not GIT_URL.match(value):
        return 'not a git repository URL (https://, ssh://, git://, file:// or user@host:path)'
    return ''


def relative_path(value):
    if value.startswith('/') or not RELATIVE_PATH.match(value) or any(
            part in ('.', '..') for part in value.split('/')) or posixpath.normpath(value) != value:
        return ("not a relative path that stays inside its directory (letters, digits and . _ + - per component; "
                "no '..', no leading '/')")
    return ''


def forbid_pattern(value):
    return '' if FORBID.match(value) else 'not a pip_forbid pattern (name glob, optionally ==version-glob or !=version-glob)'


def ref(value):
    return '' if COMMIT.match(value) or SHORT_COMMIT.match(value) or BRANCH.match(value) else 'not a commit or a branch'


# --------------------------------------------------------------------------- the node types


class Node(object):
    """A schema node: what a value must be (``kind``: the words of the expected type), and its meaning (``doc``)."""

    kind = ''

    def __init__(self, doc, example=None):
        self.doc = doc
        self.example = example

    def check(self, value, path):
        """[(path, problem)] of value."""
        raise NotImplementedError

    def expected(self):
        return self.kind + (' (such as %s)' % self.example if self.example else '')

    def rows(self, path):
        """(path, expected, required, doc) of this node and its children, for the reference page."""
        return [(path, self.kind, self.doc)]


class Scalar(Node):

    def __init__(self, doc, kind='a string', check=None, example=None, types=(str,)):
        super(Scalar, self).__init__(doc, example)
        self.kind = kind
        self.types = types
        self.test = check

    def check(self, value, path):
        if isinstance(value, bool) and bool not in self.types or not isinstance(value, self.types):
            return [(path, 'is %s, expected %s' % (found_word(value), self.expected()))]
        if self.test is not None and isinstance(value, str):
            why = self.test(value) if value else 'empty'
            if why:
                return [(path, 'is %s: %s; expected %s' % (found_word(value), why, self.expected()))]
        return []


class Choice(Scalar):

    def __init__(self, doc, choices):
        super(Choice, self).__init__(doc, kind='one of %s' % ', '.join(choices))
        self.choices = tuple(choices)

    def check(self, value, path):
        if value not in self.choices or not isinstance(value, str):
            return [(path, 'is %s, expected %s' % (found_word(value), self.kind))]
        return []


class Seq(Node):

    def __init__(self, item, doc, unique=False, example=None):
        super(Seq, self).__init__(doc, example)
        self.item = item
        self.unique = unique
        self.kind = 'a list of ' + re.sub(r'^an? ', '', item.kind) + ('s' if not item.kind.endswith(')') else '')

    def check(self, value, path):
        if not isinstance(value, list):
            return [(path, 'is %s, expected %s' % (found_word(value), self.expected()))]
        problems = []
        for index, entry in enumerate(value):
            problems += self.item.check(entry, '%s[%d]' % (path, index))
        if self.unique and not problems:
            seen = set()
            for index, entry in enumerate(value):
                key = canonicalize_name(entry) if isinstance(entry, str) else repr(entry)
                if key in seen:
                    problems.append(('%s[%d]' % (path, index), 'repeats %s' % found_word(entry)))
                seen.add(key)
        return problems

    def rows(self, path):
        rows = [(path, self.kind, self.doc)]
        if isinstance(self.item, (Map, Table)):
            rows += self.item.rows(path + '[]')
        return rows


class Field(object):

    def __init__(self, node, required=True):
        self.node = node
        self.required = required


class Map(Node):
    """A mapping of known keys; any other key is refused. one_of: groups of keys of which exactly one group is given
    (each group whole)."""

    kind = 'a mapping'

    def __init__(self, fields, doc, one_of=()):
        super(Map, self).__init__(doc)
        self.fields = OrderedDict(fields)
        self.one_of = tuple(one_of)

    def check(self, value, path):
        if not isinstance(value, Mapping):
            return [(path, 'is %s, expected a mapping of %s' % (found_word(value), ', '.join(self.fields)))]
        problems = []
        for key in value:
            if key not in self.fields:
                close = [k for k in self.fields if _close(str(key), k)]
                problems.append(('%s.%s' % (path, visible(str(key)).strip("'")),
                                 'is not a key the schema knows (the keys of %s: %s)%s' % (
                                     path, ', '.join(self.fields), '; did you mean %s?' % close[0] if close else '')))
        for key, field in self.fields.items():
            if key in value:
                problems += field.node.check(value[key], '%s.%s' % (path, key))
            elif field.required:
                problems.append(('%s.%s' % (path, key), 'is missing: expected %s' % field.node.expected()))
        if self.one_of:
            given = [group for group in self.one_of if any(k in value for k in group)]
            if len(given) != 1:
                problems.append((path, 'must have exactly one of %s' % ' or '.join(
                    '+'.join(group) for group in self.one_of)))
            elif not all(k in value for k in given[0]):
                problems.append((path, 'must have all of %s together' % ', '.join(given[0])))
        return problems

    def rows(self, path):
        rows = [(path, self.kind, self.doc)] if path else []
        for key, field in self.fields.items():
            child = field.node.rows('%s.%s' % (path, key) if path else key)
            first = child[0]
            child[0] = (first[0], first[1] + ('' if field.required else ', optional'), first[2])
            rows += child
        return rows


class Table(Node):
    """A mapping whose keys are names (checked by key_check) and whose values are all of one node."""

    def __init__(self, key_check, key_words, value, doc):
        super(Table, self).__init__(doc)
        self.key_check = key_check
        self.key_words = key_words
        self.value = value
        self.kind = 'a mapping of %s to %s' % (key_words, re.sub(r'^an? ', '', value.kind))

    def check(self, value, path):
        if not isinstance(value, Mapping):
            return [(path, 'is %s, expected %s' % (found_word(value), self.kind))]
        problems = []
        for key, entry in value.items():
            if not isinstance(key, str) or self.key_check(key):
                problems.append((path, 'has the key %s, which is not %s' % (
                    visible(str(key)), self.key_words)))
                continue
            problems += self.value.check(entry, '%s.%s' % (path, key))
        return problems

    def rows(self, path):
        rows = [(path, self.kind, self.doc)]
        if isinstance(self.value, (Map, Table)):
            rows += self.value.rows(path + '.<name>')[1:] if isinstance(self.value, Map) else self.value.rows(
                path + '.<name>')
        return rows


def _norm(text):
    return re.sub(r'[-_]', '', text.lower())


def _close(given, known):
    """A likely typo: one edit apart, or the same ignoring case and - / _."""
    if _norm(given) == _norm(known):
        return True
    if abs(len(given) - len(known)) > 1:
        return False
    if len(given) == len(known):
        return sum(a != b for a, b in zip(given, known)) == 1
    short, long_ = sorted((given, known), key=len)
    return any(long_[:i] + long_[i + 1:] == short for i in range(len(long_)))


def _env_key(key):
    return '' if ENV_NAME.match(key) else 'no'


# --------------------------------------------------------------------------- the schema

REQ = Scalar('A requirement as pip takes it.', 'a requirement', requirement, 'torch==2.12.0+rocm7.15.0a20260720')
PIN = Scalar('An exact pin.', 'an exact pin', pinned_requirement, 'tensorstore==0.1.45')
ARCH_REQ = Scalar('A requirement with {arch} for each GPU arch.', 'a per-arch requirement', arch_requirement,
                  'amd-torch-device-{arch}==2.12.0+rocm7.15.0a20260720')
NAME = Scalar('A distribution name.', 'a distribution name', dist_name, 'tilelang')
ARCH = Scalar('A GPU arch.', 'a gfx arch name', _str_check(GFX, 'a gfx arch name'), 'gfx942')
VERSION = Scalar('A PEP 440 version.', 'a version', version, '2.12.0+rocm7.15.0a20260720')


def _reqs(doc):
    return Seq(REQ, doc)


BUILD = Map([
    ('distribution', Field(Scalar('What the build installs: the stage is done while it is installed from this build '
                                  'key.', 'a distribution name', dist_name, 'flash_attn'))),
    ('isolation', Field(Scalar("pip's build isolation (false: --no-build-isolation, the build sees the venv's torch).",
                               'true or false', types=(bool,)))),
    ('archs', Field(Scalar('The result depends on the GPU arch list (which is then part of the build key).',
                           'true or false', types=(bool,)))),
    ('arch_env', Field(Table(_env_key, 'variable names', Choice(
        'list: the arch list as gfx942;gfx950, csv: as gfx942,gfx950.', ('list', 'csv')),
        'Variables set to the arch list for this build only.'), required=False)),
    ('env', Field(Table(_env_key, 'variable names', Scalar('The value.', 'a string'),
                        'Further variables for this build only.'), required=False)),
    ('no_deps', Field(Scalar('Install the built wheel without its dependencies (pip --no-deps).', 'true or false',
                             types=(bool,)), required=False)),
    ('uninstall', Field(Seq(NAME, 'Distributions removed before the stage builds (another name of the same '
                                  'package).'), required=False)),
], 'How the component is built into a wheel (roles/source_build); a source without it is a checkout only.')

PATCH = Map([
    ('file', Field(Scalar('The file, relative to the checkout.', 'a relative path', relative_path,
                          'torchtune/modules/moe/utils.py'))),
    ('before', Field(Scalar('The text the file holds (the patch fails when it is not there).', 'a string'))),
    ('after', Field(Scalar('What it becomes.', 'a string'))),
], 'A verified text patch applied after checkout.')

SOURCE = Map([
    ('repo', Field(Scalar('The git repository.', 'a git URL', git_url, 'https://github.com/ROCm/aiter.git'))),
    ('ref', Field(Scalar('The commit (40 hex), short commit (7-39 hex) or branch of ref_kind.', 'a commit or branch',
                         ref, '0f3c58e6edb6754940bcf9fd5f09ccb6f389f52e'))),
    ('ref_kind', Field(Choice('commit: the full commit; branch: floating, resolved once to a commit and recorded; '
                              'short_commit: only an abbreviated commit is known, a run that needs the checkout stops '
                              'until the full commit is given (primus_te_source_ref for te) or tools/relock.py '
                              '--resolve-commits writes it.', ('commit', 'branch', 'short_commit')))),
    ('submodules', Field(Scalar("The checked-out commit's submodules are initialised.", 'true or false',
                                types=(bool,)))),
    ('patches', Field(Seq(PATCH, 'Verified text patches.'), required=False)),
    ('build', Field(BUILD, required=False)),
    ('keep', Field(Scalar('The checkout lives under the workspace and is updated in place.', 'true or false',
                          types=(bool,)), required=False)),
    ('dir', Field(Scalar("The kept checkout's directory name.", 'a directory name',
                         _str_check(DIR_NAME, 'a directory name'), 'Primus'), required=False)),
], 'A git-built component.')

FIX = Map([
    ('name', Field(Scalar('What the fix is called in the run, the manifest and verify.', 'a name',
                          _str_check(FIX_NAME, 'a lower-case name of letters, digits and _'), 'comgr_single_copy'))),
    ('stage', Field(Scalar('The stage that installs the file; the fix is applied by it and re-applied after every '
                           'later stage that ran pip.', 'a stage name', _str_check(SOURCE_NAME, 'a stage name'),
                           'torch'))),
    ('path', Field(Scalar("The installed file, relative to the venv's site-packages.", 'a relative path',
                          relative_path, '_rocm_sdk_core/lib/libamd_comgr.so.3'))),
    ('link_to', Field(Scalar('Replace the file by a link to this one (relative to site-packages; it must exist).',
                             'a relative path', relative_path, '_rocm_sdk_devel/lib/libamd_comgr.so.3'),
                      required=False)),
    ('before', Field(Scalar('Replace this line of the file...', 'a string'), required=False)),
    ('after', Field(Scalar('...by this one.', 'a string'), required=False)),
], 'A fix to a file a wheel installs: a link (link_to) or a line replaced (before, after).',
    one_of=(('link_to',), ('before', 'after')))

PINS = Map([
    ('release', Field(Scalar('The release name; it names the modulefile (`primus/<release>`) and a base records it.',
                             'a release name', release_name, 'v26.5'))),
    ('derived_from', Field(Scalar("The upstream file the pins come from (written to the manifest).", 'a string',
                                  example='Dockerfile.primus-v26.5'))),
    ('python_version', Field(Scalar('The venv\'s Python, major.minor.', 'a major.minor version',
                                    _str_check(MAJOR_MINOR, 'a major.minor Python version'), '"3.12"'))),
    ('indexes', Field(Map([
        ('pypi', Field(Scalar('PyPI (named so that every pip call says where it resolves from).', 'a URL', url,
                              'https://pypi.org/simple'))),
        ('torch', Field(Scalar("The ROCm nightly index: --index-url (never extra) for the ROCm stack.", 'a URL', url,
                               'https://rocm.nightlies.amd.com/whl-multi-arch'))),
        ('te', Field(Scalar("The TransformerEngine staging index (serves only TE).", 'a URL', url))),
    ], 'The package indexes.'))),
    ('pip_forbid', Field(Seq(Scalar('A pattern.', 'a pattern', forbid_pattern, 'nvidia-*-cu1[0-9]'),
                             "What marks a CUDA torch stack; no install may bring it in (pip_constrained's forbid)."))),
    ('uv', Field(Map([
        ('requirement', Field(Scalar('uv from PyPI.', 'an exact pin', pinned_requirement, 'uv==0.13.9'))),
        ('python_request', Field(Scalar("What `uv python install` asks for.", 'a major.minor version',
                                        _str_check(MAJOR_MINOR, 'a major.minor Python version'), '"3.12"'))),
        ('installer_url', Field(Scalar("uv's installer (only with primus_uv_bootstrap: installer).", 'a URL', url))),
    ], 'uv, which provisions CPython when no interpreter is found.'))),
    ('drift_superseded', Field(Seq(NAME, 'Pins a later stage replaces by design: the drift report does not hold a '
                                         'host to them.', unique=True), required=False)),
    ('versions', Field(Map([(key, Field(Scalar('The %s version.' % key, 'a version', version,
                                               '2.12.0+rocm7.15.0a20260720')))
                            for key in ('torch', 'rocm_sdk', 'torchaudio', 'torchvision', 'apex',
                                        'transformer_engine')],
                           'The nightly versions, as the stages and the re-lock helper read them.'))),
    ('venv', Field(Map([
        ('bootstrap', Field(Seq(PIN, "Installed first (pip itself)."))),
        ('packages', Field(_reqs('The build front-end pins of the venv stage.'))),
    ], 'The venv stage.'))),
    ('torch', Field(Map([
        ('sdk_packages', Field(_reqs('The ROCm SDK, installed first from the ROCm index with --pre (empty or absent: '
                                     'it comes with packages).'), required=False)),
        ('sdk_device_packages', Field(Seq(ARCH_REQ, "The SDK's per-arch packages, installed with sdk_packages."),
                                      required=False)),
        ('pre_packages', Field(_reqs('From PyPI before the torch resolve (the ROCm index does not serve them).'))),
        ('packages', Field(_reqs('From the ROCm index only, with --pre.'))),
        ('device_packages', Field(Seq(ARCH_REQ, 'One of each per GPU arch, with packages.'))),
        ('device_archs', Field(Seq(ARCH, 'The archs the ROCm index publishes device wheels for.', unique=True))),
        ('constraint_names', Field(Seq(NAME, 'Written to pip-constraints.txt at their installed versions.',
                                       unique=True))),
        ('default_archs', Field(Seq(ARCH, 'The archs when no GPU is detected and none is given.', unique=True))),
    ], 'The torch stage.'))),
    ('installed_fixes', Field(Seq(FIX, 'Fixes to installed files, applied after the stage that installs them, '
                                       're-applied when a later pip run put the original back, shown by --check '
                                       '--diff, recorded in the manifest and checked by verify.'), required=False)),
    ('te', Field(Map([
        ('min_glibc_for_wheel', Field(Scalar('The wheel mode needs this glibc.', 'a dotted version',
                                             _str_check(DOTTED, 'a dotted version'), '"2.38"'))),
        ('min_glibcxx_for_wheel', Field(Scalar('...and this GLIBCXX.', 'a dotted version',
                                               _str_check(DOTTED, 'a dotted version'), '"3.4.32"'))),
        ('deps', Field(_reqs('Installed from PyPI first (the TE index serves only TE).'))),
        ('source_deps', Field(_reqs('Also for the source build.'))),
        ('wheel', Field(Scalar('The TE wheel of the staging index.', 'an exact pin', pinned_requirement))),
        ('replaced_by_source', Field(Seq(NAME, 'Removed before a source build.'))),
    ], 'The te stage.'))),
    ('pydeps', Field(Map([
        ('packages', Field(_reqs('The Python dependencies.'))),
        ('build_from_sdist', Field(Seq(PIN, 'Pins with no cp312 wheel: built once per build key into the wheel '
                                            'cache (each also in packages).'))),
        ('nltk_data', Field(Seq(Scalar('An nltk package id.', 'an nltk package id',
                                       _str_check(re.compile(r'^[a-z0-9_]+$'), 'an nltk package id'), 'punkt_tab'),
                                'nltk data packages, downloaded into $PRIMUS_BASE/nltk_data.'))),
    ], 'The pydeps stage.'))),
    ('mamba', Field(Map([
        ('pre_packages', Field(_reqs('Installed before the build and with the built wheel.'))),
        ('purge_prefixes', Field(Seq(Scalar('A prefix.', 'a name prefix', prefix_name, 'quack-kernels'),
                                     'primus_mamba_cutlass purge: distributions with these prefixes are removed after '
                                     'the build.'))),
    ], 'The mamba stage.'))),
    ('turbo', Field(Map([
        ('extra_packages', Field(_reqs('Installed after the requirements (Turbo is built --no-deps).'))),
        ('requirements_skip', Field(Seq(NAME, "Names of Primus-Turbo's requirements.txt not installed."))),
        ('rocshmem_placeholder', Field(Scalar('ROCSHMEM_HOME when none is given: a path under PRIMUS_BASE that must '
                                              'not exist (it disables internode DeepEP).', 'a relative path',
                                              relative_path, '.rocshmem-not-installed'))),
    ], 'The turbo stage.'))),
    ('boto', Field(Map([('packages', Field(_reqs('boto3 and botocore.')))], 'The boto stage.'))),
    ('cleanup', Field(Map([('uninstall', Field(Seq(NAME, 'Removed at the end.')))], 'The cleanup stage.'))),
    ('torchrec', Field(Map([
        ('packages_no_deps', Field(_reqs('Installed --no-deps.'))),
        ('packages', Field(_reqs('Then these.'))),
        ('extra_index', Field(Choice('The key of indexes used as an extra index for packages.',
                                     ('pypi', 'torch', 'te')), required=False)),
    ], 'The optional torchrec stage.'))),
    ('sources', Field(Table(lambda key: '' if SOURCE_NAME.match(key) else 'no',
                            'component names (lower-case letters, digits and _; each becomes a stage, a directory and '
                            'a file name)', SOURCE, 'The git-built components, by name.'))),
], 'Every pin of one release.')


REF_KINDS = {'commit': (COMMIT, 'a full 40-hex commit'), 'short_commit': (SHORT_COMMIT, 'a 7 to 39 hex commit'),
             'branch': (BRANCH, 'a branch name')}


def problems(pins, stages=None):
    """[(key path, problem)] of a loaded ``primus_pins`` value against the schema, plus the checks across keys;
    stages: the stage names a fix may name (None: not checked)."""
    if not HAS_PACKAGING:
        return [('primus_pins', 'cannot be checked: the Python package packaging is missing on the controller (install '
                                'the controller with make controller, or pip install packaging)')]
    found = PINS.check(pins, 'primus_pins')
    if found or not isinstance(pins, Mapping):
        return found
    for name, source in pins['sources'].items():
        pattern, words = REF_KINDS[source['ref_kind']]
        if not pattern.match(source['ref']):
            found.append(('primus_pins.sources.%s.ref' % name, 'is %s: not %s (ref_kind %s)' % (
                found_word(source['ref']), words, source['ref_kind'])))
    torch = pins['torch']
    archs = set(torch['device_archs'])
    for key in ('default_archs',):
        for index, arch in enumerate(torch[key]):
            if arch not in archs:
                found.append(('primus_pins.torch.%s[%d]' % (key, index),
                              'is %s, which is not in device_archs (%s)' % (found_word(arch), ', '.join(sorted(archs)))))
    packages = set(pins['pydeps']['packages'])
    for index, pin in enumerate(pins['pydeps']['build_from_sdist']):
        if pin not in packages:
            found.append(('primus_pins.pydeps.build_from_sdist[%d]' % index,
                          'is %s, which is not in pydeps.packages as written there' % found_word(pin)))
    fixes = pins.get('installed_fixes') or []
    names = [fix['name'] for fix in fixes]
    for index, name in enumerate(names):
        if names.index(name) != index:
            found.append(('primus_pins.installed_fixes[%d].name' % index, 'repeats %s' % found_word(name)))
    for index, fix in enumerate(fixes):
        if stages is not None and fix['stage'] not in stages:
            found.append(('primus_pins.installed_fixes[%d].stage' % index, 'is %s: not a stage (%s)' % (
                found_word(fix['stage']), ', '.join(stages))))
    return found


def message(found, limit=5):
    """The problems as one message: each key path with what is wrong, the first `limit` of them."""
    lines = ['%s %s' % (path, what) for path, what in found[:limit]]
    more = len(found) - limit
    return '; '.join(lines) + ('; and %d more' % more if more > 0 else '')


def reference_rows():
    """(key path, expected, doc) of every key, in the file's order: the release file format's reference."""
    return PINS.rows('primus_pins')
