# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Preflight's checks of the inputs and of what node_info found, before the lock: pure functions.

``problems(facts)`` returns the message of every check that fails, in the order they are checked
(the run shows the first: a later check can be a consequence of an earlier one). Each message says
what is wrong and what to do. ``facts`` holds what the run has published by then: ``settings``
(primus_settings), ``inputs`` (primus_inputs: each directory setting checked by safe_paths),
``node`` (primus_node), ``pins`` (primus_pins) and ``paths`` (primus_paths).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import re

from ansible_collections.primus.trainenv.plugins.module_utils.gpu_arch import ArchError, KNOWN_ARCHS, normalize_arch_list
from ansible_collections.primus.trainenv.plugins.module_utils import venv_state
from ansible_collections.primus.trainenv.plugins.module_utils.common import redact_url
from ansible_collections.primus.trainenv.plugins.module_utils.safe_paths import visible

TE_MODES = ('auto', 'wheel', 'source')
JIT_CACHES = ('auto', 'node', 'base')
DIR_LABELS = {'build': 'primus_build_dir (SRC_DIR)', 'cache': 'primus_cache_dir'}
GIB = 1024 ** 3


def _text(value):
    return '' if value is None else str(value)


def _base(settings):
    base = settings.get('base')
    if not isinstance(base, str) or not base.strip():
        return ("PRIMUS_BASE is not set. Export it to a writable directory on a disk with tens of GB free, e.g. export "
                "PRIMUS_BASE=\"$HOME/envs/primus-env\" (or pass -e primus_base=/abs/path, or set primus_base in the "
                "inventory), and use the same value for building and for every later 'source env.sh'.")
    if not os.path.isabs(base):
        return ("PRIMUS_BASE must be an absolute path, got '%s'. Build stages work in subdirectories and the venv records "
                "absolute paths, so a relative base breaks them%s. Fix: export PRIMUS_BASE=\"$HOME/%s\" or another "
                "absolute path." % (base, ' (~ is not expanded here)' if base.startswith('~') else '',
                                    re.sub(r'^~/?', '', base)))
    return ''


def _directories(inputs):
    """Every directory setting with a problem; one under a bad PRIMUS_BASE (the default venv) is not its own."""
    base = inputs.get('base') or {}
    derived = ('^' + re.escape(_text(base.get('given'))) + '/') if base.get('problem') else None
    items = []
    for value in inputs.values():
        items.extend(value if isinstance(value, list) else [value])
    bad = [item for item in items
           if item.get('problem') and not (derived and re.match(derived, _text(item.get('given'))))]
    if not bad:
        return ''
    return ''.join('%s. Fix: %s. ' % (item['problem'], item['fix']) for item in bad) + 'Nothing was created or changed.'


def _te_mode(settings, pins):
    mode = settings.get('te_mode') or 'auto'
    if mode in TE_MODES:
        return ''
    return ("PRIMUS_TE_MODE must be one of auto, wheel, source (got '%s'). Fix: unset it (auto picks the wheel on glibc "
            ">= %s, else a source build), or set PRIMUS_TE_MODE / primus_te_mode to wheel or source."
            % (_text(settings.get('te_mode')), pins['te']['min_glibc_for_wheel']))


def _te_source_ref(settings, pins):
    """primus_te_source_ref: a full commit that names the release's TE commit (roles/primus used it when it does)."""
    given = _text(settings.get('te_source_ref'))
    source = (pins.get('sources') or {}).get('te') or {}
    full = re.match(r'^[0-9a-f]{40}$', given)
    if not given or (full and source.get('ref') == given):
        return ''
    ref = _text(source.get('ref'))
    if not full:
        why = 'is not a full commit (40 lower-case hex digits)'
    elif source.get('ref_kind') == 'branch':
        why = "cannot pin the release's TE branch %s (only an abbreviated commit can be completed)" % ref
    else:
        why = 'does not start with the commit the release names for TE (%s)' % ref
    return ("primus_te_source_ref %s %s. Fix: give the full commit of TE %s (git rev-parse %s in a clone of %s), or "
            "leave it empty. Nothing was created or changed." % (visible(given), why, ref, ref,
                                                                 redact_url(_text(source.get('repo'))) or 'its repository'))


