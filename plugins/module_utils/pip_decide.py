# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Decide offline whether pip must run, from the installed set alone.

Rules (state=present):
- An item whose environment marker is false for the venv's python is ignored (pip ignores it too).
- `name` / `name<spec>`: some version of `name` is installed and it satisfies the specifier
  (PEP 440, pre-releases allowed like pip does for installed versions). A pin with a local label
  (`torch==2.12.0+rocm7.15.0a20260720`) is exact, so 2.12.0+cpu does not satisfy it.
- A wheel or sdist given by path or URL: a distribution with the name and exactly the version of
  the file name (local label included) is installed.
- `name @ VCS-URL` and bare VCS URLs: an installed distribution's PEP 610 direct_url.json names
  the same repository and, when the URL has `@rev`, the same requested revision (or commit).
  Other direct URLs: the same URL is recorded. Editable local dirs: an editable install of the
  same directory is recorded.
- A local project directory: its name and version are known (static metadata or given by the
  caller) and exactly that version is installed. Otherwise it is undecidable.
- Unless no_deps: the dependency closure of every satisfied item, read from the installed
  Requires-Dist (extras and markers evaluated for the venv), is installed and satisfied too.
- Every distribution in that closure also satisfies the constraints files.
Anything undecidable means pip must run; `changed` then comes from the real before/after sets.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import fnmatch
import os
import re

from ansible_collections.primus.trainenv.plugins.module_utils.pip_requirements import normalize_url

_GLOB = re.compile(r'[*?\[]')


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


def marker_applies(marker, markers, extras=()):
    """True when the marker holds for the venv with no extra or with one of `extras`.

    A marker that cannot be evaluated counts as applying (conservative: pip then decides).
    """
    if marker is None:
        return True
    for extra in ('',) + tuple(extras):
        try:
            if marker.evaluate(marker_env(markers, extra)):
                return True
        except Exception:  # pylint: disable=broad-except
            return True
    return False


def _applies_to(marker, markers, todo, todo_extras):
    """Marker check for the part of a dist's requirements being expanded now."""
    for extra in (('',) if '' in todo else ()) + todo_extras:
        try:
            if marker.evaluate(marker_env(markers, extra)):
                return True
        except Exception:  # pylint: disable=broad-except
            return True
    return False


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


def _direct_url_matches(item, direct_url):
    if not isinstance(direct_url, dict) or not direct_url.get('url'):
        return False
    if item.kind in ('vcs', 'editable') and item.vcs:
        info = direct_url.get('vcs_info')
        if not isinstance(info, dict) or info.get('vcs') != item.vcs:
            return False
        if normalize_url(direct_url['url']) != normalize_url(item.url):
            return False
        if item.rev is None:
            return True
        return item.rev in (info.get('requested_revision'), info.get('commit_id'))
    if item.kind == 'editable':
        info = direct_url.get('dir_info')
        if not isinstance(info, dict) or not info.get('editable'):
            return False
        url = direct_url['url']
        local = url[len('file://'):] if url.startswith('file://') else url
        return os.path.normpath(local) == os.path.normpath(os.path.abspath(item.path))
    if item.url:
        return normalize_url(direct_url['url'].split('#', 1)[0]) == normalize_url(item.url.split('#', 1)[0])
    return False


def _constraint_problem(pk, dist, constraints, markers):
    """Text of the first constraint the installed dist violates, or None."""
    for item in constraints.get(dist.key, ()):
        if not marker_applies(item.marker, markers):
            continue
        if item.kind == 'req':
            if item.req.url:
                if not _direct_url_matches(item, dist.direct_url):
                    return 'installed %s %s is not from %s (constraint %s)' % (dist.name, dist.version, item.req.url, item.origin)
            elif not version_satisfies(pk, dist.version, item.req.specifier):
                return 'installed %s %s does not satisfy the constraint %s (%s)' % (
                    dist.name, dist.version, item.text, item.origin)
        elif item.kind == 'file':
            if not same_version(pk, dist.version, item.version):
                return 'installed %s %s is not the constrained %s (%s)' % (dist.name, dist.version, item.version, item.origin)
        elif item.kind in ('vcs', 'archive'):
            if not _direct_url_matches(item, dist.direct_url):
                return 'installed %s %s is not from the constrained URL (%s)' % (dist.name, dist.version, item.origin)
    return None


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
    for dist in probe.dists.values():
        if _direct_url_matches(item, dist.direct_url):
            return dist
    return None


