"""docs/architecture.md stays true to the code: its roles, folders, facts and the files of "Add a stage"."""
import os
import re

import stage_registry

ROOT = stage_registry.ROOT
with open(os.path.join(ROOT, 'docs', 'architecture.md')) as _handle:
    DOC = _handle.read()


def table(title_word):
    """The first column of the table whose header starts with | <title_word> |."""
    rows = []
    in_table = False
    for line in DOC.splitlines():
        if line.startswith('| %s |' % title_word):
            in_table = True
            continue
        if in_table and line.startswith('|---'):
            continue
        if in_table and line.startswith('| `'):
            rows.append(re.match(r'\| `([^`]+)`', line).group(1))
        elif in_table:
            break
    return rows


def test_every_role_is_described_and_every_described_role_exists():
    roles = sorted(d for d in os.listdir(os.path.join(ROOT, 'roles')) if not d.startswith('.'))
    assert sorted(table('Role')) == roles


def test_every_folder_described_exists():
    for folder in table('Folder'):
        assert os.path.isdir(os.path.join(ROOT, folder)), folder
    for plugins in os.listdir(os.path.join(ROOT, 'plugins')):
        if os.path.isdir(os.path.join(ROOT, 'plugins', plugins)) and not plugins.startswith('_'):
            assert 'plugins/%s/' % plugins in table('Folder'), plugins


def test_the_facts_of_the_flow_are_set_by_the_roles_it_names():
    for role, facts in (('primus', ['primus_inputs', 'primus_run', 'primus_node', 'primus_settings', 'primus_paths']),
                        ('preflight', ['preflight_plan', 'preflight_environment', 'preflight_stages'])):
        text = ''
        for folder, _dirs, files in os.walk(os.path.join(ROOT, 'roles', role, 'tasks')):
            for name in files:
                with open(os.path.join(folder, name)) as handle:
                    text += handle.read()
        for fact in facts:
            assert fact in DOC, fact
            assert re.search(r'(^\s+%s:|register: %s$)' % (fact, fact), text, re.M), (role, fact)


def test_add_a_stage_names_files_that_exist():
    section = DOC[DOC.index('## Add a stage'):]
    for path in re.findall(r'`((?:roles|playbooks|tests|changelogs)/[^`<]+)`', section):
        assert os.path.exists(os.path.join(ROOT, path)), path
    assert os.path.exists(os.path.join(ROOT, 'README.md'))
