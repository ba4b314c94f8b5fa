# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""pip command lines and the environment pip runs with.

Every option value is attached with `=` and the requirements follow `--`, so no value given to
the module can be read by pip as another option. pip's own retries are off (`--retries 0`): the
module retries transient failures itself, visibly, so that every retry shows in the log.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

# Flags on every pip call: never prompt, no self-update nag, no progress bars in logs.
COMMON_FLAGS = ['--disable-pip-version-check', '--no-input', '--no-color', '--progress-bar', 'off']

# extra_args that would install somewhere else than the venv, or that have an option of their own
# (which the offline decision reads). `-x` short options match with an attached value too.
FORBIDDEN_EXTRA_ARGS = (
    '-t', '--target', '--prefix', '--root', '--user', '--src', '--python', '-e', '--editable',
    '-r', '--requirement', '-c', '--constraint', '-i', '--index-url', '--extra-index-url', '-f', '--find-links',
    '--no-index', '--pre', '--no-deps', '--no-build-isolation', '--force-reinstall', '-U', '--upgrade',
    '-I', '--ignore-installed', '--dry-run', '--report', '--log', '--log-file', '--retries', '--isolated',
    '--break-system-packages',
)


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


def check_extra_args(extra_args):
    """Refuse extra_args that are not options, or that the module owns (ValueError names the entry)."""
    for index, arg in enumerate(extra_args or []):
        if not arg.startswith('-'):
            raise ValueError('extra_args[%d]: %r is not an option; give options as --option=value (a bare word would '
                             'be read as one more requirement)' % (index, arg))
        name = arg.split('=', 1)[0]
        if not arg.startswith('--') and len(arg) > 2 and not set(arg[1:]) <= set('vq'):
            raise ValueError('extra_args[%d]: %r combines short options; give each option on its own (long form)'
                             % (index, arg))
        for forbidden in FORBIDDEN_EXTRA_ARGS:
            short = len(forbidden) == 2 and not arg.startswith('--')
            if name == forbidden or (short and arg.startswith(forbidden)):
                raise ValueError('extra_args[%d]: %s is refused: it installs outside the venv or bypasses an option of '
                                 'this module (use the module option instead)' % (index, arg))


def index_args(params):
    args = []
    if params.get('index_url'):
        args.append('--index-url=%s' % params['index_url'])
    for url in params.get('extra_index_urls') or []:
        args.append('--extra-index-url=%s' % url)
    for link in params.get('find_links') or []:
        args.append('--find-links=%s' % link)
    if params.get('no_index'):
        args.append('--no-index')
    return args


def install_args(python, params, targets, report_path=None, metadata_only=False, log_path=None):
    """`python -m pip install ...` for the real install, the dry-run (report_path) or src metadata.

    targets: the positional requirement arguments (name entries as given, then src), after `--`.
    metadata_only: a --no-deps dry-run that only reads a source tree's name and version.
    log_path: pip's own debug log (--log), read to classify failures.
    """
    args = [python, '-m', 'pip', 'install'] + COMMON_FLAGS + ['--retries', '0']
    if log_path:
        args.append('--log=%s' % log_path)
    if report_path:
        args += ['--dry-run', '--report=%s' % report_path]
    if metadata_only:
        args += ['--no-deps']
        if params.get('no_build_isolation'):
            args += ['--no-build-isolation', '--no-index']
        else:
            args += index_args(params)
        if params.get('pre'):
            args.append('--pre')
        return args + list(params.get('extra_args') or []) + ['--'] + list(targets)
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
        args.append('--constraint=%s' % path)
    if params.get('requirements'):
        args.append('--requirement=%s' % params['requirements'])
    args += list(params.get('extra_args') or [])
    return args + ['--'] + list(targets)


def wheel_args(python, params, src, wheel_dir, log_path=None):
    """`python -m pip wheel --no-deps` of the source tree src into wheel_dir (a scratch directory).

    Builds with the task's indexes (for an isolated build's requirements), constraints, --pre and
    --no-build-isolation; never installs. no_deps, requirements and state do not apply to a build.
    """
    args = [python, '-m', 'pip', 'wheel'] + COMMON_FLAGS + ['--retries', '0']
    if log_path:
        args.append('--log=%s' % log_path)
    args += ['--no-deps', '--wheel-dir=%s' % wheel_dir]
    args += index_args(params)
    if params.get('pre'):
        args.append('--pre')
    if params.get('no_build_isolation'):
        args.append('--no-build-isolation')
    for path in params.get('constraints') or []:
        args.append('--constraint=%s' % path)
    args += list(params.get('extra_args') or [])
    return args + ['--', src]


def uninstall_args(python, names):
    return [python, '-m', 'pip', 'uninstall', '--yes'] + COMMON_FLAGS[:3] + ['--'] + list(names)
