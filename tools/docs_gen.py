# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The generated parts of the documentation, made from the code so that they cannot drift from it.

    python3 tools/docs_gen.py            write them
    python3 tools/docs_gen.py --check    write nothing; exit 1 naming every file that differs from what this makes

Two kinds of output:

1. Generated sections of the Markdown pages (README.md, docs/*.md). A section sits between two markers,

       <!-- BEGIN GENERATED <name> (tools/docs_gen.py): edit its source, not this -->
       <!-- END GENERATED <name> -->

   and SECTIONS maps <name> to the page that holds it and the function that makes its Markdown. To add a
   section: write a function returning its Markdown (a str), add it to SECTIONS, and put the two markers, with
   nothing between them, where it belongs; then run this script.

2. The manual in the format of the collection's docsite. antsibull-docs takes a collection's extra docs as
   reStructuredText only (docs/docsite/rst/*.rst, listed in docs/docsite/extra-docs.yml); each page that
   extra-docs.yml lists (docs/<ref>.md) is rendered into docs/docsite/rst/<ref>.rst. Links between pages and to
   their headings become :ref: labels; links to a module's, filter's or role's source become links to its page in
   the docsite; links to other files of the repository become links to them on the repository's host.

The manual is written once, in Markdown (readable on GitHub); the RST is only ever generated.
"""
import argparse
import glob
import os
import re
import sys

import yaml
from markdown_it import MarkdownIt
from markdown_it.tree import SyntaxTreeNode

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, 'docs')
EXTRA_DOCS = os.path.join(DOCS, 'docsite', 'extra-docs.yml')
RST_DIR = os.path.join(DOCS, 'docsite', 'rst')
COLLECTION = 'primus.trainenv'
LABEL_PREFIX = 'ansible_collections.%s.docsite.' % COLLECTION

BEGIN = '<!-- BEGIN GENERATED %s (tools/docs_gen.py): edit its source, not this -->'
END = '<!-- END GENERATED %s -->'


def read(*parts):
    with open(os.path.join(ROOT, *parts), encoding='utf-8') as handle:
        return handle.read()


def load_yaml(*parts):
    return yaml.safe_load(read(*parts))


# ---------------------------------------------------------------------------------------------------------------
# Ansible's documentation markup (C(), O(), M(), ...) as Markdown.

_MARKUP = re.compile(r'\b([A-Z]{1,2})\(((?:[^()\\]|\\.|\([^()]*\))*)\)')


def markup_to_markdown(text):
    """Ansible doc markup to Markdown: C(x) O(x) V(x) RV(x) E(x) P(x) M(x) as code, I(x) italic, B(x) bold, U(url),
    L(text,url); other text escaped for a Markdown table cell."""
    out = []
    pos = 0
    for match in _MARKUP.finditer(text):
        kind, value = match.group(1), match.group(2).replace('\\)', ')').replace('\\(', '(').replace('\\\\', '\\')
        if kind not in ('C', 'O', 'V', 'RV', 'E', 'P', 'M', 'I', 'B', 'U', 'L'):
            continue
        out.append(_escape_md(text[pos:match.start()]))
        pos = match.end()
        if kind in ('C', 'O', 'V', 'RV', 'E', 'P', 'M'):
            out.append(_code_md(value))
        elif kind == 'I':
            out.append('*%s*' % _escape_md(value))
        elif kind == 'B':
            out.append('**%s**' % _escape_md(value))
        elif kind == 'U':
            out.append('<%s>' % value)
        elif kind == 'L':
            label, url = value.rsplit(',', 1) if ',' in value else ('', value)
            out.append('[%s](%s)' % (_escape_md(label), url.strip()))
    out.append(_escape_md(text[pos:]))
    return ''.join(out)


def _escape_md(text):
    return re.sub(r'([\\|*_`<\[\]])', r'\\\1', text)


def _code_md(value):
    value = value.replace('|', '\\|')
    fence = '``' if '`' in value else '`'
    pad = ' ' if value.startswith('`') or value.endswith('`') else ''
    return '%s%s%s%s%s' % (fence, pad, value, pad, fence)


def description_text(description):
    if isinstance(description, list):
        return ' '.join(str(part).strip() for part in description)
    return str(description or '').strip()


def md_value(value):
    if value is None:
        return ''
    if value == '':
        return '`""`'
    if isinstance(value, bool):
        return '`%s`' % str(value).lower()
    if isinstance(value, (dict, list)):
        return _code_md(yaml.safe_dump(value, default_flow_style=True).strip())
    return _code_md(str(value))


# ---------------------------------------------------------------------------------------------------------------
# Generated sections.

def fallback_variable(description):
    """The controller's environment variable an option falls back to (its description's "Fallback - C(NAME)")."""
    match = re.search(r"Fallback - (?:the controller's )?C\((\w+)\)", description)
    return match.group(1) if match else ''


def section_variables():
    """Every user-facing variable: the core role's argument spec, then the source-build role's (roles/*/meta)."""
    lines = []
    for role, heading in (('primus', 'Settings of the core role (`primus.trainenv.primus`)'),
                          ('source_build', 'Settings of the source builds (`primus.trainenv.source_build`)')):
        spec = load_yaml('roles', role, 'meta', 'argument_specs.yml')['argument_specs']['main']['options']
        lines += ['### ' + heading, '',
                  'Source: [`roles/%s/meta/argument_specs.yml`](../roles/%s/meta/argument_specs.yml).' % (role, role), '',
                  '| Variable | Type | Default | Environment fallback | Description |',
                  '|---|---|---|---|---|']
        for name, option in spec.items():
            if role == 'source_build' and option.get('required'):
                continue   # set by the playbook for each stage, not by the user
            description = description_text(option.get('description'))
            kind = option.get('type', 'str')
            if option.get('elements'):
                kind = '%s of %s' % (kind, option['elements'])
            if option.get('choices'):
                kind += ': ' + ', '.join(md_value(choice) for choice in option['choices'])
            default = md_value(option['default']) if 'default' in option else ('required' if option.get('required') else '')
            fallback = fallback_variable(description)
            lines.append('| `%s` | %s | %s | %s | %s |' % (
                name, kind, default or '-', '`%s`' % fallback if fallback else '-',
                markup_to_markdown(description)))
        lines.append('')
    return '\n'.join(lines).rstrip() + '\n'


def playbook_stage_roles():
    """{stage: role} of the site playbook's stage includes (tasks named "Stage <name>")."""
    found = {}

    def walk(tasks):
        for task in tasks or []:
            include = task.get('ansible.builtin.include_role')
            if include and str(task.get('name', '')).startswith('Stage '):
                found[task['name'][len('Stage '):]] = include['name'].split('.')[-1]
            for part in ('block', 'rescue', 'always'):
                walk(task.get(part))
    for play in load_yaml('playbooks', 'primus.yml'):
        walk(play.get('tasks'))
    return found