def _arch(settings):
    override = settings.get('arch_override') or ''
    try:
        normalize_arch_list(override, KNOWN_ARCHS)
    except ArchError as exc:
        return ("GPU arch override '%s': %s. Fix primus_arch_override (or PYTORCH_ROCM_ARCH), for example gfx942;gfx950, "
                "or leave it empty to detect the node's GPUs." % (_text(settings.get('arch_override')), exc))
    return ''


# More parallel compile jobs than any node has CPUs is a typo (and a number this long is no setting at all).
MAX_JOBS_LIMIT = 4096


def _max_jobs(settings):
    text = _text(settings.get('max_jobs') or '')
    if re.match(r'^([1-9][0-9]{0,3})?$', text) and (not text or int(text) <= MAX_JOBS_LIMIT):
        return ''
    shown = visible(text if len(text) <= 40 else text[:40] + '...')
    if re.match(r'^[1-9][0-9]*$', text):
        return ("MAX_JOBS (primus_max_jobs) is %s, more than %d parallel compile jobs. Fix: set it to at most the "
                "node's CPUs (such as 16), or unset it to derive it from the node's CPUs and memory."
                % (shown, MAX_JOBS_LIMIT))
    return ("MAX_JOBS (primus_max_jobs) must be a positive integer, got %s. Fix: set it to a number such as 16, "
            "or unset it to derive it from the node's CPUs and memory." % shown)


def _jit_cache(settings):
    if settings.get('jit_cache') in JIT_CACHES:
        return ''
    return ("primus_jit_cache must be one of auto, node, base (got '%s'). Fix: leave it unset (auto: node-local when "
            "PRIMUS_BASE is on a network filesystem), or set node or base." % _text(settings.get('jit_cache')))


def _min_free_gib(settings):
    if min_free_gib_ok(settings):
        return ''
    return ("primus_min_free_gib must be a number of GiB, got '%s'. Fix: e.g. -e primus_min_free_gib=60."
            % _text(settings.get('min_free_gib')))


def min_free_gib_ok(settings):
    return bool(re.match(r'^[0-9]+([.][0-9]+)?$', _text(settings.get('min_free_gib'))))


def _usable(node):
    if node.get('creatable'):
        return ''
    return ("PRIMUS_BASE %s cannot be used by user %s: %s. Fix: choose a PRIMUS_BASE under a directory you own (e.g. "
            "\"$HOME/envs/primus-env\")%s. Nothing was created."
            % (node.get('path'), node.get('user'), node.get('problem'),
               (', or make %s writable for %s' % (node.get('nearest_existing'), node.get('user')))
               if node.get('nearest_is_dir') else ''))


WRITTEN_LABELS = {'venv': 'primus_venv_dir (VENV_DIR)', 'workspace': 'primus_workspace_dir (WORKSPACE_DIR)',
                  'wheel_store': 'primus_wheel_store_shared'}
WRITTEN_NAMES = {'wheel_store': 'shared wheel store'}


def _written(node):
    """PRIMUS_BASE, then every directory the run writes: real directories of this user's, reached through no link a
    user made; an existing base empty or recognisably one of this collection (node_info's base_problem)."""
    base = node.get('path')
    problem = node.get('base_problem')
    if problem:
        foreign = 'is not empty and is not a base' in problem
        return ("PRIMUS_BASE %s %s. A run writes a venv, state/ and logs/ into PRIMUS_BASE, so it must be a directory of "
                "your own that is empty or holds a base of this collection. Fix: %s. Nothing was created or changed."
                % (visible_text(base), problem if problem.startswith(('is ', 'does ', 'exists ')) else
                   'cannot be used: ' + problem,
                   'choose a new directory for PRIMUS_BASE (it is created), e.g. export '
                   'PRIMUS_BASE="$HOME/envs/primus-env"' if foreign else
                   'give PRIMUS_BASE as a path of your own without such links (the resolved path, from realpath, if '
                   'it is yours), e.g. "$HOME/envs/primus-env"'))
    parts = []
    for name, seen in sorted((node.get('written_dirs') or {}).items()):
        if seen.get('problem'):
            label = WRITTEN_LABELS.get(name, 'under PRIMUS_BASE')
            parts.append('The %s directory %s (%s) %s. ' % (WRITTEN_NAMES.get(name, name), _text(seen.get('path')), label,
                                                            seen['problem']))
    if not parts:
        return ''
    return (''.join(parts) + 'Every directory a run writes must be a real directory of your own (not a link that '
            'could point outside the base). Fix: replace the link by a directory of its own (move what it points to '
            'back in place), or set the directory setting to a path of your own. Nothing was created or changed.')


