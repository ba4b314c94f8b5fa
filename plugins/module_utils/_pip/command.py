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
import selectors
import subprocess

# Flags on every pip call: never prompt, no self-update nag, no progress bars in logs.
COMMON_FLAGS = ['--disable-pip-version-check', '--no-input', '--no-color', '--progress-bar', 'off']

# Every long option of `pip install` (pip 26.3, general options included): an abbreviation is resolved
# against all of them, as pip's optparse does (a unique prefix of a long option is that option).
PIP_INSTALL_LONG = (
    '--abi', '--all-releases', '--break-system-packages', '--build-constraint', '--cache-dir', '--cert',
    '--check-build-dependencies', '--client-cert', '--compile', '--config-settings', '--constraint', '--debug',
    '--default-timeout', '--disable-pip-version-check', '--dry-run', '--editable', '--exists-action',
    '--extra-index-url', '--find-links', '--force-reinstall', '--group', '--help', '--ignore-installed',
    '--ignore-requires-python', '--implementation', '--index-url', '--isolated', '--keyring-provider', '--local-log',
    '--log', '--log-file', '--no-binary', '--no-build-isolation', '--no-cache-dir', '--no-clean', '--no-color',
    '--no-compile', '--no-dependencies', '--no-deps', '--no-index', '--no-input', '--no-proxy-env',
    '--no-python-version-warning', '--no-require-hashes', '--no-user', '--no-warn-conflicts',
    '--no-warn-script-location', '--only-binary', '--only-dependencies', '--only-deps', '--only-final', '--platform',
    '--pre', '--prefer-binary', '--prefix', '--progress-bar', '--proxy', '--pypi-url', '--python', '--python-version',
    '--quiet', '--refresh-package', '--report', '--require-hashes', '--require-venv', '--require-virtualenv',
    '--requirement', '--requirements-from-script', '--resume-retries', '--retries', '--root', '--root-user-action',
    '--source', '--source-dir', '--source-directory', '--src', '--target', '--timeout', '--trusted-host', '--upgrade',
    '--upgrade-strategy', '--uploaded-prior-to', '--use-deprecated', '--use-feature', '--use-pep517', '--user',
    '--verbose',
)

# The options extra_args may carry (allow-list): they change how pip fetches, builds and reports, never where it
# installs, where it gets distributions from, or what it is asked for (the module's own options do that, and the
# offline decision reads them). Anything else - including an abbreviation of a refused option - is refused.
EXTRA_ARGS_ALLOWED = (
    '--cache-dir', '--cert', '--check-build-dependencies', '--client-cert', '--compile', '--config-settings',
    '--debug', '--default-timeout', '--disable-pip-version-check', '--exists-action', '--keyring-provider',
    '--no-binary', '--no-cache-dir', '--no-clean', '--no-color', '--no-compile', '--no-input',
    '--no-python-version-warning', '--no-warn-conflicts', '--no-warn-script-location', '--only-binary',
    '--prefer-binary', '--progress-bar', '--proxy', '--quiet', '--require-hashes', '--require-venv',
    '--require-virtualenv', '--root-user-action', '--timeout', '--trusted-host', '--use-deprecated', '--use-feature',
    '--use-pep517', '--verbose',
)
# Short options of pip install and their long form; -v and -q may repeat (-vv), -C takes a value.
PIP_INSTALL_SHORT = {'-C': '--config-settings', '-I': '--ignore-installed', '-U': '--upgrade', '-c': '--constraint',
                     '-e': '--editable', '-f': '--find-links', '-h': '--help', '-i': '--index-url', '-q': '--quiet',
                     '-r': '--requirement', '-t': '--target', '-v': '--verbose'}

# Why a refused option is refused, and the module option to use instead.
REFUSED_WHY = {
    '--target': 'it installs outside the venv', '--prefix': 'it installs outside the venv',
    '--root': 'it installs outside the venv', '--user': 'it installs outside the venv',
    '--src': 'it checks editable projects out outside the venv', '--python': 'it runs pip for another interpreter',
    '--break-system-packages': 'it is for installs outside a venv',
    '--index-url': 'use the option index_url', '--pypi-url': 'use the option index_url',
    '--extra-index-url': 'use the option extra_index_urls', '--find-links': 'use the option find_links',
    '--no-index': 'use the option no_index', '--pre': 'use the option pre', '--no-deps': 'use the option no_deps',
    '--no-dependencies': 'use the option no_deps', '--no-build-isolation': 'use the option no_build_isolation',
    '--requirement': 'use the option requirements', '--constraint': 'use the option constraints',
    '--editable': 'give -e lines in a requirements file', '--force-reinstall': 'use state=forcereinstall',
}


