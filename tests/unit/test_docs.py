# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The documentation: the README is a front page, every link of it and of the manual (docs/*.md) resolves, the
generated parts are what tools/docs_gen.py makes from the code, Troubleshooting quotes the code's own messages, and
figures live on the benchmarks page only."""

import glob
import os
import re
import shutil
import subprocess
import sys

import pytest
from markdown_it.tree import SyntaxTreeNode

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'tools'))
import docs_gen  # noqa: E402  pylint: disable=wrong-import-position


def read(path):
    with open(os.path.join(ROOT, path), encoding='utf-8') as handle:
        return handle.read()


def pages():
    """README.md and every page of docs/, as paths relative to the repository."""
    return ['README.md'] + sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, 'docs', '*.md')))


def section(text, title):
    start = text.index('\n## %s\n' % title)
    end = text.find('\n## ', start + 1)
    return text[start:end if end >= 0 else len(text)]


# --------------------------------------------------------------------------- links

def links(text):
    """Every link target of a Markdown text (what GitHub and the docsite follow)."""
    return [node.attrs['href'] for node in SyntaxTreeNode(docs_gen.markdown().parse(text)).walk()
            if node.type == 'link']


def link_problems(root, path):
    """The relative links of root/path whose file, or whose anchor in a Markdown file, does not exist."""
    with open(os.path.join(root, path), encoding='utf-8') as handle:
        text = handle.read()
    problems = []
    for href in links(text):
        if re.match(r'^[a-z][a-z0-9+.-]*:', href):
            continue
        target, anchor = (href.split('#', 1) + [''])[:2]
        file = os.path.normpath(os.path.join(os.path.dirname(path), target)) if target else path
        full = os.path.join(root, file)
        if not os.path.exists(full):
            problems.append('%s: %s - no such file or directory %s' % (path, href, file))
        elif anchor:
            if not file.endswith('.md'):
                problems.append('%s: %s - an anchor into a file that is not Markdown' % (path, href))
                continue
            with open(full, encoding='utf-8') as handle:
                if anchor not in docs_gen.anchors(handle.read()):
                    problems.append('%s: %s - %s has no heading #%s' % (path, href, file, anchor))
    return problems


def test_every_relative_link_of_the_readme_and_the_manual_resolves():
    problems = []
    for path in pages():
        problems += link_problems(ROOT, path)
    assert problems == []
    assert len(links(read('README.md'))) >= 20


def test_the_link_check_finds_a_missing_page_and_a_missing_anchor(tmp_path):
    (tmp_path / 'docs').mkdir()
    (tmp_path / 'docs' / 'a.md').write_text('# A\n\n## Two words\n\n[ok](#two-words) [ok](a.md#a) [dir](../docs)\n'
                                            '[no](b.md) [no](#three) [no](a.md#two_words) [no](../x.py#L3)\n')
    problems = link_problems(str(tmp_path), 'docs/a.md')
    assert [p.split(' - ')[0] for p in problems] == [
        'docs/a.md: b.md', 'docs/a.md: #three', 'docs/a.md: a.md#two_words', 'docs/a.md: ../x.py#L3']


def test_anchors_are_github_s():
    assert docs_gen.slug('Per-node or shared `PRIMUS_BASE`') == 'per-node-or-shared-primus_base'
    assert docs_gen.slug("pip's expected \"incompatible\" reports") == 'pips-expected-incompatible-reports'
    assert [a for _l, _t, a in docs_gen.headings('# A\n## B\n## B\n')] == ['a', 'b', 'b-1']


# --------------------------------------------------------------------------- the README as a front page

def test_the_readme_is_a_front_page_with_the_set_up_first():
    text = read('README.md')
    lines = text.splitlines()
    assert len(lines) <= 260, len(lines)
    first = '\n'.join(lines[:60])
    # The two set-up commands - the main job on localhost, and every test - and the demo.
    assert 'make controller && . .venv/bin/activate && export PRIMUS_BASE=' in first
    assert 'ansible-playbook playbooks/primus.yml' in first
    assert '\nmake test\n' in first and 'make demo' in first
    # Every page of the manual, and how to get help.
    for ref in docs_gen.manual_refs():
        assert '(docs/%s.md)' % ref in text, ref
    assert '(docs/troubleshooting.md)' in section(text, 'Getting help')


def test_no_dates_and_no_commits_of_this_repository_in_the_readme_and_the_manual():
    """History belongs to git and the changelog; upstream's commits (AMD-AGI/Primus df90fdd5, ...) are facts."""
    found = []
    for path in pages():
        text = read(path)
        found += ['%s: %s' % (path, date) for date in re.findall(r'\b20\d\d-[01]\d-[0-3]\d\b', text)]
        for token in set(re.findall(r'\b[0-9a-f]{7,40}\b', text)):
            known = subprocess.run(['git', 'cat-file', '-e', token + '^{commit}'], cwd=ROOT, capture_output=True,
                                   check=False)
            if known.returncode == 0 and re.search(r'[a-f]', token) and re.search(r'\d', token):
                found.append('%s: commit %s of this repository' % (path, token))
    assert found == []


