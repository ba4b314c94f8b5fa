"""Snapshot the real PyPI metadata of every distribution the world's "PyPI" stand-in serves.

    python3 tests/world/snapshot_metadata.py [--python PY312] [--index-url URL] [--out FILE]

Run by hand when the pins, the stand-in repositories' requirements or the traps change (the world
build fails and names this script when a pin is not in the snapshot). Needs PyPI; the world build
itself stays offline and makes one stand-in per entry of the committed result
(tests/world/pypi-snapshot.json): name, version, file name (wheel tag or sdist), sha256 and URL
of the real file, Requires-Python, Requires-Dist, Provides-Extra, and the groups that pulled it in.

Each group of requirements (what one stage or one component installs, and the deliberate traps)
is resolved the way pip on a node resolves it: `pip install --dry-run --ignore-installed
--report` with pip 26.3 in a CPython 3.12 venv, this machine's pip configuration ignored. The
platform is pinned to manylinux_2_28 x86_64 through PEP 600's `_manylinux` hook, so sdist-only
releases (tensorstore 0.1.45) resolve like on a node instead of failing under `--only-binary`.
Wheels are read lazily over HTTP range requests (pip's fast-deps) where the index serves no PEP
658 metadata, so nothing large is downloaded.
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))

from world.lib import downloads, packages, repos  # noqa: E402
from world.lib.wheel import normalize  # noqa: E402

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


def resolve(python, index_url, reqs, no_deps, cache_dir):
    """pip's installation report of reqs (list of its `install` items)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as report:
        cmd = [python, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
               "--report", report.name, "--index-url", index_url, "--use-feature=fast-deps",
               "--cache-dir", cache_dir] + (["--no-deps"] if no_deps else []) + list(reqs)
        proc = subprocess.run(cmd, env=downloads.isolated_pip_env(), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, universal_newlines=True, check=False)
        if proc.returncode != 0:
            raise SystemExit("resolving %s failed:\n%s" % (" ".join(reqs), proc.stdout[-3000:]))
        with open(report.name) as handle:
            return json.load(handle)["install"]


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
    with open(_default_pins()) as handle:
        pins = yaml.safe_load(handle)
    pip_requirement = pins["primus_pins"]["venv"]["bootstrap"][0]
    work = tempfile.mkdtemp(prefix="world-snapshot-")
    try:
        venv_python = _venv(python, os.path.join(work, "venv"), pip_requirement, index_url)
        dists = {}
        todo = groups(pins)
        for name in sorted(todo):
            reqs, no_deps = todo[name]
            log("%-28s %s" % (name, " ".join(reqs)))
            for item in resolve(venv_python, index_url, reqs, no_deps, os.path.join(work, "cache")):
                new = entry(item)
                key = (normalize(new["name"]), new["version"])
                old = dists.setdefault(key, dict(new, groups=[]))
                if old["file"] != new["file"]:
                    raise SystemExit("%s %s resolved to two files: %s and %s" % (key + (old["file"], new["file"])))
                old["groups"].append(name)
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


def _default_pins():
    from world import build
    return build.default_pins()


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