def resolve_long_option(name, known):
    """pip's optparse rule: an exact long option, else the one long option `name` is a unique prefix of.

    Returns the option, or raises ValueError naming the candidates (none, or an ambiguous prefix).
    """
    if name in known:
        return name
    hits = [opt for opt in known if opt.startswith(name)]
    if len(hits) == 1:
        return hits[0]
    if hits:
        raise ValueError('%s is an ambiguous abbreviation (%s)' % (name, ', '.join(sorted(hits))))
    raise ValueError('%s is not an option of pip install' % name)


def option_name(arg):
    """The long option an extra_args entry is, as pip reads it (abbreviations and short options resolved)."""
    if arg.startswith('--'):
        return resolve_long_option(arg.split('=', 1)[0], PIP_INSTALL_LONG)
    short = arg[:2]
    if short not in PIP_INSTALL_SHORT:
        raise ValueError('%s is not an option of pip install' % short)
    return PIP_INSTALL_SHORT[short]


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
    """Refuse extra_args that are not options, or not on the allow-list (ValueError names the entry and the fix).

    Each entry is resolved as pip resolves it - `--targ=/x` is `--target`, `-t/x` is `--target` - and must be one of
    EXTRA_ARGS_ALLOWED.
    """
    for index, arg in enumerate(extra_args or []):
        if not arg.startswith('-') or arg == '-' or arg == '--':
            raise ValueError('extra_args[%d]: %r is not an option; give options as --option=value (a bare word would '
                             'be read as one more requirement)' % (index, arg))
        if not arg.startswith('--') and len(arg) > 2 and not set(arg[1:]) <= set('vq') and arg[:2] != '-C':
            raise ValueError('extra_args[%d]: %r combines short options; give each option on its own (long form)'
                             % (index, arg))
        try:
            option = option_name(arg)
        except ValueError as exc:
            raise ValueError('extra_args[%d]: %r is refused: %s; give an option this module accepts in extra_args (%s)'
                             % (index, arg, exc, ', '.join(EXTRA_ARGS_ALLOWED)))
        if option not in EXTRA_ARGS_ALLOWED:
            shown = option if arg.split('=', 1)[0] == option else '%s, which pip reads as %s' % (
                arg.split('=', 1)[0], option)
            why = REFUSED_WHY.get(option, 'this module sets it itself or it changes what is installed')
            raise ValueError('extra_args[%d]: %r is refused (%s): %s; remove it from extra_args'
                             % (index, arg, shown, why))


# PIP_* environment variables pip reads as options (PIP_<LONG_OPTION>, `-` as `_`), and those pip reads itself,
# that may reach pip: the allowed options of extra_args, plus pip's own variables. Any other PIP_* variable
# could install elsewhere or from another index (PIP_TARGET, PIP_INDEX_URL, PIP_CONSTRAINT, ...) and is refused.
ENV_ALLOWED = set('PIP_' + opt[2:].upper().replace('-', '_') for opt in EXTRA_ARGS_ALLOWED) | set((
    'PIP_CONFIG_FILE', 'PIP_BUILD_TRACKER', 'PIP_RETRIES', 'PIP_NO_PROXY_ENV'))