# --------------------------------------------------------------------------- the generated parts

def test_the_generated_parts_are_what_the_script_makes(capsys):
    rc = docs_gen.main(['--check'])
    assert rc == 0, capsys.readouterr().err


def test_every_generated_section_has_its_markers_once():
    for name, (page, _function) in docs_gen.SECTIONS.items():
        text = read(page)
        assert text.count(docs_gen.BEGIN % name) == 1 and text.count(docs_gen.END % name) == 1, (name, page)


@pytest.fixture
def copy(tmp_path, monkeypatch):
    """The documentation's sources in a scratch copy, with docs_gen pointed at it."""
    for name in ('README.md', 'galaxy.yml', 'docs', 'roles', 'playbooks', 'plugins'):
        source = os.path.join(ROOT, name)
        if os.path.isdir(source):
            shutil.copytree(source, str(tmp_path / name), ignore=shutil.ignore_patterns('_build', '__pycache__'))
        else:
            shutil.copy(source, str(tmp_path / name))
    monkeypatch.setattr(docs_gen, 'ROOT', str(tmp_path))
    monkeypatch.setattr(docs_gen, 'RST_DIR', str(tmp_path / 'docs' / 'docsite' / 'rst'))
    return tmp_path


@pytest.mark.parametrize('source,old,new,page,shown', [
    ('roles/primus/meta/argument_specs.yml', 'Preflight fails when primus_base has less free space than this (GiB).',
     'Preflight refuses a base with less free space than this (GiB).', 'docs/variables.md',
     'Preflight refuses a base with less free space'),
    ('roles/boto/meta/argument_specs.yml', 'Stage boto - boto3 and botocore pins.',
     'Stage boto - the boto3 and botocore of the image.', 'docs/stages.md', 'the boto3 and botocore of the image'),
    ('plugins/filter/te_mode.yml', 'short_description: ', 'short_description: Choose this - ', 'docs/architecture.md',
     'Choose this - '),
    ('roles/primus/vars/env.yml', '# Workaround for HSA_STATUS_ERROR_OUT_OF_RESOURCES',
     '# Keeps HSA_STATUS_ERROR_OUT_OF_RESOURCES away', 'docs/environment.md', 'Keeps HSA\\_STATUS'),
])
def test_a_changed_source_without_regenerating_fails_the_check(copy, capsys, source, old, new, page, shown):
    path = copy / source
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    assert docs_gen.main(['--check']) == 1
    err = capsys.readouterr().err
    assert '%s differs from what tools/docs_gen.py makes' % page in err
    assert 'docs/docsite/rst/%s.rst differs' % os.path.basename(page)[:-3] in err
    assert docs_gen.main([]) == 0
    assert docs_gen.main(['--check']) == 0
    assert shown in (copy / page).read_text()


def test_a_hand_edit_inside_a_generated_section_fails_the_check(copy, capsys):
    path = copy / 'docs' / 'variables.md'
    path.write_text(path.read_text().replace('| `primus_min_free_gib` | int | `60` |', '| `primus_min_free_gib` | int | `50` |'))
    assert docs_gen.main(['--check']) == 1
    assert 'docs/variables.md differs' in capsys.readouterr().err


def test_an_rst_page_of_no_manual_page_is_reported(copy, capsys):
    (copy / 'docs' / 'docsite' / 'rst' / 'old.rst').write_text('Old\n===\n')
    assert docs_gen.main(['--check']) == 1
    assert 'docs/docsite/rst/old.rst is not a page of docs/docsite/extra-docs.yml' in capsys.readouterr().err


# --------------------------------------------------------------------------- Markdown to the docsite's RST

def rst(text, ref='install'):
    return docs_gen.RstWriter(ref, {'install': '', 'fleets': ''}).render(text)