def _top_level(pk, item, probe, decision):
    """Check one requested item; return (dist, extras) to walk, or None."""
    dists = probe.dists
    if item.kind == 'req':
        dist = dists.get(item.name)
        if dist is None:
            decision.need('%s is not installed' % item.text)
            return None
        if item.req.url is None and not version_satisfies(pk, dist.version, item.req.specifier):
            decision.need('installed %s %s does not satisfy %s' % (dist.name, dist.version, item.text))
            return None
        return dist, item.extras
    if item.kind in ('file', 'dir'):
        # A wheel/sdist file or a project directory: exactly the name and version it provides.
        origin = item.text if item.kind == 'file' else item.path
        if item.kind == 'dir' and (not item.name or not item.version):
            decision.need('%s: a project directory without static name and version (give them in name)' % item.text)
            return None
        dist = dists.get(pk.canonicalize_name(item.name))
        if dist is None:
            decision.need('%s %s (%s%s) is not installed'
                          % (item.name, item.version, 'from ' if item.kind == 'dir' else '', origin))
            return None
        if not same_version(pk, dist.version, item.version):
            decision.need('installed %s %s is not %s from %s' % (dist.name, dist.version, item.version, origin))
            return None
        return dist, item.extras
    if item.kind in ('vcs', 'archive', 'editable'):
        if item.kind == 'editable' and item.vcs:
            decision.need('%s: editable VCS installs are always handed to pip' % item.text)
            return None
        if item.name:
            dist = dists.get(item.name)
            if dist is None or not _direct_url_matches(item, dist.direct_url):
                decision.need('%s is not installed from %s' % (item.name, item.text))
                return None
        else:
            dist = _find_by_direct_url(probe, item)
            if dist is None:
                decision.need('nothing installed from %s' % item.text)
                return None
        return dist, item.extras
    decision.need('%s: cannot be decided offline' % item.text)
    return None


def decide_present(pk, probe, items, constraint_items=(), no_deps=False):
    """Decision for state=present. `items` are pip_requirements.Item objects."""
    decision = Decision()
    markers = probe.markers
    constraints = index_constraints(pk, constraint_items)
    parsed = {}

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
        if not marker_applies(item.marker, markers):
            decision.ignored.append(item.text)
            continue
        found = _top_level(pk, item, probe, decision)
        if found is None:
            continue
        dist, extras = found
        queue.append((dist, _extra_variants(pk, extras), 'requested'))

    walked = {}  # key -> extras already expanded ('' = the unconditional requirements)
    while queue:
        dist, extras, _via = queue.pop()
        if dist.key not in walked:
            walked[dist.key] = set()
            decision.checked += 1
            problem = _constraint_problem(pk, dist, constraints, markers)
            if problem:
                decision.need(problem)
                walked[dist.key].update(('',) + tuple(extras))
                continue
        # Like pip: an extra the distribution does not declare (Provides-Extra) is ignored.
        extras = tuple(e for e in extras if pk.canonicalize_name(e) in dist.provides_extra)
        todo = set(('',) + tuple(extras)) - walked[dist.key]
        if not todo:
            continue
        walked[dist.key].update(todo)
        if no_deps:
            continue
        todo_extras = tuple(sorted(e for e in todo if e))
        for text in dist.requires:
            req = requirement(text)
            if req is False:
                decision.need('%s %s declares an unreadable requirement %r' % (dist.name, dist.version, text))
                continue
            if req.marker is not None and not _applies_to(req.marker, markers, todo, todo_extras):
                continue
            key = pk.canonicalize_name(req.name)
            dep = probe.dists.get(key)
            if dep is None:
                decision.need('%s (required by %s %s) is not installed' % (short(req), dist.name, dist.version))
                continue
            if req.url is None and not version_satisfies(pk, dep.version, req.specifier):
                decision.need('installed %s %s does not satisfy %s (required by %s %s)' % (
                    dep.name, dep.version, short(req), dist.name, dist.version))
                continue
            dep_extras = _extra_variants(pk, req.extras)
            seen = walked.get(key)
            if seen is None or set(('',) + dep_extras) - seen:
                queue.append((dep, dep_extras, dist.key))
    return decision


def canonical_pattern(pattern):
    """Distribution-name glob in PEP 503 form: 'NVIDIA_*' -> 'nvidia-*'."""
    return re.sub(r'[-_.]+', '-', pattern.strip().lower())


def split_pattern(pattern):
    """'nvidia-*' -> ('nvidia-*', None); 'torch==*+cu*' -> ('torch', '*+cu*')."""
    if '==' in pattern:
        name, version = pattern.split('==', 1)
        return canonical_pattern(name), version.strip()
    return canonical_pattern(pattern), None


def is_pattern(text):
    return bool(_GLOB.search(text))


def matches_pattern(key, version, pattern):
    name_glob, version_glob = split_pattern(pattern)
    if not fnmatch.fnmatchcase(key, name_glob):
        return False
    return version_glob is None or fnmatch.fnmatchcase(version or '', version_glob)


def matching_patterns(key, version, patterns):
    return [p for p in patterns if matches_pattern(key, version, p)]


def plan_absent(pk, probe, items, patterns=()):
    """Installed distributions to remove for state=absent (sorted by name).

    items: Items naming distributions (a version specifier or file version narrows the match);
    patterns: fnmatch globs on the normalized name, optionally `glob==versionglob`.
    """
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
