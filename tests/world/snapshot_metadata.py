"""Snapshot the real PyPI metadata of every distribution the world's "PyPI" stand-in serves.

    python3 tests/world/snapshot_metadata.py [--python PY312] [--index-url URL] [--out FILE]

Run by hand when the pins, the stand-in repositories' requirements or the traps change (the world
build fails and names this script when a pin is not in the snapshot). Needs PyPI; the world build
itself stays offline and makes one stand-in per entry of the committed result
(tests/world/pypi-snapshot.json): name, version, file name (wheel tag or sdist), sha256 and URL
of the real file, Requires-Python, Requires-Dist, Provides-Extra, and the groups that pulled it in.

Two kinds of resolve, both with pip 26.3 in a CPython 3.12 venv, this machine's pip configuration
ignored, the platform pinned to manylinux_2_28 x86_64 through PEP 600's `_manylinux` hook (so
sdist-only releases such as tensorstore 0.1.45 resolve like on a node instead of failing under
`--only-binary`), wheels read lazily over HTTP range requests (pip's fast-deps) where the index
serves no PEP 658 metadata, so nothing large is downloaded:

1. Groups, each alone: every group of requirements (what one stage or one component installs, and
   the deliberate traps) with `pip install --dry-run --ignore-installed --report`.
2. Stages in order, per release file (v26.5, v26.5.1): the pip calls of a converge (lib/stages.py:
   the playbook's stage order, the constraints file after torch, the purges), each resolved with
   `pip install --dry-run --report` in one venv that holds what the earlier calls installed. A call
   installs nothing real: each distribution of its report is written into the venv as its metadata
   (a .dist-info with the report's Name, Version, Requires-Python, Requires-Dist, Provides-Extra),
   replacing the installed one of that name, and an uninstall removes it. pip's resolver reads
   exactly that of an installed distribution, so the next call resolves as on a node with those
   packages installed. What real PyPI does not have (the ROCm nightly's packages, the source builds,
   the git requirements) goes to pip as a wheel of the world's metadata for it, as the node gives pip
   its built wheel. Each call's installs are recorded (stages), and every version a call needs is
   served, also where the stage order needs another version than a group resolved alone.
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))

from world.lib import downloads, packages, repos, stages  # noqa: E402
from world.lib.wheel import build_wheel, normalize  # noqa: E402

PYPI = "https://pypi.org/simple"
MANYLINUX = (2, 28)  # the oldest glibc line the wheels must install on (Ubuntu 22.04 has 2.35)
_MANYLINUX_HOOK = ("def manylinux_compatible(tag_major, tag_minor, tag_arch):\n"
                   "    return tag_arch == 'x86_64' and (tag_major, tag_minor) <= %r\n" % (MANYLINUX,))

# Versions the world serves on purpose beyond what the pins pull in (each resolved on its own).
TRAPS = {
    "trap:torch-2.12.0": ["torch==2.12.0"],          # PyPI's CUDA build of the pinned public version
    "trap:torch-2.13.0": ["torch==2.13.0"],          # a CUDA torch that a `torch>=2.13` drags in
    "trap:flydsl-0.3.0": ["flydsl==0.3.0"],          # first release without flydsl.expr.vector
    "trap:cutlass-4.5.3": ["quack-kernels==0.3.1", "nvidia-cutlass-dsl==4.5.3"],  # the seed's pin
    "trap:cutlass-4.6.0": ["nvidia-cutlass-dsl==4.6.0"],  # first release without ThrCopy
    "trap:tvm-ffi-0.1.12": ["apache-tvm-ffi==0.1.12"],  # broke tilelang's import in v26.4
    "trap:tensorstore-0.1.78": ["tensorstore==0.1.78"],  # the first tensorstore with a cp312 wheel
}


def _pypi_only(reqs):
    return [r for r in reqs if not r.startswith(("git+", "http://", "https://"))]


def groups(pins):
    """{group: (requirements, no_deps)}: what each stage, component and trap installs from PyPI."""
    p = pins["primus_pins"]
    out = {
        "venv": (p["venv"]["bootstrap"] + p["venv"]["packages"], False),
        "torch-pre": (p["torch"]["pre_packages"], False),
        "te": (p["te"]["deps"] + p["te"]["source_deps"] + packages.TE_GLUE_REQUIRES, False),
        "pydeps": (p["pydeps"]["packages"], False),
        "mamba": (p["mamba"]["pre_packages"], False),
        "turbo": (p["turbo"]["extra_packages"], False),
        "boto": (p["boto"]["packages"], False),
        "cleanup": (p["cleanup"]["uninstall"], False),
        "torchrec": (_pypi_only(p["torchrec"]["packages"]), False),
        "torchrec-no-deps": (p["torchrec"]["packages_no_deps"], True),
        "uv": ([p["uv"]["requirement"]], False),
        # what the ROCm index's stand-ins require and it serves itself (torch's plain deps)
        packages.ROCM_PLAIN_GROUP: (packages.rocm_plain_requirements(), False),
    }
    for name, requires in repos.component_requirements().items():
        out["repo:" + name] = (_pypi_only(requires), False)
    for name, requires in TRAPS.items():
        out[name] = (list(requires), False)
    return dict((name, (sorted(set(reqs)), no_deps)) for name, (reqs, no_deps) in out.items() if reqs)


def all_groups(pins_by_release):
    """The groups of every release file, merged (a group of one name must be the same in each)."""
    out = {}
    for release in sorted(pins_by_release):
        for name, value in groups(pins_by_release[release]).items():
            if out.setdefault(name, value) != value:
                raise SystemExit("group %s differs between release files (%s)" % (name, release))
    return out


def _venv(python, where, pip_requirement, index_url):
    """A venv of python with the pinned pip and the manylinux hook."""
    subprocess.run([python, "-m", "venv", where], check=True)
    venv_python = os.path.join(where, "bin", "python")
    subprocess.run([venv_python, "-m", "pip", "install", "--quiet", "--index-url", index_url, pip_requirement],
                   check=True, env=downloads.isolated_pip_env())
    site = glob.glob(os.path.join(where, "lib", "python3*", "site-packages"))[0]
    with open(os.path.join(site, "_manylinux.py"), "w") as handle:
        handle.write(_MANYLINUX_HOOK)
    return venv_python


def resolve(python, index_url, reqs, no_deps, cache_dir, ignore_installed=True, constraints=None):
    """pip's installation report of reqs (list of its `install` items)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as report:
        cmd = [python, "-m", "pip", "install", "--dry-run", "--quiet", "--report", report.name,
               "--index-url", index_url, "--use-feature=fast-deps", "--cache-dir", cache_dir]
        cmd += (["--ignore-installed"] if ignore_installed else []) + (["--no-deps"] if no_deps else [])
        cmd += (["-c", constraints] if constraints else []) + list(reqs)
        proc = subprocess.run(cmd, env=downloads.isolated_pip_env(), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, universal_newlines=True, check=False)
        if proc.returncode != 0:
            raise SystemExit("resolving %s failed:\n%s" % (" ".join(reqs), proc.stdout[-3000:]))
        with open(report.name) as handle:
            return json.load(handle)["install"]


