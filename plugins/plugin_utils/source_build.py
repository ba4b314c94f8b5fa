# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Decisions of the one source-build mechanism (roles/source_build): pure functions.

A *plan* per git-built component, from its entry in the release pins (``sources.<name>``), the
commit it resolved to and the node's context::

    {"name", "repo", "ref", "ref_kind", "commit", "submodules", "patches", "keep", "build",
     "key", "key_id", "src", "wheel_dir", "env"}

``key`` is the *build key*: everything that defines the wheel - component, commit, python tag,
torch version, glibc of the building node (the wheel's floor), patch hash, build flags, the build's
variables (the pins' ``arch_env``/``env`` and the node's ``context['env'][name]``, e.g. Turbo's
ROCSHMEM_HOME, a path under the base keyed as $PRIMUS_BASE/...) and, for arch-dependent builds only, the arch list. An entry without ``build`` is a
checkout only (Primus): it installs no distribution and does not depend on the arch list. Its ``key_id`` names the wheel's cache directory
(``<cache>/wheels/<name>/<key_id>``), so any run, on any node with the same key, reuses the wheel,
and it is the stage stamp's key, so a stage is done while its wheel is installed. No URL is
part of a key (an index or repository URL may carry credentials).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import hashlib
import json
import re
from collections.abc import Mapping

from ansible_collections.primus.trainenv.plugins.module_utils import stage_state
from ansible_collections.primus.trainenv.plugins.module_utils.common import normalize_name

COMMIT = re.compile(r'^[0-9a-f]{40}$')
# An abbreviated commit (ref_kind short_commit): what a release knows when only a label names the commit.
SHORT_COMMIT = re.compile(r'^[0-9a-f]{7,39}$')
# A branch name git accepts and that cannot be read as an option or a revision expression.
BRANCH = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._/-]*$')
ENV_NAME = re.compile(r'^[A-Z_][A-Z0-9_]*$')
# The checkout's directory name (default: the component's name), one path component.
DIR_NAME = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._-]*$')
DIST_NAME = re.compile(r'^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$')
ARCH_FORMS = {'list': ';', 'csv': ','}
BUILD_FIELDS = ('distribution', 'isolation', 'archs', 'arch_env', 'env', 'no_deps', 'uninstall')

# The variables of a build's environment that cannot change what it produces, left out of its build key (and of what
# its stamp records); every other variable the build process sees is part of the key. Each with the reason.
NOT_IN_KEY = {
    'MAX_JOBS': 'parallel compile jobs: how fast a build runs, not what it produces',
    'PRIMUS_CACHE_DIR': 'a cache location', 'PIP_CACHE_DIR': 'a cache location', 'XDG_CACHE_HOME': 'a cache location',
    'TRITON_CACHE_DIR': 'a cache location', 'UV_CACHE_DIR': 'a cache location', 'AITER_JIT_DIR': 'a cache location',
    # Locations: where the base, the venv, its ROCm SDK and the sources are. What is there is fixed by the key's
    # other fields (python tag, torch version, commit, patches), and a fleet whose users' bases differ must share.
    'PRIMUS_BASE': 'a location', 'VENV_DIR': 'a location', 'WORKSPACE_DIR': 'a location', 'SRC_DIR': 'a location',
    'VIRTUAL_ENV': 'a location', 'UV_PYTHON_INSTALL_DIR': 'a location', 'PRIMUS_PIP_CONSTRAINTS': 'a location',
    'PIP_CONSTRAINT': 'a location', 'NLTK_DATA': 'a location', 'ROCM_PATH': 'a location', 'ROCM_HOME': 'a location',
    'HIP_PATH': 'a location', 'HIP_CLANG_PATH': 'a location', 'HIP_INCLUDE_PATH': 'a location',
    'HIP_LIB_PATH': 'a location', 'HIP_DEVICE_LIB_PATH': 'a location', 'PATH': 'a location',
    'LD_LIBRARY_PATH': 'a location', 'LIBRARY_PATH': 'a location', 'CPATH': 'a location',
    'PKG_CONFIG_PATH': 'a location', 'HOME': 'a location',
    # Where pip may fetch from (a plain-http site mirror, docs/mirrors.md), as no index URL is in the key.
    'PIP_TRUSTED_HOST': 'which index hosts pip trusts, not what a build produces',
}
# The arch list in its several spellings: part of the key of an arch-dependent build through its arch list; a build the
# pins declare arch-independent (build.archs false) does not read them.
ARCH_VARIABLES = ('PYTORCH_ROCM_ARCH', 'ROCM_AMDGPU_TARGETS', 'HCC_AMDGPU_TARGET', 'HIP_ARCHITECTURES', 'GPU_ARCHS',
                  'NVTE_CK_IS_V3_ATOMIC_FP32')


