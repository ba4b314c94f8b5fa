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
  - Runs the venv's own C(<venv>/bin/python -m pip), with every constraints file passed as C(--constraint).
  - First reads the installed distributions with one run of the venv's python (C(importlib.metadata),
    plus the venv's marker environment) and decides B(offline), with C(packaging), whether anything
    must change. If nothing must, it returns C(changed=false) without starting pip and without network.
  - "That read is stored as a snapshot (C(<venv>/.pip-constrained-snapshot.json), mode C(0600)) with the stat of every
    directory and file it read; a later task reads the snapshot instead of running the venv's python, only while every
    one of those stats, the interpreter, C(pyvenv.cfg) and the kernel are unchanged (any install, removal or hand edit
    invalidates it; RV(installed_from) says which was used). Check mode reads a snapshot but never writes one."
  - "The offline decision reads every request as pip reads it (requirements files with byte-order marks,
    C(\\) continuations, comments and C(${VAR}) expanded from the environment pip receives; markers, an
    empty marker, extras, C(%2B) in wheel URLs) and answers B(satisfied) only when pip would change nothing:
    a C(name<specifier>) is satisfied by an installed version inside the specifier (PEP 440, installed
    pre-releases count, a pin with a local version label is exact: C(torch==2.12.0+rocm7.15.0a20260720) is
    B(not) satisfied by C(2.12.0+cpu)); unless O(no_deps), the whole dependency closure (Requires-Dist,
    extras and markers evaluated for the venv) must be installed and satisfied and inside the constraints files."
  - "Anything given by path or URL is judged as the artifact pip would install: a local wheel by its name,
    version and its own C(Requires-Dist) (read from the file), and only when its tags fit the venv's interpreter
    and the installed copy is not an editable install (pip replaces that); a local sdist or a version-less local
    archive (C(proj-main.tar.gz)) only when it is installed from that very file (sha256 recorded in the PEP 610
    C(direct_url.json)); a remote wheel, sdist or archive never (pip downloads it again even at the installed version,
    and a remote file may have changed since: served again with other dependencies, a branch archive such as
    C(.../archive/refs/heads/main.zip), or content that no longer matches the URL's C(#sha256=), which pip then
    refuses); a local file whose hash does not match its content never (pip refuses it; like pip, the first
    C(#sha256=), C(#sha512=), C(#md5=) ... of the URL counts); a VCS URL only when
    installed from that repository at that commit and that C(#subdirectory=) (pin a full commit hash; a branch or tag
    may have moved); a project directory by its known version and its static dependencies, and only when the
    installed copy records that very directory as its origin (pip installs a directory over a copy from an index, a
    wheel or another directory); an editable project only when installed editable from that directory with static
    dependencies. A wheel given by a C(Requires-Dist) or a constraint is checked like one given here (tags included).
    A requirement whose environment marker cannot be evaluated (such as C(\"x\" in extras)) goes to pip.
    Whatever cannot be decided offline is answered B(not satisfied), and pip decides."
  - "The installed set is read as pip 26's metadata backend reads it: a C(.dist-info) directory's name and version
    come from the directory name (C(name-version.dist-info)) when it has them, even without a C(METADATA) file
    (C(PKG-INFO) stands in for a missing or empty one); of two directories of one project the first that
    C(importlib.metadata) yields counts (a directory's entries grouped by the project of their name, in directory
    order); a C(requires.txt) (a legacy C(.egg-info)'s, or any) gives the requirements and extras when the metadata
    has none, its C([extra:marker]) sections read as pip does; a legacy C(.egg-link) adds its project right after
    its directory's own."
  - "Deliberate differences from pip's own plan, none of which can leave a wrong environment: pip reinstalls a
    local directory, an editable project or a local sdist even at the same version, which is not counted as a
    change here when it is the same artifact; pip keeps a same-version install for a remote wheel, another VCS
    commit, a branch or tag, or a URL it was not installed from (resolving only the link's dependencies), which
    hands over to pip here, as does any remote file (it may have changed), and a project directory over a
    same-version copy installed from elsewhere (pip reinstalls it from the directory).
    A differential test runs a generated corpus of several hundred
    requests over several venv states through this decision and through C(pip install --dry-run --report)."
  - When something must change, pip runs and the installed set is read again; C(changed) is the real
    before/after difference, never pip's wording.
  - With O(forbid) or in check mode, pip first runs C(pip install --dry-run --report); O(forbid) is
    checked on that plan before anything is installed. Check mode returns that plan and installs nothing.
  - "After a dry-run, pip installs exactly the files of that plan without resolving again (RV(install_mode=plan)):
    C(pip install --no-index --no-deps) of C(name==version) from a find-links page in the module's private temporary
    directory that lists the one file pip chose for each (its URL and C(#sha256=); the credentials of an index on the
    same host are added as pip would send them), and a wheel given by path from that path. So no index page or
    metadata is fetched twice, each file is downloaded once, and the distributions are recorded as installed from an
    index, as before. Constraints, C(--pre), C(--no-build-isolation), C(--force-reinstall) and O(extra_args) apply.
    A VCS checkout of the plan is installed after those files, at the commit pip resolved
    (C(git+<repository>@<commit>#egg=<name>), C(--no-deps), the task's indexes for its build); should its build fail,
    the planned files are already installed and the task fails naming it. A plan with an editable install, a project
    directory, a remote direct URL or an sdist needing an isolated build, or O(use_pip_config=true), is installed
    with a second full C(pip install) instead (RV(install_mode=resolve), the reason in O(log_path)). A plan that
    installs nothing runs no install."
  - A resolver conflict fails with pip's reason and a sentence naming the constrained distributions
    the install would have replaced; the installed set is read again to prove the venv is unchanged.
  - "A failure is classified from pip's own output and its debug log (C(pip --log)): V(dns), V(refused),
    V(reset), V(timeout), V(http) (with the status), V(tls), V(proxy), V(not_found), V(conflict), V(forbidden),
    V(build_failed) and others. The message's first line names the class, the index host and the fix, the
    second quotes pip's decisive line; the full output goes to O(log_path). Transient failures (V(reset),
    V(timeout), HTTP 5xx/429) are retried O(retries) times with exponential backoff from O(retry_delay);
    each retry is logged. pip's own silent retries are turned off (C(--retries 0)) so that every retry shows."
  - "Safety: a O(name) entry is a requirement (validated with C(packaging)), an existing path or a URL, never an
    option: an entry starting with C(-) is refused before pip runs, option values are attached with C(=) and the
    requirements follow C(--). O(venv) must be a virtual environment (C(pyvenv.cfg)), never a bare Python prefix.
    Credentials in index URLs (C(https://user:token@host)) are redacted as pip redacts them (C(user:****@host))
    in return values, messages, the diff and the log, which is created with mode C(0640)."
  - "With O(wheel_dir), the module builds a wheel of O(src), or of the one pinned requirement in O(name), instead of
    installing it (C(pip wheel --no-deps) into a private scratch directory inside O(wheel_dir), then each wheel moved in
    with one rename) and returns RV(wheels); the venv's installed set is read before and after to prove that nothing
    was installed."
  - "Where C(packaging) comes from: the module interpreter's own C(packaging) if it imports; otherwise the
    pure-Python copy that pip vendors in the venv (C(<site-packages>/pip/_vendor/packaging)), so target
    nodes whose system python lacks C(packaging) (for example Ubuntu 22.04's python3.10) still work."
author:
  - primus.trainenv developers (@primus-trainenv)
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details:
      - Check mode runs pip only as C(--dry-run) and only when something must change; RV(plan_exact) says whether
        the plan is pip's own resolution.
      - For a venv that does not exist yet, O(plan_python) plans with that interpreter in a scratch venv; O(prior_plan)
        plans for the venv as earlier tasks of the run would leave it; O(prior_changes) turns a plan that cannot be
        resolved yet into an inexact plan with a warning.
      - With O(wheel_dir), check mode builds nothing and returns one RV(plan) entry with action V(build).
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: full
    details: The diff shows the C(name==version) lines that differ before and after.
options:
  venv:
    description:
      - Path of a virtual environment (it must have C(pyvenv.cfg)). Its C(bin/python) runs the probe and pip.
      - A directory without C(pyvenv.cfg) is refused before pip runs (installing into the interpreter it points at
        would change a Python prefix that is not the venv).
    type: path
    required: true
  name:
    description:
      - Requirements to install (O(state=present) or O(state=forcereinstall)) or remove (O(state=absent)).
      - Each entry is a PEP 508 requirement (C(torch==2.12.0+rocm7.15.0a20260720), C(huggingface_hub[cli])),
        a path or URL to a wheel or sdist, a project directory, or a VCS URL (C(name @ git+https://...@commit)).
        An entry starting with C(-) is refused (options have options of their own, or go into O(extra_args)).
      - With O(state=absent), entries are distribution names, optionally with a version specifier that
        narrows the match; an entry whose environment marker is false for the venv is skipped, and a wheel or sdist
        file narrows the match to its version (C(pip uninstall) itself ignores both; this module never removes more
        than the entry says); or fnmatch patterns on the normalized name with C(*) or C(?) (C(nvidia-cutlass-dsl*),
        optionally C(==version-glob) or C(!=version-glob)); a version specifier is never passed to C(pip uninstall).
        C(pip) and a pattern that matches C(pip), C(setuptools) or C(wheel) (such as C(*)) are refused.
      - With O(src), O(name) instead says what the source tree provides (for example
        C(primus-turbo==0.2.0+edc8d2c)); it is used for the idempotence decision and not passed to pip.
      - With O(wheel_dir) and no O(src), O(name) is the one requirement to build a wheel of, pinned to one version
        (C(tensorstore==0.1.45)) - a requirement from the index, not a path or URL, with a single C(==) or C(===)
        specifier without a wildcard.
    type: list
    elements: str
  requirements:
    description:
      - A requirements file passed to pip as C(--requirement). Nested C(-r) and C(-c) files are read for the decision
        too; relative paths inside it follow pip's rules. Option lines are read as pip reads them (quoted values,
        C(file:) URLs, abbreviated long options such as C(--requirem)).
      - Lines that change where distributions come from (C(-i)/C(--index-url), C(--extra-index-url), C(-f)/C(--find-links),
        C(--no-index), abbreviations included) are refused in requirements and constraints files alike; use
        O(index_url), O(extra_index_urls), O(find_links) and O(no_index).
      - A file a C(-r) or C(-c) line includes (in this file, a constraints file or a file they include) must be a
        regular file of the user running the task that no other user can write (group write only for the user's own
        group); otherwise the task fails before pip runs, naming the line and the file's owner, and that file is not
        read (another user's file could make pip install and build anything with this user's rights, C(-r /etc/shadow)
        as root included).
      - A refusal quotes a line only of a file the task names (O(requirements), O(constraints)) that the user owns; for
        any other file it gives the file, the line number and what is wrong, never the line.
    type: path
  src:
    description:
      - A local source tree (directory) to install, passed to pip as a path.
      - "Idempotence: the tree is considered installed when a distribution with its name and exactly its
        version is installed (and, when its C(pyproject.toml) declares them statically, its dependencies are
        satisfied). Name and version come from, in this order: O(name) (what the caller says the tree provides);
        a static C([project]) name and version in C(pyproject.toml); a C(PKG-INFO) at the root; else pip prepares
        the tree's metadata once (C(pip install --dry-run --report --no-deps), offline with C(--no-index) when
        O(no_build_isolation) is set)."
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
      - Constraints files, each passed as C(--constraint). They also take part in the offline decision.
      - In check mode a constraints file that does not exist yet (an earlier task of the run would write it) is left out
        of the plan, with a warning saying so.
    type: list
    elements: path
    default: []
  index_url:
    description:
      - Base URL of the package index (C(--index-url)). Credentials in it are redacted everywhere.
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
      - C(PIP_*) variables are options to pip. Only those of options O(extra_args) accepts (such as C(PIP_NO_CACHE_DIR),
        C(PIP_PROXY), C(PIP_CERT), C(PIP_DEFAULT_TIMEOUT)) are allowed, here and, with O(use_pip_config=true), in the
        inherited environment; C(PIP_TARGET), C(PIP_PREFIX), C(PIP_USER), C(PIP_INDEX_URL), C(PIP_FIND_LINKS),
        C(PIP_CONSTRAINT) and every other are refused before pip runs, naming the variable and the module option to use.
      - C(${VAR}) in requirements and constraints files is expanded from this same environment, as pip expands it.
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
      - Distributions that must not be present afterwards. Each entry is an fnmatch pattern on the normalized
        name (C(nvidia-*-cu1[0-9]), C(nvidia-cublas*)), optionally followed by C(==version-glob) (forbidden when the
        version matches, for example C(torch==*+cu*)) or C(!=version-glob) (forbidden when it does B(not) match, for
        example C(torch!=*+rocm*), any torch without a ROCm local label).
      - Checked on pip's dry-run plan before anything is installed, and on distributions already installed.
        A hit fails, names the distribution and what requires it, and leaves the venv untouched.
    type: list
    elements: str
    default: []
  locked_hashes:
    description:
      - "The release lock's hashes: file name to a list of sha256 (module_utils C(release_lock)); empty (default) for none."
      - When set, pip first plans the install (C(pip install --dry-run --report)); every file of the plan that comes
        from an index must be in the lock with the hash the index states, else the task fails with
        C(failure=hash_mismatch), names each file and installs nothing. Then exactly the plan is installed with
        C(--require-hashes --no-deps) from a requirements file whose every line carries the locked C(--hash) (pip
        refuses bytes that differ from the lock), local files of the plan with the hash of their bytes; a VCS or
        directory item of the plan is installed after it with C(--no-deps).
      - With O(wheel_dir) and a pinned requirement (no O(src)), the file the build fetches is planned the same way
        (a C(--no-deps --ignore-installed) dry-run), checked, and built from a hash-checked requirements file
        (C(pip wheel --require-hashes)).
    type: dict
    default: {}
  lock_record:
    description:
      - A file to which the plan of every install is appended (one JSON line per planned file - name, version, URL,
        sha256, kind), from which C(tools/release_lock.py) makes a release lock. Implies the dry-run plan; with
        O(wheel_dir) and a pinned requirement, the file the build fetches (an sdist) is recorded too.
    type: path
  log_path:
    description:
      - File to which the command line and full output of every pip run are appended as pip prints them (not in
        check mode), with pip's decisive debug lines, every retry and the exit status; a source build (O(wheel_dir))
        runs C(pip wheel --verbose), so the build's own output (compiler lines) is there too, line by line while it
        runs (C(tail -f)), and stays after success and failure alike. Credentials are redacted. Created with mode
        C(0640) (its directory C(0750)); an existing file loses any permission for others.
      - "Inside a run of the playbook (C(PRIMUS_TRAINENV_RUN) set), the file starts with C(### primus.trainenv run
        <run id>); the first write of another run rotates it first: the file becomes C(<log_path>.1), C(.1) becomes
        C(.2), and so on, O(log_keep) files in all. Without that variable the file is appended to."
    type: path
  log_keep:
    description:
      - How many logs of O(log_path) are kept across runs, the current one included (C(<log_path>), C(<log_path>.1)
        ... C(<log_path>.<log_keep - 1>)).
    type: int
    default: 5
  expected_conflicts:
    description:
      - Distributions (any spelling of their names) whose lines in pip's post-install "dependency conflicts" report are
        the release's known state (C(amd-aiter ... requires flydsl==0.1.7, but you have flydsl 0.2.4 which is
        incompatible)) - the caller explains them once. Their lines are not warned (the report's other lines still are)
        and are returned in RV(expected_conflicts); the log keeps pip's whole report.
    type: list
    elements: str
    default: []
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
      - Extra options appended to C(pip install) (for example C(--no-cache-dir), C(--use-pep517), C(-v)).
        They do not take part in the offline decision.
      - Every entry must be an option (start with C(-); give values as C(--option=value)), read as pip reads it (any
        unique prefix of a long option is that option, so C(--targ=/x) is C(--target)), and on an allow-list of options
        that change how pip fetches, builds and reports - C(--no-cache-dir), C(--cache-dir), C(-v), C(-q),
        C(--use-pep517), C(--config-settings), C(--no-binary), C(--only-binary), C(--prefer-binary), C(--timeout),
        C(--proxy), C(--cert), C(--client-cert), C(--trusted-host), C(--no-compile), C(--no-warn-script-location) and
        similar. Everything else is refused - options that install elsewhere (C(--target), C(--prefix), C(--root),
        C(--user)) and those this module sets itself (indexes, requirements, constraints, C(--upgrade), C(--dry-run),
        C(--report), C(--log), C(--retries), ...).
    type: list
    elements: str
    default: []
  retries:
    description:
      - How many times a transient failure (connection reset, timeout, HTTP 5xx or 429) is retried before the
        task fails. Each retry is logged with its class and host.
    type: int
    default: 3
  retry_delay:
    description:
      - Seconds before the first retry; each further retry waits twice as long (at most 60 seconds).
    type: float
    default: 5.0
  plan_python:
    description:
      - Check mode only, when O(venv) does not exist yet (an earlier task would create it) - the interpreter
        the venv would be created from.
      - If it has pip (or C(ensurepip)'s bundled pip), the module plans in a scratch venv made from it, holding
        what the new venv would hold, with pip isolated exactly as in a real run, and returns that plan as exact.
        Otherwise the plan lists the requested items only (RV(plan_exact=false)) with a warning saying why.
    type: path
  prior_plan:
    description:
      - Check mode only - what earlier tasks of this run would have installed into O(venv) (their RV(plan)
        entries, or C(name==version) strings). The dry-run then runs in a scratch venv that holds the venv's
        installed distributions plus these, so the plan is the one the real run will see.
      - Ignored outside check mode.
    type: list
    elements: raw
    default: []
  prior_changes:
    description:
      - Check mode only - earlier tasks of this run would have changed O(venv) in ways O(prior_plan) does not
        describe. A dry-run that then fails to resolve (not found, conflict) is returned as an inexact plan with
        a warning naming what could not be known, instead of failing.
      - Ignored outside check mode.
    type: bool
    default: false
  wheel_dir:
    description:
      - Build a wheel of O(src), or of the one pinned requirement in O(name) (for example an sdist-only pin such as
        C(tensorstore==0.1.45), which pip fetches from the index and builds), instead of installing it -
        C(pip wheel --no-deps) with the venv's python into a private scratch directory inside O(wheel_dir) (created
        with mode C(0755) if missing), then each built wheel is moved into O(wheel_dir) with one rename (a wheel of
        the same file name is replaced). Nothing is installed into the venv; its installed set is read before and
        after, and a build that changed it fails. A wheel of O(name) must be of that name and version.
      - The build honours O(environment) (variables the build backend reads, such as C(GPU_ARCHS)),
        O(no_build_isolation), O(constraints), O(pre), O(index_url), O(extra_index_urls), O(find_links) and
        O(no_index) (where an isolated build gets its build requirements), O(use_pip_config), O(extra_args),
        O(log_path) (the full build output; a failure returns only its tail) and O(retries).
        O(no_deps) and O(forbid) do not apply; with O(src), neither does O(name).
      - A wheel is built on every run (C(changed=true)); skip the task when the wheel you need exists.
      - Needs O(src) or O(name) (one pinned requirement); refused with O(requirements) and with O(state=absent) or
        O(state=forcereinstall). A relative path is resolved against O(chdir).
    type: path
notes:
  - The installed set is what the venv's python sees in isolated mode (C(python -I)); C(PYTHONPATH) and
    the user site are not part of it.
  - When something must change and O(forbid) is set, pip resolves once (the dry-run) and installs the planned files
    without a second resolve, except in the cases listed for RV(install_mode).
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
    forbid: ['nvidia-*-cu1[0-9]', 'nvidia-cublas*', 'torch!=*+rocm*', 'triton!=*+*rocm*']
    log_path: "{{ primus_base }}/logs/torch.log"

- name: Install Python dependencies without letting pip swap the pinned torch
  primus.trainenv.pip_constrained:
    venv: "{{ primus_base }}/venv"
    name: [datasets==3.6.0, transformers==4.55.0, "huggingface_hub[cli]"]
    constraints: ["{{ primus_base }}/pip-constraints.txt"]
    forbid: ['nvidia-*-cu1[0-9]', 'torch!=*+rocm*']

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

- name: Build a wheel of a checkout with the stage's arch variables; install nothing
  primus.trainenv.pip_constrained:
    venv: "{{ primus_base }}/venv"
    src: /tmp/primus-build/Primus-Turbo
    wheel_dir: "{{ primus_base }}/wheels"
    no_build_isolation: true
    constraints: ["{{ primus_base }}/pip-constraints.txt"]
    environment:
      GPU_ARCHS: gfx942;gfx950
    log_path: "{{ primus_base }}/logs/turbo-wheel.log"
  register: turbo_wheel

- name: Build a wheel of an sdist-only pin once, into a cache directory; install nothing
  primus.trainenv.pip_constrained:
    venv: "{{ primus_base }}/venv"
    name: [tensorstore==0.1.45]
    wheel_dir: /tmp/primus-cache-me/wheels/tensorstore/0123456789abcdef
    index_url: https://pypi.org/simple
    log_path: "{{ primus_base }}/logs/pydeps.log"

- name: Purge the CUTLASS DSL stack
  primus.trainenv.pip_constrained:
    venv: "{{ primus_base }}/venv"
    name: ['quack-kernels*', 'nvidia-cutlass-dsl*']
    state: absent

- name: Plan (check mode) for a venv an earlier task would create, then for what the first install leaves
  block:
    - name: Front-end pins
      primus.trainenv.pip_constrained:
        venv: "{{ primus_base }}/venv"
        name: [pip==26.3, setuptools==75.1.0]
        plan_python: /usr/bin/python3.12
      register: frontend
    - name: Packages that need the front-end
      primus.trainenv.pip_constrained:
        venv: "{{ primus_base }}/venv"
        name: [cxxfilt==0.3.0]
        plan_python: /usr/bin/python3.12
        prior_plan: "{{ frontend.plan | default([]) }}"
        prior_changes: "{{ frontend is changed }}"
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
      for O(state=absent), the distributions to remove (action V(remove)); with O(wheel_dir), the wheel that would be
      built (action V(build), with C(src) (null for a requirement), C(wheel_dir), and C(name) and C(version) when the
      requirement pins them or the tree declares them statically, else null). Entries with action V(build) are skipped as O(prior_plan) (they install nothing).
    - In an inexact plan (RV(plan_exact=false)) the entries are the requested items, with C(version) only where
      the request pins one exactly, and C(requirement) the request as given.
    - Usable as O(prior_plan) of a later task.
  returned: when a plan was computed
  type: list
  elements: dict
  sample: [{"name": "torch", "version": "2.12.0+rocm7.15.0a20260720", "installed": "2.12.0+cpu", "action": "replace", "requested": true}]
plan_exact:
  description:
    - Whether RV(plan) is pip's own resolution (true) or only the requested items (false, with a warning saying
      what could not be known).
  returned: when a plan was computed
  type: bool
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
wheels:
  description: With O(wheel_dir), the absolute paths of the wheels built and moved into O(wheel_dir) (empty in check mode).
  returned: when O(wheel_dir) is given
  type: list
  elements: str
  sample: ["/base/wheels/primus_turbo-0.2.0+edc8d2c-cp312-cp312-linux_x86_64.whl"]
src_project:
  description: Name and version of O(src) and where they were read from (V(name), V(pyproject.toml), V(PKG-INFO), V(pip-metadata)).
  returned: when O(src) is given
  type: dict
  sample: {"name": "primus-turbo", "version": "0.2.0+edc8d2c", "source": "name"}
installed_from:
  description:
    - Where the installed set was read from before pip ran - V(probe) (one run of the venv's python), or V(snapshot)
      (what an earlier task's probe stored in C(<venv>/.pip-constrained-snapshot.json), used only while the stat of
      every directory and file it read, the interpreter, C(pyvenv.cfg) and the kernel are unchanged).
  returned: when the venv exists
  type: str
  sample: snapshot
snapshot:
  description:
    - When the probe ran, why no snapshot was used (V(none), V(stale (...)), ...) and, after C(;), whether its result
      was stored (V(saved); V(racy) when something it read changed in the last seconds, so a later change could keep
      its stat; nothing in check mode).
  returned: when the probe ran
  type: str
expected_conflicts:
  description: The lines of pip's post-install conflict report about a distribution of O(expected_conflicts).
  returned: when pip reported such a conflict
  type: list
  elements: str
  sample: ["amd-aiter 0.1.7 requires flydsl==0.1.7, but you have flydsl 0.2.4 which is incompatible."]
install_mode:
  description:
    - How pip installed after a dry-run - V(plan) (exactly the dry-run's files, no second resolve) or V(resolve) (a
      second full C(pip install); why is in O(log_path)).
  returned: when pip installed after a dry-run
  type: str
  sample: plan
cmd:
  description: The last pip command that ran (empty when pip did not run), credentials redacted.
  returned: always
  type: list
  elements: str
commands:
  description: Every pip command that ran, in order (retries included), credentials redacted.
  returned: always
  type: list
  elements: list
retried:
  description: Each retry of a transient failure - the failure class, the host, pip's decisive line, the delay.
  returned: always
  type: list
  elements: dict
  sample: [{"class": "http", "status": 503, "host": "pypi.example:443", "delay": 5.0, "decisive": "Could not fetch URL ..."}]
output_tail:
  description: The last lines of the last pip run's output (the full output goes to O(log_path)).
  returned: always
  type: str
failure:
  description:
    - On failure, its class - V(dns), V(refused), V(reset), V(timeout), V(http), V(tls), V(proxy), V(not_found),
      V(conflict), V(forbidden), V(build_failed), V(hash_mismatch), V(not_installable), V(bad_request),
      V(not_a_venv), V(pip_too_old) or V(pip_error).
  returned: failure
  type: str
failure_detail:
  description: On a pip failure, the class, the host, the HTTP status, pip's decisive line and whether it was transient.
  returned: failure
  type: dict
  sample: {"class": "dns", "host": "nonexistent.invalid", "status": null, "transient": false,
           "decisive": "Could not fetch URL https://nonexistent.invalid/simple/einops/: connection error: Failed to resolve ..."}
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

import json
import os
import pwd
import re
import shlex
import shutil
import tempfile
import time

from ansible.module_utils.basic import AnsibleModule, missing_required_lib
from ansible.module_utils.common.text.converters import to_native

from ansible_collections.primus.trainenv.plugins.module_utils.common import Redactor
from ansible_collections.primus.trainenv.plugins.module_utils.modes import hold_point, make_dirs, restrict_umask
from ansible_collections.primus.trainenv.plugins.module_utils import run_log
from ansible_collections.primus.trainenv.plugins.module_utils._pip.command import (
    check_extra_args, check_pip_environment, install_args, pip_environ, stream, uninstall_args, wheel_args)
from ansible_collections.primus.trainenv.plugins.module_utils._pip.decide import (
    check_absent_request, decide_present, is_pattern, plan_absent)
from ansible_collections.primus.trainenv.plugins.module_utils._pip.failure import advice, classify, compiler_error
from ansible_collections.primus.trainenv.plugins.module_utils._pip.libs import (
    load_packaging, load_toml_loads)
from ansible_collections.primus.trainenv.plugins.module_utils._pip.outcome import (
    any_change, build_output, compare, conflict_causes, diff_lines, explain_conflict, resolver_conflicts,
    subprocess_output, summary, tail)
from ansible_collections.primus.trainenv.plugins.module_utils._pip.plan import (
    PLAN_PROBE, exact_install, exact_install_args, index_credentials, links_page, planned_venv, prior_entries,
    requested_plan, write_fake_dists)
from ansible_collections.primus.trainenv.plugins.module_utils._pip.probe import (
    Dist, ProbeError, drop_snapshot, load_snapshot, parse_probe, probe_command, probe_from_data, save_snapshot)
from ansible_collections.primus.trainenv.plugins.module_utils._pip.report import (
    ReportError, describe_forbidden, forbidden_hits, parse_report, plan_actions, predicted_after)
from ansible_collections.primus.trainenv.plugins.module_utils._pip.requirements import (
    FileTrust, RequirementError, check_name_entry, classify as classify_item, read_request, static_project_metadata)
from ansible_collections.primus.trainenv.plugins.module_utils.safe_paths import own_group
from ansible_collections.primus.trainenv.plugins.module_utils import release_lock

WHEEL_DIR_MODE = 0o755
MAX_RETRY_DELAY = 60.0
# A dry-run that fails with one of these may only lack what earlier tasks would have installed.
UNRESOLVED = ('not_found', 'conflict')


def user_name(uid):
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return 'uid %d' % uid


class PipConstrained(object):

    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.venv = self.params['venv']
        self.python = os.path.join(self.venv, 'bin', 'python')
        self.commands = []
        self.last_cmd = []
        self.last_output = ''
        self.retried = []
        self.result = {
            'changed': False, 'venv': self.venv, 'satisfied': False, 'reasons': [],
            'added': [], 'removed': [], 'upgraded': [], 'downgraded': [], 'replaced': [], 'reinstalled': [],
            'cmd': [], 'commands': self.commands, 'retried': self.retried, 'output_tail': '',
        }
        self.pk = None
        self.probe = None
        self.constraint_items = []
        self.redact = Redactor()
        self.base_dir = self.params['chdir'] or os.getcwd()
        self.pip_python = self.python   # what runs pip (a scratch venv's python when planning)
        self.pip_pythonpath = None
        self.debug_count = 0
        self.last_build = []   # the failed build's output, from pip's debug log
        self.attempt_note = ''   # ' (attempt n of m)' in the log's command line of a retry

    # ---- results ---------------------------------------------------------------------------

    def exit(self, **extra):
        self.module.no_log_values.update(self.redact.secrets)
        result = dict(self.result)
        result.update(extra)
        self.module.exit_json(**self.redact(result))

    def fail(self, msg, **extra):
        self.module.no_log_values.update(self.redact.secrets)
        result = dict(self.result)
        result['cmd'] = self.last_cmd
        result['output_tail'] = tail(self.last_output)
        result.update(extra)
        self.module.fail_json(msg=self.redact.text(msg), **self.redact(result))

    # ---- running things --------------------------------------------------------------------

    def pip_env(self):
        env = pip_environ(os.environ, self.params['environment'], self.params['use_pip_config'])
        if self.pip_pythonpath:
            env['PYTHONPATH'] = self.pip_pythonpath
        if self.module.check_mode:
            env['PYTHONDONTWRITEBYTECODE'] = '1'  # a dry-run leaves no __pycache__ in the venv's pip
        return env

    def run(self, args, pip=True):
        """Run a command; pip's output goes to log_path as it comes (a build can run for hours: tail -f shows it)."""
        if not pip:
            return self.module.run_command(args, check_rc=False, expand_user_and_vars=False)
        handle = self.open_log()
        if handle is not None:
            handle.write(self.redact.text('### %s pip_constrained%s: %s\n' % (
                time.strftime('%Y-%m-%dT%H:%M:%S'), self.attempt_note, ' '.join(shlex.quote(a) for a in args))))
            handle.flush()

        def to_log(text):
            handle.write(self.redact.text(text))
            handle.flush()
        try:
            rc, out, err = stream(args, self.pip_env(), self.params['chdir'] or None,
                                  to_log if handle is not None else None)
        except (IOError, OSError) as exc:
            rc, out, err = 127, '', 'cannot run %s: %s\n' % (args[0], to_native(exc))
        finally:
            if handle is not None:
                handle.close()
        self.commands.append(list(args))
        self.last_cmd = list(args)
        self.last_output = '%s%s' % (out, err)
        return rc, out, err

    def run_pip(self, what, make_args):
        """Run pip, retrying transient failures. Returns (rc, out, err, Failure or None)."""
        attempts = max(0, self.params['retries']) + 1
        delay = max(0.0, self.params['retry_delay'])
        for attempt in range(1, attempts + 1):
            self.debug_count += 1
            debug_path = os.path.join(self.module.tmpdir, 'pip-debug-%d.log' % self.debug_count)
            args = make_args(debug_path)
            self.attempt_note = ' (attempt %d of %d)' % (attempt, attempts) if attempt > 1 else ''
            rc, out, err = self.run(args)
            debug = _read_and_remove(debug_path)
            failure = None
            build = build_output(debug)
            self.last_build = build if rc != 0 else []
            if rc != 0:
                failure = classify('%s\n%s' % (out, err), debug, self.index_host())
            # The build's own output is on pip's console with --verbose (pip wheel); else only in its debug log.
            self.log_end(rc, debug_lines(debug), build if build and build[-1] not in out + err else ())
            if failure is None or not failure.transient or attempt == attempts:
                if failure is not None:
                    failure.attempts = attempt
                return rc, out, err, failure
            wait = min(delay * (2 ** (attempt - 1)), MAX_RETRY_DELAY)
            self.retried.append({'class': failure.category, 'status': failure.status, 'host': failure.host,
                                 'delay': wait, 'decisive': failure.decisive, 'attempt': attempt})
            self.log_line('### %s: attempt %d of %d failed [%s] %s; retrying in %.1f s'
                          % (what, attempt, attempts, failure.label, failure.host or '', wait))
            time.sleep(wait)
        raise AssertionError('unreachable')

    def index_host(self):
        url = self.params['index_url'] or 'https://pypi.org/simple'
        netloc = url.split('://', 1)[-1].split('/', 1)[0]
        return netloc.rsplit('@', 1)[-1] or None

    def open_log(self):
        """log_path opened for appending (None in check mode or without one); the first write of a run rotates it."""
        if self.module.check_mode:
            return None
        return run_log.open_for_module(self.module, self.params['log_path'], self.params['log_keep'])

    def log_line(self, text):
        self.append_log(text if text.endswith('\n') else text + '\n')

    def append_log(self, text):
        handle = self.open_log()
        if handle is None:
            return
        try:
            with handle:
                handle.write(self.redact.text(text))
        except (IOError, OSError) as exc:
            self.module.warn('cannot append to log_path %s: %s' % (self.params['log_path'], to_native(exc)))

    def log_end(self, rc, debug=(), build=()):
        """What follows pip's streamed output in the log: pip's decisive debug lines, the build's output when the
        console did not show it, the exit status."""
        lines = ['pip debug: %s\n' % line for line in debug]
        if build:
            lines.append('### the build\'s output (from pip\'s debug log; the console says "See above"):\n')
            lines.append(''.join('%s\n' % line for line in build))
        lines.append('### rc=%s\n' % rc)
        self.append_log(''.join(lines))

    def fail_pip(self, what, rc, out, err, failure=None, **extra):
        failure = failure or classify('%s\n%s' % (out, err), '', self.index_host())
        category = failure.category
        info = {'failure': category, 'failure_detail': failure.as_dict(), 'rc': rc,
                'stdout': tail(out, 60), 'stderr': tail(err, 60)}
        attempts = getattr(failure, 'attempts', 1)
        if category == 'build_failed':
            build = subprocess_output(out, err) or self.last_build
            compiler = compiler_error('%s\n%s\n%s' % (out, err, '\n'.join(self.last_build)))
            msg = '%s failed (rc=%s) [build_failed]: %s%s' % (
                what, rc, compiler or 'a build step failed', ('\nbuild output: ' + ' | '.join(build[-5:])) if build else '')
        elif category == 'conflict' and self.pk is not None:
            causes = conflict_causes(out, err)
            sentence, involved = explain_conflict(self.pk, causes, self.constraint_items, self.probe)
            info['conflict'] = {'causes': causes, 'constrained': involved}
            msg = 'pip reports a dependency conflict (ResolutionImpossible)%s.' % (
                ': ' + '; '.join(causes) if causes else '')
            if sentence:
                msg += ' ' + sentence
        elif category in ('dns', 'refused', 'reset', 'timeout', 'http', 'tls', 'proxy', 'not_found'):
            msg = '%s failed: %s\npip: %s' % (what, advice(failure, attempts), failure.decisive or tail(out + err, 1))
        else:
            msg = '%s failed (rc=%s) [%s]: %s' % (what, rc, category, failure.decisive or tail(out + err, 3))
        info.update(extra)
        if what.startswith('dry-run') or what.startswith('reading'):
            msg += '\nNothing was installed.'
        else:
            msg += '\n' + self.unchanged_note()
        if self.params['log_path'] and not self.module.check_mode:
            msg += ' Full output: %s' % self.params['log_path']
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

    def read_installed(self):
        """The installed set before pip runs: the snapshot an earlier task stored while nothing it read has changed,
        else one run of the probe (then stored for the next task; never in check mode)."""
        data, why = load_snapshot(self.venv, self.python)
        if data is not None:
            self.result['installed_from'] = 'snapshot'
            return probe_from_data(data)
        started = time.time()
        probe = self.read_probe()
        self.result['installed_from'] = 'probe'
        self.result['snapshot'] = why
        if not self.module.check_mode:
            self.result['snapshot'] = '%s; %s' % (why, save_snapshot(self.venv, self.python, probe.data, started))
        return probe

    def read_probe(self, python=None):
        python = python or self.python
        rc, out, err = self.run(probe_command(python), pip=False)
        if rc != 0:
            self.fail('reading the installed distributions of %s failed (rc=%s): %s' % (self.venv, rc, tail(err or out, 5)),
                      cmd=probe_command(python)[:3] + ['<probe>'], rc=rc, stdout=tail(out), stderr=tail(err))
        return parse_probe(out)

    # ---- request ----------------------------------------------------------------------------

    def read_request(self):
        """Items, constraints and targets, read as pip will read them (module_utils._pip.requirements)."""
        toml_loads = load_toml_loads(self.probe.site_dirs if self.probe else [])
        uid = os.geteuid()
        request = read_request(self.pk, self.params, self.pip_env(), self.base_dir, toml_loads,
                               trust=FileTrust(uid, os.stat, user_name, own_group(uid)))
        self.redact.add_from(request.options + [i.text for i in request.items + request.constraints])
        self.constraint_items = request.constraints
        if request.src is not None and request.src.name:
            self.result['src_project'] = {'name': request.src.name, 'version': request.src.version,
                                          'source': request.src_source}
        return request

    def src_metadata(self, item):
        """Ask pip for the source tree's name, version and dependencies (prepares metadata, installs nothing)."""
        self.require_report_support()
        report = os.path.join(self.module.tmpdir, 'pip-src-metadata.json')
        rc, out, err, failure = self.run_pip('reading the metadata of %s' % item.path, lambda log: install_args(
            self.python, self.params, [item.path], report_path=report, metadata_only=True, log_path=log))
        if rc != 0:
            self.fail_pip('reading the metadata of %s' % item.path, rc, out, err, failure)
        planned = self.read_report(report, 'the metadata of %s' % item.path)
        if len(planned) != 1:
            self.fail('pip reported %d distributions for %s, expected 1' % (len(planned), item.path))
        item.name, item.version = planned[0].key, planned[0].version
        item.requires = planned[0].requires
        self.result['src_project'] = {'name': planned[0].name, 'version': planned[0].version, 'source': 'pip-metadata'}

    def read_report(self, path, what):
        try:
            with open(path) as handle:
                return parse_report(self.pk, handle.read())
        except (IOError, OSError, ReportError) as exc:
            self.fail('cannot read pip report for %s: %s' % (what, to_native(exc)))

    # ---- states -----------------------------------------------------------------------------

    def present(self):
        params = self.params
        request = self.read_request()
        targets, decide_items = request.targets, request.items
        if request.src is not None and not request.src.name:
            self.src_metadata(request.src)

        force = params['state'] == 'forcereinstall'
        if not force:
            decision = decide_present(self.pk, self.probe, decide_items, request.constraints, params['no_deps'])
            self.result['reasons'] = list(decision.reasons)
            self.result['satisfied'] = decision.satisfied
            if decision.satisfied:
                self.check_forbidden_installed()
                self.exit(diff={'before': '', 'after': ''})
        else:
            self.result['reasons'] = ['state=forcereinstall']

        if self.module.check_mode and params['prior_plan']:
            self.use_scratch_venv(os.path.realpath(self.python), self.probe.dists.values(), self.prior())
        planned = None
        locked = None
        if params['forbid'] or self.module.check_mode or params['locked_hashes'] or params['lock_record']:
            planned = self.dry_run(targets, decide_items)
            if planned is None:
                return self.exit_inexact(decide_items)
            self.result['plan'] = plan_actions(self.pk, planned, self.probe)
            self.result['plan_exact'] = True
            hits = forbidden_hits(self.pk, params['forbid'], planned, self.probe)
            if hits:
                self.fail('forbidden distributions would be present: %s. Nothing was installed.'
                          % '; '.join(describe_forbidden(hits)), failure='forbidden', forbidden=hits)
            if params['lock_record'] and not self.module.check_mode:
                self.record_plan()
            if params['locked_hashes']:
                locked = self.check_locked()
            if self.module.check_mode:
                before = self.probe.versions()
                after = predicted_after(self.probe, planned)
                self.result.update(compare(self.pk, before, after))
                if force:
                    self.result['reinstalled'] = sorted(p['name'] for p in self.result['plan'] if p['action'] == 'reinstall')
                self.result['changed'] = bool(planned)
                self.exit(diff=diff_lines(before, after))

        drop_snapshot(self.venv)
        if locked is not None:
            # The release lock: exactly the planned files, hash-checked (also a plan without a second resolve).
            self.result['install_mode'] = 'locked'
            self.install_locked(*locked)
            return self.finish(force=force)
        exact = self.exact_plan(planned, decide_items) if planned is not None else None
        if exact is not None and not exact[0] and not exact[2]:
            self.log_line('### pip_constrained: the dry-run plans no install; pip install is not run')
            return self.finish(force=force)
        if exact is None:
            steps = [('pip install', lambda log: install_args(self.python, params, targets, log_path=log))]
        else:
            # The planned files first, then the VCS checkouts of the plan at the commits pip resolved (--no-deps: their
            # dependencies are among the files; the task's indexes stay for their builds).
            steps = [('pip install', lambda log: exact_install_args(self.python, params, exact[0], exact[1],
                                                                    log_path=log))] if exact[0] else []
            if exact[2]:
                steps.append(('pip install (VCS checkouts)', lambda log: install_args(
                    self.python, dict(params, no_deps=True, requirements=None), exact[2], log_path=log)))
        out = err = ''
        for what, command in steps:
            rc, step_out, step_err, failure = self.run_pip(what, command)
            if rc != 0:
                self.fail_pip(what, rc, step_out, step_err, failure)
            out, err = out + step_out, err + step_err
        # pip has installed, nothing has recorded it yet (a test's kill point; modes.hold_point).
        hold_point('pip-installed:' + os.path.basename(str((self.params['name'] or [''])[0])))
        warnings, known = resolver_conflicts(out, err, self.params['expected_conflicts'])
        for warning in warnings:
            self.module.warn(self.redact.text(warning))
        if known:
            self.result['expected_conflicts'] = [self.redact.text(line) for line in known]
            self.log_line('### pip_constrained: expected conflicts (expected_conflicts): %s' % ' '.join(known))
        self.finish(force=force)

    def exact_plan(self, planned, items):
        """(requirements, find-links page, VCS targets) that install exactly the dry-run's plan, or None for a full
        install."""
        params = self.params
        if params['use_pip_config']:
            requirements, links, vcs, why = None, None, None, 'use_pip_config: the pip configuration may add other ' \
                                                              'locations'
        elif any(item.kind == 'editable' for item in items):
            requirements, links, vcs, why = None, None, None, 'an editable install is requested'
        else:
            credentials = index_credentials([u for u in [params['index_url']] + params['extra_index_urls']
                                             + params['find_links'] if u])
            requirements, links, vcs, why = exact_install(planned, not params['no_build_isolation'], credentials)
        if why is not None:
            self.result['install_mode'] = 'resolve'
            self.log_line('### pip_constrained: pip install resolves again: %s' % why)
            return None
        self.result['install_mode'] = 'plan'
        page = os.path.join(self.module.tmpdir, 'pip-plan.html')
        fd = os.open(page, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)   # it may carry an index's credentials
        with os.fdopen(fd, 'w') as handle:
            handle.write(links_page(links))
        return requirements, page, vcs

    def planned_files(self):
        try:
            with open(os.path.join(self.module.tmpdir, 'pip-report.json')) as handle:
                return release_lock.report_items(json.load(handle))
        except (IOError, OSError, ValueError) as exc:
            self.fail('cannot read pip report for the release lock: %s' % to_native(exc))

    def record_plan(self):
        """Append the plan's files to lock_record (one JSON line each)."""
        make_dirs(os.path.dirname(self.params['lock_record']), run_log.LOG_DIR_MODE)
        with open(self.params['lock_record'], 'a') as handle:
            for item in self.planned_files():
                handle.write(json.dumps(item, sort_keys=True) + '\n')

    def check_locked(self):
        """The dry-run's plan against the release lock: (hashed requirements file, direct items); fails on a problem."""
        items = self.planned_files()
        problems = release_lock.check_items(items, self.params['locked_hashes'])
        if problems:
            self.fail(release_lock.describe(problems), failure='hash_mismatch', locked=problems)
        try:
            text, direct = release_lock.hashed_requirements(items, self.params['locked_hashes'])
        except (release_lock.LockError, IOError, OSError) as exc:
            self.fail('the release lock: %s' % to_native(exc), failure='hash_mismatch')
        path = os.path.join(self.module.tmpdir, 'locked-requirements.txt')
        with open(path, 'w') as handle:
            handle.write(text)
        return (path if text else None), direct

    def install_locked(self, path, direct):
        """Exactly the planned files, hash-checked (pip --require-hashes --no-deps), then the direct items."""
        common = dict(self.params, no_deps=True, constraints=[], requirements=None)
        steps = []
        if path:
            steps.append(('pip install (hash-checked)', dict(common, requirements=path,
                                                             extra_args=['--require-hashes'] + common['extra_args']), []))
        if direct:
            targets = []
            try:
                targets = [release_lock.direct_target(d) for d in direct]
            except release_lock.LockError as exc:
                self.fail('the release lock: %s' % to_native(exc), failure='bad_request')
            steps.append(('pip install (direct items)', common, targets))
        for what, params, targets in steps:
            rc, out, err, failure = self.run_pip(what, lambda log, p=params, t=targets: install_args(
                self.python, p, t, log_path=log))
            if rc != 0:
                self.fail_pip(what, rc, out, err, failure)

    def prior(self):
        try:
            return prior_entries(self.pk, self.params['prior_plan'])
        except ValueError as exc:
            self.fail(to_native(exc), failure='bad_request')

    def require_report_support(self):
        """pip install --dry-run --report needs pip 22.2 (Ubuntu 22.04's venvs start with pip 22.0.2)."""
        pip_dist = self.probe.dists.get('pip') if self.probe else None
        try:
            too_old = pip_dist is not None and self.pk.Version(pip_dist.version) < self.pk.Version('22.2')
        except self.pk.InvalidVersion:
            too_old = False
        if too_old:
            self.fail('pip %s in %s cannot plan an install (pip install --dry-run --report needs pip 22.2 or newer, '
                      'for forbid, check mode and src metadata). Upgrade it first, e.g. a task with name: [pip>=22.2] '
                      'and no forbid.' % (pip_dist.version, self.venv), failure='pip_too_old')

    def dry_run(self, targets, items):
        """pip's plan, or None when (check mode, prior_changes) it cannot be resolved before earlier tasks ran."""
        self.require_report_support()
        report = os.path.join(self.module.tmpdir, 'pip-report.json')
        rc, out, err, failure = self.run_pip('dry-run (pip install --dry-run)', lambda log: install_args(
            self.pip_python, self.params, targets, report_path=report, log_path=log))
        if rc != 0:
            if self.module.check_mode and self.params['prior_changes'] and failure.category in UNRESOLVED:
                self.module.warn(self.redact.text(
                    'check mode: the plan lists the requested items only, because pip could not resolve them in the '
                    'venv as it is now and earlier tasks of this run would change it first (prior_changes). pip said: '
                    '%s' % (failure.decisive or tail(out + err, 1))))
                return None
            self.fail_pip('dry-run (pip install --dry-run)', rc, out, err, failure)
        return self.read_report(report, 'the dry-run')

    def exit_inexact(self, items, why=None):
        """An inexact plan: the requested items (items None: the name entries as given, unparsed)."""
        if why:
            self.module.warn(self.redact.text(why))
        if items is None:
            plan = [{'name': text, 'version': None, 'installed': None, 'action': 'install', 'requested': True,
                     'requirement': text} for text in self.params['name'] or []]
        else:
            plan = requested_plan(items)
        self.result['plan'] = plan
        self.result['plan_exact'] = False
        self.result['changed'] = True
        after = ''.join('%s==%s\n' % (p['name'], p['version']) if p['version']
                        else '%s  # version decided when the task runs\n' % p['requirement'] for p in plan)
        self.exit(diff={'before': '', 'after': after})

    def plan_probe(self):
        """What plan_python offers for planning: (info dict, None) or (None, why not)."""
        plan_python = self.params['plan_python']
        if not plan_python:
            return None, 'no plan_python is given'
        rc, out, err = self.run([plan_python, '-I', '-c', PLAN_PROBE], pip=False)
        try:
            info = json.loads(out.strip().splitlines()[-1])
        except (ValueError, IndexError):
            info = None
        if rc != 0 or not isinstance(info, dict):
            return None, 'plan_python %s does not run (rc=%s: %s)' % (plan_python, rc, tail(err or out, 1))
        if not (info.get('pip') or info.get('wheel')):
            return None, 'plan_python %s has neither pip nor ensurepip' % plan_python
        return info, None

    def plan_without_venv(self):
        """Check mode, venv not created yet: plan with plan_python in a scratch venv, else the request itself."""
        info, why = self.plan_probe()
        pip_source = (info.get('pip') or info.get('wheel')) if info else None
        # A node's python may lack `packaging`: use the copy that plan_python's pip vendors.
        self.pk = load_packaging([os.path.dirname(pip_source) if info.get('pip') else pip_source] if info else [])
        missing = 'check mode: the venv %s does not exist yet' % self.venv
        if self.pk is None:
            return self.exit_inexact(None, '%s and %s (no packaging to read the request with): the plan lists the '
                                           'requested items only.' % (missing, why or 'plan_python has no pip'))
        self.result['packaging_source'] = self.pk.source
        request = self.read_request()
        if info is None:
            return self.exit_inexact(request.items, '%s and %s: the plan lists the requested items only; their '
                                                    'versions and dependencies are decided when the task runs.'
                                     % (missing, why))
        pip_version = info.get('pip_version') if info.get('pip') else info.get('ensurepip')
        try:
            too_old = self.pk.Version(pip_version or '0') < self.pk.Version('22.2')
        except self.pk.InvalidVersion:
            too_old = True
        if too_old:
            return self.exit_inexact(request.items, '%s and the pip %s of plan_python %s cannot plan (needs 22.2): the '
                                                    'plan lists the requested items only.'
                                     % (missing, pip_version, self.params['plan_python']))
        fresh = _FreshVenv([Dist('pip', 'pip', info['ensurepip'])] if info.get('ensurepip') else [])
        self.use_scratch_venv(self.params['plan_python'], fresh.dists.values(), self.prior(), pip_source=pip_source)
        planned = self.dry_run(request.targets, request.items)
        if planned is None:
            return self.exit_inexact(request.items)
        self.result['plan'] = plan_actions(self.pk, planned, fresh)
        self.result['plan_exact'] = True
        self.result['reasons'] = ['the venv %s does not exist yet' % self.venv]
        hits = forbidden_hits(self.pk, self.params['forbid'], planned, fresh)
        if hits:
            self.fail('forbidden distributions would be present: %s. Nothing was installed.'
                      % '; '.join(describe_forbidden(hits)), failure='forbidden', forbidden=hits)
        before = fresh.versions()
        after = predicted_after(fresh, planned)
        self.result.update(compare(self.pk, before, after))
        self.result['changed'] = True
        self.exit(diff=diff_lines(before, after))

    def use_scratch_venv(self, base_python, installed, prior, pip_source=None):
        """From now on pip runs in a scratch venv holding `installed` + `prior` (metadata only)."""
        scratch = tempfile.mkdtemp(prefix='plan-', dir=self.module.tmpdir)
        venv = os.path.join(scratch, 'venv')
        rc, out, err = self.run([base_python, '-I', '-m', 'venv', '--without-pip', venv], pip=False)
        if rc != 0:
            self.fail('check mode: cannot make a scratch venv to plan in with %s (rc=%s): %s'
                      % (base_python, rc, tail(err or out, 3)))
        python = os.path.join(venv, 'bin', 'python')
        rc, out, err = self.run([python, '-I', '-c', 'import sysconfig; print(sysconfig.get_paths()["purelib"])'],
                                pip=False)
        site = out.strip().splitlines()[-1] if rc == 0 and out.strip() else None
        if not site:
            self.fail('check mode: cannot read the scratch venv %s (rc=%s): %s' % (venv, rc, tail(err or out, 3)))
        if pip_source is None:
            pip_source = next((os.path.join(d, 'pip') for d in self.probe.site_dirs
                               if os.path.isdir(os.path.join(d, 'pip'))), None)
            if pip_source is None:
                self.fail('check mode: the venv %s has no pip to plan with' % self.venv, failure='no_pip')
        if pip_source.endswith('.whl'):
            self.pip_pythonpath = pip_source
        else:
            path_dir = os.path.join(scratch, 'pip-path')
            os.makedirs(path_dir)
            os.symlink(pip_source, os.path.join(path_dir, 'pip'))
            self.pip_pythonpath = path_dir
        write_fake_dists(site, planned_venv(self.pk, installed, prior))
        self.pip_python = python

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
        self.exit(diff=diff_lines(before, after))

    def absent_request(self):
        names = self.params['name'] or []
        patterns = [t for t in names if is_pattern(self.pk, t)]
        items = [classify_item(self.pk, t, 'name[%d]' % i, self.base_dir) for i, t in enumerate(names)
                 if not is_pattern(self.pk, t)]
        if any(t.strip().startswith('-') for t in names):
            check_name_entry(self.pk, next(t for t in names if t.strip().startswith('-')), 'name', self.base_dir)
        if self.params['requirements']:
            items.extend(self.read_request().items)
        try:
            check_absent_request(self.pk, patterns, items)
        except ValueError as exc:
            self.fail(to_native(exc), failure='bad_request')
        return items, patterns

    def absent(self):
        items, patterns = self.absent_request()
        try:
            remove = plan_absent(self.pk, self.probe, items, patterns)
        except ValueError as exc:
            self.fail(to_native(exc), failure='bad_request')
        self.result['plan'] = [{'name': d.name, 'version': d.version, 'installed': d.version, 'action': 'remove',
                                'requested': True} for d in remove]
        self.result['plan_exact'] = True
        self.result['satisfied'] = not remove
        if not remove:
            self.exit(diff={'before': '', 'after': ''})
        self.result['reasons'] = ['%s %s is installed' % (d.name, d.version) for d in remove]
        before = self.probe.versions()
        if self.module.check_mode:
            after = dict(before)
            for dist in remove:
                after.pop(dist.key, None)
            self.result.update(compare(self.pk, before, after))
            self.result['changed'] = True
            self.exit(diff=diff_lines(before, after))
        args = uninstall_args(self.python, [d.name for d in remove])
        drop_snapshot(self.venv)
        rc, out, err = self.run(args)
        self.log_end(rc)
        if rc != 0:
            self.fail_pip('pip uninstall', rc, out, err)
        self.finish()

    # ---- wheel_dir: build a wheel of src, install nothing ----------------------------------

    def plan_wheel(self, venv_exists):
        """Check mode with wheel_dir: say what would be built; build nothing."""
        src, wheel_dir = self.params['src'], self.params['wheel_dir']
        entry = {'name': None, 'version': None, 'installed': None, 'action': 'build', 'requested': True,
                 'src': src, 'wheel_dir': wheel_dir}
        what = src
        if not src:
            what = self.params['name'][0]
            site_dirs = []
            if venv_exists:
                try:
                    site_dirs = self.read_probe().site_dirs
                except ProbeError:
                    pass   # the module's own packaging may still read the requirement
            self.pk = load_packaging(site_dirs)
            if self.pk is not None:
                entry['name'], entry['version'] = self.wheel_requirement()
        elif venv_exists and os.path.isdir(src):
            try:
                self.probe = self.read_probe()
                self.pk = load_packaging(self.probe.site_dirs)
                if self.pk is not None:
                    meta = static_project_metadata(self.pk, src, load_toml_loads(self.probe.site_dirs))
                    entry['name'], entry['version'] = meta['name'], meta['version']
            except (ProbeError, RequirementError):
                pass   # name and version stay unknown: the plan still says a wheel would be built
        self.result['plan'] = [entry]
        self.result['plan_exact'] = True
        self.result['reasons'] = ['check mode: a wheel of %s would be built into %s (pip wheel --no-deps); nothing '
                                  'is installed into the venv' % (what, wheel_dir)]
        self.result['wheels'] = []
        self.result['changed'] = True
        self.exit(diff={'before': '', 'after': ''})

    def wheel_requirement(self):
        """(name, version) of the one pinned requirement that wheel_dir builds without src; fails otherwise."""
        text = self.params['name'][0]
        try:
            item = check_name_entry(self.pk, text, 'name[0]', self.base_dir)
        except RequirementError as exc:
            self.fail(to_native(exc), failure='bad_request')
        specs = list(item.req.specifier) if item.kind == 'req' else []
        if len(specs) != 1 or specs[0].operator not in ('==', '===') or specs[0].version.endswith('*'):
            self.fail('name[0]: %r is not one pinned requirement: wheel_dir without src builds a wheel of a requirement '
                      'from the index pinned to one version (name==version, no path or URL). Pin it, e.g. '
                      'tensorstore==0.1.45, or give src for a source tree.' % text, failure='bad_request')
        if item.marker is not None:
            self.fail('name[0]: %r has an environment marker: a wheel build has no marker environment to skip it in; '
                      'drop the marker (skip the task instead)' % text, failure='bad_request')
        return item.name, specs[0].version

    def check_built_wheels(self, built, what):
        """A wheel built from a pinned requirement must be that distribution at that version."""
        name, version = self.wheel_requirement()
        for filename in built:
            parts = filename[:-len('.whl')].split('-')
            ok = len(parts) >= 5 and self.pk.canonicalize_name(parts[0]) == name
            if ok:
                try:
                    ok = self.pk.Version(parts[1]) == self.pk.Version(version)
                except self.pk.InvalidVersion:
                    ok = False
            if not ok:
                self.fail('pip wheel of %s wrote %s, which is not %s %s: check the index (it must serve that '
                          'distribution at that version). No wheel was kept.' % (what, filename, name, version),
                          failure='pip_error')

    def build_wheels(self):
        """pip wheel --no-deps of src (or of the one pinned requirement in name) into a scratch directory inside
        wheel_dir, then the wheels into wheel_dir."""
        params = self.params
        src, wheel_dir = params['src'], params['wheel_dir']
        what = src or params['name'][0]
        self.result['reasons'] = ['wheel_dir: a wheel of %s is built on every run' % what]
        if src and not os.path.isdir(src):
            self.fail('src %s is not a directory: wheel_dir builds a wheel of a local source tree (check the path, '
                      'or clone the tree first)' % src, failure='not_installable')
        hashed = None
        if not src:
            self.wheel_requirement()
            if params['lock_record'] or params['locked_hashes']:
                hashed = self.plan_sdist(what)
        scratch = self.wheel_scratch(wheel_dir)
        try:
            rc, out, err, failure = self.run_pip('pip wheel', lambda log: wheel_args(
                self.python, params, what, scratch, log_path=log, requirement_file=hashed))
            if rc != 0:
                self.fail_pip('pip wheel of %s' % what, rc, out, err, failure)
            built = sorted(f for f in os.listdir(scratch) if f.endswith('.whl'))
            if not built:
                self.fail('pip wheel of %s succeeded but wrote no wheel' % what, failure='pip_error')
            if not src:
                self.check_built_wheels(built, what)
            self.check_venv_unchanged('pip wheel of %s' % what)
            wheels = []
            for name in built:
                dest = os.path.join(wheel_dir, name)
                os.rename(os.path.join(scratch, name), dest)   # same directory: atomic, replaces an older build
                wheels.append(dest)
                self.log_line('### pip_constrained: built %s' % dest)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        self.result['wheels'] = wheels
        self.result['changed'] = True
        self.result['cmd'] = self.last_cmd
        self.result['output_tail'] = tail(self.last_output)
        self.exit(diff={'before': '', 'after': ''})

    def plan_sdist(self, what):
        """The file `pip wheel` of a pinned requirement fetches from the index, from pip's report of a --no-deps
        dry-run (--ignore-installed: the wheel is built whatever the venv holds): appended to lock_record, and with
        the release lock checked against it; returns the hash-checked requirements file the build then uses (None
        without a lock), so a file that changed under its locked name is refused before anything is built."""
        self.require_report_support()
        report = os.path.join(self.module.tmpdir, 'pip-report.json')
        params = dict(self.params, no_deps=True, state='present', requirements=None)

        def args(log):
            argv = install_args(self.python, params, [what], report_path=report, log_path=log)
            at = argv.index('--')
            return argv[:at] + ['--ignore-installed'] + argv[at:]
        rc, out, err, failure = self.run_pip('dry-run of the build (pip install --dry-run)', args)
        if rc != 0:
            self.fail_pip('dry-run of the build of %s (pip install --dry-run)' % what, rc, out, err, failure)
        if self.params['lock_record']:
            self.record_plan()
        if not self.params['locked_hashes']:
            return None
        path, direct = self.check_locked()
        if direct or not path:
            self.fail('the release lock: pip would build %s from %s, not from an index file the lock can hash-check. '
                      'Nothing was built. Fix: serve that file from an index of the pins (or a mirror), or make the lock '
                      'again from a converge that built it (tools/release_lock.py)'
                      % (what, ', '.join(d['url'] for d in direct) or 'nothing'), failure='hash_mismatch')
        return path

    def wheel_scratch(self, wheel_dir):
        """A private (0700) scratch directory inside wheel_dir, so the finished wheels move in with one rename."""
        try:
            make_dirs(wheel_dir, WHEEL_DIR_MODE)
            return tempfile.mkdtemp(prefix='.pip-wheel-', dir=wheel_dir)
        except (IOError, OSError) as exc:
            self.fail('cannot create a build directory in wheel_dir %s: %s (it must be a directory this user can '
                      'write)' % (wheel_dir, to_native(exc)), failure='bad_request')

    def check_venv_unchanged(self, what):
        """A build must not install into the venv (a setup.py run without isolation could): prove it did not."""
        try:
            after = self.read_probe()
        except ProbeError as exc:
            self.fail('%s: the installed set could not be read again: %s' % (what, to_native(exc)))
        changes = compare(self.pk, self.probe.versions(), after.versions())
        if any_change(changes):
            self.result.update(changes)
            self.result['changed'] = True
            self.fail('%s changed the venv %s (%s): a wheel build must install nothing. No wheel was kept; look at '
                      'what the build runs (its setup.py or build backend).' % (what, self.venv, summary(changes)),
                      failure='build_failed')

    def resolve_paths(self):
        """Relative requirements/constraints/src paths are relative to chdir, for pip and for the decision alike."""
        base = self.params['chdir']
        if not base:
            return

        def absolute(path):
            return path if os.path.isabs(path) else os.path.join(base, path)
        for key in ('requirements', 'src', 'wheel_dir'):
            if self.params[key]:
                self.params[key] = absolute(self.params[key])
        self.params['constraints'] = [absolute(p) for p in self.params['constraints']]

    def skip_unwritten_constraints(self):
        """Check mode: a constraints file an earlier task of the run would write (the torch stage writes
        pip-constraints.txt) may not exist yet. It is left out of the plan, and the plan says so."""
        if not self.module.check_mode:
            return
        missing = [p for p in self.params['constraints'] if not os.path.exists(p)]
        for path in missing:
            self.module.warn('check mode: the constraints file %s does not exist yet (an earlier stage of this run '
                             'writes it), so this plan does not apply it' % path)
        self.params['constraints'] = [p for p in self.params['constraints'] if p not in missing]

    def collect_secrets(self):
        """Every credential the task's values carry, redacted everywhere from here on (and by Ansible)."""
        params = self.params
        values = [params['index_url'], params['extra_index_urls'], params['find_links'], params['name'],
                  params['environment'], params['extra_args']]
        if params['use_pip_config']:
            values.append(dict((k, v) for k, v in os.environ.items() if k.startswith('PIP_')))
        self.redact.add_from(values)

    def check_inputs(self):
        params = self.params
        for index, name in enumerate(params['expected_conflicts']):
            if not re.match(r'^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$', name):
                self.fail('expected_conflicts[%d]: %r is not a distribution name (letters, digits, ".", "_", "-"); '
                          'give the name pip prints first on the conflict line, e.g. amd-aiter' % (index, name[:80]),
                          failure='bad_request')
        if params['log_keep'] < 1:
            self.fail('log_keep: %d is not a number of logs to keep; give 1 or more (in playbooks/primus.yml: '
                      'primus_logs_keep, default %d)' % (params['log_keep'], run_log.DEFAULT_KEEP), failure='bad_request')
        try:
            check_extra_args(params['extra_args'])
            check_pip_environment(self.pip_env(), params['environment'], params['use_pip_config'])
        except ValueError as exc:
            self.fail(to_native(exc), failure='bad_request')
        urls = [('index_url', params['index_url'])] if params['index_url'] else []
        urls += [('extra_index_urls[%d]' % i, u) for i, u in enumerate(params['extra_index_urls'])]
        urls += [('find_links[%d]' % i, u) for i, u in enumerate(params['find_links'])]
        for where, value in urls:
            if not value.strip() or any(c.isspace() for c in value) or value.startswith('-'):
                self.fail('%s: %r is not a URL or path (no spaces, no leading "-")' % (where, value),
                          failure='bad_request')
        if params['wheel_dir']:
            if params['state'] != 'present':
                self.fail('wheel_dir cannot be used with state=%s: it builds a wheel and installs or removes nothing; '
                          'drop wheel_dir to %s' % (params['state'], 'remove' if params['state'] == 'absent'
                                                    else 'reinstall'), failure='bad_request')
            if not params['src'] and len(params['name'] or []) != 1:
                self.fail('wheel_dir needs src, or name with exactly one pinned requirement (got %d entries): it builds '
                          'a wheel of the source tree src, or of that requirement (pip wheel --no-deps); give src or one '
                          'name==version, or drop wheel_dir to install name/requirements'
                          % len(params['name'] or []), failure='bad_request')
            if params['requirements']:
                self.fail('wheel_dir builds only src (pip wheel --no-deps): requirements would be ignored; install '
                          'them in a task of their own', failure='bad_request')
        if params['state'] == 'absent' and params['src']:
            self.fail('src cannot be used with state=absent; name the distribution instead', failure='bad_request')

    def check_venv(self):
        """True when the venv is usable; fails for a directory that is not a venv."""
        exists = os.path.lexists(self.venv)
        is_venv = os.path.isfile(os.path.join(self.venv, 'pyvenv.cfg'))
        if exists and not is_venv:
            self.fail('%s is not a virtual environment (it has no pyvenv.cfg): refusing to install into the Python '
                      'prefix it points at. Remove it or point venv at a directory made by `python3 -m venv`.'
                      % self.venv, failure='not_a_venv')
        return is_venv and os.path.isfile(self.python)

    def main(self):
        params = self.params
        self.resolve_paths()
        self.skip_unwritten_constraints()
        self.collect_secrets()
        self.check_inputs()
        exists = self.check_venv()
        if params['wheel_dir'] and self.module.check_mode:
            return self.plan_wheel(exists)
        if not exists:
            if params['state'] == 'absent':
                self.result['satisfied'] = True
                self.exit()
            if not self.module.check_mode:
                self.fail('%s not found: create the venv first (python3 -m venv %s)' % (self.python, self.venv),
                          failure='not_a_venv')
            try:
                self.plan_without_venv()
            except RequirementError as exc:
                self.fail(to_native(exc), failure='bad_request')
            return
        try:
            self.probe = self.read_installed()
        except ProbeError as exc:
            self.fail('cannot read the installed distributions of %s: %s' % (self.venv, to_native(exc)))
        self.result['python_version'] = self.probe.python_version
        pip_dist = self.probe.dists.get('pip')
        self.result['pip_version'] = pip_dist.version if pip_dist else None
        self.pk = load_packaging(self.probe.site_dirs)
        if self.pk is None:
            self.fail(missing_required_lib(
                'packaging', reason='to compare versions (neither the module interpreter nor the venv pip provides it)'))
        self.result['packaging_source'] = self.pk.source
        try:
            if params['wheel_dir']:
                self.build_wheels()
            elif params['state'] == 'absent':
                self.absent()
            else:
                self.present()
        except RequirementError as exc:
            self.fail(to_native(exc), failure='bad_request')


class _FreshVenv(object):
    """The installed set of a venv that is about to be created (ensurepip's pip, if any)."""

    markers = {}

    def __init__(self, dists=()):
        self.dists = dict((d.key, d) for d in dists)

    def versions(self):
        return dict((key, (d.name, d.version)) for key, d in self.dists.items())


def _read_and_remove(path):
    try:
        with open(path, 'rb') as handle:
            text = handle.read().decode('utf-8', 'replace')
    except (IOError, OSError):
        return ''
    try:
        os.remove(path)
    except OSError:
        pass
    return text


def debug_lines(debug):
    """The lines of pip's debug log worth keeping in log_path: why an index or file could not be fetched."""
    keep = ('Could not fetch URL', 'Retrying (Retry(', 'connection error', 'HTTP error')
    out = []
    for line in debug.splitlines():
        if any(k in line for k in keep) and line not in out:
            out.append(line.strip())
    return out[-20:]


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
            locked_hashes=dict(type='dict', default={}),
            lock_record=dict(type='path'),
            log_path=dict(type='path'),
            log_keep=dict(type='int', default=run_log.DEFAULT_KEEP),
            expected_conflicts=dict(type='list', elements='str', default=[]),
            use_pip_config=dict(type='bool', default=False),
            extra_args=dict(type='list', elements='str', default=[]),
            retries=dict(type='int', default=3),
            retry_delay=dict(type='float', default=5.0),
            plan_python=dict(type='path'),
            prior_plan=dict(type='list', elements='raw', default=[]),
            prior_changes=dict(type='bool', default=False),
            wheel_dir=dict(type='path'),
        ),
        required_one_of=[['name', 'requirements', 'src']],
        supports_check_mode=True,
    )
    restrict_umask()   # pip's files and the log: never writable by others, whatever the user's umask
    PipConstrained(module).main()


if __name__ == '__main__':
    main()