# --- the metadata venv of the ordered stages ------------------------------------------------------

def site_packages(venv):
    return glob.glob(os.path.join(venv, "lib", "python3*", "site-packages"))[0]


def installed(site):
    """{normalized name: (version, .dist-info path)} of a venv's site-packages."""
    out = {}
    for dist_info in glob.glob(os.path.join(site, "*.dist-info")):
        fields = {}
        with open(os.path.join(dist_info, "METADATA"), encoding="utf-8") as handle:
            for line in handle:
                if not line.strip():
                    break
                key, _sep, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
        out[normalize(fields["Name"])] = (fields["Version"], dist_info)
    return out


def uninstall(site, name):
    """Remove the installed distribution name (its .dist-info; a stub has nothing else)."""
    found = installed(site).get(normalize(name))
    if found:
        shutil.rmtree(found[1])


def install_metadata(site, meta):
    """Write the metadata of a report item (pip's JSON form of the core metadata) as an installed distribution,
    in place of the installed one of that name: what pip's resolver reads of an installed distribution."""
    uninstall(site, meta["name"])
    dist_info = os.path.join(site, "%s-%s.dist-info" % (re.sub(r"[-_.]+", "_", meta["name"]), meta["version"]))
    os.makedirs(dist_info)
    lines = ["Metadata-Version: 2.1", "Name: " + meta["name"], "Version: " + meta["version"]]
    if meta.get("requires_python"):
        lines.append("Requires-Python: " + meta["requires_python"])
    lines += ["Requires-Dist: " + r for r in meta.get("requires_dist", [])]
    lines += ["Provides-Extra: " + e for e in meta.get("provides_extra", [])]
    files = {"METADATA": "\n".join(lines) + "\n", "INSTALLER": "pip\n"}
    for name, text in files.items():
        with open(os.path.join(dist_info, name), "w", encoding="utf-8") as handle:
            handle.write(text)
    prefix = os.path.basename(dist_info) + "/"
    with open(os.path.join(dist_info, "RECORD"), "w") as handle:
        handle.write("".join("%s%s,,\n" % (prefix, name) for name in sorted(files) + ["RECORD"]))