class SourceError(ValueError):
    """A pins entry or context that cannot be built from; the message names what and where."""


def patch_hash(patches):
    """sha256 (16 hex digits) of the canonical JSON of a patch list ('' for none)."""
    if not patches:
        return ''
    text = json.dumps(stage_state.plain(list(patches), 'patches'), sort_keys=True, separators=(',', ':'))
    return hashlib.sha256(text.encode('utf-8')).hexdigest()[:16]


def check_source(name, source):
    """The problems of one sources.<name> entry (empty list: usable)."""
    where = 'sources.%s' % name
    if not isinstance(source, Mapping):
        return ['%s is not a mapping' % where]
    problems = []
    for field in ('repo', 'ref', 'ref_kind'):
        if not isinstance(source.get(field), str) or not source.get(field):
            problems.append('%s.%s is missing' % (where, field))
    if problems:
        return problems
    if source['repo'].startswith('-'):
        problems.append('%s.repo %r starts with "-"' % (where, source['repo']))
    if source['ref_kind'] == 'commit' and not COMMIT.match(source['ref']):
        problems.append('%s.ref %r is not a full 40-hex commit (ref_kind commit)' % (where, source['ref']))
    elif source['ref_kind'] == 'branch' and not BRANCH.match(source['ref']):
        problems.append('%s.ref %r is not a branch name' % (where, source['ref']))
    elif source['ref_kind'] == 'short_commit' and not SHORT_COMMIT.match(source['ref']):
        problems.append('%s.ref %r is not an abbreviated commit of 7 to 39 hex digits (ref_kind short_commit)'
                        % (where, source['ref']))
    elif source['ref_kind'] not in ('commit', 'branch', 'short_commit'):
        problems.append('%s.ref_kind must be commit, branch or short_commit, got %r' % (where, source['ref_kind']))
    if 'dir' in source and not (isinstance(source['dir'], str) and DIR_NAME.match(source['dir'])):
        problems.append('%s.dir %r is not a directory name' % (where, source['dir']))
    build = source.get('build')
    if build is not None:
        if not isinstance(build, Mapping):
            return problems + ['%s.build is not a mapping' % where]
        unknown = sorted(set(build) - set(BUILD_FIELDS))
        if unknown:
            problems.append('%s.build has unknown fields %s' % (where, ', '.join(unknown)))
        for var, form in (build.get('arch_env') or {}).items():
            if not ENV_NAME.match(str(var)) or form not in ARCH_FORMS:
                problems.append('%s.build.arch_env: %s: %s (want NAME: list|csv)' % (where, var, form))
        for var in (build.get('env') or {}):
            if not ENV_NAME.match(str(var)):
                problems.append('%s.build.env: %r is not a variable name' % (where, var))
        uninstall = build.get('uninstall', [])
        if not isinstance(uninstall, list) or not all(isinstance(n, str) and DIST_NAME.match(n) for n in uninstall):
            problems.append('%s.build.uninstall must be a list of distribution names, got %r' % (where, uninstall))
        for flag in ('isolation', 'archs', 'no_deps'):
            if flag in build and not isinstance(build[flag], bool):
                problems.append('%s.build.%s must be true or false, got %r' % (where, flag, build[flag]))
    for index, patch in enumerate(source.get('patches') or []):
        if not isinstance(patch, Mapping) or not all(isinstance(patch.get(k), str) and patch.get(k)
                                                     for k in ('file', 'before', 'after')):
            problems.append('%s.patches[%d] needs file, before and after' % (where, index))
    return problems


def build_env(build, archs, node_env=None):
    """The variables a build sets on top of the environment table: arch_env (the arch list in
    its form), env, then node_env (this node's values for this component, e.g. ROCSHMEM_HOME).
    archs: list of gfx names."""
    env = {}
    for var, form in sorted((build.get('arch_env') or {}).items()):
        env[str(var)] = ARCH_FORMS[form].join(archs)
    for var, value in sorted((build.get('env') or {}).items()):
        env[str(var)] = str(value)
    for var, value in sorted((node_env or {}).items()):
        if not ENV_NAME.match(str(var)):
            raise SourceError('build variable %r is not a variable name' % (var,))
        env[str(var)] = str(value)
    return env


