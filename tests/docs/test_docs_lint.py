# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The linters of the documentation and the changelog: `make docs-lint`, a suite of `make test` (tests/output/docs.xml).

antsibull-docs lint-collection-docs checks every module's, filter's and role's documentation as the docsite renders it
(schema, markup, references to options and plugins) and the extra docs (docs/docsite: its index and the manual's RST);
antsibull-changelog lint checks the fragments; CHANGELOG.md must be what antsibull-changelog makes of them."""

import os
import subprocess
import sys

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
BIN = os.path.dirname(sys.executable)


def run(argv, cwd=ROOT, timeout=600):
    env = dict(os.environ, PATH='%s:%s' % (BIN, os.environ.get('PATH', '')),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, '.collections'))
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)


def test_antsibull_docs_lint_collection_docs():
    proc = run([os.path.join(BIN, 'antsibull-docs'), 'lint-collection-docs', '--plugin-docs', '--check-extra-docs-refs',
                '--validate-collection-refs', 'all', ROOT])
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_antsibull_changelog_lint():
    proc = run([os.path.join(BIN, 'antsibull-changelog'), 'lint'])
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_changelog_is_made_from_the_fragments(tmp_path):
    """`make changelog` in a copy of the repository's files changes none of what it writes."""
    files = subprocess.run(['git', 'ls-files', '-co', '--exclude-standard'], cwd=ROOT, check=True, capture_output=True,
                           text=True).stdout.split()
    for name in files:
        if name.startswith(('galaxy.yml', 'changelogs/', 'plugins/', 'roles/', 'meta/', 'CHANGELOG')):
            source = os.path.join(ROOT, name)
            if os.path.isfile(source):
                os.makedirs(os.path.dirname(str(tmp_path / name)), exist_ok=True)
                with open(source, 'rb') as handle, open(str(tmp_path / name), 'wb') as out:
                    out.write(handle.read())
    with open(os.path.join(ROOT, 'galaxy.yml')) as handle:
        version = yaml.safe_load(handle)['version']
    proc = run([os.path.join(BIN, 'antsibull-changelog'), 'release', '--version', str(version), '--reload-plugins',
                '--refresh'], cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name in ('CHANGELOG.md', 'changelogs/changelog.yaml'):
        with open(os.path.join(ROOT, name)) as handle, open(str(tmp_path / name)) as made:
            assert handle.read() == made.read(), '%s is not what the fragments make: run make changelog' % name