def role_summary(role, entry='main'):
    spec = load_yaml('roles', role, 'meta', 'argument_specs.yml')['argument_specs'][entry]
    text = spec['short_description'].strip()
    return re.sub(r'^(Optional stage|Stage) \w+ - ', '', text).rstrip('.')


def source_summary(name, source):
    """What a stage of the pins' sources builds, from its entry (roles/primus/vars/releases/<release>.yml)."""
    build = source.get('build') or {}
    parts = []
    if build:
        words = '`%s` built from source' % build['distribution']
        if build.get('archs'):
            words += ' for the GPU arch list'
            if build.get('arch_env'):
                words += ' (%s)' % ', '.join('`%s`' % var for var in build['arch_env'])
        parts.append(words)
        if build.get('env'):
            parts.append(', '.join('`%s=%s`' % item for item in build['env'].items()))
        parts.append('build isolation %s' % ('on' if build.get('isolation') else 'off'))
        if build.get('uninstall'):
            parts.append('%s uninstalled first' % ' and '.join('`%s`' % dist for dist in build['uninstall']))
        if build.get('no_deps'):
            parts.append('installed with `--no-deps`')
    else:
        parts.append('checkout only')
    if source.get('patches'):
        parts.append('%d verified patch%s' % (len(source['patches']), 'es' if len(source['patches']) > 1 else ''))
    if source.get('keep'):
        parts.append('checkout kept in the workspace')
    return '; '.join(parts)


