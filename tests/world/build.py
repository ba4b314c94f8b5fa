"""Build the simulated ROCm world into a directory (served by serve.py on a fixed loopback port).

    python3 tests/world/build.py --dest .world [--port 38611]

Layout (one static root; URLs contain the port, so keep it fixed for stable commits):
    pypi/simple/                  the "PyPI" stand-in        (files in pypi/files/<sha256[:16]>/)
    rocm/whl-multi-arch/          the "ROCm nightly" index   (files in rocm/files/<sha256[:16]>/)
    te/whl-staging/device-all/    the "TE staging" index     (files in te/files/<sha256[:16]>/)
    git/<name>.git                bare repositories for git's dumb HTTP protocol
    pins-<release>.yml            the release overlays (real pins, world URLs and commits): one per release
                                  file roles/*/vars/releases/<release>.yml (v26.5, v26.5.1)
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
from world.lib.index import distribution_files, parse_filename, publish, write_simple_index  # noqa: E402
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


DEFAULT_RELEASE = "v26.5"


def release_files():
    """{release: path} of every real release file, roles/*/vars/releases/<release>.yml."""
    out = {}
    for path in sorted(glob.glob(os.path.join(REPO_ROOT, "roles", "*", "vars", "releases", "v*.yml"))):
        out.setdefault(os.path.basename(path)[:-len(".yml")], path)
    if DEFAULT_RELEASE not in out:
        raise SystemExit("release file roles/*/vars/releases/%s.yml not found" % DEFAULT_RELEASE)
    return out


def default_pins():
    """The release file of the default release (v26.5)."""
    return release_files()[DEFAULT_RELEASE]


def release_of(pins_path):
    """The release a release file is for: its file name (v26.5.1.yml -> v26.5.1)."""
    return os.path.basename(pins_path)[:-len(".yml")] if pins_path.endswith(".yml") else os.path.basename(pins_path)


def index_urls(base_url):
    return {"pypi": base_url + "/pypi/simple",
            "torch": base_url + "/rocm/whl-multi-arch",
            "te": base_url + "/te/whl-staging/device-all/"}


def _publish(pkgs, files_dir, cache, tmp):
    """Build each Pkg's wheel/sdist once (shared between indexes) and publish it into files_dir."""
    os.makedirs(files_dir, exist_ok=True)
    for pkg in pkgs:
        key = (pkg.name, pkg.version, pkg.tag, bool(pkg.sdist))
        if key not in cache:
            if pkg.sdist:
                cache[key] = build_sdist(tmp, pkg.name, pkg.version, pkg.sdist, pkg.requires, pkg.metadata)
            else:
                cache[key] = build_wheel(tmp, pkg.name, pkg.version, pkg.requires, pkg.files,
                                         pkg.entry_points, pkg.tag, extra_metadata=pkg.metadata,
                                         executables=pkg.executables, dist_name=pkg.dist_name)
        publish(cache[key], files_dir)


def _served(files_dir):
    """{normalized project: set(versions)} of the distribution files below files_dir."""
    out = {}
    for rel in distribution_files(files_dir):
        project, version = parse_filename(os.path.basename(rel))
        out.setdefault(project, set()).add(version)
    return out