def check_pip_environment(env, environment, use_pip_config):
    """Refuse PIP_* variables that would redirect the install (ValueError names the variable, value and fix).

    env: the environment pip will run with; environment: the task's `environment` option. With use_pip_config
    false only `environment` can bring PIP_* variables (PIP_CONFIG_FILE there would bring the configuration back).
    """
    given = set(str(k) for k in (environment or {}))
    for key in sorted(k for k in env if k.startswith('PIP_')):
        if key == 'PIP_CONFIG_FILE' and (use_pip_config or env[key] == os.devnull):
            continue
        if key in ENV_ALLOWED and key != 'PIP_CONFIG_FILE':
            continue
        where = 'environment.%s' % key if key in given else 'the inherited variable %s (use_pip_config: true)' % key
        value = env[key]
        if len(value) > 80:
            value = value[:77] + '...'
        if key == 'PIP_CONFIG_FILE':
            why = 'it brings a pip configuration file back; set use_pip_config: true to use pip configuration'
        else:
            option = '--' + key[4:].lower().replace('_', '-')
            why = REFUSED_WHY.get(option, 'pip would read it as %s, which this module does not accept' % option)
        fix = 'remove it from the task\'s environment' if key in given else \
            'unset it in the environment Ansible runs with, or set use_pip_config: false'
        raise ValueError('%s=%r is refused: %s; %s' % (where, value, why, fix))


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


def wheel_args(python, params, src, wheel_dir, log_path=None, requirement_file=None):
    """`python -m pip wheel --no-deps` of the source tree src into wheel_dir (a scratch directory).

    Builds with the task's indexes (for an isolated build's requirements), constraints, --pre and
    --no-build-isolation; never installs. no_deps, requirements and state do not apply to a build.
    requirement_file: a hash-checked requirements file of the one requirement src names (the release lock), built
    with --require-hashes instead of src (and without the constraints: the file pins the one file to build).
    """
    # --verbose: pip prints the build's own output (compiler lines) as it comes, for the live log.
    args = [python, '-m', 'pip', 'wheel'] + COMMON_FLAGS + ['--retries', '0', '--verbose']
    if log_path:
        args.append('--log=%s' % log_path)
    args += ['--no-deps', '--wheel-dir=%s' % wheel_dir]
    args += index_args(params)
    if params.get('pre'):
        args.append('--pre')
    if params.get('no_build_isolation'):
        args.append('--no-build-isolation')
    for path in [] if requirement_file else params.get('constraints') or []:
        args.append('--constraint=%s' % path)
    args += list(params.get('extra_args') or [])
    if requirement_file:
        return args + ['--require-hashes', '--requirement=%s' % requirement_file]
    return args + ['--', src]


def uninstall_args(python, names):
    return [python, '-m', 'pip', 'uninstall', '--yes'] + COMMON_FLAGS[:3] + ['--'] + list(names)


def stream(args, env, cwd=None, on_output=None):
    """Run args, handing each piece of its stdout and stderr to on_output(text) as it comes (whole lines - ended by a
    newline or a carriage return - while the process runs, the rest at its end). Returns (rc, stdout, stderr).

    The process stays in the caller's process group, so a job that is stopped (an async task's time limit kills its
    group) stops the build with it. PYTHONUNBUFFERED makes pip and the build's own Python print line by line.
    """
    env = dict(env, PYTHONUNBUFFERED='1')
    # Not AnsibleModule.run_command: it hands the output over only when the command has ended, and a build's log must
    # grow while the build runs.
    proc = subprocess.Popen(  # pylint: disable=ansible-bad-function
        args, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, close_fds=True)
    chunks = {proc.stdout: [], proc.stderr: []}
    pending = {proc.stdout: b'', proc.stderr: b''}
    with selectors.DefaultSelector() as selector:
        for pipe in chunks:
            selector.register(pipe, selectors.EVENT_READ)
        while selector.get_map():
            for key, _events in selector.select():
                data = os.read(key.fd, 65536)
                if not data:
                    selector.unregister(key.fileobj)
                    data, pending[key.fileobj] = pending[key.fileobj], b''
                else:
                    chunks[key.fileobj].append(data)
                    data = pending[key.fileobj] + data
                    # A line ends at a newline, or at a carriage return (git's and some builds' progress lines).
                    cut = max(data.rfind(b'\n'), data.rfind(b'\r')) + 1
                    data, pending[key.fileobj] = data[:cut], data[cut:]
                if data and on_output is not None:
                    on_output(data.decode('utf-8', 'replace'))
    rc = proc.wait()
    return (rc, b''.join(chunks[proc.stdout]).decode('utf-8', 'replace'),
            b''.join(chunks[proc.stderr]).decode('utf-8', 'replace'))