def source_ref(source):
    repo = source['repo']
    short = re.sub(r'^https://github\.com/|\.git$', '', repo)
    if source.get('ref_kind') == 'branch':
        ref = 'branch `%s` (floating: resolved once, recorded)' % source['ref']
    else:
        ref = '`%s`' % source['ref'][:10]
    return '[%s](%s) %s' % (short, repo, ref)


def section_tags():
    """The stages and their tags: the stage registry (roles/primus/vars/main.yml), the playbook's includes, each
    stage role's argument spec and the pins' sources of the default release."""
    registry = load_yaml('roles', 'primus', 'vars', 'main.yml')['primus_stages']
    roles = playbook_stage_roles()
    release = load_yaml('roles', 'primus', 'defaults', 'main.yml')['primus_release']
    sources = load_yaml('roles', 'primus', 'vars', 'releases', '%s.yml' % release)['primus_pins']['sources']
    plan = role_summary('preflight')
    lines = ['| Tag | Role | Needs | What it does | Source (%s pins) |' % release, '|---|---|---|---|---|',
             '| `preflight` | [`preflight`](../roles/preflight/meta/argument_specs.yml) | - | %s; then %s%s; runs with '
             'every `--tags` and changes nothing | - |' % (role_summary('preflight', 'checks'), plan[0].lower(), plan[1:])]
    for stage in registry:
        name = stage['name']
        role = roles[name]
        if role == 'source_build':
            what = source_summary(name, sources[name])
        else:
            what = role_summary(role)
        notes = []
        if stage.get('optional'):
            notes.append('only with `--tags %s`' % name)
        if stage.get('read_only'):
            notes.append('read-only, takes no lock')
        if notes:
            what += ' (%s)' % '; '.join(notes)
        needs = ', '.join('`%s`' % need for need in stage.get('requires') or []) or '-'
        source = source_ref(sources[name]) if name in sources else '-'
        lines.append('| `%s` | [`%s`](../roles/%s/meta/argument_specs.yml) | %s | %s | %s |' % (
            name, role, role, needs, _escape_cell(what), source))
    return '\n'.join(lines) + '\n'


def _escape_cell(text):
    return text.replace('|', '\\|')


def plugin_documentation(path):
    """The DOCUMENTATION of a module or action plugin (.py) or of a filter (.yml), as data."""
    with open(path, encoding='utf-8') as handle:
        text = handle.read()
    if path.endswith('.yml'):
        return yaml.safe_load(text)['DOCUMENTATION']
    match = re.search(r'^DOCUMENTATION = r?(\'\'\'|""")\n(.*?)\1', text, re.S | re.M)
    return yaml.safe_load(match.group(2))


def section_plugins():
    """The collection's modules and filters, each with the short description of its own documentation."""
    lines = ['| Module | What it does |', '|---|---|']
    for path in sorted(glob.glob(os.path.join(ROOT, 'plugins', 'modules', '*.py'))):
        name = os.path.basename(path)[:-3]
        if name == '__init__':
            continue
        doc = plugin_documentation(path)
        lines.append('| [`%s`](../plugins/modules/%s.py) | %s |' % (
            name, name, markup_to_markdown(doc['short_description'].strip().rstrip('.'))))
    lines += ['', '| Filter | What it does |', '|---|---|']
    for path in sorted(glob.glob(os.path.join(ROOT, 'plugins', 'filter', '*.yml'))):
        name = os.path.basename(path)[:-4]
        doc = plugin_documentation(path)
        lines.append('| [`%s`](../plugins/filter/%s.yml) | %s |' % (
            name, name, markup_to_markdown(doc['short_description'].strip().rstrip('.'))))
    return '\n'.join(lines) + '\n'


