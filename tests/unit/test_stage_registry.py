"""The stage registry (roles/primus/vars/main.yml, primus_stages) is the one place the stage set is written: the
playbook's includes follow it, and no other file of the collection or its tests lists the stages."""
import os
import re
import subprocess

import yaml

import stage_registry

ROOT = stage_registry.ROOT
VIEWS = stage_registry.views()
STAGES = VIEWS['order']
# Files allowed to name many stages at once: the registry, the playbook (one include per stage), the documentation
# (the manual and its generated tag table, the changelog) and the simulated world (its stand-ins are components, not stages).
ALLOWED = ('roles/primus/vars/main.yml', 'playbooks/primus.yml', 'README.md', 'docs/', 'changelogs/', 'tests/world/')
# A line or a list naming this many stages lists the stage set, or a large part of it (a stage's code names one or
# two, its prerequisites; a test scenario runs a few).
LISTING = 6


def pins_sources():
    with open(os.path.join(ROOT, 'roles', 'primus', 'vars', 'releases', 'v26.5.yml')) as handle:
        return yaml.safe_load(handle)['primus_pins']['sources']


def stage_includes():
    with open(os.path.join(ROOT, 'playbooks', 'primus.yml')) as handle:
        plays = yaml.safe_load(handle)
    found = []

    def walk(tasks):
        for task in tasks or []:
            if 'ansible.builtin.include_role' in task and str(task.get('name', '')).startswith('Stage '):
                found.append(task)
            for section in ('block', 'rescue', 'always'):
                walk(task.get(section))
    for play in plays:
        walk(play.get('tasks'))
    return found


def test_the_playbook_has_one_include_per_registry_stage_in_its_order():
    includes = stage_includes()
    assert [t['name'][len('Stage '):] for t in includes] == STAGES
    sources = pins_sources()
    for stage, task in zip(STAGES, includes):
        want = ['never', stage] if stage in VIEWS['optional'] else [stage]
        assert task['tags'] == want, stage
        include = task['ansible.builtin.include_role']
        assert include['apply']['tags'] == [stage], stage
        # A stage done with nothing else to do is skipped as a whole (preflight's settled stages).
        assert task['when'] == "'%s' not in preflight_stages.settled" % stage, stage
        role = include['name'].split('.')[-1]
        if role == 'source_build':
            # The build role is the stage of a component built from the pins' sources alone.
            assert task['vars']['source_build_name'] == stage and stage in sources, stage
        else:
            assert os.path.isdir(os.path.join(ROOT, 'roles', role)), (stage, role)


def stage_names_in(text):
    return set(re.findall(r'[a-z0-9_]+', text)) & set(STAGES)


def listed_in_yaml(data, found):
    if isinstance(data, dict):
        for value in data.values():
            listed_in_yaml(value, found)
    elif isinstance(data, list):
        names = set(x for x in data if isinstance(x, str)) & set(STAGES)
        if len(names) >= LISTING:
            found.append(sorted(names))
        for value in data:
            listed_in_yaml(value, found)


def test_no_other_file_lists_the_stages():
    files = subprocess.run(['git', 'ls-files', '-co', '--exclude-standard'], cwd=ROOT, check=True,
                           stdout=subprocess.PIPE, universal_newlines=True).stdout.split()
    offenders = []
    for name in files:
        if name.startswith(ALLOWED) or not name.endswith(('.yml', '.yaml', '.py', '.j2', '.sh', '.cfg', '.json')) \
                and os.path.basename(name) != 'Makefile':
            continue
        path = os.path.join(ROOT, name)
        if not os.path.isfile(path):
            continue
        with open(path, errors='replace') as handle:
            text = handle.read()
        for number, line in enumerate(text.splitlines(), 1):
            names = stage_names_in(line)
            if len(names) >= LISTING:
                offenders.append('%s:%d names %s' % (name, number, ', '.join(sorted(names))))
        if name.endswith(('.yml', '.yaml')):
            found = []
            try:
                for document in yaml.safe_load_all(text):
                    listed_in_yaml(document, found)
            except yaml.YAMLError:
                pass
            offenders += ['%s: a list of %s' % (name, ', '.join(names)) for names in found]
    assert offenders == [], ('the stage set is written again outside the registry; derive it from primus_stages '
                             '(tests: tests/stage_registry.py):\n' + '\n'.join(offenders))


def test_the_check_finds_a_listing():
    """The check above can fail: a line and a list of six stages are found."""
    some = STAGES[:LISTING]
    assert len(stage_names_in('for stage in (%s):' % ', '.join(repr(s) for s in some))) == LISTING
    found = []
    listed_in_yaml({'x': [{'y': some + ['other']}]}, found)
    assert found == [sorted(some)]
