"""Every filter plugin module imports, and its filters and their YAML documentation files are the same set."""
import glob
import importlib
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FILTER_DIR = os.path.join(ROOT, 'plugins', 'filter')


def test_every_filter_module_imports_and_every_filter_is_documented():
    names = {}
    for path in sorted(glob.glob(os.path.join(FILTER_DIR, '*.py'))):
        module = importlib.import_module('ansible_collections.primus.trainenv.plugins.filter.'
                                         + os.path.basename(path)[:-3])
        for name in module.FilterModule().filters():
            assert name not in names, (name, names.get(name), path)
            names[name] = path
    documented = set(os.path.basename(p)[:-4] for p in glob.glob(os.path.join(FILTER_DIR, '*.yml')))
    assert set(names) == documented