ENV_HOW = {'force': 'set', 'default': 'set unless already set', 'prepend': 'prepended', 'append': 'appended',
           'activate': 'the venv activated'}
ENV_RUNTIME = {'user': '<user>', 'archs': "<the node's GPU archs>", 'atomic': "<1 on gfx942, else 0: the node's GPUs>",
               'max_jobs': "<from the node's CPUs and memory>"}
ENV_PATHS = {'base': '$PRIMUS_BASE', 'venv': '<primus_venv_dir>', 'workspace': '<primus_workspace_dir>',
             'python': '$PRIMUS_BASE/python', 'constraints': '$PRIMUS_BASE/pip-constraints.txt',
             'site_packages': "<the venv's site-packages>", 'rocm': "<the venv's site-packages>/_rocm_sdk_devel",
             'nltk_data': '$PRIMUS_BASE/nltk_data', 'build': '<primus_build_dir>', 'cache': '<primus_cache_dir>'}


def env_template(text):
    """A templated string of the environment table, in words."""
    choice = re.match(r"^\{\{ \[primus_paths\.(\w+)\] if primus_paths\.\w+_given else (\[.*\]) \}\} *$", text)
    if choice:
        other = yaml.safe_load(choice.group(2))
        return '%s if set, else %s' % (ENV_PATHS.get(choice.group(1), choice.group(1)), env_parts(other))
    text = re.sub(r'\{\{ primus_paths\.(\w+) \}\}', lambda m: ENV_PATHS.get(m.group(1), '<%s>' % m.group(1)), text)
    return re.sub(r'\{\{ primus_pins\.(\w+) \}\}', r"<the pins' \1>", text)


def env_parts(value):
    if isinstance(value, str):
        return env_template(value)
    out = []
    for part in value:
        if isinstance(part, str):
            out.append(env_template(part))
        elif 'ref' in part:
            out.append('$%s%s' % (part['ref'], ' (commas for ;)' if part.get('form') == 'csv' else ''))
        else:
            out.append(ENV_RUNTIME.get(part['runtime'], '<%s>' % part['runtime']))
    return ''.join(out)


def env_condition(condition):
    (kind, value), = condition.items()
    if kind == 'file':
        return '%s exists' % env_parts(value)
    if kind == 'dir':
        return 'directory %s exists' % env_parts(value)
    return 'decided by the plan'


def env_comments(text):
    """{index of an entry: the comment lines right above it} of roles/primus/vars/env.yml."""
    found = {}
    comment = []
    index = -1
    in_entries = False
    entry_indent = None
    for line in text.splitlines():
        if line.strip() == 'entries:':
            in_entries = True
            continue
        if not in_entries:
            continue
        stripped = line.strip()
        indent_width = len(line) - len(line.lstrip())
        if stripped.startswith('#'):
            comment.append(stripped.lstrip('#').strip())
        elif stripped.startswith('- ') and indent_width == (entry_indent or indent_width):
            entry_indent = indent_width
            index += 1
            if comment:
                found[index] = ' '.join(comment)
            comment = []
    return found


def section_environment():
    """The environment table (roles/primus/vars/env.yml): what env.sh, the modulefile and the build steps set."""
    text = read('roles', 'primus', 'vars', 'env.yml')
    table = yaml.safe_load(text)['primus_env_table']
    comments = env_comments(text)
    lines = ['| Variable | How | Value | When | Why |', '|---|---|---|---|---|']
    for index, entry in enumerate(table['entries']):
        if 'values' in entry:
            value = entry.get('separator', ':').join(env_parts(part) for part in entry['values'])
        else:
            value = env_parts(entry['value'])
        when = env_condition(table['conditions'][entry['when']]) if entry.get('when') else 'always'
        how = ENV_HOW[entry['how']] + ('; a private directory' if entry.get('private') else '')
        lines.append('| `%s` | %s | %s | %s | %s |' % (
            entry['name'], how, _code_md(value), _escape_cell(_escape_md(when)),
            _escape_cell(_escape_md(comments.get(index, '')))))
    return '\n'.join(lines) + '\n'


