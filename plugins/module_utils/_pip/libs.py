# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Find usable copies of `packaging` (and of a TOML parser) for pip_constrained.

Target nodes may run modules with a system python that has no `packaging` (Ubuntu 22.04's
python3.10 without python3-packaging). Every venv made by `python -m venv` carries pip, and pip
vendors a pure-Python `packaging` at <site-packages>/pip/_vendor/packaging. So: use the module
interpreter's own `packaging` if it imports, else the copy vendored in the venv's pip. Nothing is
imported at module import time, so this file imports fine without either.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import sys


class Packaging(object):
    """The handful of `packaging` names the _pip helpers use, plus where they came from."""

    def __init__(self, version, specifiers, requirements, markers, utils, source):
        self.Version = version.Version
        self.InvalidVersion = version.InvalidVersion
        self.SpecifierSet = specifiers.SpecifierSet
        self.InvalidSpecifier = specifiers.InvalidSpecifier
        self.Requirement = requirements.Requirement
        self.InvalidRequirement = requirements.InvalidRequirement
        self.Marker = markers.Marker
        self.InvalidMarker = markers.InvalidMarker
        self.canonicalize_name = utils.canonicalize_name
        self.parse_wheel_filename = utils.parse_wheel_filename
        self.InvalidWheelFilename = utils.InvalidWheelFilename
        self.source = source
        self.version = getattr(sys.modules.get(version.__name__.rsplit('.', 1)[0]), '__version__', None)


def _from_module():
    from packaging import version, specifiers, requirements, markers, utils  # pylint: disable=import-outside-toplevel
    return Packaging(version, specifiers, requirements, markers, utils, 'module')


def _from_pip_vendor(site_dir):
    """Import pip._vendor.packaging from site_dir (the venv's site-packages)."""
    import importlib  # pylint: disable=import-outside-toplevel
    saved_path = list(sys.path)
    # Put the venv's site-packages first only while importing; pip/__init__.py and
    # pip/_vendor/__init__.py are import-light, and old vendored copies (packaging 21.x) import
    # pip._vendor.pyparsing by absolute name, so the package must be importable as `pip`.
    sys.path.insert(0, site_dir)
    # The module's interpreter is not the venv's: leave no __pycache__ of its own in the venv's pip.
    saved_bytecode = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    try:
        mods = [importlib.import_module('pip._vendor.packaging.' + part)
                for part in ('version', 'specifiers', 'requirements', 'markers', 'utils')]
    finally:
        sys.path[:] = saved_path
        sys.dont_write_bytecode = saved_bytecode
    return Packaging(mods[0], mods[1], mods[2], mods[3], mods[4], os.path.dirname(os.path.abspath(mods[0].__file__)))


def load_packaging(fallback_site_dirs=(), prefer_module=True):
    """Return a Packaging, or None when neither the module's nor a vendored copy imports.

    fallback_site_dirs: the venv's site-packages directories (from the probe), searched for
    pip/_vendor/packaging when the module interpreter has no `packaging`; a pip wheel (ensurepip's
    bundled copy) works too, imported from the zip.
    """
    if prefer_module:
        try:
            return _from_module()
        except ImportError:
            pass
    for site_dir in fallback_site_dirs:
        wheel = site_dir and site_dir.endswith('.whl') and os.path.isfile(site_dir)  # ensurepip's bundled pip
        if not wheel and (not site_dir or not os.path.isfile(
                os.path.join(site_dir, 'pip', '_vendor', 'packaging', '__init__.py'))):
            continue
        try:
            return _from_pip_vendor(site_dir)
        except Exception:  # pylint: disable=broad-except
            # A pip too new for the module's python (syntax) or a broken install: try the next.
            continue
    return None


def load_toml_loads(fallback_site_dirs=()):
    """Return a `loads(text)` for TOML: tomllib (3.11+), tomli, or the venv's pip._vendor.tomli; else None."""
    try:
        import tomllib  # pylint: disable=import-outside-toplevel
        return tomllib.loads
    except ImportError:
        pass
    try:
        import tomli  # pylint: disable=import-outside-toplevel
        return tomli.loads
    except ImportError:
        pass
    import importlib  # pylint: disable=import-outside-toplevel
    for site_dir in fallback_site_dirs:
        if not site_dir or not os.path.isfile(os.path.join(site_dir, 'pip', '_vendor', 'tomli', '__init__.py')):
            continue
        saved_path = list(sys.path)
        saved_bytecode = sys.dont_write_bytecode
        sys.path.insert(0, site_dir)
        sys.dont_write_bytecode = True
        try:
            return importlib.import_module('pip._vendor.tomli').loads
        except Exception:  # pylint: disable=broad-except
            continue
        finally:
            sys.path[:] = saved_path
            sys.dont_write_bytecode = saved_bytecode
    return None
