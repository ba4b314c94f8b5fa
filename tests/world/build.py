"""Build the simulated ROCm world into a directory (served by serve.py on a fixed loopback port).

    python3 tests/world/build.py --dest .world [--port 38611]

Layout (one static root; URLs contain the port, so keep it fixed for stable commits):
    pypi/simple/                  the "PyPI" stand-in        (files in pypi/files/)
    rocm/whl-multi-arch/          the "ROCm nightly" index   (files in rocm/files/)
    te/whl-staging/device-all/    the "TE staging" index     (files in te/files/)
    git/<name>.git                bare repositories for git's dumb HTTP protocol
    pins-v26.5.yml                the release overlay (real pins, world URLs and commits)
    world.json                    what was built: URLs, commits, counts
The same inputs give the same bytes, commits and URLs on every build.
"""
import argparse
import glob
import json
import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))

from world.lib import checks, downloads, gitrepo, native, overlay, packages, repos  # noqa: E402
from world.lib.index import write_simple_index  # noqa: E402
from world.lib.wheel import build_sdist, build_wheel, normalize  # noqa: E402

DEFAULT_PORT = 38611
INDEXES = {  # key -> (directory of files, index path)
    "pypi": ("pypi/files", "pypi/simple"),
    "torch": ("rocm/files", "rocm/whl-multi-arch"),
    "te": ("te/files", "te/whl-staging/device-all"),
}
KEEP = ("server.pid", "server.log")  # a running server's files survive a rebuild


def default_port():
    return int(os.environ.get("WORLD_PORT") or DEFAULT_PORT)


def default_pins():
    hits = sorted(glob.glob(os.path.join(REPO_ROOT, "roles", "*", "vars", "releases", "v26.5.yml")))
    if not hits:
        raise SystemExit("release file roles/*/vars/releases/v26.5.yml not found")
    return hits[0]


def index_urls(base_url):
    return {"pypi": base_url + "/pypi/simple",
            "torch": base_url + "/rocm/whl-multi-arch",
            "te": base_url + "/te/whl-staging/device-all/"}


def _publish(pkgs, files_dir, cache, tmp):
    """Write each Pkg's wheel/sdist into files_dir (built once per file, shared between indexes)."""
    os.makedirs(files_dir, exist_ok=True)
    names = []
    for pkg in pkgs:
        key = (pkg.name, pkg.version, pkg.tag, bool(pkg.sdist))
        if key not in cache:
            if pkg.sdist:
                cache[key] = build_sdist(tmp, pkg.name, pkg.version, pkg.sdist)
            else:
                extra = [("Provides-Extra", e) for e in pkg.extras]
                cache[key] = build_wheel(tmp, pkg.name, pkg.version, pkg.requires, pkg.files,
                                         pkg.entry_points, pkg.tag, extra_metadata=extra,
                                         executables=pkg.executables)
        target = os.path.join(files_dir, os.path.basename(cache[key]))
        if os.path.exists(target):
            raise RuntimeError("two packages write %s" % target)
        shutil.copyfile(cache[key], target)
        names.append(os.path.basename(target))
    return names


def _served(files_dir):
    from world.lib.index import _PROJECT
    out = {}
    for name in os.listdir(files_dir):
        match = _PROJECT.match(name)
        out.setdefault(normalize(match.group("name")), set()).add(match.group("version"))
    return out