def section_manual():
    """The manual's table of contents for the README: docs/docsite/extra-docs.yml's sections, each page's lead."""
    lines = []
    for section in load_yaml('docs', 'docsite', 'extra-docs.yml')['sections']:
        lines += ['**%s**' % section['title'], '']
        for entry in section['toctree']:
            ref = entry['ref'] if isinstance(entry, dict) else entry
            title, lead = page_title_and_lead(ref)
            lines.append('- [%s](docs/%s.md) - %s' % (title, ref, lead))
        lines.append('')
    return '\n'.join(lines).rstrip() + '\n'


def page_title_and_lead(ref):
    """A page's title (its first heading) and the first sentence of its first paragraph, as Markdown whose relative
    links are made relative to the repository's top (the README's place)."""
    text = read('docs', ref + '.md')
    lines = text.splitlines()
    title = lead = None
    for node in SyntaxTreeNode(markdown().parse(text)).children:
        if node.type == 'heading' and title is None:
            title = plain_text(node)
        elif node.type == 'paragraph' and title is not None:
            start, end = node.map
            lead = first_sentence(' '.join(line.strip() for line in lines[start:end]))
            break
    lead = re.sub(r'\]\((?![a-z][a-z0-9+.-]*:|#)([^)]+)\)',
                  lambda m: '](%s)' % os.path.normpath(os.path.join('docs', m.group(1))), lead)
    return title, lead


def first_sentence(text):
    """Up to the first full stop that ends a sentence outside a code span."""
    in_code = False
    for index, char in enumerate(text):
        if char == '`':
            in_code = not in_code
        elif char == '.' and not in_code and (index + 1 == len(text) or text[index + 1] == ' '):
            return text[:index + 1]
    return text


def section_release_file():
    """Every key of a release file: its schema (plugins/plugin_utils/release_schema.py), which checks every file."""
    collections = os.path.join(ROOT, '.collections')
    if collections not in sys.path:
        sys.path.insert(0, collections)
    from ansible_collections.primus.trainenv.plugins.plugin_utils import release_schema  # pylint: disable=import-outside-toplevel
    lines = ['Source: [`plugins/plugin_utils/release_schema.py`](../plugins/plugin_utils/release_schema.py). `[]` is each '
             'entry of a list, `<name>` each key of a mapping of names.', '',
             '| Key | Expected | Meaning |', '|---|---|---|']
    for path, kind, doc in release_schema.reference_rows():
        lines.append('| `%s` | %s | %s |' % (path, _escape_cell(kind), _escape_cell(doc)))
    return '\n'.join(lines) + '\n'


# The sections: name -> (page, function). Add one here and put its markers in the page.
SECTIONS = {
    'release-file': ('docs/releases.md', section_release_file),
    'manual': ('README.md', section_manual),
    'variables': ('docs/variables.md', section_variables),
    'tags': ('docs/stages.md', section_tags),
    'plugins': ('docs/architecture.md', section_plugins),
    'environment': ('docs/environment.md', section_environment),
}


def fill_sections(path, text):
    """The page's text with each of its generated sections made again."""
    for name, (page, function) in SECTIONS.items():
        begin, end = BEGIN % name, END % name
        if page != path:
            if begin in text:
                raise SystemExit('%s holds the section %s, which SECTIONS puts into %s' % (path, name, page))
            continue
        if text.count(begin) != 1 or text.count(end) != 1 or text.index(begin) > text.index(end):
            raise SystemExit('%s must hold the markers of section %s once each:\n  %s\n  %s' % (path, name, begin, end))
        head, rest = text.split(begin, 1)
        _old, tail = rest.split(end, 1)
        text = '%s%s\n\n%s\n%s%s' % (head, begin, function().strip('\n'), end, tail)
    return text