def visible_text(value):
    return visible(_text(value))


def _private(node):
    parts = []
    for name, seen in (node.get('private_dirs') or {}).items():
        if not seen.get('problem'):
            continue
        label = DIR_LABELS.get(name, name)
        owner = seen.get('owner')
        parts.append(
            'The %s directory %s (%s) %s. It is never adopted: whoever can write it can change what gets %s. Fix: set '
            '%s to a directory of your own on local disk, %s. '
            % (name, seen.get('path'), label, seen['problem'],
               'built and installed' if name == 'build' else 'installed from the pip/uv caches', label.split(' ')[0],
               ('or ask %s (or an admin) to remove %s' % (owner, seen.get('path'))) if owner and owner != node.get('user')
               else 'or fix it (chmod go-w, or replace the link by a directory) if it is yours'))
    return (''.join(parts) + 'Nothing was created or changed.') if parts else ''


def _megatron(node):
    """The Megatron checkouts another user can change: nothing may run there (megatron_helpers' own refusal)."""
    refusals = node.get('megatron_checkouts') or {}
    if not refusals:
        return ''
    return ' '.join(refusals[path] for path in sorted(refusals)) + ' Nothing was created or changed.'


def _space(settings, node):
    if not min_free_gib_ok(settings):
        return ''
    need = float(settings['min_free_gib'])
    free = node.get('free_bytes') or 0
    if free >= need * GIB:
        return ''
    return ("PRIMUS_BASE %s is on a filesystem with %.1f GiB free (at %s), less than primus_min_free_gib=%s GiB. Fix: free "
            "space there, pick a PRIMUS_BASE on a bigger disk, or lower the threshold (-e primus_min_free_gib=N) if you "
            "know the build fits (an already built environment needs little more)."
            % (node.get('path'), free / float(GIB), node.get('nearest_existing'), settings['min_free_gib']))


def _python(settings, node, pins):
    want = pins['python_version']
    python = settings.get('python') or ''
    seen = (node.get('interpreters') or {}).get(python) or {}
    if python and seen.get('version') != want:
        return ("PRIMUS_PYTHON=%s is not Python %s: it %s. Fix: point PRIMUS_PYTHON (primus_python) at a Python %s "
                "interpreter, or unset it to use python%s on PATH or let uv provide one."
                % (python, want, ('is Python ' + seen['version']) if seen.get('version') else seen.get('error'),
                   want, want))
    return ''


def _venv(node, pins, paths):
    want = pins['python_version']
    seen = node.get('venv') or {}
    if seen.get('kind') == 'moved':
        return ("PRIMUS_BASE %s: %s. Fix: run with the original PRIMUS_BASE (%s), or build a new environment in this "
                "copy: %s, and remove its stamps (rm -rf '%s'), then run again. Nothing was changed or deleted."
                % (paths.get('base'), seen.get('problem'), os.path.dirname(seen.get('made_at') or '') or '?',
                   venv_state.removal(paths.get('venv'), _inside(paths, 'venv')), paths.get('state')))
    venv = (node.get('interpreters') or {}).get(paths.get('venv_python')) or {}
    if venv.get('exists') and venv.get('version') != want:
        return ("existing venv at %s is Python %s, but %s requires %s. The pinned torch nightly ships a cp312 Linux wheel "
                "only, so an older venv cannot be upgraded in place. Fix: %s, then run the same ansible-playbook "
                "command again. Nothing was changed or deleted."
                % (paths.get('venv'), venv['version'] if venv.get('version')
                   else 'unknown (its python %s)' % venv.get('error'), pins['release'], want,
                   venv_state.removal(paths.get('venv'), _inside(paths, 'venv'))))
    return ''