def test_rst_inline_markup_next_to_words_is_separated():
    out = rst('# T\n\nthe `venv`s and **bold**ly `a``b`\n')
    assert 'the ``venv``\\ s and **bold**\\ ly :literal:`a\\`\\`b`' in out


def test_rst_links_become_labels_plugin_pages_and_repository_urls():
    out = rst('# T\n\n[F](fleets.md#the-wheel-store) [me](#t) [m](../plugins/modules/pip_constrained.py) '
              '[r](../roles/venv/meta/argument_specs.yml) [mk](../Makefile) [x](https://example.org/a)\n')
    assert ':ref:`F <ansible_collections.primus.trainenv.docsite.fleets.the-wheel-store>`' in out
    assert ':ref:`me <ansible_collections.primus.trainenv.docsite.install.t>`' in out
    assert ':ref:`m <ansible_collections.primus.trainenv.pip_constrained_module>`' in out
    assert ':ref:`r <ansible_collections.primus.trainenv.venv_role>`' in out
    assert '`mk <%s/blob/main/Makefile>`__' % docs_gen.repository_url() in out
    assert '`x <https://example.org/a>`__' in out


def test_rst_tables_lists_code_and_text_that_rst_would_misread():
    out = rst('# T\n\n| a | b |\n|---|---|\n| - | `x` |\n\n- one\n- two\n\n```bash\nls -l\n```\n\n'
              'a | b * c_ d:: e\n')
    assert '   * - a\n     - b\n   * - \\-\n     - ``x``' in out
    assert '- one\n- two' in out
    assert '.. code-block:: bash\n\n   ls -l' in out
    assert 'a \\| b \\* c\\_ d:\\: e' in out


def test_rst_refuses_what_it_cannot_render():
    with pytest.raises(ValueError):
        rst('# T\n\na <b>bold</b> word\n')


# --------------------------------------------------------------------------- Troubleshooting and the figures

def sources():
    """The text of everything that prints a message - roles, templates, plugins, tools, scripts, the Makefile and its
    checks - whitespace collapsed, Python's adjacent string literals joined and Tcl's escaped brackets read."""
    parts = []
    for pattern in ('roles/**/*.yml', 'roles/**/*.j2', 'plugins/**/*.py', 'tools/*.py', 'scripts/*.py', 'Makefile',
                    'tests/prerequisites.sh', 'playbooks/*.yml'):
        for path in sorted(glob.glob(os.path.join(ROOT, pattern), recursive=True)):
            if path.endswith('docs_gen.py'):
                continue
            with open(path) as handle:
                text = handle.read()
            if path.endswith('.py'):
                text = re.sub(r'(["\'])\s*\n\s*\1', '', text)
            text = text.replace('\\[', '[').replace('\\]', ']')
            parts.append(re.sub(r'\s+', ' ', text))
    return '\n'.join(parts)


def test_troubleshooting_quotes_real_messages_with_cause_and_fix():
    text = read('docs/troubleshooting.md')
    rows = [line for line in text.splitlines() if line.startswith('| `')]
    assert len(rows) >= 60, len(rows)
    code = sources()
    for row in rows:
        cells = [c.strip() for c in re.split(r'(?<!\\)\|', row.strip().strip('|'))]
        assert len(cells) == 3 and all(cells), row
        message = re.findall(r'`([^`]+)`', cells[0])[0]
        for fragment in message.split('…'):
            fragment = fragment.strip(" .,:;'()")
            if len(fragment) >= 6:
                assert fragment in code, 'Troubleshooting quotes %r, which nothing of the collection prints' % fragment


def test_figures_live_on_the_benchmarks_page_only():
    benchmarks = read('docs/benchmarks.md')
    # The page holds the figures: a table per benchmark, the suites' wall times among them.
    for section in ('## make bench\n', '## make bench-fleet', '## Moving to the next release', '## make test'):
        assert section in benchmarks, section
    assert re.search(r'\| functional, in two workers \| \d+ \| \d+ min \d+ s \|', benchmarks)
    for path in pages():
        if path == 'docs/benchmarks.md':
            continue
        text = read(path)
        for pattern in (r'\bat (commit )?[0-9a-f]{7}\b', r'\bMeasured on\b', r'\b\d+(\.\d+)? s after\b',
                        r'\d+ min \d+ s', r'\b\d+\.\d+ s\b'):
            found = re.findall('.{0,60}%s.{0,20}' % pattern, text)
            assert not found, '%s: %s' % (path, found)