# ---------------------------------------------------------------------------------------------------------------
# Markdown to reStructuredText (the subset the manual uses: headings, paragraphs, lists, code blocks, tables,
# block quotes, emphasis, code and links).

def markdown():
    return MarkdownIt('commonmark').enable('table')


def slug(text):
    """GitHub's anchor of a heading: lower case, punctuation other than - and _ removed, spaces as hyphens."""
    return re.sub(r'[^\w\- ]', '', text.strip().lower()).replace(' ', '-')


def plain_text(node):
    """The text of an inline node tree, as it reads (code spans included, markup removed)."""
    if node.type in ('text', 'code_inline'):
        return node.content
    if node.type in ('softbreak', 'hardbreak'):
        return ' '
    return ''.join(plain_text(child) for child in node.children)


def source_text(node):
    """The text of a block, as plain text."""
    return ''.join(plain_text(child) for child in node.children)


def headings(text):
    """[(level, title, anchor)] of a Markdown page, anchors as GitHub makes them (duplicates numbered)."""
    found = []
    seen = {}
    for node in SyntaxTreeNode(markdown().parse(text)).walk():
        if node.type == 'heading':
            title = plain_text(node)
            anchor = slug(title)
            if anchor in seen:
                seen[anchor] += 1
                anchor = '%s-%d' % (anchor, seen[anchor])
            else:
                seen[anchor] = 0
            found.append((int(node.tag[1]), title, anchor))
    return found


def anchors(text):
    """Every anchor a link may name in a Markdown page: its headings'."""
    return {anchor for _level, _title, anchor in headings(text)}


def repository_url():
    return load_yaml('galaxy.yml')['repository'].rstrip('/')


_START_OK = set(' \t\n-:/\'"<([{')
_END_OK = set(' \t\n-.,:;!?\\/\'")]}>')


