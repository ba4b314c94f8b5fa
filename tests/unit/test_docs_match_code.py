"""The README's tables and the core role's argument spec say what the code does."""
import os
import re

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def read(*parts):
    with open(os.path.join(REPO, *parts)) as handle:
        return handle.read()


def readme_table_rows(heading):
    section = read("README.md").split("## " + heading, 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("| `")]


def test_every_user_setting_is_in_the_argument_spec_and_the_readme():
    defaults = yaml.safe_load(read("roles", "primus", "defaults", "main.yml"))
    spec = yaml.safe_load(read("roles", "primus", "meta", "argument_specs.yml"))["argument_specs"]["main"]["options"]
    documented = set(re.findall(r"`(primus_\w+)`", "\n".join(readme_table_rows("Variables"))))
    assert set(defaults) == set(spec), set(defaults) ^ set(spec)
    assert set(defaults) <= documented, set(defaults) - documented


def playbook_roles():
    """[(role FQCN, tags)] of the roles the site playbook imports or includes, in order (blocks included)."""
    found = []

    def walk(tasks):
        for task in tasks or []:
            for action in ("ansible.builtin.import_role", "ansible.builtin.include_role"):
                if action in task:
                    found.append((task[action]["name"], task.get("tags", [])))
            for section in ("block", "rescue", "always"):
                walk(task.get(section))

    for play in yaml.safe_load(read("playbooks", "primus.yml")):
        walk(play.get("tasks"))
    return found


def test_every_playbook_tag_is_in_the_readme_tag_table():
    roles = playbook_roles()
    tags = {t for _role, role_tags in roles for t in role_tags} - {"always", "never"}
    rows = {re.match(r"\| `(\w+)` \| `(\w+)`", row).groups() for row in readme_table_rows("Tags")}
    role_of_tag = dict(rows)
    assert set(role_of_tag) == tags
    for role, role_tags in roles:
        for tag in [t for t in role_tags if t not in ("always", "never")]:
            assert "primus.trainenv." + role_of_tag[tag] == role, tag


def test_every_included_stage_role_applies_its_stage_tag_to_its_tasks():
    # A stage role is included (loaded only when its tag runs); without apply, its tasks would carry no tag and
    # --tags <stage> would run the include but none of the role's tasks.
    includes = []

    def walk(tasks):
        for task in tasks or []:
            if "ansible.builtin.include_role" in task:
                includes.append(task)
            for section in ("block", "rescue", "always"):
                walk(task.get(section))

    for play in yaml.safe_load(read("playbooks", "primus.yml")):
        walk(play.get("tasks"))
    assert len(includes) >= 18
    for task in includes:
        own = [tag for tag in task.get("tags", []) if tag != "never"]
        assert task["ansible.builtin.include_role"].get("apply", {}).get("tags") == own, task["name"]


def test_every_module_and_filter_is_in_the_readme():
    section = read("README.md").split("### Modules and filters", 1)[1].split("\n### ", 1)[0]
    modules = {name[:-3] for name in os.listdir(os.path.join(REPO, "plugins", "modules")) if name.endswith(".py")
               and name != "__init__.py"}
    rows = set(re.findall(r"^\| `(\w+)` \|", section, re.M))
    assert rows == modules, rows ^ modules
    filters = {name[:-4] for name in os.listdir(os.path.join(REPO, "plugins", "filter")) if name.endswith(".yml")}
    listed = section.split("Filters (`primus.trainenv.*`):", 1)[1].split("Every module and filter", 1)[0]
    assert set(re.findall(r"`(\w+)`", listed)) == filters, set(re.findall(r"`(\w+)`", listed)) ^ filters
