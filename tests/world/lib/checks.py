"""Consistency checks of a built world: every pinned or required package is served where it must be."""
import re

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

from .wheel import normalize

_PIN = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?\s*==\s*([^\s;]+)\s*$")
# The nodes the world stands in for: CPython 3.12 on Linux x86_64 (markers are evaluated for it).
TARGET = {"python_version": "3.12", "python_full_version": "3.12.1", "sys_platform": "linux",
          "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
          "implementation_name": "cpython", "platform_python_implementation": "CPython",
          "platform_release": "", "platform_version": "", "implementation_version": "3.12.1", "extra": ""}


def requirement_name(req):
    """Normalized project name of a requirement string, or None for URLs / extra-only markers."""
    if "extra ==" in req or req.strip().startswith(("git+", "http")):
        return None
    try:
        return normalize(Requirement(req).name)
    except InvalidRequirement:
        return None


def applicable(req):
    """The Requirement when it applies on a target node without extras, else None (URLs: None)."""
    if req.strip().startswith(("git+", "http")):
        return None
    parsed = Requirement(req)
    if parsed.marker is not None and not parsed.marker.evaluate(TARGET):
        return None
    return parsed


def _satisfied(parsed, versions):
    for version in versions:
        try:
            if parsed.specifier.contains(Version(version), prereleases=True):
                return True
        except InvalidVersion:
            continue
    return False


def missing_requirements(pkgs, served, allowed_missing=()):
    """[(package, requirement)] that no served version satisfies (markers evaluated for TARGET).

    served: {normalized project: set(versions)}
    """
    out = []
    allowed = set(normalize(n) for n in allowed_missing)
    for pkg in pkgs:
        for req in pkg.requires:
            parsed = applicable(req)
            if parsed is None or normalize(parsed.name) in allowed:
                continue
            if not _satisfied(parsed, served.get(normalize(parsed.name), ())):
                out.append(("%s %s" % (pkg.name, pkg.version), req))
    return out


def pins_by_index(pins):
    """{index key: [requirement]} of every package requirement named in primus_pins."""
    p = pins["primus_pins"]
    pypi = list(p["venv"]["bootstrap"]) + list(p["venv"]["packages"]) + list(p["torch"]["pre_packages"])
    pypi += list(p["te"]["deps"]) + list(p["te"]["source_deps"]) + list(p["pydeps"]["packages"])
    pypi += list(p["mamba"]["pre_packages"]) + list(p["turbo"]["extra_packages"]) + list(p["boto"]["packages"])
    pypi += list(p["cleanup"]["uninstall"]) + list(p["torchrec"]["packages_no_deps"])
    pypi += [r for r in p["torchrec"]["packages"] if not r.startswith("git+")]
    pypi.append(p["uv"]["requirement"])
    rocm = list(p["torch"].get("sdk_packages") or []) + list(p["torch"]["packages"])
    for arch in p["torch"]["device_archs"]:
        rocm += [r.replace("{arch}", arch) for r in (list(p["torch"].get("sdk_device_packages") or []) +
                                                     list(p["torch"]["device_packages"]))]
    return {"pypi": pypi, "torch": rocm, "te": [p["te"]["wheel"]]}


def unserved_pins(pins, served):
    """[(index, requirement)] of pins that the world does not serve.

    served: {index key: {normalized project: set(versions)}}
    """
    out = []
    for index, reqs in pins_by_index(pins).items():
        for req in reqs:
            pin = _PIN.match(req)
            name = normalize(pin.group(1)) if pin else requirement_name(req)
            versions = served[index].get(name)
            if versions is None or (pin and pin.group(3) not in versions):
                out.append((index, req))
    return out
