# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""pip command lines and the environment pip runs with."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

# Flags on every pip call: never prompt, no self-update nag, no progress bars in logs.
COMMON_FLAGS = ['--disable-pip-version-check', '--no-input', '--no-color', '--progress-bar', 'off']


def pip_environ(base, environment=None, use_pip_config=False):
    """The full environment for pip.

    use_pip_config=False: every inherited PIP_* variable is dropped and PIP_CONFIG_FILE is
    os.devnull, which makes pip skip its global, site and user configuration files. Variables
    given in `environment` are applied last and always win (PIP_* included).
    """
    env = dict(base)
    if not use_pip_config:
        for key in list(env):
            if key.startswith('PIP_'):
                del env[key]
        env['PIP_CONFIG_FILE'] = os.devnull
    for key, value in (environment or {}).items():
        env[str(key)] = '' if value is None else str(value)
    return env


def index_args(params):
    args = []
    if params.get('index_url'):
        args += ['--index-url', params['index_url']]
    for url in params.get('extra_index_urls') or []:
        args += ['--extra-index-url', url]
    for link in params.get('find_links') or []:
        args += ['--find-links', link]
    if params.get('no_index'):
        args.append('--no-index')
    return args


def install_args(python, params, targets, report_path=None, metadata_only=False):
    """`python -m pip install ...` for the real install, the dry-run (report_path) or src metadata.

    targets: the positional requirement arguments (name entries as given, then src).
    metadata_only: a --no-deps dry-run that only reads a source tree's name and version.
    """
    args = [python, '-m', 'pip', 'install'] + COMMON_FLAGS
    if report_path:
        args += ['--dry-run', '--report', report_path]
    if metadata_only:
        args += ['--no-deps']
        if params.get('no_build_isolation'):
            args += ['--no-build-isolation', '--no-index']
        else:
            args += index_args(params)
        if params.get('pre'):
            args.append('--pre')
        return args + list(params.get('extra_args') or []) + list(targets)
    args += index_args(params)
    if params.get('pre'):
        args.append('--pre')
    if params.get('no_deps'):
        args.append('--no-deps')
    if params.get('no_build_isolation'):
        args.append('--no-build-isolation')
    if params.get('state') == 'forcereinstall':
        args.append('--force-reinstall')
    for path in params.get('constraints') or []:
        args += ['--constraint', path]
    if params.get('requirements'):
        args += ['--requirement', params['requirements']]
    args += list(params.get('extra_args') or [])
    return args + list(targets)


def uninstall_args(python, names):
    return [python, '-m', 'pip', 'uninstall', '--yes'] + COMMON_FLAGS[:3] + list(names)