def build(dest, port, cache_dir, pins_path, log=print):
    started = time.time()
    base_url = "http://127.0.0.1:%d" % port
    dest = os.path.abspath(dest)
    stage = dest + ".staging"
    shutil.rmtree(stage, ignore_errors=True)
    os.makedirs(stage)

    real = downloads.fetch(cache_dir, log=log)
    core_so = native.te_core_library()
    libz3 = native.plain_library("libz3.so", "Z3_get_version_stub")

    pypi = packages.pypi_index(libz3)
    rocm = packages.rocm_index()
    te = packages.te_index(core_so)
    plain_on_rocm = [p for p in pypi if p.project in packages.ROCM_PLAIN and "+" not in p.version]
    cache = {}
    tmp = os.path.join(stage, ".build")
    _publish(pypi, os.path.join(stage, INDEXES["pypi"][0]), cache, tmp)
    _publish(rocm + plain_on_rocm, os.path.join(stage, INDEXES["torch"][0]), cache, tmp)
    _publish(te, os.path.join(stage, INDEXES["te"][0]), cache, tmp)
    shutil.rmtree(os.path.join(stage, ".build"), ignore_errors=True)
    for path in real:
        stem = "-".join(os.path.basename(path).split("-")[:2])
        for key, prefixes in (("pypi", packages.REAL_ON["pypi"]), ("torch", packages.REAL_ON["rocm"])):
            if stem in prefixes:
                shutil.copyfile(path, os.path.join(stage, INDEXES[key][0], os.path.basename(path)))
    counts = {}
    for key, (files_dir, index_dir) in INDEXES.items():
        write_simple_index(os.path.join(stage, files_dir), os.path.join(stage, index_dir), "/" + files_dir)
        names = os.listdir(os.path.join(stage, files_dir))
        counts[key] = {"wheels": sum(n.endswith(".whl") for n in names),
                       "sdists": sum(n.endswith(".tar.gz") for n in names)}
    served = dict((key, _served(os.path.join(stage, INDEXES[key][0]))) for key in INDEXES)

    # consistency: what each index serves must close over its own requirements
    problems = checks.missing_requirements(pypi, served["pypi"], packages.PYPI_MISSING_OK)
    problems += checks.missing_requirements(rocm + plain_on_rocm, served["torch"], packages.ROCM_MISSING_OK)

    def url_of(name):
        return "%s/git/%s.git" % (base_url, name)

    commits = {}
    repo_info = {}
    for repo in repos.all_repos(url_of):
        path = os.path.join(stage, "git", repo.name + ".git")
        commits[repo.name] = gitrepo.build(repo, path, url_of, commits)
        repo_info[repo.name] = {"url": url_of(repo.name), "default_branch": repo.default_branch,
                                "commits": commits[repo.name], "branches": gitrepo.branches(path),
                                "tags": dict((t, commits[repo.name][l]) for t, l in repo.tags.items())}
        for commit in repo.commits:
            setup = commit.files.get("setup.py", "")
            if "install_requires" in setup:
                world = _world_of(setup)
                available = set(served["pypi"]) | set(served["torch"])
                for req in world.get("requires", []):
                    name = checks.requirement_name(req)
                    if name and name not in available:
                        problems.append(("%s (git)" % repo.name, req))
    if problems:
        raise SystemExit("world is inconsistent, requirements not served:\n" +
                         "\n".join("  %s requires %s" % p for p in problems))

    with open(pins_path) as handle:
        pins_text = handle.read()
    sources = {}
    for component, name in repos.COMPONENTS.items():
        sources[component] = (url_of(name), commits[name].get("pinned", ""))
    git_urls = dict((up, url_of(name)) for up, name in repos.GIT_REQUIREMENTS.items())
    note = ("# Generated by tests/world/build.py from %s: the world's index URLs, repository URLs\n"
            "# and commits; every other value is the real file's.\n" % os.path.relpath(pins_path, REPO_ROOT))
    overlay_text = overlay.render(pins_text, index_urls(base_url), sources, git_urls, note)
    verified = overlay.verify(pins_text, overlay_text)
    if verified:
        import yaml
        unserved = checks.unserved_pins(yaml.safe_load(overlay_text), served)
        if unserved:
            raise SystemExit("pins not served by the world:\n" + "\n".join("  %s: %s" % u for u in unserved))
    with open(os.path.join(stage, "pins-v26.5.yml"), "w") as handle:
        handle.write(overlay_text)

    info = {
        "base_url": base_url,
        "port": port,
        "indexes": index_urls(base_url),
        "repos": repo_info,
        "sources": dict((c, {"repo": url_of(n), "repo_name": n, "pinned": commits[n].get("pinned")})
                        for c, n in repos.COMPONENTS.items()),
        "counts": dict(counts, repos=len(repo_info)),
        "real_wheels": [os.path.basename(p) for p in real],
        "pins_source": os.path.relpath(pins_path, REPO_ROOT),
        "overlay_verified_with_yaml": verified,
    }
    with open(os.path.join(stage, "world.json"), "w") as handle:
        json.dump(info, handle, indent=1, sort_keys=True)
        handle.write("\n")

    # swap the new world in; a running server keeps its pid/log files
    os.makedirs(dest, exist_ok=True)
    for entry in os.listdir(dest):
        if entry not in KEEP:
            path = os.path.join(dest, entry)
            shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.unlink(path)
    for entry in sorted(os.listdir(stage)):
        os.rename(os.path.join(stage, entry), os.path.join(dest, entry))
    os.rmdir(stage)
    info["seconds"] = round(time.time() - started, 1)
    return info


def _world_of(setup_text):
    import ast
    start = setup_text.index("WORLD = ") + len("WORLD = ")
    end = setup_text.index("\n\nENV_KEYS")
    return ast.literal_eval(setup_text[start:end])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--dest", default=os.path.join(REPO_ROOT, ".world"))
    parser.add_argument("--port", type=int, default=default_port(),
                        help="loopback port baked into URLs (default $WORLD_PORT or %d)" % DEFAULT_PORT)
    parser.add_argument("--cache", default=os.path.join(REPO_ROOT, ".cache", "world-downloads"),
                        help="download cache of the real build tools")
    parser.add_argument("--pins", default=None, help="real release file (default roles/*/vars/releases/v26.5.yml)")
    args = parser.parse_args(argv)
    info = build(args.dest, args.port, args.cache, args.pins or default_pins())
    counts = info["counts"]
    print("world built in %s s at %s: pypi %d wheels + %d sdists, rocm %d wheels, te %d wheels + %d sdists, %d repos"
          % (info["seconds"], args.dest, counts["pypi"]["wheels"], counts["pypi"]["sdists"],
             counts["torch"]["wheels"], counts["te"]["wheels"], counts["te"]["sdists"], counts["repos"]))
    print("serve it: python3 tests/world/serve.py start --root %s   (%s)" % (args.dest, info["base_url"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
