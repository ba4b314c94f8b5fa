#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: pip_constrained
short_description: Install Python distributions into a venv with constraints, honestly
version_added: 0.1.0
description:
  - Runs the venv's own C(<venv>/bin/python -m pip), with every constraints file passed as C(-c).
  - First reads the installed distributions with one run of the venv's python (C(importlib.metadata),
    plus the venv's marker environment) and decides B(offline), with C(packaging), whether anything
    must change. If nothing must, it returns C(changed=false) without starting pip and without network.
  - "Rules of that decision (O(state=present)): an item whose environment marker is false for the
    venv's python is ignored; C(name) or C(name<specifier>) is satisfied by an installed version that
    satisfies the specifier (PEP 440; an unpinned name by any version); a pin with a local version
    label is exact, so C(torch==2.12.0+rocm7.15.0a20260720) is B(not) satisfied by C(2.12.0+cpu);
    a wheel or sdist given by path or URL is satisfied by exactly the name and version in its file
    name; VCS and other direct URLs are matched against the PEP 610 C(direct_url.json) pip records
    (same repository and requested revision or commit); unless O(no_deps), the whole dependency
    closure of the requested items (installed C(Requires-Dist), extras and markers evaluated for the
    venv) must be installed and satisfied, and every distribution in it must satisfy the constraints
    files. Anything that cannot be decided offline (for example an editable VCS install) hands over to pip."
  - When something must change, pip runs and the installed set is read again; C(changed) is the real
    before/after difference, never pip's wording.
  - With O(forbid) or in check mode, pip first runs C(pip install --dry-run --report); O(forbid) is
    checked on that plan before anything is installed. Check mode returns that plan and installs nothing.
  - A resolver conflict fails with pip's reason and a sentence naming the constrained distributions
    the install would have replaced; the installed set is read again to prove the venv is unchanged.
  - "Where C(packaging) comes from: the module interpreter's own C(packaging) if it imports; otherwise the
    pure-Python copy that pip vendors in the venv (C(<site-packages>/pip/_vendor/packaging)), so target
    nodes whose system python lacks C(packaging) (for example Ubuntu 22.04's python3.10) still work."
author:
  - primus.trainenv developers (@primus-trainenv)
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details: Check mode runs pip only as C(--dry-run) and only when something must change.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: full
    details: The diff shows the C(name==version) lines that differ before and after.
options:
  venv:
    description:
      - Path of an existing virtual environment. Its C(bin/python) runs the probe and pip.
    type: path
    required: true
  name:
    description:
      - Requirements to install (O(state=present) or O(state=forcereinstall)) or remove (O(state=absent)).
      - Each entry is a PEP 508 requirement (C(torch==2.12.0+rocm7.15.0a20260720), C(huggingface_hub[cli])),
        a path or URL to a wheel or sdist, or a VCS URL (C(name @ git+https://...@rev)).
      - With O(state=absent), entries are distribution names, optionally with a version specifier that
        narrows the match, or fnmatch patterns on the normalized name (C(nvidia-cutlass-dsl*),
        C(triton==3.7.0)); a version specifier is never passed to C(pip uninstall).
      - With O(src), O(name) instead says what the source tree provides (for example
        C(primus-turbo==0.2.0+edc8d2c)); it is used for the idempotence decision and not passed to pip.
    type: list
    elements: str
  requirements:
    description:
      - A requirements file passed to pip as C(-r). Nested C(-r) and C(-c) files are read for the decision too;
        relative paths inside it follow pip's rules.
    type: path
  src:
    description:
      - A local source tree (directory) to install, passed to pip as a path.
      - "Idempotence: the tree is considered installed when a distribution with its name and exactly its
        version is installed. Name and version come from, in this order: O(name) (what the caller says
        the tree provides); a static C([project]) name and version in C(pyproject.toml); a C(PKG-INFO) at
        the root; else pip prepares the tree's metadata once (C(pip install --dry-run --report --no-deps),
        offline with C(--no-index) when O(no_build_isolation) is set)."
      - A changed source tree with an unchanged version is not detected; give the version a commit
        label or use O(state=forcereinstall).
    type: path
  chdir:
    description:
      - Working directory for pip (relative project paths in requirements files are relative to it).
        Relative O(requirements), O(constraints) and O(src) are resolved against it too.
    type: path
  constraints:
    description:
      - Constraints files, each passed as C(-c). They also take part in the offline decision.
    type: list
    elements: path
    default: []
  index_url:
    description:
      - Base URL of the package index (C(--index-url)).
    type: str
  extra_index_urls:
    description:
      - Extra index URLs (C(--extra-index-url)). pip merges all indexes; do not mix an index that owns a
        package (the ROCm torch index) with one that also serves it (PyPI).
    type: list
    elements: str
    default: []
  find_links:
    description:
      - Directories or URLs to look for archives in (C(--find-links)).
    type: list
    elements: str
    default: []
  no_index:
    description:
      - Ignore package indexes, use only O(find_links) (C(--no-index)).
    type: bool
    default: false
  pre:
    description:
      - Allow pre-release and development versions (C(--pre)).
    type: bool
    default: false
  no_deps:
    description:
      - Do not install dependencies (C(--no-deps)); the offline decision then checks only the named items.
    type: bool
    default: false
  no_build_isolation:
    description:
      - Build source distributions and O(src) against the venv's installed packages (C(--no-build-isolation)).
    type: bool
    default: false
  environment:
    description:
      - Environment variables for pip and the builds it runs (for example C(MAX_JOBS), C(GPU_ARCHS)).
        Applied last, so C(PIP_*) variables given here are kept even when O(use_pip_config=false).
    type: dict
    default: {}
  state:
    description:
      - V(present) installs what is missing or does not satisfy the request.
      - V(forcereinstall) always runs pip with C(--force-reinstall); C(changed) is true when a version changed
        or a distribution was reinstalled (its C(.dist-info) directory is new).
      - V(absent) uninstalls the installed distributions that O(name) or O(requirements) name.
    type: str
    choices: [present, absent, forcereinstall]
    default: present
  forbid:
    description:
      - Distributions that must not be present afterwards, as fnmatch patterns on the normalized name,
        optionally with a version pattern (C(nvidia-*), C(torch==*+cu*)).
      - Checked on pip's dry-run plan before anything is installed, and on distributions already installed.
        A hit fails, names the distribution and what requires it, and leaves the venv untouched.
    type: list
    elements: str
    default: []
  log_path:
    description:
      - File to which the command line and full output of every pip run are appended (not in check mode).
    type: path
  use_pip_config:
    description:
      - V(false) (default) runs pip with C(PIP_CONFIG_FILE=/dev/null) and without any inherited C(PIP_*)
        variable, so only the options of this task apply. User and site pip configuration on build nodes
        can inject find-links, extra indexes and constraints (the machines this collection is developed
        on add C(find-links), two extra indexes and a C(torch<=2.14.1) constraint), which would make the
        result depend on the node instead of the task.
      - V(true) lets the user's and site's pip configuration and C(PIP_*) variables apply (for example a
        proxy or a certificate bundle configured there).
    type: bool
    default: false
  extra_args:
    description:
      - Extra arguments appended to C(pip install) (for example C(--no-cache-dir), C(--use-pep517), C(-v)).
        They do not take part in the offline decision.
    type: list
    elements: str
    default: []
notes:
  - The installed set is what the venv's python sees in isolated mode (C(python -I)); C(PYTHONPATH) and
    the user site are not part of it.
  - When something must change and O(forbid) is set, pip resolves twice (dry-run, then install);
    downloads are reused through pip's cache.
  - Uninstalls (O(state=absent)) do not remove distributions that depended on the removed ones.
  - pip runs under the user's umask with group and other write removed, so nothing it installs (nor the log) is
    writable by others, even under C(umask 000).
requirements:
  - The venv's python is 3.8 or newer and has pip (any venv made by C(python -m venv)).
seealso:
  - module: ansible.builtin.pip
'''

EXAMPLES = r'''
- name: Install the ROCm torch nightly from its own index
  primus.trainenv.pip_constrained:
    venv: "{{ primus_base }}/venv"
    name:
      - torch==2.12.0+rocm7.15.0a20260720
      - torchvision==0.27.0+rocm7.15.0a20260720
    index_url: https://rocm.nightlies.amd.com/whl-multi-arch
    pre: true
    forbid: ['nvidia-*']
    log_path: "{{ primus_base }}/logs/torch.log"

- name: Install Python dependencies without letting pip swap the pinned torch
  primus.trainenv.pip_constrained:
    venv: "{{ primus_base }}/venv"
    name: [datasets==3.6.0, transformers==4.55.0, "huggingface_hub[cli]"]
    constraints: ["{{ primus_base }}/pip-constraints.txt"]
    forbid: ['nvidia-*']

- name: Build and install Primus-Turbo from a checkout, no deps, against the venv's torch
  primus.trainenv.pip_constrained:
    venv: "{{ primus_base }}/venv"
    src: /tmp/primus-build/Primus-Turbo
    name: [primus-turbo==0.2.0+edc8d2c]
    no_deps: true
    no_build_isolation: true
    constraints: ["{{ primus_base }}/pip-constraints.txt"]
    environment:
      GPU_ARCHS: gfx942;gfx950
      ROCSHMEM_HOME: /nonexistent/rocshmem

- name: Purge the CUTLASS DSL stack
  primus.trainenv.pip_constrained:
    venv: "{{ primus_base }}/venv"
    name: ['quack-kernels*', 'nvidia-cutlass-dsl*']
    state: absent
'''

RETURN = r'''
venv:
  description: The venv path.
  returned: always
  type: str
python_version:
  description: Version of the venv's python.
  returned: when the venv exists
  type: str
  sample: 3.12.1
pip_version:
  description: Version of pip installed in the venv (before the task).
  returned: when the venv exists
  type: str
packaging_source:
  description: Where C(packaging) was imported from, V(module) or the path of the venv's vendored copy.
  returned: when the venv exists
  type: str
satisfied:
  description: Whether the request was already satisfied (so pip was not run to install anything).
  returned: always
  type: bool
reasons:
  description: Why pip had to run (empty when nothing had to change).
  returned: always
  type: list
  elements: str
  sample: ["installed torch 2.12.0+cpu does not satisfy torch==2.12.0+rocm7.15.0a20260720"]
plan:
  description:
    - What pip would install (check mode) or planned in its dry-run, with the installed version and the
      action (V(install), V(upgrade), V(downgrade), V(replace) for another local label, V(reinstall));
      for O(state=absent), the distributions to remove (action V(remove)).
  returned: when a plan was computed
  type: list
  elements: dict
  sample: [{"name": "torch", "version": "2.12.0+rocm7.15.0a20260720", "installed": "2.12.0+cpu", "action": "replace", "requested": true}]
added:
  description: Distributions that were not installed before (in check mode, would be).
  returned: always
  type: list
  elements: dict
  sample: [{"name": "torch", "version": "2.12.0+rocm7.15.0a20260720"}]
removed:
  description: Distributions that are gone afterwards.
  returned: always
  type: list
  elements: dict
upgraded:
  description: Distributions with a higher version afterwards (C(name), C(before), C(after)).
  returned: always
  type: list
  elements: dict
downgraded:
  description: Distributions with a lower version afterwards (C(name), C(before), C(after)).
  returned: always
  type: list
  elements: dict
replaced:
  description: Distributions with the same public version but another local label (C(2.12.0+cpu) to C(2.12.0+rocm...)).
  returned: always
  type: list
  elements: dict
  sample: [{"name": "torch", "before": "2.12.0+cpu", "after": "2.12.0+rocm7.15.0a20260720"}]
reinstalled:
  description: With O(state=forcereinstall), the distributions reinstalled at the same version (a new C(.dist-info) directory).
  returned: always
  type: list
  elements: str
src_project:
  description: Name and version of O(src) and where they were read from (V(name), V(pyproject.toml), V(PKG-INFO), V(pip-metadata)).
  returned: when O(src) is given
  type: dict
  sample: {"name": "primus-turbo", "version": "0.2.0+edc8d2c", "source": "name"}
cmd:
  description: The last pip command that ran (empty when pip did not run).
  returned: always
  type: list
  elements: str
commands:
  description: Every pip command that ran, in order.
  returned: always
  type: list
  elements: list
output_tail:
  description: The last lines of the last pip run's output (the full output goes to O(log_path)).
  returned: always
  type: str
failure:
  description:
    - On failure, a category such as V(conflict), V(forbidden), V(not_found), V(network), V(build_failed),
      V(hash_mismatch), V(not_installable), V(bad_request), V(pip_too_old) or V(pip_error).
  returned: failure
  type: str
conflict:
  description: On a resolver conflict, pip's cause lines and the constrained distributions involved.
  returned: failure
  type: dict
forbidden:
  description: On a O(forbid) hit, each forbidden distribution with its version, the pattern and what requires it.
  returned: failure
  type: list
  elements: dict
'''

import os
import shlex
import time

from ansible.module_utils.basic import AnsibleModule, missing_required_lib
from ansible.module_utils.common.text.converters import to_native

from ansible_collections.primus.trainenv.plugins.module_utils.modes import restrict_umask
from ansible_collections.primus.trainenv.plugins.module_utils.pip_command import (
    install_args, pip_environ, uninstall_args)
from ansible_collections.primus.trainenv.plugins.module_utils.pip_decide import (
    decide_present, is_pattern, plan_absent)
from ansible_collections.primus.trainenv.plugins.module_utils.pip_outcome import (
    any_change, classify_failure, compare, conflict_causes, diff_lines, error_lines, explain_conflict,
    resolver_warnings, subprocess_output, summary, tail)
from ansible_collections.primus.trainenv.plugins.module_utils.pip_packaging import (
    load_packaging, load_toml_loads)
from ansible_collections.primus.trainenv.plugins.module_utils.pip_probe import (
    ProbeError, parse_probe, probe_command)
from ansible_collections.primus.trainenv.plugins.module_utils.pip_report import (
    ReportError, describe_forbidden, forbidden_hits, parse_report, plan_actions, predicted_after)
from ansible_collections.primus.trainenv.plugins.module_utils.pip_requirements import (
    Item, RequirementError, classify, read_requirements_file, static_project_identity)


class PipConstrained(object):

    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.venv = self.params['venv']
        self.python = os.path.join(self.venv, 'bin', 'python')
        self.commands = []
        self.last_cmd = []
        self.last_output = ''
        self.result = {
            'changed': False, 'venv': self.venv, 'satisfied': False, 'reasons': [],
            'added': [], 'removed': [], 'upgraded': [], 'downgraded': [], 'replaced': [], 'reinstalled': [],
            'cmd': [], 'commands': self.commands, 'output_tail': '',
        }
        self.pk = None
        self.probe = None
        self.constraint_items = []

    # ---- running things --------------------------------------------------------------------

    def run(self, args, pip=True):
        kwargs = {'check_rc': False, 'expand_user_and_vars': False}
        if pip and self.params['chdir']:
            kwargs['cwd'] = self.params['chdir']
        if not pip:
            return self.module.run_command(args, **kwargs)
        env = pip_environ(os.environ, self.params['environment'], self.params['use_pip_config'])
        saved = dict(os.environ)
        os.environ.clear()
        os.environ.update(env)
        try:
            rc, out, err = self.module.run_command(args, **kwargs)
        finally:
            os.environ.clear()
            os.environ.update(saved)
        self.commands.append(list(args))
        self.last_cmd = list(args)
        self.last_output = '%s%s' % (out, err)
        self.log(args, rc, out, err)
        return rc, out, err

    def log(self, args, rc, out, err):
        path = self.params['log_path']
        if not path or self.module.check_mode:
            return
        try:
            parent = os.path.dirname(path)
            if parent and not os.path.isdir(parent):
                os.makedirs(parent)
            with open(path, 'a') as handle:
                command = ' '.join(shlex.quote(a) for a in args)
                handle.write('### %s pip_constrained: %s\n' % (time.strftime('%Y-%m-%dT%H:%M:%S'), command))
                handle.write(out or '')
                if err:
                    handle.write(err if err.endswith('\n') else err + '\n')
                handle.write('### rc=%s\n' % rc)
        except (IOError, OSError) as exc:
            self.module.warn('cannot append to log_path %s: %s' % (path, to_native(exc)))

    def fail(self, msg, **extra):
        result = dict(self.result)
        result['cmd'] = self.last_cmd
        result['output_tail'] = tail(self.last_output)
        result.update(extra)
        self.module.fail_json(msg=msg, **result)

    def fail_pip(self, what, rc, out, err, **extra):
        category = classify_failure(out, err)
        errors = error_lines(out, err)
        msg = '%s failed (rc=%s): %s' % (what, rc, ' '.join(errors[-3:]) or tail(out + err, 3))
        info = {'failure': category, 'rc': rc, 'stdout': tail(out, 60), 'stderr': tail(err, 60)}
        if category == 'build_failed':
            build = subprocess_output(out, err)
            msg = '%s failed (rc=%s): a build step failed%s' % (what, rc, (': ' + ' | '.join(build[-5:])) if build else '')
        if category == 'conflict' and self.pk is not None:
            causes = conflict_causes(out, err)
            sentence, involved = explain_conflict(self.pk, causes, self.constraint_items, self.probe)
            info['conflict'] = {'causes': causes, 'constrained': involved}
            msg = 'pip reports a dependency conflict (ResolutionImpossible)%s.' % (
                ': ' + '; '.join(causes) if causes else '')
            if sentence:
                msg += ' ' + sentence
        info.update(extra)
        if not what.startswith('dry-run'):
            msg += ' ' + self.unchanged_note()
        else:
            msg += ' Nothing was installed.'
        self.fail(msg, **info)

    def unchanged_note(self):
        """Read the installed set again after a failed install and say whether it moved."""
        try:
            after = self.read_probe()
        except ProbeError:
            return 'The installed set could not be read again.'
        changes = compare(self.pk, self.probe.versions(), after.versions()) if self.pk else {}
        if self.pk is not None and not any_change(changes):
            return 'The venv is unchanged.'
        self.result.update(changes)
        self.result['changed'] = True
        return 'The venv changed anyway: %s.' % summary(changes)

    def read_probe(self):
        rc, out, err = self.run(probe_command(self.python), pip=False)
        if rc != 0:
            self.module.fail_json(msg='reading the installed distributions of %s failed (rc=%s): %s'
                                  % (self.venv, rc, tail(err or out, 5)),
                                  cmd=probe_command(self.python)[:3] + ['<probe>'], rc=rc,
                                  stdout=tail(out), stderr=tail(err), **self.result)
        return parse_probe(out)

    # ---- request ----------------------------------------------------------------------------

    def items(self):
        pk = self.pk
        items = []
        constraint_items = []
        for path in self.params['constraints']:
            sub_items, sub_constraints = read_requirements_file(pk, path, constraint=True)
            constraint_items.extend(sub_items + sub_constraints)
        if self.params['requirements']:
            sub_items, sub_constraints = read_requirements_file(pk, self.params['requirements'])
            items.extend(sub_items)
            constraint_items.extend(sub_constraints)
        self.constraint_items = constraint_items
        return items, constraint_items

    def name_items(self):
        return [classify(self.pk, text, 'name[%d]' % index) for index, text in enumerate(self.params['name'] or [])]

    def src_item(self, name_items):
        """Item for src with the best known name/version (or None/None to ask pip)."""
        src = self.params['src']
        if not os.path.isdir(src):
            self.fail('src %s is not a directory' % src)
        item = Item('dir', src, 'src', path=src)
        named = [i for i in name_items if i.kind == 'req' and i.req is not None]
        if named:
            item.name = named[0].name
            pins = [s for s in named[0].req.specifier if s.operator in ('==', '===') and '*' not in s.version]
            self.result['src_project'] = {'name': named[0].name, 'version': pins[0].version if pins else None,
                                          'source': 'name'}
            return item, named
        name, version, how = static_project_identity(self.pk, src, load_toml_loads(self.probe.site_dirs))
        if name:
            item.name, item.version = name, version
            self.result['src_project'] = {'name': name, 'version': version, 'source': how}
        return item, []

    def src_metadata(self, item):
        """Ask pip for the source tree's name and version (prepares metadata, installs nothing)."""
        self.require_report_support()
        report = os.path.join(self.module.tmpdir, 'pip-src-metadata.json')
        args = install_args(self.python, self.params, [item.path], report_path=report, metadata_only=True)
        rc, out, err = self.run(args)
        if rc != 0:
            self.fail_pip('dry-run reading the metadata of %s' % item.path, rc, out, err)
        try:
            with open(report) as handle:
                planned = parse_report(self.pk, handle.read())
        except (IOError, OSError, ReportError) as exc:
            self.fail('cannot read pip report for %s: %s' % (item.path, to_native(exc)))
        if len(planned) != 1:
            self.fail('pip reported %d distributions for %s, expected 1' % (len(planned), item.path))
        item.name, item.version = planned[0].key, planned[0].version
        self.result['src_project'] = {'name': planned[0].name, 'version': planned[0].version, 'source': 'pip-metadata'}

    # ---- states -----------------------------------------------------------------------------

    def present(self):
        params = self.params
        name_items = self.name_items()
        items, constraint_items = self.items()
        targets = list(params['name'] or [])
        src_named = None
        if params['src']:
            src, src_named = self.src_item(name_items)
            targets = [params['src']]
            decide_items = items + (src_named or [src])
            if not src_named and not src.version:
                self.src_metadata(src)
        else:
            decide_items = name_items + items

        force = params['state'] == 'forcereinstall'
        if not force:
            decision = decide_present(self.pk, self.probe, decide_items, constraint_items, params['no_deps'])
            self.result['reasons'] = list(decision.reasons)
            self.result['satisfied'] = decision.satisfied
            if decision.satisfied:
                self.check_forbidden_installed()
                self.module.exit_json(diff={'before': '', 'after': ''}, **self.result)
        else:
            self.result['reasons'] = ['state=forcereinstall']

        if params['forbid'] or self.module.check_mode:
            planned = self.dry_run(targets)
            self.result['plan'] = plan_actions(self.pk, planned, self.probe)
            hits = forbidden_hits(self.pk, params['forbid'], planned, self.probe)
            if hits:
                self.fail('forbidden distributions would be present: %s. Nothing was installed.'
                          % '; '.join(describe_forbidden(hits)), failure='forbidden', forbidden=hits)
            if self.module.check_mode:
                before = self.probe.versions()
                after = predicted_after(self.probe, planned)
                self.result.update(compare(self.pk, before, after))
                if force:
                    self.result['reinstalled'] = sorted(p['name'] for p in self.result['plan'] if p['action'] == 'reinstall')
                self.result['changed'] = bool(planned)
                self.module.exit_json(diff=diff_lines(before, after), **self.result)

        args = install_args(self.python, params, targets)
        rc, out, err = self.run(args)
        if rc != 0:
            self.fail_pip('pip install', rc, out, err)
        for warning in resolver_warnings(out, err):
            self.module.warn(warning)
        self.finish(force=force)

    def require_report_support(self):
        """pip install --dry-run --report needs pip 22.2 (Ubuntu 22.04's venvs start with pip 22.0.2)."""
        pip_dist = self.probe.dists.get('pip')
        try:
            too_old = pip_dist is not None and self.pk.Version(pip_dist.version) < self.pk.Version('22.2')
        except self.pk.InvalidVersion:
            too_old = False
        if too_old:
            self.fail('pip %s in %s cannot plan an install (pip install --dry-run --report needs pip 22.2 or newer, '
                      'for forbid, check mode and src metadata). Upgrade it first, e.g. a task with name: [pip>=22.2] '
                      'and no forbid.' % (pip_dist.version, self.venv), failure='pip_too_old')

    def dry_run(self, targets):
        self.require_report_support()
        report = os.path.join(self.module.tmpdir, 'pip-report.json')
        args = install_args(self.python, self.params, targets, report_path=report)
        rc, out, err = self.run(args)
        if rc != 0:
            self.fail_pip('dry-run (pip install --dry-run)', rc, out, err)
        try:
            with open(report) as handle:
                return parse_report(self.pk, handle.read())
        except (IOError, OSError, ReportError) as exc:
            self.fail('cannot read the dry-run report: %s' % to_native(exc))

    def check_forbidden_installed(self):
        hits = forbidden_hits(self.pk, self.params['forbid'], [], self.probe)
        if hits:
            self.fail('forbidden distributions are installed: %s. Remove them (state=absent) first.'
                      % '; '.join(describe_forbidden(hits)), failure='forbidden', forbidden=hits)

    def finish(self, force=False):
        try:
            after_probe = self.read_probe()
        except ProbeError as exc:
            self.result['changed'] = True
            self.fail('pip succeeded but the installed set could not be read again: %s' % to_native(exc))
        before = self.probe.versions()
        after = after_probe.versions()
        changes = compare(self.pk, before, after)
        self.result.update(changes)
        self.result['changed'] = any_change(changes)
        if force:
            self.result['reinstalled'] = self.probe.reinstalled(after_probe)
            self.result['changed'] = self.result['changed'] or bool(self.result['reinstalled'])
        self.result['cmd'] = self.last_cmd
        self.result['output_tail'] = tail(self.last_output)
        self.module.exit_json(diff=diff_lines(before, after), **self.result)

    def absent(self):
        patterns = [t for t in self.params['name'] or [] if is_pattern(t)]
        items = [classify(self.pk, t, 'name[%d]' % i) for i, t in enumerate(self.params['name'] or []) if not is_pattern(t)]
        if self.params['requirements']:
            items.extend(read_requirements_file(self.pk, self.params['requirements'])[0])
        try:
            remove = plan_absent(self.pk, self.probe, items, patterns)
        except ValueError as exc:
            self.fail(to_native(exc))
        self.result['plan'] = [{'name': d.name, 'version': d.version, 'installed': d.version, 'action': 'remove',
                                'requested': True} for d in remove]
        self.result['satisfied'] = not remove
        if not remove:
            self.module.exit_json(diff={'before': '', 'after': ''}, **self.result)
        self.result['reasons'] = ['%s %s is installed' % (d.name, d.version) for d in remove]
        before = self.probe.versions()
        if self.module.check_mode:
            after = dict(before)
            for dist in remove:
                after.pop(dist.key, None)
            self.result.update(compare(self.pk, before, after))
            self.result['changed'] = True
            self.module.exit_json(diff=diff_lines(before, after), **self.result)
        rc, out, err = self.run(uninstall_args(self.python, [d.name for d in remove]))
        if rc != 0:
            self.fail_pip('pip uninstall', rc, out, err)
        self.finish()

    def resolve_paths(self):
        """Relative requirements/constraints/src paths are relative to chdir, for pip and for the decision alike."""
        base = self.params['chdir']
        if not base:
            return

        def absolute(path):
            return path if os.path.isabs(path) else os.path.join(base, path)
        for key in ('requirements', 'src'):
            if self.params[key]:
                self.params[key] = absolute(self.params[key])
        self.params['constraints'] = [absolute(p) for p in self.params['constraints']]

    def main(self):
        params = self.params
        self.resolve_paths()
        if not os.path.isfile(self.python):
            if params['state'] == 'absent':
                self.result['satisfied'] = True
                self.module.exit_json(**self.result)
            if self.module.check_mode:
                self.result['changed'] = True
                self.result['reasons'] = ['the venv %s does not exist yet' % self.venv]
                self.module.warn('venv %s does not exist; in a real run this task would fail unless an earlier '
                                 'task creates it' % self.venv)
                self.module.exit_json(**self.result)
            self.module.fail_json(msg='%s not found: create the venv first' % self.python, **self.result)
        if params['state'] == 'absent' and params['src']:
            self.module.fail_json(msg='src cannot be used with state=absent; name the distribution instead', **self.result)
        try:
            self.probe = self.read_probe()
        except ProbeError as exc:
            self.module.fail_json(msg='cannot read the installed distributions of %s: %s' % (self.venv, to_native(exc)),
                                  **self.result)
        self.result['python_version'] = self.probe.python_version
        pip_dist = self.probe.dists.get('pip')
        self.result['pip_version'] = pip_dist.version if pip_dist else None
        self.pk = load_packaging(self.probe.site_dirs)
        if self.pk is None:
            self.module.fail_json(msg=missing_required_lib(
                'packaging', reason='to compare versions (neither the module interpreter nor the venv pip provides it)'),
                **self.result)
        self.result['packaging_source'] = self.pk.source
        try:
            if params['state'] == 'absent':
                self.absent()
            else:
                self.present()
        except RequirementError as exc:
            self.fail(to_native(exc), failure='bad_request')


def main():
    module = AnsibleModule(
        argument_spec=dict(
            venv=dict(type='path', required=True),
            name=dict(type='list', elements='str'),
            requirements=dict(type='path'),
            src=dict(type='path'),
            chdir=dict(type='path'),
            constraints=dict(type='list', elements='path', default=[]),
            index_url=dict(type='str'),
            extra_index_urls=dict(type='list', elements='str', default=[]),
            find_links=dict(type='list', elements='str', default=[]),
            no_index=dict(type='bool', default=False),
            pre=dict(type='bool', default=False),
            no_deps=dict(type='bool', default=False),
            no_build_isolation=dict(type='bool', default=False),
            environment=dict(type='dict', default={}),
            state=dict(type='str', default='present', choices=['present', 'absent', 'forcereinstall']),
            forbid=dict(type='list', elements='str', default=[]),
            log_path=dict(type='path'),
            use_pip_config=dict(type='bool', default=False),
            extra_args=dict(type='list', elements='str', default=[]),
        ),
        required_one_of=[['name', 'requirements', 'src']],
        supports_check_mode=True,
    )
    restrict_umask()   # pip's files and the log: never writable by others, whatever the user's umask
    PipConstrained(module).main()


if __name__ == '__main__':
    main()
