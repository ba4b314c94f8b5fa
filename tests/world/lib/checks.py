"""Consistency checks of a built world: every pinned or required package is served where it must be."""
import re

from .wheel import normalize

_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_PIN = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?\s*==\s*([^\s;]+)\s*$")


def requirement_name(req):
    """Normalized project name of a requirement string, or None for URLs / extra-only markers."""
    if "extra ==" in req or req.strip().startswith(("git+", "http")):
        return None
    match = _NAME.match(req)
    return normalize(match.group(1)) if match else None


def missing_requirements(pkgs, available, allowed_missing=()):
    """[(package, requirement)] whose requirement is not in `available` (normalized names)."""
    out = []
    allowed = set(normalize(n) for n in allowed_missing)
    for pkg in pkgs:
        for req in pkg.requires:
            name = requirement_name(req)
            if name and name not in available and name not in allowed:
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
    rocm = list(p["torch"]["packages"])
    for arch in p["torch"]["device_archs"]:
        rocm += [r.replace("{arch}", arch) for r in p["torch"]["device_packages"]]
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
