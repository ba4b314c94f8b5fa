"""The manual's tables (docs/variables.md, docs/stages.md, docs/architecture.md) and the core role's argument spec say
what the code does."""
import os
import re

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def read(*parts):
    with open(os.path.join(REPO, *parts)) as handle:
        return handle.read()


def table_rows(page, heading):
    section = read("docs", page).split("\n## " + heading + "\n", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("| `")]


def test_every_user_setting_is_in_the_argument_spec_and_the_variables_page():
    defaults = yaml.safe_load(read("roles", "primus", "defaults", "main.yml"))
    spec = yaml.safe_load(read("roles", "primus", "meta", "argument_specs.yml"))["argument_specs"]["main"]["options"]
    page = read("docs", "variables.md")
    generated = page.split("<!-- BEGIN GENERATED variables", 1)[1].split("<!-- END GENERATED variables", 1)[0]
    rows = [line for line in generated.splitlines() if line.startswith("| `primus_")]
    documented = {re.match(r"\| `(\w+)`", row).group(1): row for row in rows}
    assert set(defaults) == set(spec), set(defaults) ^ set(spec)
    assert set(defaults) <= set(documented), set(defaults) - set(documented)
    # The controller's environment variable a default falls back to is the one the page names for it.
    with open(os.path.join(REPO, "roles", "primus", "defaults", "main.yml")) as handle:
        text = handle.read()
    fallbacks = dict(re.findall(r"^(primus_\w+): .*lookup\('ansible\.builtin\.env', '(\w+)'", text, re.M))
    fallbacks.pop("primus_wheel_store")   # $HOME, the default's own location, not a setting of setup.sh
    assert len(fallbacks) >= 7
    for name, variable in fallbacks.items():
        cells = [cell.strip() for cell in documented[name].split(" | ")]
        assert cells[3] == "`%s`" % variable, (name, cells[3])
    assert sum(1 for row in documented.values() if row.split(" | ")[3].strip() != "-") == len(fallbacks)


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


def test_every_playbook_tag_is_in_the_tag_table():
    roles = playbook_roles()
    tags = {t for _role, role_tags in roles for t in role_tags} - {"always", "never"}
    rows = {re.match(r"\| `(\w+)` \| \[`(\w+)`\]", row).groups() for row in table_rows("stages.md", "The stages")}
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


def test_every_module_and_filter_is_in_the_architecture_page():
    section = read("docs", "architecture.md").split("## Modules and filters", 1)[1].split("\n## ", 1)[0]
    modules = {name[:-3] for name in os.listdir(os.path.join(REPO, "plugins", "modules")) if name.endswith(".py")
               and name != "__init__.py"}
    listed = section.split("| Filter |", 1)
    rows = set(re.findall(r"^\| \[`(\w+)`\]\(\.\./plugins/modules/\1\.py\) \| \S", listed[0], re.M))
    assert rows == modules, rows ^ modules
    filters = {name[:-4] for name in os.listdir(os.path.join(REPO, "plugins", "filter")) if name.endswith(".yml")}
    rows = set(re.findall(r"^\| \[`(\w+)`\]\(\.\./plugins/filter/\1\.yml\) \| \S", listed[1], re.M))
    assert rows == filters, rows ^ filters
