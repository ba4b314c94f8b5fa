# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The per-node manifest: what was built, from what, and nothing secret (pure functions).

The upstream installer's manifest dumps the whole environment (``env.txt``) under PRIMUS_BASE,
HF_TOKEN and WANDB_API_KEY included, and records neither the checkouts' commits nor the arch,
TE mode or glibc (Primus setup.sh stage_manifest). This one records those, and before anything is written:

- anything that looks like an environment dump (a key named env/environ/environment..., a mapping
  holding several of PATH, HOME, USER..., a text or list of ``NAME=value`` lines) is stripped;
- a key whose name says it holds a secret (token, password, secret, api key, credential...) is
  stripped, except the keys of the name -> value maps (distribution, checkout and stage names);
- credentials in URLs are redacted by common.Redactor (pip's ``user:****@`` form), and so is every
  other occurrence of the secrets those URLs carried and of the caller's own secret values.

``generated`` and ``timings`` are volatile: two manifests that differ only there are the same
record, so a converged run (whose stages take seconds) keeps the manifest of the run that built
the environment. Python 3.8+, standard library only.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import re

from ansible_collections.primus.trainenv.plugins.module_utils.common import Redactor

FORMAT = 1
FIELDS = ('release', 'host', 'os', 'glibc', 'glibcxx', 'python', 'archs', 'te_mode', 'plan', 'distributions', 'checkouts',
          'build_keys', 'env_sh', 'timings', 'verify', 'installed_fixes')
# Maps whose keys are names of things (distributions, checkouts, stages), never of secrets.
NAME_MAPS = ('distributions', 'checkouts', 'build_keys', 'timings')
VOLATILE = ('generated', 'timings')

ENV_KEY_NAMES = frozenset(('env', 'environ', 'environment', 'env_txt', 'env_dump', 'ansible_env', 'envvars',
                           'env_vars', 'environment_variables'))
# Variables that every login environment has: several of them together mean a dump of one.
ENV_MARKERS = frozenset(('PATH', 'HOME', 'USER', 'SHELL', 'PWD', 'LOGNAME', 'HOSTNAME', 'LD_LIBRARY_PATH', 'TERM',
                         'LANG', 'OLDPWD', 'SHLVL', 'MAIL'))
SECRET_NAME = re.compile(r'(?i)(token(?!i[sz])|passw|passphrase|secret|api[_-]?key|access[_-]?key|credential|private[_-]?key'
                         r'|authorization|cookie|session[_-]?id)')
_ASSIGNMENT = re.compile(r'^\s*(?:export\s+|declare -x\s+)?([A-Za-z_][A-Za-z0-9_]*)=')
# A secret value from the caller's environment is redacted wherever it appears when at least this long.
MIN_SECRET = 8


class ManifestError(Exception):
    """Input the manifest cannot record; the message says what, why and the fix."""


def _assignment_names(lines):
    names = []
    for line in lines:
        match = _ASSIGNMENT.match(line) if isinstance(line, str) else None
        if match:
            names.append(match.group(1))
    return names


def looks_like_env_dump(value):
    """A mapping, text or list that carries a process environment (two or more login variables)."""
    if isinstance(value, dict):
        return len(ENV_MARKERS.intersection(k for k in value if isinstance(k, str))) >= 2
    if isinstance(value, str):
        names = _assignment_names(value.splitlines())
    elif isinstance(value, (list, tuple)):
        names = _assignment_names(value)
    else:
        return False
    return len(ENV_MARKERS.intersection(names)) >= 2


def _dump_secrets(value):
    """The secret values inside a stripped environment dump (HF_TOKEN=..., a mapping's WANDB_API_KEY)."""
    if isinstance(value, dict):
        return environment_secrets(dict((str(k), v) for k, v in value.items() if isinstance(v, str)))
    if isinstance(value, str):
        lines = value.splitlines()
    elif isinstance(value, (list, tuple)):
        lines = [v for v in value if isinstance(v, str)]
    else:
        lines = []
    pairs = {}
    for line in lines:
        match = _ASSIGNMENT.match(line)
        if match:
            pairs[match.group(1)] = line[match.end():].strip().strip('\'"')
    return environment_secrets(pairs)


def _strip(value, where, stripped, secrets, names_only):
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            path = '%s.%s' % (where, key) if where else str(key)
            if str(key).lower() in ENV_KEY_NAMES or looks_like_env_dump(item):
                stripped.append(dict(key=path, reason='looks like an environment dump'))
                secrets.update(_dump_secrets(item))
                continue
            if not names_only and SECRET_NAME.search(str(key)):
                stripped.append(dict(key=path, reason='its name says it holds a secret'))
                secrets.update(s for s in _strings(item) if len(s) >= 4)
                continue
            out[key] = _strip(item, path, stripped, secrets, names_only=(not where and key in NAME_MAPS))
        return out
    if isinstance(value, (list, tuple)):
        return [_strip(item, '%s[%d]' % (where, i), stripped, secrets, False) for i, item in enumerate(value)]
    return value


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def _redact(value, redact):
    if isinstance(value, str):
        return redact.text(value)
    if isinstance(value, dict):
        return dict((redact.text(str(k)), _redact(v, redact)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [_redact(v, redact) for v in value]
    return value


def environment_secrets(environ):
    """Values of the caller's variables whose names say they are secrets (HF_TOKEN, WANDB_API_KEY...)."""
    return set(v for k, v in environ.items() if SECRET_NAME.search(k) and v and len(v) >= MIN_SECRET)


def scrub(data, extra_secrets=()):
    """(data without environment dumps, secret-named keys and credentials; the stripped keys; every secret known).

    The secrets are those of extra_secrets, of the stripped keys and dumps, and of the URLs: the module
    masks them in everything it returns too (the task's own arguments included).
    """
    stripped, secrets = [], set(extra_secrets)
    clean = _strip(data, '', stripped, secrets, names_only=False)
    redact = Redactor(secrets)
    redact.add_from(list(_strings(clean)))
    return _redact(clean, redact), stripped, set(redact.secrets)


def _expect(data, key, kinds, what):
    if key in data and data[key] is not None and not isinstance(data[key], kinds):
        raise ManifestError('data.%s must be %s, got %s %r' % (key, what, type(data[key]).__name__, data[key]))


def _expect_map(data, key, value_kinds, what):
    _expect(data, key, dict, 'a mapping of %s' % what)
    for name, value in (data.get(key) or {}).items():
        if not isinstance(value, value_kinds) or isinstance(value, bool):
            raise ManifestError('data.%s.%s must be %s, got %r' % (key, name, what, value))


def validate(data):
    """Refuse keys the manifest does not know (a typo would silently drop a record) and values of the wrong kind."""
    unknown = sorted(set(data) - set(FIELDS))
    if unknown:
        raise ManifestError('data has unknown key(s) %s; the manifest records %s. Fix the key name, or put '
                            'free-form results under verify.' % (', '.join(unknown), ', '.join(FIELDS)))
    for key in ('release', 'host', 'glibc', 'glibcxx', 'python', 'te_mode', 'env_sh'):
        _expect(data, key, str, 'a string')
    _expect(data, 'os', (str, dict), 'a string or a mapping')
    _expect(data, 'archs', list, 'a list of gfx names')
    for arch in data.get('archs') or []:
        if not isinstance(arch, str):
            raise ManifestError('data.archs must hold gfx names like gfx942, got %r' % (arch,))
    _expect_map(data, 'distributions', str, 'version strings')
    _expect_map(data, 'checkouts', str, 'commit strings')
    _expect_map(data, 'build_keys', str, 'key ids')
    _expect_map(data, 'timings', (int, float), 'seconds (numbers)')
    for stage, seconds in (data.get('timings') or {}).items():
        if seconds < 0:
            raise ManifestError('data.timings.%s is negative (%r): a stage cannot take less than 0 seconds'
                                % (stage, seconds))
    _expect(data, 'verify', (dict, list), 'a mapping of check -> result or a list of results')
    _expect(data, 'plan', dict, "a mapping of preflight's per-node decisions")
    _expect(data, 'installed_fixes', list, 'a list of fixes and their states')
    for fix in data.get('installed_fixes') or []:
        if not isinstance(fix, dict) or not all(isinstance(fix.get(k), str) for k in ('name', 'path', 'state')):
            raise ManifestError('data.installed_fixes holds {name, path, state} of each fix, got %r' % (fix,))


def build(data, env_sh_sha256, generated):
    """The manifest document: FORMAT, the scrubbed data, env_sh as {path, sha256}, generated."""
    manifest = dict((k, v) for k, v in data.items() if k != 'env_sh')
    manifest['format'] = FORMAT
    if 'env_sh' in data:
        manifest['env_sh'] = dict(path=data['env_sh'], sha256=env_sh_sha256)
    manifest['generated'] = generated
    return manifest


def comparable(manifest):
    return dict((k, v) for k, v in (manifest or {}).items() if k not in VOLATILE)


def same_record(old, new):
    return old is not None and comparable(old) == comparable(new)


def to_json(manifest):
    return json.dumps(manifest, indent=2, sort_keys=True) + '\n'


def parse(text):
    """The manifest in text, or None when it is not one (then it is rewritten)."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) and value.get('format') == FORMAT else None


_PASS = ('ok', 'pass', 'passed', 'success', 'succeeded', 'true', 'yes')
_FAIL = ('fail', 'failed', 'failure', 'error', 'false', 'no', 'broken')


def _outcome(result):
    if isinstance(result, bool):
        return result
    if isinstance(result, str):
        word = result.strip().lower()
        return True if word in _PASS else (False if word in _FAIL else None)
    if isinstance(result, dict):
        for key in ('ok', 'passed', 'success'):
            if isinstance(result.get(key), bool):
                return result[key]
        for key in ('status', 'result'):
            if key in result:
                return _outcome(result[key])
        if 'failed' in result and isinstance(result['failed'], bool):
            return not result['failed']
    return None


def verify_outcomes(verify):
    """[(check, True|False|None)] of the verify results: a mapping check -> result, or a list of {name, ...}."""
    if isinstance(verify, dict):
        return [(str(k), _outcome(v)) for k, v in sorted(verify.items())]
    out = []
    for i, item in enumerate(verify or []):
        name = item.get('name', item.get('check', 'check %d' % (i + 1))) if isinstance(item, dict) else 'check %d' % (i + 1)
        out.append((str(name), _outcome(item)))
    return out


def duration(seconds):
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return '%dh %02dm' % (hours, minutes)
    if minutes:
        return '%dm %02ds' % (minutes, secs)
    return '%ds' % secs


# Shown by name in the summary when installed: the stack a reader checks first.
KEY_DISTRIBUTIONS = ('torch', 'transformer-engine', 'transformer_engine', 'flash-attn', 'flash_attn', 'amd-aiter',
                     'aiter', 'primus-turbo', 'primus_turbo', 'mamba-ssm', 'mamba_ssm', 'triton')


def _os_text(value):
    if isinstance(value, dict):
        parts = [str(value[k]) for k in ('name', 'distribution', 'version', 'release') if value.get(k)]
        return ' '.join(parts) or json.dumps(value, sort_keys=True)
    return value or '?'


def summary(manifest):
    """The short human summary written beside manifest.json."""
    m = manifest
    lines = ['Primus training environment %s on %s' % (m.get('release') or '?', m.get('host') or '?'),
             'OS: %s | glibc %s | GLIBCXX %s | Python %s' % (_os_text(m.get('os')), m.get('glibc') or '?',
                                                             m.get('glibcxx') or '?', m.get('python') or '?'),
             'GPU archs: %s | TransformerEngine mode: %s' % (';'.join(m.get('archs') or []) or '?',
                                                             m.get('te_mode') or '?')]
    dists = m.get('distributions') or {}
    shown = ['%s %s' % (name, dists[name]) for name in KEY_DISTRIBUTIONS if name in dists]
    lines.append('Distributions: %d installed%s' % (len(dists), ('; ' + ', '.join(shown)) if shown else ''))
    checkouts = m.get('checkouts') or {}
    if checkouts:
        lines.append('Checkouts: ' + ', '.join('%s %s' % (k, (v or '?')[:12]) for k, v in sorted(checkouts.items())))
    if m.get('build_keys'):
        lines.append('Build keys: %d stages' % len(m['build_keys']))
    env_sh = m.get('env_sh')
    if env_sh:
        lines.append('env.sh: %s (sha256 %s)' % (env_sh.get('path'), (env_sh.get('sha256') or 'not yet written')[:16]))
    timings = m.get('timings') or {}
    if timings:
        slowest = sorted(timings.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
        lines.append('Build time: %s total; slowest: %s' % (duration(sum(timings.values())),
                                                            ', '.join('%s %s' % (k, duration(v)) for k, v in slowest)))
    if 'verify' in m:
        outcomes = verify_outcomes(m.get('verify'))
        passed = [n for n, ok in outcomes if ok is True]
        failed = [n for n, ok in outcomes if ok is False]
        unknown = [n for n, ok in outcomes if ok is None]
        text = 'Verify: %d passed, %d failed' % (len(passed), len(failed))
        if failed:
            text += ' (%s)' % ', '.join(failed)
        if unknown:
            text += ', %d without a pass/fail result (%s)' % (len(unknown), ', '.join(unknown))
        lines.append(text)
    if m.get('generated'):
        lines.append('Recorded: %s' % m['generated'])
    return '\n'.join(lines) + '\n'