def key_environment(environment, arch_dependent, base=''):
    """The part of a build's whole environment that is in its key: all but NOT_IN_KEY (and, for a build that does
    not depend on the arch list, ARCH_VARIABLES). A value that is a path under the base (Primus-Turbo's
    ROCSHMEM_HOME placeholder, <base>/.rocshmem-not-installed) is keyed as $PRIMUS_BASE/...: where the base is
    is a location, and nodes whose bases differ share the build."""
    skip = set(NOT_IN_KEY) | (set() if arch_dependent else set(ARCH_VARIABLES))
    base = (base or '').rstrip('/')

    def keyed(value):
        value = str(value)
        if base and (value == base or value.startswith(base + '/')):
            return '$PRIMUS_BASE' + value[len(base):]
        return value
    return dict((k, keyed(v)) for k, v in sorted(environment.items()) if k not in skip)


def source_plan(name, source, commit, context):
    """The plan of one component (see the module docstring).

    context: {python_tag, torch, glibc, archs (list), build_dir, cache_dir, workspace, base} and optionally
    env: {name: {VAR: value}}, this node's build variables per component, and environment: {VAR: value}, the
    environment every build step gets from the environment table on this node. The build's whole environment is
    ``environment`` with its own variables on top; all of it but NOT_IN_KEY is part of the key.
    A transient tree is ``<build_dir>/<name>-<8 hex digits of the base's path>``: one user's runs on two
    bases at once never build in one tree (the lock is per base); a kept one is in the base's workspace.
    """
    problems = check_source(name, source)
    if problems:
        raise SourceError('; '.join(problems))
    if not isinstance(commit, str) or not COMMIT.match(commit):
        raise SourceError('sources.%s: no resolved commit (got %r)' % (name, commit))
    build = dict(source.get('build') or {})
    archs = sorted(set(context.get('archs') or []))
    # A checkout only (no build) depends on no arch list.
    arch_dependent = bool(build) and build.get('archs', True)
    if arch_dependent and not archs:
        raise SourceError('sources.%s: an arch-dependent build needs the arch list' % name)
    env = build_env(build, archs, ((context.get('env') or {}).get(name)))
    environment = dict((str(k), str(v)) for k, v in (context.get('environment') or {}).items())
    environment.update(env)
    key = {
        'component': name,
        'commit': commit,
        'submodules': bool(source.get('submodules')),
        'python': context['python_tag'],
        'torch': context['torch'],
        'glibc': context['glibc'],
        'patches': patch_hash(source.get('patches')),
        'isolation': bool(build.get('isolation', False)),
        'env': key_environment(environment, arch_dependent, context.get('base')) if build else {},
        'archs': archs if arch_dependent else [],
    }
    # Only when set, so that the keys (and cached wheels) of the builds without it stay as they were.
    if build.get('no_deps'):
        key['no_deps'] = True
    key_id = stage_state.key_id(key)
    keep = bool(source.get('keep'))
    return {
        'name': name,
        'repo': source['repo'],
        'ref': source['ref'],
        'ref_kind': source['ref_kind'],
        'commit': commit,
        'submodules': bool(source.get('submodules')),
        'patches': list(source.get('patches') or []),
        'keep': keep,
        'build': build,
        'distribution': build.get('distribution', name) if build else '',
        'uninstall': list(build.get('uninstall') or []),
        'key': key,
        'key_id': key_id,
        'src': source_tree(name, source, context),
        'wheel_dir': '%s/wheels/%s/%s' % (context['cache_dir'], name, key_id),
        'env': env,
        'environment': environment,
    }


def sdist_plan(requirement, context):
    """The plan of a pin built from its sdist (no wheel for the python tag exists): its build key - the pin, the
    python tag and the glibc of the building node (the wheel's floor) - and its wheel cache directory."""
    if not isinstance(requirement, str) or not re.match(r'^[A-Za-z0-9][A-Za-z0-9._-]*==[^\s;]+$', requirement):
        raise SourceError('build_from_sdist: %r is not a pin (name==version)' % (requirement,))
    name = normalize_name(requirement.split('==')[0])
    key = {'requirement': requirement, 'python': context['python_tag'], 'glibc': context['glibc']}
    key_id = stage_state.key_id(key)
    return {'name': name, 'requirement': requirement, 'key': key, 'key_id': key_id,
            'wheel_dir': '%s/wheels/%s/%s' % (context['cache_dir'], name, key_id)}