def _stand_in_wheels(pins, where):
    """{key: wheel path} of the stand-ins of steps(pins): wheels with the world's metadata only."""
    out = {}
    for key, pkg in stages.stand_ins(pins).items():
        out[key] = build_wheel(where, pkg.name, pkg.version, pkg.requires, {}, extra_metadata=[
            (k, v) for k, v in pkg.metadata if k in ("Requires-Python", "Provides-Extra")])
    return out


def ordered(python, index_url, pins, release, work, log=print):
    """The steps of a converge of pins resolved in order on one venv (module docstring, 2.): a list of the steps of
    stages.steps(pins), each with what it installed from the index (installs), the stand-ins it installed
    (stand_ins_installed), what it removed (removed), and the report items of the index's distributions (items)."""
    pip_requirement = pins["primus_pins"]["venv"]["bootstrap"][0]
    venv = os.path.join(work, "ordered-" + release)
    venv_python = _venv(python, venv, pip_requirement, index_url)
    site = site_packages(venv)
    wheels = _stand_in_wheels(pins, os.path.join(work, "stand-ins-" + release))
    constraints = None
    done = []
    steps = stages.steps(pins)
    last_torch = max(i for i, step in enumerate(steps) if step["stage"] == "torch")
    for index, step in enumerate(steps):
        log("%-10s %-22s %s" % (release, step["step"], " ".join(step["requires"] + step["stand_ins"] + step["remove"])))
        record = dict(step, installs={}, stand_ins_installed={}, removed=[], items=[])
        if step["remove"]:
            record["removed"] = stages.removed(step["remove"], installed(site))
            for name in record["removed"]:
                uninstall(site, name)
            done.append(record)
            continue
        have = installed(site)
        # a ROCm step's requirements are the stand-ins it resolves to (real PyPI has no ROCm nightly)
        reqs = (step["requires"] if step["index"] == "pypi" else []) + [
            wheels[key] for key in step["stand_ins"] if have.get(key.split("==")[0], ("",))[0] != key.split("==", 1)[1]]
        items = resolve(venv_python, index_url, reqs, step["no_deps"], os.path.join(work, "cache"),
                        ignore_installed=False, constraints=constraints if step["constrained"] else None)
        for item in items:
            meta = item["metadata"]
            bad = stages.forbidden(pins, meta["name"], meta["version"])
            if bad:
                raise SystemExit("%s %s: pip would install %s %s, which pip_forbid %r refuses" % (
                    release, step["step"], meta["name"], meta["version"], bad))
            if item["download_info"]["url"].startswith("file:"):
                record["stand_ins_installed"][normalize(meta["name"])] = meta["version"]
            else:
                record["installs"][normalize(meta["name"])] = meta["version"]
                record["items"].append(item)
            install_metadata(site, meta)
        if index == last_torch:  # the torch stage writes pip-constraints.txt: every later call is constrained by it
            constraints = os.path.join(work, "pip-constraints-%s.txt" % release)
            have = installed(site)
            with open(constraints, "w") as handle:
                handle.write("".join("%s==%s\n" % (n, have[n][0]) for n in stages.constraint_names(pins) if n in have))
        done.append(record)
    return done


def entry(item):
    meta = item["metadata"]
    url = item["download_info"]["url"]
    filename = urllib.parse.unquote(url.rsplit("/", 1)[-1].split("#")[0])
    return {
        "name": meta["name"],
        "version": meta["version"],
        "kind": "wheel" if filename.endswith(".whl") else "sdist",
        "file": filename,
        "url": url,
        "sha256": item["download_info"].get("archive_info", {}).get("hash", "").replace("sha256=", ""),
        "requires_python": meta.get("requires_python"),
        "requires_dist": meta.get("requires_dist", []),
        "provides_extra": meta.get("provides_extra", []),
    }