class RstWriter:
    """One Markdown page of the manual as the RST of the docsite."""

    def __init__(self, ref, pages):
        self.ref = ref
        self.pages = pages          # {ref: markdown text} of the manual
        self.repo = repository_url()

    def label(self, ref, anchor=None):
        return LABEL_PREFIX + ref.replace('-', '_') + ('.' + anchor if anchor else '')

    def render(self, text):
        tree = SyntaxTreeNode(markdown().parse(text))
        seen = {}
        out = ['.. Generated from docs/%s.md by tools/docs_gen.py: edit that page, then run python3 tools/docs_gen.py.'
               % self.ref, '']
        blocks = []
        first = True
        for node in tree.children:
            if node.type == 'heading':
                title = plain_text(node)
                anchor = slug(title)
                if anchor in seen:
                    seen[anchor] += 1
                    anchor = '%s-%d' % (anchor, seen[anchor])
                else:
                    seen[anchor] = 0
                labels = ['.. _%s:' % self.label(self.ref, anchor)]
                if first:
                    labels.insert(0, '.. _%s:' % self.label(self.ref))
                    first = False
                blocks.append('\n'.join(labels) + '\n\n' + self.heading(node))
            else:
                rendered = self.block(node)
                if rendered is not None:
                    blocks.append(rendered)
        return '\n'.join(out) + '\n' + '\n\n'.join(blocks) + '\n'

    # blocks

    def heading(self, node):
        text = self.inline(node.children[0].children if node.children else [])
        char = {1: '=', 2: '=', 3: '-', 4: '~', 5: '^', 6: '"'}[int(node.tag[1])]
        rule = char * (len(text) + 2)
        if node.tag == 'h1':
            return '%s\n%s\n%s' % (rule, text, rule)
        return '%s\n%s' % (text, rule)

    def block(self, node):
        kind = node.type
        if kind == 'paragraph':
            return protect_start(self.inline(node.children[0].children))
        if kind in ('bullet_list', 'ordered_list'):
            return self.list(node)
        if kind in ('fence', 'code_block'):
            language = (node.info or '').split()[0] if kind == 'fence' and node.info else 'text'
            language = {'sh': 'bash', 'shell': 'bash', '': 'text'}.get(language, language)
            body = node.content.rstrip('\n')
            return '.. code-block:: %s\n\n%s' % (language, indent(body, 3))
        if kind == 'table':
            return self.table(node)
        if kind == 'blockquote':
            inner = '\n\n'.join(b for b in (self.block(child) for child in node.children) if b is not None)
            return indent(inner, 4)
        if kind == 'html_block':
            comment = node.content.strip()
            if comment.startswith('<!--'):
                return '..\n' + indent(comment[4:].rstrip('->').strip(), 3)
            raise ValueError('docs/%s.md: HTML other than a comment has no RST form: %r' % (self.ref, comment[:60]))
        if kind == 'hr':
            return None
        raise ValueError('docs/%s.md: no RST form for a %s' % (self.ref, kind))

    def list(self, node):
        items = []
        for number, item in enumerate(node.children, int(node.attrs.get('start', 1) or 1)):
            marker = '%d. ' % number if node.type == 'ordered_list' else '- '
            parts = [b for b in (self.block(child) for child in item.children) if b is not None]
            body = '\n\n'.join(parts) if parts else ''
            lines = body.split('\n')
            items.append(marker + lines[0] + ('\n' + indent('\n'.join(lines[1:]), len(marker)) if len(lines) > 1 else ''))
        return '\n'.join(items) if all('\n' not in i for i in items) else '\n\n'.join(items)

    def table(self, node):
        rows = []
        for part in node.children:            # thead, tbody
            for row in part.children:
                rows.append([protect_start(self.inline(cell.children[0].children)) if cell.children else ''
                             for cell in row.children])
        lines = ['.. list-table::', '   :header-rows: 1', '   :widths: auto', '']
        for row in rows:
            for index, cell in enumerate(row):
                lines.append(('   * - ' if index == 0 else '     - ') + cell if cell else
                             ('   * -' if index == 0 else '     -'))
        return '\n'.join(lines)

    # inline

    def inline(self, children):
        pieces = []               # (is_markup, text)
        for child in children:
            pieces.extend(self.inline_node(child))
        out = []
        for index, (markup, text) in enumerate(pieces):
            if markup:
                before = out[-1][-1] if out and out[-1] else ''
                if before and before not in _START_OK:
                    out.append('\\ ')
                out.append(text)
                following = pieces[index + 1][1] if index + 1 < len(pieces) else ''
                if following and following[0] not in _END_OK:
                    out.append('\\ ')
            else:
                out.append(text)
        return ''.join(out).strip()

    def inline_node(self, node):
        kind = node.type
        if kind == 'text':
            return [(False, escape_rst(node.content))]
        if kind in ('softbreak', 'hardbreak'):
            return [(False, ' ')]
        if kind == 'code_inline':
            return [(True, literal(node.content))]
        if kind in ('strong', 'em'):
            text = escape_rst(plain_text(node))
            mark = '**' if kind == 'strong' else '*'
            return [(True, '%s%s%s' % (mark, text, mark))] if text.strip() else []
        if kind == 'link':
            return [(True, self.link(node))]
        if kind == 'html_inline':
            raise ValueError('docs/%s.md: inline HTML has no RST form: %r' % (self.ref, node.content))
        if kind == 'image':
            raise ValueError('docs/%s.md: images are not used in the manual' % self.ref)
        return [(False, escape_rst(plain_text(node)))]

    def link(self, node):
        href = node.attrs['href']
        text = plain_text(node)
        if re.match(r'^[a-z][a-z0-9+.-]*:', href):
            return '`%s <%s>`__' % (escape_link_text(text), href)
        path, anchor = (href.split('#', 1) + [''])[:2]
        if not path:
            return ':ref:`%s <%s>`' % (escape_link_text(text), self.label(self.ref, anchor))
        target = os.path.normpath(os.path.join('docs', path))
        page = re.match(r'^docs/([\w-]+)\.md$', target)
        if page and page.group(1) in self.pages:
            return ':ref:`%s <%s>`' % (escape_link_text(text), self.label(page.group(1), anchor or None))
        plugin = re.match(r'^plugins/(modules|filter)/(\w+)\.(py|yml)$', target)
        if plugin:
            return ':ref:`%s <ansible_collections.%s.%s_%s>`' % (
                escape_link_text(text), COLLECTION, plugin.group(2), 'module' if plugin.group(1) == 'modules' else 'filter')
        role = re.match(r'^roles/(\w+)/meta/argument_specs\.yml$', target)
        if role:
            return ':ref:`%s <ansible_collections.%s.%s_role>`' % (escape_link_text(text), COLLECTION, role.group(1))
        kind = 'tree' if os.path.isdir(os.path.join(ROOT, target)) else 'blob'
        url = '%s/%s/main/%s%s' % (self.repo, kind, target, '#' + anchor if anchor else '')
        return '`%s <%s>`__' % (escape_link_text(text), url)