def requirement_name(text):
    """The distribution name a requirement string starts with ('' for a URL or a path)."""
    if '://' in text or text.startswith(('.', '/')):
        return ''
    return re.sub(r'[\[ <>=!~;@].*$', '', text.strip())


def stage_keys(plans, keys, extras, replaced=None):
    """Every stage's key: ``keys`` (the pip stages') and each source plan's build key with the stage's ``extras``
    on top; ``replaced`` ({stage: key}) wins over a plan (TE in wheel mode is not a source build)."""
    out = dict(keys or {})
    for name, plan in (plans or {}).items():
        out[name] = dict(plan['key'], **((extras or {}).get(name) or {}))
    out.update(replaced or {})
    return out


def own_distributions(plans, pip_own, extras, replaced=None):
    """{stage: [distribution names]} a stage installs and is judged by (a stage is not done when one of them is gone or
    at another version than its stamp recorded): the names of ``pip_own``'s requirements (URLs left out), each source
    plan's distribution with the stage's ``extras``; ``replaced`` ({stage: [requirements]}) wins."""
    out = {}
    for stage, reqs in (pip_own or {}).items():
        out[stage] = [n for n in (requirement_name(r) for r in reqs) if n]
    for name, plan in (plans or {}).items():
        if plan.get('distribution'):
            out[name] = [plan['distribution']] + [requirement_name(r) for r in (extras or {}).get(name) or []]
    for stage, reqs in (replaced or {}).items():
        out[stage] = [n for n in (requirement_name(r) for r in reqs) if n]
    return out


def source_tree(name, source, context):
    """Where a component is checked out: kept ones in the workspace, transient ones per base."""
    directory = source.get('dir') or name
    if source.get('keep'):
        return '%s/%s' % (context['workspace'], directory)
    return '%s/%s-%s' % (context['build_dir'], directory, tree_tag(context['base']))


def tree_tag(base):
    """The base's part of a transient source tree's name: 8 hex digits of its path."""
    return hashlib.sha256(base.encode('utf-8')).hexdigest()[:8]


def ls_remote_commit(output, ref):
    """The commit of refs/heads/<ref> in `git ls-remote` output ('' when the branch is not there)."""
    for line in (output or '').splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1] == 'refs/heads/%s' % ref and COMMIT.match(parts[0]):
            return parts[0]
    return ''


def floating_to_resolve(names, sources, stamps, refresh):
    """The components of ``names`` whose floating branch must be asked for now: every one when
    ``refresh``, else those without a commit recorded in their stage stamp (``stamps``)."""
    result = []
    for name in names:
        source = sources.get(name) or {}
        if source.get('ref_kind') != 'branch':
            continue
        recorded = ((stamps or {}).get(name) or {}).get('key') or {}
        if refresh or not COMMIT.match(str(recorded.get('commit') or '')):
            result.append(name)
    return result


def source_commits(sources, stamps, resolved):
    """{name: commit} of every component: its pin (ref_kind commit), else what ``git ls-remote`` just
    answered (``resolved``: {name: ls-remote output}), else the commit recorded in its stamp, else ''.
    An abbreviated commit (ref_kind short_commit) is never expanded here: only a recorded full commit that starts
    with it counts (a base built with the full commit given keeps it), else ''.
    Plus ``moves``: {name: {'from', 'to'}} where a fresh answer differs from the recorded commit."""
    commits, moves = {}, {}
    for name, source in sources.items():
        recorded = str((((stamps or {}).get(name) or {}).get('key') or {}).get('commit') or '')
        if source.get('ref_kind') == 'commit':
            commits[name] = source.get('ref', '')
        elif source.get('ref_kind') == 'short_commit':
            short = str(source.get('ref', ''))
            commits[name] = recorded if COMMIT.match(recorded) and short and recorded.startswith(short) else ''
        elif name in (resolved or {}):
            commits[name] = ls_remote_commit(resolved[name], source.get('ref', ''))
            if COMMIT.match(recorded) and commits[name] and commits[name] != recorded:
                moves[name] = {'from': recorded, 'to': commits[name], 'ref': source.get('ref', '')}
        else:
            commits[name] = recorded if COMMIT.match(recorded) else ''
    return {'commits': commits, 'moves': moves}