def snapshot(python, index_url, log=print):
    import yaml
    pins_by_release = {}
    for release, path in sorted(_release_files().items()):
        with open(path) as handle:
            pins_by_release[release] = yaml.safe_load(handle)
    pins = pins_by_release[_default_release()]
    pip_requirement = pins["primus_pins"]["venv"]["bootstrap"][0]
    work = tempfile.mkdtemp(prefix="world-snapshot-")
    dists = {}

    def add(item, group):
        new = entry(item)
        key = (normalize(new["name"]), new["version"])
        old = dists.setdefault(key, dict(new, groups=[]))
        if old["file"] != new["file"]:
            raise SystemExit("%s %s resolved to two files: %s and %s" % (key + (old["file"], new["file"])))
        if group not in old["groups"]:
            old["groups"].append(group)

    try:
        venv_python = _venv(python, os.path.join(work, "venv"), pip_requirement, index_url)
        todo = all_groups(pins_by_release)
        for name in sorted(todo):
            reqs, no_deps = todo[name]
            log("%-28s %s" % (name, " ".join(reqs)))
            for item in resolve(venv_python, index_url, reqs, no_deps, os.path.join(work, "cache")):
                add(item, name)
        ordered_stages = {}
        for release in sorted(pins_by_release):
            ordered_stages[release] = []
            for step in ordered(python, index_url, pins_by_release[release], release, work, log=log):
                for item in step.pop("items"):
                    add(item, "%s/%s" % (release, step["step"]))
                ordered_stages[release].append(step)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {
        "about": "Real PyPI metadata of every distribution the world's PyPI stand-in serves; "
                 "generated by tests/world/snapshot_metadata.py, do not edit by hand.",
        "index": index_url,
        "taken": time.strftime("%Y-%m-%d", time.gmtime()),
        "resolved_for": {"python": "%s" % _python_version(python), "platform": "manylinux_%d_%d_x86_64" % MANYLINUX,
                         "pip": pip_requirement.split("==")[1]},
        "groups": dict((name, {"requires": reqs, "no_deps": no_deps}) for name, (reqs, no_deps) in todo.items()),
        "stages": ordered_stages,
        "distributions": [dists[key] for key in sorted(dists)],
    }


def dumps(data):
    """JSON text with one line per group and per distribution (a changed entry is a one-line diff)."""
    lines = ["{"]
    for key in sorted(data):
        value = data[key]
        if isinstance(value, list):
            items = [json.dumps(item, sort_keys=True) for item in value]
        elif key == "groups":
            items = ["%s: %s" % (json.dumps(k), json.dumps(value[k], sort_keys=True)) for k in sorted(value)]
        elif key == "stages":
            items = ["%s: [\n   %s\n  ]" % (json.dumps(k), ",\n   ".join(json.dumps(step, sort_keys=True) for step in value[k]))
                     for k in sorted(value)]
        else:
            lines.append(" %s: %s," % (json.dumps(key), json.dumps(value, sort_keys=True)))
            continue
        brackets = "[]" if isinstance(value, list) else "{}"
        lines.append(" %s: %s\n  %s\n %s," % (json.dumps(key), brackets[0], ",\n  ".join(items), brackets[1]))
    lines[-1] = lines[-1].rstrip(",")
    return "\n".join(lines) + "\n}\n"


def _python_version(python):
    return subprocess.run([python, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                          stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout.strip()


def _release_files():
    from world import build
    return build.release_files()


def _default_release():
    from world import build
    return build.DEFAULT_RELEASE


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--python", default=os.environ.get("PRIMUS_TEST_PYTHON312") or shutil.which("python3.12"),
                        help="a CPython 3.12 (default $PRIMUS_TEST_PYTHON312, else python3.12 on PATH)")
    parser.add_argument("--index-url", default=PYPI)
    parser.add_argument("--out", default=packages.SNAPSHOT)
    args = parser.parse_args(argv)
    if not args.python:
        parser.error("no CPython 3.12 found: give --python")
    data = snapshot(args.python, args.index_url)
    with open(args.out + ".tmp", "w") as handle:
        handle.write(dumps(data))
    os.replace(args.out + ".tmp", args.out)
    print("%d distributions from %d groups written to %s" % (len(data["distributions"]), len(data["groups"]), args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