def protect_start(text):
    """A paragraph or table cell that RST would read as a list, a comment or a directive, escaped."""
    if text.startswith('..') or re.match(r'^(\d+[.)]|[-+*])(\s|$)', text):
        return '\\' + text
    return text


def escape_rst(text):
    text = re.sub(r'([\\*`|_])', r'\\\1', text)
    return text.replace('::', ':\\:')


def escape_link_text(text):
    return re.sub(r'([\\`<>])', r'\\\1', text).strip()


def literal(content):
    content = content.strip()
    if '``' in content or content.endswith('`') or content.startswith('`'):
        return ':literal:`%s`' % re.sub(r'([\\`])', r'\\\1', content)
    return '``%s``' % content


def indent(text, width):
    pad = ' ' * width
    return '\n'.join(pad + line if line.strip() else '' for line in text.split('\n'))


def manual_refs():
    refs = []
    for section in load_yaml('docs', 'docsite', 'extra-docs.yml')['sections']:
        for entry in section['toctree']:
            refs.append(entry['ref'] if isinstance(entry, dict) else entry)
    return refs


# ---------------------------------------------------------------------------------------------------------------

def outputs():
    """{path relative to ROOT: content} of everything this script makes."""
    made = {}
    for path in sorted({page for page, _function in SECTIONS.values()}):
        made[path] = fill_sections(path, read(path))
    refs = manual_refs()
    pages = {}
    for ref in refs:
        path = 'docs/%s.md' % ref
        pages[ref] = made.get(path) or read(path)
    for ref in refs:
        made['docs/docsite/rst/%s.rst' % ref] = RstWriter(ref, pages).render(pages[ref])
    return made


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('--check', action='store_true',
                        help='write nothing; exit 1 naming each file that differs from what this script makes')
    args = parser.parse_args(argv)
    made = outputs()
    stale = sorted(path for path in glob.glob(os.path.join(RST_DIR, '*.rst'))
                   if os.path.relpath(path, ROOT) not in made)
    differ = []
    for path, content in made.items():
        full = os.path.join(ROOT, path)
        current = read(path) if os.path.exists(full) else None
        if current != content:
            differ.append(path)
            if not args.check:
                os.makedirs(os.path.dirname(full), exist_ok=True)
                with open(full, 'w', encoding='utf-8') as handle:
                    handle.write(content)
    if args.check:
        problems = ['%s differs from what tools/docs_gen.py makes' % path for path in differ]
        problems += ['%s is not a page of docs/docsite/extra-docs.yml' % os.path.relpath(path, ROOT) for path in stale]
        if problems:
            print('\n'.join(problems) + '\nRun: python3 tools/docs_gen.py', file=sys.stderr)
            return 1
        return 0
    for path in stale:
        os.remove(path)
    for path in differ + [os.path.relpath(path, ROOT) for path in stale]:
        print('wrote %s' % path if os.path.exists(os.path.join(ROOT, path)) else 'removed %s' % path)
    return 0


if __name__ == '__main__':
    sys.exit(main())
