"""The `pk` fixture: every _pip rule runs with the module's own packaging and with the copy pip vendors."""
import os

import pip
import pytest

from ansible_collections.primus.trainenv.plugins.module_utils._pip.libs import load_packaging

PIP_SITE = os.path.dirname(os.path.dirname(os.path.abspath(pip.__file__)))


@pytest.fixture(params=["module", "pip-vendored"])
def pk(request):
    """packaging as the module finds it, and the copy vendored in pip (what a bare system python falls back to)."""
    if request.param == "module":
        return load_packaging()
    loaded = load_packaging([PIP_SITE], prefer_module=False)
    assert loaded.source != "module"
    return loaded
