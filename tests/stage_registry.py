"""The stage registry as the tests read it: roles/primus/vars/main.yml (primus_stages), through the product's own
pure function (module_utils/stage_state.registry), so no test writes the stage set again."""
import os

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REGISTRY_FILE = os.path.join(ROOT, 'roles', 'primus', 'vars', 'main.yml')


def entries():
    with open(REGISTRY_FILE) as handle:
        return yaml.safe_load(handle)['primus_stages']


def views():
    """{'order', 'optional', 'read_only', 'pip', 'requires'} of the registry."""
    import sys
    collections = os.path.join(ROOT, '.collections')
    if collections not in sys.path:
        sys.path.insert(0, collections)
    from ansible_collections.primus.trainenv.plugins.module_utils import stage_state
    return stage_state.registry(entries())


def default_stages():
    """The stages a run with no --tags executes, verify included (what --tags all runs)."""
    v = views()
    return [s for s in v['order'] if s not in v['optional']]


def built_stages():
    """The default stages that build something: not optional, not read-only, not manifest."""
    v = views()
    return [s for s in v['order'] if s not in v['optional'] and s not in v['read_only'] and s != 'manifest']


def pins():
    """The release pins (roles/primus/vars/releases/v26.5.yml)."""
    with open(os.path.join(ROOT, 'roles', 'primus', 'vars', 'releases', 'v26.5.yml')) as handle:
        return yaml.safe_load(handle)['primus_pins']
