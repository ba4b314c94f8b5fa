# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Check-mode plans for a venv that does not exist yet, or that earlier tasks would have changed.

pip plans (`install --dry-run --report`) against the distributions its interpreter sees. To plan
for a venv as it *would* be, pip_constrained makes a scratch venv in its temporary directory
(`python -m venv --without-pip`, no network, nothing outside the module's tmpdir), writes a
metadata-only `.dist-info` for every distribution that venv would hold (the real venv's, or
ensurepip's pip for a venv not created yet, plus what earlier tasks plan to install), and runs a
pip (the venv's own, else the planning interpreter's, else ensurepip's bundled wheel) with that
scratch interpreter. pip resolves against that set exactly as it would against the real venv.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os

from ansible_collections.primus.trainenv.plugins.module_utils import release_lock
from ansible_collections.primus.trainenv.plugins.module_utils.common import wheel_name
from ansible_collections.primus.trainenv.plugins.module_utils._pip.command import COMMON_FLAGS

# Run by the planning interpreter (-I): where its pip is, and which pip ensurepip would install.
PLAN_PROBE = r'''
import json, os, sys
out = {"version": list(sys.version_info[:3]), "pip": None, "pip_version": None, "ensurepip": None, "wheel": None}
try:
    import pip
    out["pip"] = os.path.dirname(os.path.abspath(pip.__file__))
    out["pip_version"] = pip.__version__
except Exception:
    pass
try:
    import ensurepip
    out["ensurepip"] = ensurepip.version()
    bundled = os.path.join(os.path.dirname(ensurepip.__file__), "_bundled")
    wheels = [w for w in os.listdir(bundled) if w.startswith("pip-") and w.endswith(".whl")]
    out["wheel"] = os.path.join(bundled, wheels[0]) if wheels else None
except Exception:
    pass
print(json.dumps(out))
'''


def _dist_dir_name(name, version):
    return '%s-%s.dist-info' % (wheel_name(name), version)


def fake_dist_files(name, version, requires=(), direct_url=None):
    """{relative path: text} of a metadata-only installed distribution."""
    base = _dist_dir_name(name, version)
    lines = ['Metadata-Version: 2.1', 'Name: %s' % name, 'Version: %s' % version]
    lines += ['Requires-Dist: %s' % r for r in requires or ()]
    files = {base + '/METADATA': '\n'.join(lines) + '\n', base + '/INSTALLER': 'primus.trainenv-plan\n'}
    if direct_url:
        files[base + '/direct_url.json'] = json.dumps(direct_url)
    return files


def write_fake_dists(site_dir, dists):
    """dists: [(name, version, requires, direct_url)]; writes their metadata into site_dir."""
    for name, version, requires, direct_url in dists:
        for rel, text in fake_dist_files(name, version, requires, direct_url).items():
            path = os.path.join(site_dir, rel)
            if not os.path.isdir(os.path.dirname(path)):
                os.makedirs(os.path.dirname(path))
            with open(path, 'w') as handle:
                handle.write(text)


def prior_entries(pk, entries):
    """(name, version) pairs of `prior_plan` entries: 'name==version' strings or {name, version} dicts.

    Raises ValueError naming a bad entry. Entries without a version (an inexact plan) are skipped, and so
    are wheel builds (action `build`, from wheel_dir): they install nothing.
    """
    out = []
    for index, entry in enumerate(entries or []):
        if isinstance(entry, dict) and entry.get('action') == 'build':
            continue
        if isinstance(entry, dict):
            name, version = entry.get('name'), entry.get('version')
        elif isinstance(entry, str) and '==' in entry:
            name, version = entry.split('==', 1)
        else:
            raise ValueError('prior_plan[%d]: %r is neither name==version nor a plan entry {name, version}'
                             % (index, entry))
        if not name:
            raise ValueError('prior_plan[%d]: %r has no name' % (index, entry))
        if version is None or version == '':
            continue
        try:
            version = str(pk.Version(str(version).strip()))
        except pk.InvalidVersion:
            raise ValueError('prior_plan[%d]: %r is not a version' % (index, version))
        out.append((str(name).strip(), version))
    return out


def planned_venv(pk, installed, prior):
    """[(name, version, requires, direct_url)] of the venv after earlier tasks: installed, then prior."""
    by_key = {}
    for dist in installed:
        by_key[dist.key] = (dist.name, dist.version, list(dist.requires), dist.direct_url)
    for name, version in prior:
        by_key[pk.canonicalize_name(name)] = (name, version, [], None)
    return [by_key[k] for k in sorted(by_key)]


def requested_plan(items):
    """An inexact plan: the requested items themselves, versions known only where pinned exactly."""
    out = []
    for item in items:
        version = item.version
        if version is None and item.req is not None:
            pins = [s.version for s in item.req.specifier if s.operator in ('==', '===') and '*' not in s.version]
            version = pins[0] if len(pins) == 1 else None
        out.append({'name': item.name or item.text, 'version': version, 'installed': None, 'action': 'install',
                    'requested': True, 'requirement': item.text})
    return sorted(out, key=lambda x: x['name'].lower())


# ---- the install after a dry-run: exactly the files pip chose, without a second resolve --------------

def _report_hash(archive):
    """'sha256=<hex>' (pip's link fragment form) of a report's archive_info, or None."""
    hashes = archive.get('hashes') or {}
    if isinstance(hashes, dict) and hashes.get('sha256'):
        return 'sha256=%s' % hashes['sha256']
    text = archive.get('hash') or ''
    return text if isinstance(text, str) and text.startswith('sha256=') else None


def _with_credentials(url, credentials):
    """url with the user:password of the index (or find-links) URL on the same host, as pip would send them.

    pip's report names files without credentials; pip itself sends an index's credentials to every URL of that
    host once it has fetched the index page, which the exact install does not fetch.
    """
    scheme, sep, rest = url.partition('://')
    if not sep:
        return url
    netloc, slash, path = rest.partition('/')
    if '@' in netloc:
        return url
    auth = credentials.get(netloc.lower())
    return '%s://%s@%s%s%s' % (scheme, auth, netloc, slash, path) if auth else url


def index_credentials(urls):
    """{host[:port]: 'user:password'} of the given index / find-links URLs that carry credentials."""
    out = {}
    for url in urls:
        rest = (url or '').partition('://')[2]
        netloc = rest.split('/', 1)[0]
        if '@' in netloc:
            auth, _sep, host = netloc.rpartition('@')
            out.setdefault(host.lower(), auth)
    return out


def exact_install(planned, build_isolation, credentials=None):
    """How to install exactly the files of a dry-run's plan without resolving again: (requirements, links, vcs,
    None), or (None, None, None, why not) when only a second full `pip install` can do it.

    Each file chosen from an index or find-links location is installed as `name==version` from a find-links page
    (`links`: (url#sha256=..., file name) pairs) that lists that one file, with --no-index and --no-deps: pip reads
    no index page and no metadata again and downloads each file once; the distribution is recorded as installed from
    an index, as before. A wheel given by path is installed from that path. A (non-editable) VCS checkout is
    `vcs`: `git+<repository>@<commit>#egg=<name>` of the commit pip resolved, installed after the files with --no-deps
    (its dependencies are among them) and the task's indexes (for its build). Handed back to a full install: an
    editable project, a directory or a remote direct URL (pip would fetch it again anyway), and an sdist that needs
    an isolated build (its build requirements come from the index).
    """
    credentials = credentials or {}
    requirements, links, vcs = [], [], []
    for item in planned:
        info = item.download or {}
        url = info.get('url')
        if not url or not isinstance(url, str):
            return None, None, None, 'the report names no file for %s %s' % (item.name, item.version)
        archive = info.get('archive_info')
        file_name = url.split('#', 1)[0].split('?', 1)[0].rsplit('/', 1)[-1]
        target = vcs_target(item)
        if target is not None:
            vcs.append(target)
            continue
        if not isinstance(archive, dict):
            return None, None, None, '%s %s is a %s' % (item.name, item.version, 'VCS checkout' if info.get('vcs_info')
                                                        else 'project directory')
        is_wheel = file_name.endswith('.whl')
        if not is_wheel and build_isolation:
            return None, None, None, '%s %s is built from %s with build isolation (its build requirements come from ' \
                                     'the index)' % (item.name, item.version, file_name)
        if item.is_direct:
            if not (is_wheel and url.startswith('file://')):
                return None, None, None, '%s %s is given as %s' % (item.name, item.version, url)
            from urllib.parse import unquote  # pylint: disable=import-outside-toplevel
            requirements.append(unquote(url[len('file://'):]))
            continue
        digest = _report_hash(archive)
        link = _with_credentials(url.split('#', 1)[0], credentials) + ('#%s' % digest if digest else '')
        links.append((link, file_name))
        requirements.append('%s==%s' % (item.name, item.version))
    return requirements, links, vcs, None


def vcs_target(item):
    """`<vcs>+<repository>@<commit>#egg=<name>[&subdirectory=...]` of a planned VCS checkout (PEP 610 download_info: the
    repository's URL without the vcs+ prefix, vcs_info's commit_id), or None for anything else (an editable
    checkout - dir_info - included)."""
    info = item.download or {}
    vcs = info.get('vcs_info')
    if (not isinstance(vcs, dict) or not vcs.get('vcs') or not vcs.get('commit_id') or info.get('dir_info') is not None
            or not item.is_direct):
        return None
    try:
        return release_lock.direct_target({'name': item.name, 'vcs': vcs.get('vcs'), 'repo': info.get('url'),
                                           'commit': vcs.get('commit_id'), 'subdirectory': info.get('subdirectory')})
    except release_lock.LockError:
        return None   # handed back to a full install


def links_page(links):
    """A find-links page (PEP 503 anchors) listing exactly `links`."""
    import html  # pylint: disable=import-outside-toplevel
    rows = ''.join('<a href="%s">%s</a>\n' % (html.escape(url, quote=True), html.escape(name)) for url, name in links)
    return '<!DOCTYPE html>\n<html><body>\n%s</body></html>\n' % rows


def exact_install_args(python, params, requirements, page, log_path=None):
    """`pip install --no-index --find-links=<page> --no-deps` of exactly the planned files (see exact_install).

    The task's constraints, --pre, --no-build-isolation, --force-reinstall and extra_args apply as in the full
    install; the indexes do not (the page lists the chosen files), nor does a requirements file (the plan replaces it).
    """
    args = [python, '-m', 'pip', 'install'] + COMMON_FLAGS + ['--retries', '0']
    if log_path:
        args.append('--log=%s' % log_path)
    args += ['--no-index', '--find-links=%s' % page, '--no-deps']
    if params.get('pre'):
        args.append('--pre')
    if params.get('no_build_isolation'):
        args.append('--no-build-isolation')
    if params.get('state') == 'forcereinstall':
        args.append('--force-reinstall')
    for path in params.get('constraints') or []:
        args.append('--constraint=%s' % path)
    args += list(params.get('extra_args') or [])
    return args + ['--'] + list(requirements)