def build(dest, port, cache_dir, pins_paths=None, log=print, snapshot_path=packages.SNAPSHOT):
    """Build the world into dest. pins_paths: the real release files to overlay (a path or a list; default every
    release file); the first is the world's default release (world.json's sources and pins_source)."""
    started = time.time()
    if pins_paths is None:
        files = release_files()
        pins_paths = [files[DEFAULT_RELEASE]] + [files[r] for r in sorted(files) if r != DEFAULT_RELEASE]
    elif isinstance(pins_paths, str):
        pins_paths = [pins_paths]
    base_url = "http://127.0.0.1:%d" % port
    dest = os.path.abspath(dest)
    stage = dest + ".staging"
    shutil.rmtree(stage, ignore_errors=True)
    os.makedirs(stage)

    snapshot = packages.load_snapshot(snapshot_path)
    real = [d for d in snapshot["distributions"] if normalize(d["name"]) in packages.REAL]
    real_paths = downloads.fetch(cache_dir, real, log=log)
    core_so = native.te_core_library()
    libz3 = native.plain_library("libz3.so", "Z3_get_version_stub")
    comgr = native.comgr_library()

    pypi = packages.pypi_index(libz3, snapshot)
    rocm = packages.rocm_index(comgr)
    te = packages.te_index(core_so)
    # the ROCm index serves torch's plain dependencies itself: the closure pip resolved for them, alone and in the
    # ordered stages' ROCm steps (what the torch stage installs with them on top of the earlier stages)
    rocm_groups = set([packages.ROCM_PLAIN_GROUP] + packages.step_groups(snapshot, index="torch"))
    plain_on_rocm = [p for p in pypi if rocm_groups & set(p.groups)]
    cache = {}
    tmp = os.path.join(stage, ".build")
    _publish(pypi, os.path.join(stage, INDEXES["pypi"][0]), cache, tmp)
    _publish(rocm + plain_on_rocm, os.path.join(stage, INDEXES["torch"][0]), cache, tmp)
    _publish(te, os.path.join(stage, INDEXES["te"][0]), cache, tmp)
    shutil.rmtree(os.path.join(stage, ".build"), ignore_errors=True)
    for dist, path in zip(real, real_paths):
        publish(path, os.path.join(stage, INDEXES["pypi"][0]))
        if rocm_groups & set(dist["groups"]):
            publish(path, os.path.join(stage, INDEXES["torch"][0]))
    counts = {}
    for key, (files_dir, index_dir) in INDEXES.items():
        write_simple_index(os.path.join(stage, files_dir), os.path.join(stage, index_dir), "/" + files_dir)
        names = [os.path.basename(rel) for rel in distribution_files(os.path.join(stage, files_dir))]
        counts[key] = {"wheels": sum(n.endswith(".whl") for n in names),
                       "sdists": sum(n.endswith(".tar.gz") for n in names)}
    served = dict((key, _served(os.path.join(stage, INDEXES[key][0]))) for key in INDEXES)

    # consistency: what each index serves must close over its own requirements
    # (torchrec goes in --no-deps: its own requirements, e.g. fbgemm-gpu, are not served, as upstream)
    no_deps = set(name for name, group in snapshot["groups"].items() if group["no_deps"])
    no_deps |= set(packages.step_groups(snapshot, no_deps=True))
    problems = checks.missing_requirements([p for p in pypi if not set(p.groups) <= no_deps], served["pypi"])
    problems += checks.missing_requirements(rocm + plain_on_rocm, served["torch"], packages.ROCM_MISSING_OK)
    pypi_or_rocm = dict((name, served["pypi"].get(name, set()) | served["torch"].get(name, set()))
                        for name in set(served["pypi"]) | set(served["torch"]))

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
                stand_in = packages.Pkg(repo.name + " (git)", commit.label, _world_of(setup).get("requires", []))
                problems += checks.missing_requirements([stand_in], pypi_or_rocm)
    if problems:
        raise SystemExit("world is inconsistent, requirements not served:\n" +
                         "\n".join("  %s requires %s" % p for p in problems))

    git_urls = dict((up, url_of(name)) for up, name in repos.GIT_REQUIREMENTS.items())
    releases = {}
    verified = True
    for pins_path in pins_paths:
        release = release_of(pins_path)
        with open(pins_path) as handle:
            pins_text = handle.read()
        sources = {}
        for component, name in repos.COMPONENTS.items():
            sources[component] = (url_of(name), commits[name].get(repos.release_commit_label(release, name)))
        for component, (_url, commit) in sources.items():
            if overlay.ref_kinds(pins_text).get(component) == "short_commit":
                path = os.path.join(stage, "git", repos.COMPONENTS[component] + ".git")
                if gitrepo.resolve(path, commit[:overlay.SHORT]) != commit:
                    raise SystemExit("%s: the short commit %s of %s is ambiguous"
                                     % (release, commit[:overlay.SHORT], component))
        note = ("# Generated by tests/world/build.py from %s: the world's index URLs, repository URLs\n"
                "# and commits; every other value is the real file's.\n" % os.path.relpath(pins_path, REPO_ROOT))
        overlay_text = overlay.render(pins_text, index_urls(base_url), sources, git_urls, note)
        verified = overlay.verify(pins_text, overlay_text) and verified
        if verified:
            import yaml
            unserved = checks.unserved_pins(yaml.safe_load(overlay_text), served)
            if unserved:
                raise SystemExit("pins of %s not served by the world:\n" % release +
                                 "\n".join("  %s: %s" % u for u in unserved) +
                                 "\nA new PyPI pin needs a new metadata snapshot: python3 tests/world/snapshot_metadata.py")
        name = "pins-%s.yml" % release
        with open(os.path.join(stage, name), "w") as handle:
            handle.write(overlay_text)
        kinds = overlay.ref_kinds(pins_text)
        releases[release] = {
            "pins": name,
            "pins_source": os.path.relpath(pins_path, REPO_ROOT),
            "sources": dict((c, {"repo": url_of(n), "repo_name": n, "ref_kind": kinds.get(c),
                                 "pinned": sources[c][1],
                                 "ref": overlay.written_ref(kinds.get(c), sources[c][1])})
                            for c, n in repos.COMPONENTS.items()),
        }
    default = release_of(pins_paths[0])

    info = {
        "base_url": base_url,
        "port": port,
        "indexes": index_urls(base_url),
        "github_releases": base_url + repos.GITHUB_RELEASES,  # serves nothing: prebuilt-wheel probes get 404
        "repos": repo_info,
        "sources": dict((c, dict((k, v) for k, v in source.items() if k in ("repo", "repo_name", "pinned")))
                        for c, source in releases[default]["sources"].items()),
        "default_release": default,
        "releases": releases,
        "counts": dict(counts, repos=len(repo_info)),
        "real_wheels": [os.path.basename(p) for p in real_paths],
        "pypi_snapshot": snapshot["resolved_for"],
        "pins_source": releases[default]["pins_source"],
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
    parser.add_argument("--pins", action="append", default=None,
                        help="a real release file to overlay (repeatable; the first is the default release; default: "
                             "every roles/*/vars/releases/v*.yml, v26.5 first)")
    args = parser.parse_args(argv)
    info = build(args.dest, args.port, args.cache, args.pins)
    counts = info["counts"]
    print("world built in %s s at %s: pypi %d wheels + %d sdists, rocm %d wheels, te %d wheels + %d sdists, %d repos"
          % (info["seconds"], args.dest, counts["pypi"]["wheels"], counts["pypi"]["sdists"],
             counts["torch"]["wheels"], counts["te"]["wheels"], counts["te"]["sdists"], counts["repos"]))
    print("serve it: python3 tests/world/serve.py start --root %s   (%s)" % (args.dest, info["base_url"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
