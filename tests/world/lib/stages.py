"""What a node installs, step by step, in the playbook's stage order: the model of the ordered PyPI snapshot.

A node converges stage after stage into one venv, and each pip call resolves on top of what the earlier
ones installed (pip keeps an installed version that satisfies a requirement, downgrades one a new pin
excludes, and pins like pydeps' datasets==3.6.0 narrow every later resolve). steps(pins) lists those pip
calls for a release file, in the order of playbooks/primus.yml (every default stage, then the optional
torchrec stage), as the roles make them:

- venv: the front-end pins (bootstrap + packages), without the constraints file;
- torch: the SDK packages first when the release has them (ROCm index), the pre-torch pins (PyPI), then
  torch, its companions and the device wheels (ROCm index); afterwards pip-constraints.txt holds the
  installed versions of torch.constraint_names and every later step is constrained by it;
- each source build installs its built wheel with its dependencies (Primus-Turbo with --no-deps); TE is
  built from its git source (this machine's mode: glibc < 2.38) after TE's dependencies (deps +
  source_deps; wheel mode differs only in installing psutil one stage later, at no pinned version);
- pydeps, mamba's pre-packages (again with mamba's wheel), the CUTLASS DSL purge, Primus's
  requirements.txt, aiter, Primus-Turbo's requirements.txt without requirements_skip plus extra_packages,
  boto, cleanup's uninstall, torchrec (--no-deps, then its companions).

A step names what pip resolves: "requires" (the requirements of the pip call, from the index of the step:
"pypi", or "torch" for the ROCm index) and "stand_ins" (the world's own packages, which real PyPI does
not have: the ROCm nightly's that the step's requirements resolve to on the world's ROCm index, the
built wheels, the git requirements; the snapshot gives each to pip as a wheel with the world's
metadata, as the node gives pip its built wheel), or "remove" (name globs uninstalled).
stand_ins(pins) gives those packages.
"""
import fnmatch
import re

from packaging.requirements import Requirement
from packaging.version import Version

from . import packages, repos
from .wheel import normalize

# The source stages in playbook order, with the world's metadata of what each builds ("requires" is what pip
# resolves when the built wheel is installed).
SOURCE_BUILDS = (
    ("flash_attn", repos.FA),
    ("te", repos.TE_SRC),
    ("torchtune", repos.TORCHTUNE),
    ("torchao", repos.TORCHAO),
    ("grouped_gemm", repos.GROUPED_GEMM),
    ("causal_conv1d", repos.CAUSAL_CONV1D),
    ("mamba", repos.MAMBA),
    ("aiter", repos.AITER),
    ("turbo", repos.TURBO),
)
# git requirements (URL without @ref: the default branch's head) -> the distribution the world's repository builds
GIT_STAND_INS = {"mlcommons-logging@6.0.0-rc5": ("mlperf_logging", "6.0.0rc5"),
                 "mlperf-logging": ("mlperf_logging", "6.0.0rc6")}


def _key(name, version):
    return "%s==%s" % (normalize(name), version)


def _git_stand_in(requirement):
    """(name, version) of the world's build of a git requirement (an upstream URL or a world one)."""
    url = requirement[len("git+"):].split("#", 1)[0]
    head, _slash, last = url.rpartition("/")
    last, _at, ref = last.partition("@")
    url = head + "/" + last
    world = repos.GIT_REQUIREMENTS.get(url) or last[:-len(".git")] if last.endswith(".git") else last
    return GIT_STAND_INS[world + ("@" + ref if ref else "")]


def _split_git(requirements):
    """(PyPI requirements, stand-in keys) of a requirement list with git+ URLs."""
    plain, stand = [], []
    for req in requirements:
        if req.startswith("git+"):
            stand.append(_key(*_git_stand_in(req)))
        else:
            plain.append(req)
    return plain, stand


def _rocm_pick(requirement, pkgs):
    """The ROCm index package a pinned or unpinned requirement resolves to (newest match, pre-releases included, as
    pip --pre does; the stand-ins the ROCm steps name have no dependencies on anything but their own nightly)."""
    req = Requirement(requirement)
    found = [p for p in pkgs if p.project == normalize(req.name) and req.specifier.contains(p.version, prereleases=True)]
    if not found:
        raise KeyError("the ROCm index serves nothing for %s" % requirement)
    return max(found, key=lambda p: Version(p.version))


def _rocm_closure(requirements, pkgs):
    """The ROCm index packages that requirements resolve to, with what they require of the index (torch's triton,
    its rocm[libraries] and what that extra names), in order: the pins first."""
    own = set(p.project for p in pkgs)
    out, todo = [], [(r, "") for r in requirements]
    while todo:
        requirement, extra = todo.pop(0)
        req = Requirement(requirement)
        if req.marker is not None and not req.marker.evaluate({"extra": extra}):
            continue
        pkg = _rocm_pick(str(Requirement(requirement.split(";")[0])), pkgs)
        if pkg in out:
            continue
        out.append(pkg)
        for sub in pkg.requires:
            if normalize(Requirement(sub).name) in own:
                todo.append((sub, ""))
        for wanted in req.extras:
            todo += [(sub, wanted) for sub in pkg.requires if "extra" in sub]
    return out


def _turbo_requirements(pins):
    skip = pins["turbo"].get("requirements_skip") or []
    pattern = re.compile(r"^(%s)\s*([<>=!~;\[]|$)" % "|".join(re.escape(s) for s in skip), re.I) if skip else None
    lines = [re.sub(r"(^|\s+)#.*$", "", line).strip() for line in repos.TURBO_REQUIREMENTS.split("\n")]
    return [line for line in lines if line and not (pattern and pattern.match(line))]


