"""Where pip_constrained gets `packaging` from: the module's python, else the venv's vendored pip copy."""
import os
import sys

import pip
import pytest

from ansible_collections.primus.trainenv.plugins.module_utils._pip import libs
from ansible_collections.primus.trainenv.plugins.module_utils._pip.libs import load_packaging, load_toml_loads

PIP_SITE = os.path.dirname(os.path.dirname(os.path.abspath(pip.__file__)))


@pytest.fixture
def no_packaging(monkeypatch):
    """Make `import packaging` fail, as on a system python without python3-packaging."""
    for name in list(sys.modules):
        if name == "packaging" or name.startswith("packaging."):
            monkeypatch.delitem(sys.modules, name)
    for name in ("packaging", "packaging.version", "packaging.specifiers", "packaging.requirements",
                 "packaging.markers", "packaging.utils"):
        monkeypatch.setitem(sys.modules, name, None)


def test_prefers_the_module_interpreters_packaging():
    pk = load_packaging([PIP_SITE])
    assert pk.source == "module"
    import packaging.version
    assert pk.Version is packaging.version.Version


def test_falls_back_to_the_venvs_vendored_copy(no_packaging):
    pk = load_packaging(["/nonexistent", PIP_SITE])
    assert pk is not None
    assert pk.source == os.path.join(PIP_SITE, "pip", "_vendor", "packaging")
    assert pk.Version.__module__.startswith("pip._vendor.packaging")
    # It really works: local labels compare exactly with the vendored copy too.
    spec = pk.SpecifierSet("==2.12.0+rocm7.15.0a20260720")
    assert not spec.contains(pk.Version("2.12.0+cpu"), prereleases=True)
    assert spec.contains(pk.Version("2.12.0+rocm7.15.0a20260720"), prereleases=True)
    assert pk.canonicalize_name("Foo_Bar.baz") == "foo-bar-baz"
    assert sys.path.count(PIP_SITE) <= 1  # sys.path restored (the site may already be on it once)


def test_none_when_nothing_provides_it(no_packaging, tmp_path):
    assert load_packaging([str(tmp_path)]) is None


def test_a_broken_vendored_copy_is_skipped(no_packaging, tmp_path):
    broken = tmp_path / "site"
    (broken / "pip" / "_vendor" / "packaging").mkdir(parents=True)
    (broken / "pip" / "__init__.py").write_text("raise RuntimeError('broken pip')\n")
    (broken / "pip" / "_vendor" / "__init__.py").write_text("")
    (broken / "pip" / "_vendor" / "packaging" / "__init__.py").write_text("")
    for name in [n for n in sys.modules if n == "pip" or n.startswith("pip.")]:
        del sys.modules[name]
    pk = load_packaging([str(broken), PIP_SITE])
    for name in [n for n in sys.modules if n == "pip" or n.startswith("pip.")]:
        del sys.modules[name]
    assert pk is not None and pk.source.startswith(PIP_SITE)


def test_toml_loader_parses_pyproject():
    loads = load_toml_loads([PIP_SITE])
    assert loads('[project]\nname = "x"\nversion = "1.0"\n') == {"project": {"name": "x", "version": "1.0"}}


def test_toml_loader_falls_back_to_pip_vendor(monkeypatch):
    monkeypatch.setitem(sys.modules, "tomllib", None)
    monkeypatch.setitem(sys.modules, "tomli", None)
    loads = load_toml_loads([PIP_SITE])
    assert loads is not None and loads.__module__.startswith("pip._vendor.tomli")
    assert loads('a = 1\n') == {"a": 1}
    assert libs.load_toml_loads(["/nonexistent"]) is None
