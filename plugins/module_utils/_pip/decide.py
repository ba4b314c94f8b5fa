# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Decide offline whether pip must run, from the installed set alone.

The decision may say "not satisfied" where pip would change nothing (pip then runs, and `changed`
comes from the real before/after sets), but never "satisfied" where pip would change the venv.
Rules (state=present), each the way pip's resolver treats the item:
- An item whose environment marker is false for the venv's python is ignored (pip ignores it too).
- `name` / `name<spec>`: the installed version satisfies the specifier (PEP 440, installed
  pre-releases count, like pip). A pin with a local label (`torch==2.12.0+rocm7.15.0a20260720`)
  is exact, so 2.12.0+cpu does not satisfy it.
- Anything given by path or URL (wheel, sdist, archive, VCS, project directory, `name @ url`, in
  `name`, a requirements file or a Requires-Dist line) is installed from its link by pip, which then
  resolves the link's own dependencies; see _artifact for when the installed copy is that artifact.
  Where that cannot be known offline (a VCS branch or tag, any remote file: pip downloads it again and
  resolves what is served now, an editable project with dynamic metadata), the answer is "not satisfied".
- Unless no_deps: the dependency closure of every satisfied item (the artifact's own Requires-Dist
  where pip would use it, else the installed copy's; extras and markers evaluated for the venv)
  is installed and satisfied too, and every distribution in it satisfies the constraints files.

Deliberate differences from pip, none of which can leave a wrong environment:
- pip reinstalls a local project directory, an editable project and a local sdist even at the
  same version; here the same version of the same artifact (a directory's static metadata or the
  caller's name==version, an sdist's recorded sha256) is not a change.
- pip keeps a same-version install for a remote wheel, another VCS commit, a branch or tag, or a URL
  it was not installed from (resolving only the link's dependencies); here those hand over to pip.
- pip reinstalls a project directory over a same-version copy installed from an index or a wheel; here that is
  "not satisfied" too (the directory is only vouched for when the installed copy records it as its origin).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import fnmatch
import hashlib
import os
import re

from ansible_collections.primus.trainenv.plugins.module_utils.common import file_sha256, normalize_name
from ansible_collections.primus.trainenv.plugins.module_utils._pip.requirements import (
    Item, RequirementError, link_item, normalize_url, url_path, wheel_metadata)

COMMIT = re.compile(r'^[0-9a-f]{40}$')


class Decision(object):
    def __init__(self):
        self.reasons = []       # why pip must run
        self.ignored = []       # items whose markers are false for this venv
        self.checked = 0        # distributions examined (closure size)

    @property
    def satisfied(self):
        return not self.reasons

    def need(self, text):
        if text not in self.reasons:
            self.reasons.append(text)


def short(req):
    """A requirement without its marker: 'name[extras]specifier' or 'name @ url'."""
    text = req.name
    if req.extras:
        text += '[%s]' % ','.join(sorted(req.extras))
    if req.url:
        return '%s @ %s' % (text, req.url)
    return text + str(req.specifier)


def marker_env(markers, extra=''):
    env = dict(markers)
    env['extra'] = extra
    return env


def marker_state(marker, markers, extras=(), base=True):
    """True when the marker holds for the venv with no extra (``base``) or with one of `extras`, False when it does
    not, None when it cannot be evaluated (pip then fails on it: an unknown variable such as `extras`)."""
    if marker is None:
        return True
    for extra in (('',) if base else ()) + tuple(extras):
        try:
            if marker.evaluate(marker_env(markers, extra)):
                return True
        except Exception:  # pylint: disable=broad-except
            return None
    return False


def marker_applies(marker, markers, extras=()):
    """marker_state, with a marker that cannot be evaluated counting as applying (conservative)."""
    return marker_state(marker, markers, extras) is not False


def _applies_to(marker, markers, todo, todo_extras):
    """Marker check for the part of a dist's requirements being expanded now (None: cannot be evaluated): the base
    requirements when '' is in ``todo``, and those of the extras being expanded."""
    return marker_state(marker, markers, todo_extras, base='' in todo)


def _extra_variants(pk, extras):
    out = set()
    for extra in extras:
        out.add(extra)
        out.add(pk.canonicalize_name(extra))
    return tuple(sorted(out))


def version_satisfies(pk, version, specifier):
    """PEP 440 containment of an installed version; an invalid version only matches ===."""
    if specifier is None or not str(specifier):
        return True
    try:
        parsed = pk.Version(version)
    except pk.InvalidVersion:
        return all(spec.operator == '===' and spec.version == version for spec in specifier)
    return specifier.contains(parsed, prereleases=True)


def same_version(pk, installed, wanted):
    """Exact equality, local label included (2.12.0+cpu != 2.12.0+rocm7.15.0a20260720)."""
    try:
        return pk.Version(installed) == pk.Version(wanted)
    except pk.InvalidVersion:
        return installed == wanted


def _same_subdirectory(item, direct_url):
    """The #subdirectory= of the request is the one recorded (pip records it in direct_url.json)."""
    return (getattr(item, 'subdirectory', None) or '').strip('/') == (direct_url.get('subdirectory') or '').strip('/')


def _direct_url_matches(item, direct_url):
    """The installed copy was installed from what `item` names (PEP 610 direct_url.json)."""
    if not isinstance(direct_url, dict) or not direct_url.get('url'):
        return False
    if not _same_subdirectory(item, direct_url):
        return False
    recorded = direct_url['url']
    if item.kind in ('vcs', 'editable') and item.vcs:
        info = direct_url.get('vcs_info')
        if not isinstance(info, dict) or info.get('vcs') != item.vcs:
            return False
        if normalize_url(recorded) != normalize_url(item.url):
            return False
        return bool(item.rev) and COMMIT.match(item.rev) is not None and item.rev == info.get('commit_id')
    if item.kind in ('editable', 'dir'):
        info = direct_url.get('dir_info')
        if not isinstance(info, dict) or bool(info.get('editable')) != (item.kind == 'editable'):
            return False
        return recorded.startswith('file:') and os.path.realpath(url_path(recorded)) == os.path.realpath(item.path)
    if item.url or item.path:
        location = item.url or ('file://' + item.path)
        if location.lower().startswith('file:'):
            if not recorded.startswith('file:') or os.path.realpath(url_path(recorded)) != os.path.realpath(
                    url_path(location)):
                return False
        elif normalize_url(recorded.split('#', 1)[0]) != normalize_url(location.split('#', 1)[0]):
            return False
        wanted = _url_hashes(location)
        if wanted:
            have = _recorded_hashes(direct_url)
            return any(have.get(algo) == value for algo, value in wanted.items())
        return True
    return False


def _url_hashes(url):
    """{algo: hexdigest} from a #sha256=... fragment."""
    out = {}
    fragment = url.partition('#')[2]
    for part in fragment.split('&'):
        algo, sep, value = part.partition('=')
        if sep and algo in ('sha1', 'sha224', 'sha384', 'sha256', 'sha512', 'md5'):
            out[algo] = value.lower()
    return out


# pip's LinkHash: the first [#&]<algorithm>=<digest> anywhere in the URL, lower-cased and compared with the file's
# hexdigest (pip/_internal/models/link.py, utils/hashes.py); a later hash of the URL is not checked.
_PIP_LINK_HASH = re.compile(r'[#&](sha512|sha384|sha256|sha224|sha1|md5)=([^&]*)')


def pip_link_hash(url):
    """(algorithm, digest) of the hash pip checks a link's file against, or None (the first one in the URL)."""
    match = _PIP_LINK_HASH.search(url or '')
    return match.groups() if match else None


def file_digest(path, algorithm):
    digest = hashlib.new(algorithm)
    with open(path, 'rb') as handle:
        for block in iter(lambda: handle.read(1 << 20), b''):
            digest.update(block)
    return digest.hexdigest()


def _recorded_hashes(direct_url):
    info = direct_url.get('archive_info')
    if not isinstance(info, dict):
        return {}
    out = dict((k, str(v).lower()) for k, v in (info.get('hashes') or {}).items())
    legacy = info.get('hash')
    if isinstance(legacy, str) and '=' in legacy:
        algo, value = legacy.split('=', 1)
        out.setdefault(algo, value.lower())
    return out


def _constraint_problem(pk, dist, constraints, markers, probe=None):
    """(text of the first constraint the installed dist violates or None, metadata override or None)."""
    override = None
    for item in constraints.get(dist.key, ()):
        if not marker_applies(item.marker, markers):
            continue
        if item.kind == 'req':
            if not version_satisfies(pk, dist.version, item.req.specifier):
                return 'installed %s %s does not satisfy the constraint %s (%s)' % (
                    dist.name, dist.version, item.text, item.origin), None
            continue
        found = _artifact(pk, item, dist, probe)
        if isinstance(found, str):
            return '%s (constraint %s)' % (found, item.origin), None
        override = found
    return None, override


def index_constraints(pk, constraint_items):
    """{canonical name: [Item]} of the constraints that name a distribution."""
    out = {}
    for item in constraint_items:
        name = item.name
        if not name and item.req is not None:
            name = pk.canonicalize_name(item.req.name)
        if name:
            out.setdefault(name, []).append(item)
    return out


def _find_by_direct_url(probe, item):
    """The installed distribution recorded as installed from item's location (a VCS repo at any commit)."""
    for dist in probe.dists.values():
        direct = dist.direct_url
        if item.vcs and isinstance(direct, dict) and isinstance(direct.get('vcs_info'), dict):
            if normalize_url(direct.get('url') or '') == normalize_url(item.url) and _same_subdirectory(item, direct):
                return dist
        elif _direct_url_matches(item, direct):
            return dist
    return None


def _artifact(pk, item, dist, probe=None):
    """Is the installed `dist` what the non-index `item` installs? The metadata to walk, or why not.

    Returns (requires, provides_extra) - None values mean "the installed copy's" - or a reason text.
    pip installs such an item from its link and resolves the link's own dependencies; the installed
    copy counts only when it provably is that artifact:
    - a local wheel: the same name and version (pip then keeps the installed copy), tags that fit the venv,
      walked with the wheel file's own Requires-Dist;
    - a local sdist or version-less archive: installed from that very file (path and sha256 recorded in
      direct_url.json); a local file that does not match the first #<algorithm>= of its URL never (pip refuses it);
    - a remote file (wheel, sdist, archive): never; pip downloads it again even at the installed version and
      resolves what the server serves now (other dependencies, a moved branch, or a hash mismatch);
    - a VCS URL: installed from that repository at that commit; a branch or tag cannot be checked
      offline (it may have moved), so only a full commit hash qualifies;
    - a project directory: exactly its known version, installed (not editable) from that very directory,
      walked with its static dependencies when it has them (else the installed copy's: the caller's version
      vouches for it);
    - an editable project directory: installed editable from that directory, and its dependencies
      are static (pip reinstalls editables; a dynamic setup.py may have changed them).
    """
    origin = item.path or item.url or item.text
    if item.kind in ('file', 'archive'):
        return _file_artifact(pk, item, dist, origin, probe)
    if item.kind == 'dir':
        if not item.version:
            return '%s: a project directory without static name and version (give them in name)' % origin
        if not same_version(pk, dist.version, item.version):
            return 'installed %s %s is not %s from %s' % (dist.name, dist.version, item.version, origin)
        direct = dist.direct_url if isinstance(dist.direct_url, dict) else {}
        info = direct.get('dir_info')
        if isinstance(info, dict) and info.get('editable'):
            return 'installed %s %s is an editable install; %s is not editable' % (dist.name, dist.version, origin)
        recorded = direct.get('url') or ''
        if not isinstance(info, dict) or not recorded.startswith('file:'):
            # installed from an index, a wheel or an archive: pip builds and installs the directory over it
            return 'installed %s %s was not installed from the directory %s (pip installs it from there)' % (
                dist.name, dist.version, origin)
        if os.path.realpath(url_path(recorded)) != os.path.realpath(item.path):
            return 'installed %s %s was installed from the directory %s, not from %s' % (
                dist.name, dist.version, url_path(recorded), origin)
        return item.requires, item.provides_extra
    if item.kind == 'editable':
        if item.vcs:
            return '%s: editable VCS installs are always handed to pip' % item.text
        if not _direct_url_matches(item, dist.direct_url):
            return 'installed %s %s is not an editable install of %s' % (dist.name, dist.version, origin)
        if item.requires is None:
            return '%s: an editable project whose dependencies are not static (pip decides)' % origin
        if item.version and not same_version(pk, dist.version, item.version):
            return 'installed %s %s is not %s from %s' % (dist.name, dist.version, item.version, origin)
        return item.requires, item.provides_extra
    if item.kind == 'vcs':
        if not item.rev or COMMIT.match(item.rev) is None:
            return '%s: a branch, tag or default branch may have moved (pin a full commit hash to decide offline)' \
                % item.text
        if not _direct_url_matches(item, dist.direct_url):
            return 'installed %s %s is not from %s' % (dist.name, dist.version, item.text)
        return None, None
    return '%s: cannot be decided offline' % item.text


def _is_editable(dist):
    info = dist.direct_url.get('dir_info') if isinstance(dist.direct_url, dict) else None
    return isinstance(info, dict) and bool(info.get('editable'))


def _file_artifact(pk, item, dist, origin, probe=None):
    """A wheel, sdist or version-less archive, by path or URL (see _artifact)."""
    if item.kind == 'file' and not same_version(pk, dist.version, item.version):
        return 'installed %s %s is not %s from %s' % (dist.name, dist.version, item.version, origin)
    if _is_editable(dist):
        return 'installed %s %s is an editable install; pip replaces it with %s' % (dist.name, dist.version, origin)
    if not item.path:
        # pip downloads a remote file again to read its metadata, even at the installed version: what the server
        # serves now (other dependencies, a moved branch archive, content no longer matching a #sha256=) decides.
        return '%s: a remote file may have changed since it was installed (pip downloads it again and resolves what ' \
            'it serves now; a #sha256= that no longer matches fails there)' % origin
    if not os.path.isfile(item.path):
        return '%s does not exist' % origin
    wanted = pip_link_hash(item.url)
    if wanted and file_digest(item.path, wanted[0]) != wanted[1].lower():
        return '%s does not match its #%s= fragment (pip refuses it)' % (origin, wanted[0])
    if item.is_wheel:
        unfit = wheel_unfit(item.path, probe) if probe is not None else None
        if unfit:
            return unfit
        requires, extras = wheel_metadata(item.path)
        if requires is None:
            return 'cannot read the metadata of %s' % item.path
        return requires, extras
    if not _direct_url_matches(_with_hash(item, file_sha256(item.path)), dist.direct_url):
        return 'installed %s %s was not installed from %s (same file content)' % (dist.name, dist.version, origin)
    return None, None


def _with_hash(item, sha256):
    clone = Item(item.kind, item.text, item.origin, name=item.name, version=item.version, path=item.path,
                 url=(item.url or 'file://' + item.path).split('#', 1)[0] + '#sha256=' + sha256)
    clone.subdirectory = item.subdirectory
    return clone


def _resolve(pk, item, probe, decision, via=''):
    """Check one item; return (dist, extras, requires, provides_extra) to walk, or None (decision.need)."""
    dists = probe.dists
    if item.kind == 'req':
        dist = dists.get(item.name)
        if dist is None:
            decision.need('%s%s is not installed' % (item.text, via))
            return None
        if not version_satisfies(pk, dist.version, item.req.specifier):
            decision.need('installed %s %s does not satisfy %s%s' % (dist.name, dist.version, item.text, via))
            return None
        return dist, item.extras, None, None
    if item.name:
        dist = dists.get(pk.canonicalize_name(item.name))
    elif item.kind in ('vcs', 'archive', 'editable'):
        dist = _find_by_direct_url(probe, item)
    else:
        dist = None
    if dist is None:
        if item.kind == 'dir' and not item.version:
            decision.need('%s: a project directory without static name and version (give them in name)' % item.text)
        elif item.name:
            version = (' ' + item.version) if item.version else ''
            where = ' (%s)%s' % (item.path or item.url or item.text, via)
            decision.need('%s%s%s is not installed' % (item.name, version, where))
        else:
            decision.need('nothing installed from %s%s' % (item.text, via))
        return None
    found = _artifact(pk, item, dist, probe)
    if isinstance(found, str):
        decision.need(found + via)
        return None
    return dist, item.extras, found[0], found[1]


def decide_present(pk, probe, items, constraint_items=(), no_deps=False, base_dir=None):
    """Decision for state=present. `items` are _pip.requirements.Item objects."""
    decision = Decision()
    markers = probe.markers
    constraints = index_constraints(pk, constraint_items)
    parsed = {}
    overrides = {}  # key -> (requires, provides_extra) of the artifact pip would use instead of the installed copy

    def requirement(text):
        req = parsed.get(text)
        if req is None:
            try:
                req = pk.Requirement(text)
            except pk.InvalidRequirement:
                req = False
            parsed[text] = req
        return req

    queue = []
    for item in items:
        state = marker_state(item.marker, markers)
        if state is None:
            decision.need('%s: its environment marker cannot be evaluated for this venv (pip decides)' % item.text)
            continue
        if not state:
            decision.ignored.append(item.text)
            continue
        if item.is_wheel and item.path:
            unfit = wheel_unfit(item.path, probe)
            if unfit:
                decision.need(unfit)
                continue
        found = _resolve(pk, item, probe, decision)
        if found is None:
            continue
        dist, extras, requires, provides = found
        if requires is not None:
            overrides[dist.key] = (requires, provides)
        queue.append((dist, _extra_variants(pk, extras)))

    walked = {}  # key -> extras already expanded ('' = the unconditional requirements)
    while queue:
        dist, extras = queue.pop()
        if dist.key not in walked:
            walked[dist.key] = set()
            decision.checked += 1
            problem, override = _constraint_problem(pk, dist, constraints, markers, probe)
            if problem:
                decision.need(problem)
                walked[dist.key].update(('',) + tuple(extras))
                continue
            if override is not None and override[0] is not None:
                overrides[dist.key] = override
        requires, provides = overrides.get(dist.key, (dist.requires, None))
        provides = set(pk.canonicalize_name(e) for e in provides) if provides is not None else dist.provides_extra
        # Like pip: an extra the distribution does not declare (Provides-Extra) is ignored.
        extras = tuple(e for e in extras if pk.canonicalize_name(e) in provides)
        todo = set(('',) + tuple(extras)) - walked[dist.key]
        if not todo:
            continue
        walked[dist.key].update(todo)
        if no_deps:
            continue
        todo_extras = tuple(sorted(e for e in todo if e))
        for text in requires:
            req = requirement(text)
            if req is False:
                decision.need('%s %s declares an unreadable requirement %r' % (dist.name, dist.version, text))
                continue
            if req.marker is not None:
                state = _applies_to(req.marker, markers, todo, todo_extras)
                if state is None:
                    decision.need('%s %s declares %r, whose marker cannot be evaluated (pip decides)'
                                  % (dist.name, dist.version, text))
                    continue
                if not state:
                    continue
            key = pk.canonicalize_name(req.name)
            dep = probe.dists.get(key)
            via = ' (required by %s %s)' % (dist.name, dist.version)
            if dep is None:
                decision.need('%s%s is not installed' % (short(req), via))
                continue
            if req.url is None:
                if not version_satisfies(pk, dep.version, req.specifier):
                    decision.need('installed %s %s does not satisfy %s%s' % (dep.name, dep.version, short(req), via))
                    continue
            else:
                try:
                    item = link_item(pk, text, 'Requires-Dist of %s' % dist.name, req.url, None, req=req, name=key,
                                     extras=req.extras)
                except RequirementError as exc:
                    decision.need('%s%s: %s' % (short(req), via, exc))
                    continue
                found = _artifact(pk, item, dep, probe)
                if isinstance(found, str):
                    decision.need(found + via)
                    continue
                if found[0] is not None and overrides.get(key) != found:
                    overrides[key] = found
                    walked.pop(key, None)
            dep_extras = _extra_variants(pk, req.extras)
            seen = walked.get(key)
            if seen is None or set(('',) + dep_extras) - seen:
                queue.append((dep, dep_extras))
    return decision


def wheel_unfit(path, probe):
    """Why the wheel file at `path` cannot be installed into the venv (its tags), or None when it can.

    Decided from the tags the venv's interpreter supports as pip computes them (packaging.tags.sys_tags),
    rebuilt from the probe's facts; a tag this cannot vouch for counts as not fitting, and pip decides.
    """
    info = getattr(probe, 'data', {}).get('tags')
    if not isinstance(info, dict):
        return None   # a probe without tag facts (tests that build one by hand)
    name = os.path.basename(path)
    parts = name[:-len('.whl')].split('-')
    if len(parts) not in (5, 6):
        return None
    interps, abis, plats = parts[-3].split('.'), parts[-2].split('.'), parts[-1].split('.')
    for interp in interps:
        for abi in abis:
            for plat in plats:
                if _tag_fits(interp, abi, plat, info):
                    return None
    return '%s: its tags (%s) do not fit the venv\'s interpreter %s on %s (pip refuses it: not a supported wheel ' \
        'on this platform)' % (path, '-'.join(parts[-3:]), info.get('interpreter'), info.get('platform'))


def _tag_fits(interp, abi, plat, info):
    """One tag triple against packaging.tags.sys_tags() of a CPython or other interpreter (see wheel_unfit)."""
    major, minor = info.get('python') or (0, 0)
    impl = info.get('impl') or ''
    if not _platform_fits(plat, info):
        return False
    pys = ['py%d' % major] + ['py%d%d' % (major, m) for m in range(minor, -1, -1)]
    if abi == 'none' and (interp in pys or (plat == 'any' and interp == '%s%d%d' % (impl, major, minor))):
        return True
    if impl != 'cp' or plat == 'any':
        return False
    own = 'cp%d%d' % (major, minor)
    if interp == own and abi in (info.get('abi'), 'none'):
        return bool(abi)
    if abi == 'abi3' and info.get('abi3') and interp.startswith('cp%d' % major):
        try:
            return 2 <= int(interp[len('cp%d' % major):]) <= minor
        except ValueError:
            return False
    return False


_LEGACY_MANYLINUX = {'manylinux1': (2, 5), 'manylinux2010': (2, 12), 'manylinux2014': (2, 17)}


def _platform_fits(plat, info):
    if plat == 'any':
        return True
    platform = info.get('platform') or ''
    if plat == platform:
        return True
    glibc = info.get('glibc')
    if not platform.startswith('linux_') or not glibc:
        return False
    arch = platform[len('linux_'):]
    match = re.match(r'^manylinux_(\d+)_(\d+)_(.+)$', plat)
    if match:
        wanted, wanted_arch = (int(match.group(1)), int(match.group(2))), match.group(3)
    else:
        legacy, _sep, wanted_arch = plat.partition('_')
        if legacy not in _LEGACY_MANYLINUX:
            return False
        wanted = _LEGACY_MANYLINUX[legacy]
    return wanted_arch == arch and wanted[0] == glibc[0] and wanted[1] <= glibc[1]


def canonical_pattern(pattern):
    """Distribution-name glob in PEP 503 form: 'NVIDIA_*' -> 'nvidia-*'."""
    return normalize_name(pattern.strip())


def split_pattern(pattern):
    """'nvidia-*' -> ('nvidia-*', None, None); 'torch!=*+rocm*' -> ('torch', '!=', '*+rocm*')."""
    for op in ('==', '!='):
        if op in pattern:
            name, version = pattern.split(op, 1)
            return canonical_pattern(name), op, version.strip()
    return canonical_pattern(pattern), None, None


def is_pattern(pk, text):
    """A glob (state=absent, forbid) rather than a requirement: '*', '?', or '[' that is not an extra."""
    if '*' in text or '?' in text:
        return True
    if '[' in text:
        try:
            pk.Requirement(text)
        except pk.InvalidRequirement:
            return True
    return False


def matches_pattern(key, version, pattern):
    """name glob, optionally ==version-glob (forbidden when it matches) or !=version-glob (when it does not)."""
    name_glob, op, version_glob = split_pattern(pattern)
    if not fnmatch.fnmatchcase(key, name_glob):
        return False
    if op is None:
        return True
    hit = fnmatch.fnmatchcase(version or '', version_glob)
    return hit if op == '==' else not hit


def matching_patterns(key, version, patterns):
    return [p for p in patterns if matches_pattern(key, version, p)]


# Removing these breaks every later pip call (or every build) in the venv.
PROTECTED = ('pip', 'setuptools', 'wheel')


def check_absent_request(pk, patterns, items):
    """Refuse state=absent of pip, and of a pattern that matches pip, setuptools or wheel (or everything)."""
    for pattern in patterns:
        name_glob = split_pattern(pattern)[0]
        hits = [name for name in PROTECTED if fnmatch.fnmatchcase(name, name_glob)]
        if hits:
            raise ValueError('state=absent pattern %r matches %s: refusing, removing %s breaks the venv. Name the '
                             'distributions to remove, or narrow the pattern'
                             % (pattern, ', '.join(hits), ' and '.join(hits)))
    for item in items:
        if item.name and pk.canonicalize_name(item.name) == 'pip':
            raise ValueError('%s: state=absent of pip is refused: every later pip call in the venv would fail'
                             % item.origin)


def plan_absent(pk, probe, items, patterns=()):
    """Installed distributions to remove for state=absent (sorted by name).

    items: Items naming distributions (a version specifier or file version narrows the match; extras
    are ignored, as pip uninstall ignores them); patterns: fnmatch globs on the normalized name,
    optionally with ==version-glob or !=version-glob.
    """
    check_absent_request(pk, patterns, items)
    remove = {}
    for item in items:
        if not marker_applies(item.marker, probe.markers):
            continue
        name = item.name
        if not name:
            raise ValueError('%s: state=absent needs a distribution name, not a URL or path' % item.text)
        dist = probe.dists.get(pk.canonicalize_name(name))
        if dist is None:
            continue
        if item.kind == 'req' and item.req is not None and not version_satisfies(pk, dist.version, item.req.specifier):
            continue
        if item.kind == 'file' and not same_version(pk, dist.version, item.version):
            continue
        remove[dist.key] = dist
    for pattern in patterns:
        for key, dist in probe.dists.items():
            if matches_pattern(key, dist.version, pattern):
                remove[key] = dist
    return [remove[k] for k in sorted(remove)]