def steps(pins):
    """The pip calls of a converge of pins (primus_pins of a release file), in order: a list of
    {step, stage, index, requires, stand_ins, no_deps, constrained, remove}."""
    p = pins["primus_pins"] if "primus_pins" in pins else pins
    archs = p["torch"]["device_archs"]
    rocm = packages.rocm_index()
    out = []

    def add(step, stage, requires=(), stand_ins=(), index="pypi", no_deps=False, remove=()):
        out.append({"step": "%02d-%s" % (len(out) + 1, step), "stage": stage, "index": index,
                    "requires": list(requires), "stand_ins": list(stand_ins), "no_deps": no_deps,
                    "constrained": any(s["stage"] == "torch" for s in out) and stage != "torch",
                    "remove": list(remove)})

    def rocm_reqs(requirements, device):
        return list(requirements) + [r.replace("{arch}", a) for a in archs for r in device]

    def rocm_set(requirements, device):
        return [_key(pkg.name, pkg.version) for pkg in _rocm_closure(rocm_reqs(requirements, device), rocm)]

    def source(stage):
        world = dict(SOURCE_BUILDS)[stage]
        return [_key(world["name"], world["version"])]

    add("venv", "venv", p["venv"]["bootstrap"] + p["venv"]["packages"])
    if p["torch"].get("sdk_packages"):
        sdk = (p["torch"]["sdk_packages"], p["torch"].get("sdk_device_packages") or [])
        add("torch-sdk", "torch", rocm_reqs(*sdk), stand_ins=rocm_set(*sdk), index="torch")
    add("torch-pre", "torch", p["torch"]["pre_packages"])
    stack = (p["torch"]["packages"], p["torch"]["device_packages"])
    add("torch", "torch", rocm_reqs(*stack), stand_ins=rocm_set(*stack), index="torch")
    add("flash_attn", "flash_attn", stand_ins=source("flash_attn"))
    add("te-deps", "te", p["te"]["deps"] + p["te"]["source_deps"])
    add("te", "te", stand_ins=source("te"))
    add("torchtune", "torchtune", stand_ins=source("torchtune"))
    add("torchao", "torchao", stand_ins=source("torchao"))
    add("pydeps", "pydeps", p["pydeps"]["packages"])
    add("grouped_gemm", "grouped_gemm", stand_ins=source("grouped_gemm"))
    add("causal_conv1d", "causal_conv1d", stand_ins=source("causal_conv1d"))
    add("mamba-pre", "mamba", p["mamba"]["pre_packages"])
    add("mamba", "mamba", p["mamba"]["pre_packages"], stand_ins=source("mamba"))
    add("mamba-purge", "mamba", remove=[prefix + "*" for prefix in p["mamba"]["purge_prefixes"]])
    plain, git = _split_git([line for line in repos.primus_requirements(lambda name: "https://github.com/x/%s.git" % name)
                             .split("\n") if line.strip()])
    add("primus", "primus", plain, stand_ins=git)
    add("aiter", "aiter", stand_ins=source("aiter"))
    add("turbo-requirements", "turbo", _turbo_requirements(p) + p["turbo"]["extra_packages"])
    add("turbo", "turbo", stand_ins=source("turbo"), no_deps=True)
    add("boto", "boto", p["boto"]["packages"])
    add("cleanup", "cleanup", remove=p["cleanup"]["uninstall"])
    add("torchrec-no-deps", "torchrec", p["torchrec"]["packages_no_deps"], no_deps=True)
    plain, git = _split_git(p["torchrec"]["packages"])
    add("torchrec", "torchrec", plain, stand_ins=git)
    return out


def stand_ins(pins):
    """{key name==version: Pkg} of every stand-in steps(pins) names, with the world's metadata."""
    out = {}
    for pkg in packages.rocm_index():
        out[_key(pkg.name, pkg.version)] = pkg
    for _stage, world in SOURCE_BUILDS:
        out[_key(world["name"], world["version"])] = packages.Pkg(world["name"], world["version"], world["requires"])
    for name, version in GIT_STAND_INS.values():
        out[_key(name, version)] = packages.Pkg(name, version, [])
    wanted = set(k for step in steps(pins) for k in step["stand_ins"])
    return dict((k, v) for k, v in out.items() if k in wanted)


def constraint_names(pins):
    p = pins["primus_pins"] if "primus_pins" in pins else pins
    return [normalize(n) for n in p["torch"]["constraint_names"]]


def removed(patterns, installed):
    """The installed names (normalized) that the uninstall globs match."""
    return sorted(n for n in installed if any(fnmatch.fnmatch(normalize(n), normalize(p)) for p in patterns))


def forbidden(pins, name, version):
    """The pip_forbid pattern of pins that (name, version) matches, or None (roles' pip_constrained forbid syntax:
    a name glob, optionally ==version-glob or !=version-glob)."""
    p = pins["primus_pins"] if "primus_pins" in pins else pins
    for pattern in p.get("pip_forbid") or []:
        glob, op, vglob = re.match(r"^([^=!]+)(?:(==|!=)(.*))?$", pattern.strip()).groups()
        if not fnmatch.fnmatch(normalize(name), normalize(glob.strip())):
            continue
        if op is None or (op == "==" and fnmatch.fnmatch(version, vglob)) or (
                op == "!=" and not fnmatch.fnmatch(version, vglob)):
            return pattern
    return None


def final_state(recorded_steps, upto=None):
    """{name: version} of the PyPI and ROCm-index distributions the recorded steps leave installed (stand-ins
    included), up to and including the step named upto."""
    state = {}
    for step in recorded_steps:
        for name in step.get("removed", []):
            state.pop(name, None)
        state.update(step.get("installs", {}))
        state.update(step.get("stand_ins_installed", {}))
        if upto and step["step"].split("-", 1)[1] == upto:
            break
    return state