def _release(node, pins, paths):
    """One release per base: a base whose stages recorded another release is not built over (jobs may run from it)."""
    want = pins.get('release')
    found = {}
    for stage, stamp in sorted((node.get('stamps') or {}).items()):
        if isinstance(stamp, dict) and not stamp.get('problem') and stamp.get('release') not in (None, want):
            found.setdefault(_text(stamp.get('release')), []).append(stage)
    if not found:
        return ''
    held = ', '.join('%s (recorded by stages %s)' % (release, ' '.join(stages)) for release, stages in sorted(found.items()))
    base = _text(paths.get('base')).rstrip('/')
    beside = os.path.join(os.path.dirname(base), 'primus-%s' % want) if base else '$HOME/envs/primus-%s' % want
    return ("PRIMUS_BASE %s holds release %s, and this run is for release %s. A base holds one release, so that the "
            "jobs running from it keep their environment while another release is built. Fix: build %s in a base of its "
            "own beside it, e.g. -e primus_base=%s (the layout ~/envs/primus-<release>, docs/releases.md), then switch "
            "to it (module load primus/%s, or primus_current_link); or run release %s here (-e primus_release=%s). "
            "Nothing was created or changed." % (visible_text(base), held, want, want, beside, want,
                                                 sorted(found)[0], sorted(found)[0]))


def _links(settings, node, paths):
    """primus_current_link and primus_modulefiles_dir (moved once verify passed): outside the base, nothing there but a
    link (never a file or directory of the user's replaced), the current link's directory existing."""
    base = _text(paths.get('base')).rstrip('/')
    files = node.get('files') or {}
    out = []
    for label, given, path in (('primus_current_link', settings.get('current_link'), paths.get('current_link')),
                               ('primus_modulefiles_dir', settings.get('modulefiles_dir'),
                                paths.get('release_modulefile'))):
        path = _text(path)
        if not given or not path:
            continue   # not set, or refused by _directories
        where = given
        if label != 'primus_current_link':
            where = '%s/primus/%s' % (_text(given).rstrip('/'), _text(paths.get('release')))
        if base and (path == base or path.startswith(base + '/')):
            out.append('%s %s is inside PRIMUS_BASE %s: it must outlive the base it points to. Fix: choose a path '
                       'outside the bases, e.g. ~/envs/primus-current or ~/privatemodules' % (label, _text(given), base))
            continue
        seen = files.get(where) or {}
        if seen.get('kind') not in (None, '', 'link'):
            out.append('%s: %s is a %s, not a link; it is never replaced. Fix: move it away, or choose another path'
                       % (label, where, 'directory' if seen.get('kind') == 'dir' else seen.get('kind')))
        if label == 'primus_current_link':
            parent = files.get(os.path.dirname(_text(given).rstrip('/'))) or {}
            if parent.get('kind') != 'dir':
                out.append('%s %s: its directory %s does not exist. Fix: create it (mkdir -p), or choose another path'
                           % (label, _text(given), os.path.dirname(_text(given).rstrip('/'))))
    if not out:
        return ''
    return '. '.join(out) + '. Nothing was created or changed.'


def _inside(paths, name):
    """Whether primus_paths[name] is inside PRIMUS_BASE (the user's own: a refusal may suggest removing it)."""
    base = _text(paths.get('base')).rstrip('/')
    return bool(base) and _text(paths.get(name)).startswith(base + '/')


def _tools(settings, node):
    found = list((node.get('commands') or {}).keys())
    missing = [tool for tool in settings.get('build_tools') or [] if tool not in found]
    compilers = settings.get('compilers') or []
    if not any(c in found for c in compilers):
        missing.append('a C++ compiler (%s)' % ', '.join(compilers))
    if not missing:
        return ''
    return ("The source builds need git, make and a C++ compiler; not found on PATH: %s. Fix: install them (e.g. apt "
            "install git make g++ or ask your admin) or put them on PATH for this user." % ', '.join(missing))


def problems(facts):
    """The message of every failing check, in order: the inputs first, then what node_info found."""
    settings = facts['settings']
    node = facts['node']
    pins = facts['pins']
    found = [_base(settings), _directories(facts['inputs']), _te_mode(settings, pins), _te_source_ref(settings, pins),
             _arch(settings),
             _max_jobs(settings), _jit_cache(settings), _min_free_gib(settings),
             _written(node), _usable(node), _release(node, pins, facts['paths']), _links(settings, node, facts['paths']),
             _private(node), _megatron(node), _space(settings, node),
             _python(settings, node, pins),
             _venv(node, pins, facts['paths']), _tools(settings, node)]
    return [message for message in found if message]
