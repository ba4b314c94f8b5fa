"""Differential test: pip_constrained's offline decision against pip's own plan, on the same venvs.

A corpus of requests is generated in code (specifier operators, pre-releases, local labels, name
normalisation, extras, markers, URLs with %2B, wheel files, sdists, project directories, editable
installs, VCS refs, constraints, requirements-file syntax, --no-deps) and run against several venv
states built once with the pinned pip (26.3). Each case is decided twice:
- by the module's own code path (_pip.requirements.read_request + _pip.decide.decide_present on the
  venv's real probe), with both copies of `packaging` the module may load;
- by pip: `pip install --dry-run --report` on the same venv, same working directory, same
  environment (run in-process by a long-lived worker per venv, several venvs in parallel).

Verdicts: "satisfied" must never meet a pip plan that changes the venv (zero false "satisfied").
Where the module says "not satisfied" and pip would change nothing, the module's reason must be
one of the deliberate, documented choices (DOCUMENTED below, each quoted from the module's docs).
pip reinstalling the same version of a local directory, editable project or local sdist is the
documented "same artifact" choice, checked separately (the module must have proven the artifact).
"""
import functools
import hashlib
import http.server
import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
import zipfile
from urllib.parse import quote

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tests"))
sys.path.insert(0, os.path.join(REPO, ".collections"))

from harness import pip_env, record_timing  # noqa: E402
from pipkit import make_project, project_files  # noqa: E402
from world.lib import downloads, packages  # noqa: E402
from world.lib.wheel import build_sdist, build_wheel  # noqa: E402

from ansible_collections.primus.trainenv.plugins.module_utils._pip.command import pip_environ  # noqa: E402
from ansible_collections.primus.trainenv.plugins.module_utils._pip.decide import decide_present  # noqa: E402
from ansible_collections.primus.trainenv.plugins.module_utils._pip.libs import (  # noqa: E402
    load_packaging, load_toml_loads)
from ansible_collections.primus.trainenv.plugins.module_utils._pip.probe import parse_probe, probe_command  # noqa: E402
from ansible_collections.primus.trainenv.plugins.module_utils._pip.requirements import (  # noqa: E402
    RequirementError, read_request, url_path)
from ansible_collections.primus.trainenv.plugins.modules import pip_constrained  # noqa: E402

pytestmark = pytest.mark.functional

PY312 = os.environ.get("PRIMUS_TEST_PYTHON312") or "/root/.pyenv/versions/3.12.1/bin/python3.12"
ROCM = "2.12.0+rocm7.15.0a20260720"
MIN_CASES = 900

# Reasons for "not satisfied" that pip may answer with "nothing to do", and the sentence of the
# module's documentation that makes each a deliberate choice.
KEEPS = "pip keeps a same-version install for a remote wheel, another VCS commit, a branch or tag, or a URL"
DOCUMENTED = {
    "a branch, tag or default branch may have moved": "a branch or tag may have moved",
    "was not installed from": KEEPS,
    "is not from": KEEPS,
    "is not an editable install of": KEEPS,
    "dependencies are not static": "an editable project only when installed editable from that directory with static",
    "without static name and version": "Whatever cannot be decided offline is answered B(not satisfied)",
    "a remote file may have changed": "as does any remote file (it may have changed)",
    "cannot be evaluated": "A requirement whose environment marker cannot be evaluated",
}
SAME_ARTIFACT_DOC = "pip reinstalls a local directory, an editable project or a local sdist even at the same version"

# Runs inside a venv's python: pip in-process, one JSON request per line (args, cwd, env).
WORKER = r'''
import contextlib, io, json, os, sys
from pip._internal.cli.main import main as pip_main
out = sys.stdout
for line in sys.stdin:
    job = json.loads(line)
    os.chdir(job["cwd"])
    os.environ.clear()
    os.environ.update(job["env"])
    buf_out, buf_err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(buf_out), contextlib.redirect_stderr(buf_err):
        try:
            rc = pip_main(job["args"])
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 1
    out.write(json.dumps({"rc": rc, "out": buf_out.getvalue(), "err": buf_err.getvalue()}) + "\n")
    out.flush()
'''


# ---- the catalog -------------------------------------------------------------------------------

def git(repo, *args):
    base = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run(base + list(args), check=True, capture_output=True)


def build_catalog(root):
    """Wheels on a find-links directory, artefacts only reachable by path or URL, projects, a git repo."""
    links, direct = root / "links", root / "direct"
    for name, version, requires, extra in [
            ("alpha", "1.0", [], ()), ("alpha", "1.1", [], ()), ("alpha", "2.0rc1", [], ()), ("alpha", "2.0", [], ()),
            ("alpha", "2.1", ["gamma>=1.5"], ()), ("beta", "1.0", [], ()), ("beta", "2.0", ["gamma>=1"], ()),
            ("gamma", "1.0", [], ()), ("gamma", "1.5", [], ()), ("Dotted.Name", "1.0", [], ()),
            ("torch", ROCM, ["filelock"], ()), ("torch", "2.12.0+cpu", ["filelock"], ()),
            ("torch", "2.12.0", ["filelock"], ()), ("torch", "2.13.0", ["filelock", "nvidia-cublas-cu12"], ()),
            ("filelock", "3.0", [], ()), ("nvidia-cublas-cu12", "12.1", [], ()),
            ("hub", "0.34.0", ["filelock", 'inq==0.3.4; extra == "cli"'], (("Provides-Extra", "cli"),)),
            ("inq", "0.3.4", [], ()), ("app", "1.0", ["beta>=2"], ()),
            ("markers", "1.0", ['gamma; python_version < "3"', 'delta; sys_platform == "linux"'], ()),
            ("delta", "1.0", [], ()),
            ("urluser", "1.0", ["urlpkg @ file://%s/urlpkg-2.0-py3-none-any.whl" % direct], ()),
            ("urlpkg", "1.0", [], ())]:
        build_wheel(str(links), name, version, requires=requires, extra_metadata=extra)
    build_wheel(str(direct), "urlpkg", "2.0")
    build_wheel(str(root / "v1"), "app2", "1.0")
    build_wheel(str(root / "v2"), "app2", "1.0", requires=["gamma>=1.5"])  # same name and version, new dependency
    build_sdist(str(root / "sdists"), "sproj", "1.0", project_files("sproj", "1.0"))
    build_sdist(str(root / "sdists2"), "sproj", "1.0", project_files("sproj", "1.0", requires=["delta"]))
    projects = root / "projects"
    make_project(projects / "pstatic", "pstatic", "1.0")
    make_project(projects / "pstatic-changed", "pstatic", "1.0", requires=["beta>=2"])
    make_project(projects / "pdyn", "pdyn", "1.0", static=False)
    make_project(projects / "pedit", "pedit", "1.0")
    make_project(projects / "pedit-changed", "pedit-changed", "1.0")  # gains a dependency after the install
    make_project(projects / "pedit-dyn", "pedit-dyn", "1.0", static=False)
    repo = make_project(root / "repos" / "vpkg", "vpkg", "1.0", static=False)
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "one")
    git(repo, "tag", "v1")
    first = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], check=True, capture_output=True,
                           text=True).stdout.strip()
    (repo / "project.json").write_text(json.dumps({"name": "vpkg", "version": "1.0", "module": "vpkg",
                                                   "requires": ["gamma"]}))
    git(repo, "commit", "-q", "-am", "same version, new dependency")
    second = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], check=True, capture_output=True,
                            text=True).stdout.strip()
    cat = {"links": str(links), "direct": str(direct), "root": str(root), "repo": str(repo), "first": first,
           "second": second}
    cat.update(build_class_catalog(root))
    return cat


def zip_project(path, top, files):
    """A .zip source archive (GitHub's archive/refs/heads/<branch>.zip shape: one top directory)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        for rel, text in sorted(files.items()):
            archive.writestr("%s/%s" % (top, rel), text)
    return path


class Served(object):
    """A directory served over HTTP on 127.0.0.1 (pip fetches remote wheels and archives from it)."""

    def __init__(self, directory):
        handler = functools.partial(_QuietHandler, directory=directory)
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def build_class_catalog(root):
    """The artefacts of the false-"satisfied" classes (issue: the remaining classes); some change after install."""
    classes = root / "classes"
    local = str(classes / "local" / "archproj-main.tar.gz")   # a version-less archive: the branch moves
    os.makedirs(os.path.dirname(local))
    shutil.move(build_sdist(str(classes / "a1"), "archproj", "1.0", project_files("archproj", "1.0")), local)
    moved = build_sdist(str(classes / "a2"), "archproj", "1.1", project_files("archproj", "1.1", requires=["delta"]))
    copy = str(classes / "copy" / "archproj-main.tar.gz")
    os.makedirs(os.path.dirname(copy))
    shutil.copy(local, copy)
    served = classes / "served"
    build_wheel(str(served), "srvpkg", "1.0")
    build_wheel(str(classes / "reserved"), "srvpkg", "1.0", requires=["inq==0.3.4"])  # same name, new dependency
    branch = "org/proj/archive/refs/heads/main.zip"
    zip_project(str(served / branch), "proj-main", project_files("srvzip", "1.0"))
    zip_project(str(classes / "reserved" / "main.zip"), "proj-main", project_files("srvzip", "1.1", requires=["delta"]))
    mono = classes / "mono"
    make_project(mono / "one", "mone", "1.0")
    make_project(mono / "two", "mtwo", "1.0")
    subprocess.run(["git", "init", "-q", "-b", "main", str(mono)], check=True)
    git(mono, "add", "-A")
    git(mono, "commit", "-q", "-m", "two projects")
    mono_commit = subprocess.run(["git", "-C", str(mono), "rev-parse", "HEAD"], check=True, capture_output=True,
                                 text=True).stdout.strip()
    editwheel = build_wheel(str(classes / "editwheel"), "pedit", "1.0")
    make_project(root / "projects" / "pstatic-copy", "pstatic", "1.0")
    tags = build_wheel(str(classes / "tags"), "alpha", "1.1", tag="cp27-cp27mu-manylinux1_x86_64")
    pins = classes / "pins" / "my pins.txt"
    os.makedirs(os.path.dirname(str(pins)))
    pins.write_text("gamma==1.0\n")
    server = Served(str(served))
    cat = {"archive": local, "archive_moved": moved, "archive_copy": copy, "served": server.url, "server": server,
           "served_dir": str(served), "branch": branch, "reserved": str(classes / "reserved"), "mono": str(mono),
           "mono_commit": mono_commit, "editwheel": editwheel, "tags_wheel": tags, "pins": str(pins)}
    cat.update(build_more_classes(root, classes, served))
    return cat


def build_more_classes(root, classes, served):
    """More shapes of the same classes: unchanged version-less archives, hashes recorded before the server changed
    its files, a served wheel that never changes, directories over copies installed from elsewhere, wheels with
    foreign tags (also as a dependency), odd metadata pip still reads, requirement files that name files oddly."""
    out = {"old_srvpkg_sha256": _sha256(str(served / "srvpkg-1.0-py3-none-any.whl")),
           "old_branch_sha256": _sha256(str(served / "org/proj/archive/refs/heads/main.zip"))}
    out["zip"] = zip_project(str(classes / "zips" / "zproj-main.zip"), "zproj-main", project_files("zproj", "1.0"))
    os.symlink(out["zip"], str(classes / "zips" / "zproj-link.zip"))
    out["zip_link"] = str(classes / "zips" / "zproj-link.zip")
    out["stable"] = build_wheel(str(served / "stable"), "stable", "1.0", requires=["beta>=1"])
    out["stable_url"] = "stable/" + os.path.basename(out["stable"])
    out["pedit_sdist"] = build_sdist(str(classes / "editsdist"), "pedit", "1.0", project_files("pedit", "1.0"))
    projects = root / "projects"
    make_project(projects / "alpha-src", "alpha", "1.1")            # alpha 1.1 is installed from the index
    make_project(projects / "app2-src", "app2", "1.0")              # app2 1.0 is installed from a wheel
    os.symlink(str(projects / "pstatic"), str(projects / "pstatic-link"))
    tagdir = classes / "tags"
    out["tag_wheels"] = dict((tag, build_wheel(str(tagdir / tag), "alpha", "1.1", tag=tag)) for tag in (
        "cp312-abi3-manylinux_2_99_x86_64", "cp313-abi3-linux_x86_64", "py2-none-any", "cp312-cp312-linux_x86_64",
        "py312-none-any", "cp312-none-win_amd64"))
    foreign_beta = build_wheel(str(tagdir / "beta"), "beta", "1.0", tag="cp27-cp27mu-manylinux1_x86_64")
    out["tagtop"] = build_wheel(str(classes / "tagtop"), "tagtop", "1.0", requires=["beta @ file://" + foreign_beta])
    out["alpha_dir_link"] = str(classes / "alpha-link")
    os.symlink(str(root / "links"), out["alpha_dir_link"])
    linked = classes / "develop" / "linked"
    (linked / "linked.egg-info").mkdir(parents=True)
    (linked / "linked.egg-info" / "PKG-INFO").write_text("Metadata-Version: 1.1\nName: linked\nVersion: 0.5\n")
    out["linked"] = str(linked)
    nested = classes / "nested dir"
    nested.mkdir()
    (nested / "pins 2.txt").write_text("gamma==1.5\n")
    (nested / "more.txt").write_text("-c 'pins 2.txt'\nbeta\n")
    out["nested"] = str(nested)
    return out


def after_install(cat):
    """What changes once the venvs are built: the branch moves, the server serves new files, odd metadata."""
    os.remove(cat["archive"])
    shutil.copy(cat["archive_moved"], cat["archive"])
    later = time.time() + 10   # a new Last-Modified, so that no HTTP cache revalidation keeps the old file
    for name, dest in (("srvpkg-1.0-py3-none-any.whl", "srvpkg-1.0-py3-none-any.whl"), ("main.zip", cat["branch"])):
        target = os.path.join(cat["served_dir"], dest)
        shutil.copy(os.path.join(cat["reserved"], name), target)
        os.utime(target, (later, later))
    site = os.path.join(cat["venvs"]["direct"], "lib", "python3.12", "site-packages")
    egg = os.path.join(site, "eggpkg-1.0-py3.12.egg-info")
    os.makedirs(egg)
    with open(os.path.join(egg, "PKG-INFO"), "w") as handle:
        handle.write("Metadata-Version: 1.1\nName: eggpkg\nVersion: 1.0\n")
    with open(os.path.join(egg, "requires.txt"), "w") as handle:
        handle.write("[cli]\ninq==0.3.4\n")
    for dirname, name, version in (("mismatch-1.0.dist-info", "mismatch", "2.0"), ("twin-1.0.dist-info", "twin", "1.0"),
                                   ("twin-2.0.dist-info", "twin", "2.0")):
        os.makedirs(os.path.join(site, dirname))
        with open(os.path.join(site, dirname, "METADATA"), "w") as handle:
            handle.write("Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version))
    odd = {"eggm-1.0-py3.12.egg-info": {"PKG-INFO": "Metadata-Version: 1.1\nName: eggm\nVersion: 1.0\n",
                                        "requires.txt": "[GPU:python_version >= '3']\ndelta==1.0\n"
                                                        "[:python_version < '3']\ninq==0.3.4\n"},
           "eggx-1.0-py3.12.egg-info": {"PKG-INFO": "Metadata-Version: 1.1\nName: eggx\nVersion: 1.0\n"
                                                    "Provides-Extra: other\n", "requires.txt": "[cli]\ninq==0.3.4\n"},
           "reqtxt-1.0.dist-info": {"METADATA": "Metadata-Version: 2.1\nName: reqtxt\nVersion: 1.0\n",
                                    "requires.txt": "inq==0.3.4\n"},
           "nometa-1.0.dist-info": {"RECORD": ""},
           "pkgi-1.0.dist-info": {"PKG-INFO": "Metadata-Version: 2.1\nName: pkgi\nVersion: 1.0\n"
                                              "Requires-Dist: inq==0.3.4\n"},
           "other-1.0.dist-info": {"METADATA": "Metadata-Version: 2.1\nName: mismatch2\nVersion: 1.0\n"}}
    for dirname, files in odd.items():
        os.makedirs(os.path.join(site, dirname))
        for name, text in files.items():
            with open(os.path.join(site, dirname, name), "w") as handle:
                handle.write(text)
    with open(os.path.join(site, "linked.egg-link"), "w") as handle:   # a legacy develop install, not on sys.path
        handle.write(cat["linked"] + "\n.\n")


# ---- venv states -------------------------------------------------------------------------------

def pip_in(venv, cat, *args):
    cmd = [os.path.join(venv, "bin", "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
           "--no-index", "--find-links", cat["links"]] + list(args)
    proc = subprocess.run(cmd, env=pip_env(), capture_output=True, text=True, cwd=cat["root"], check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def states(cat):
    """name -> list of pip install argument lists that build it (in order)."""
    root = cat["root"]
    return {
        "empty": [],
        "base": [["alpha==1.1", "beta==1.0", "gamma==1.0", "Dotted.Name==1.0", "torch==" + ROCM, "hub==0.34.0",
                  "delta==1.0", "markers==1.0"], ["--no-deps", "app==1.0"],
                 [os.path.join(root, "v1", "app2-1.0-py3-none-any.whl")]],
        "labels": [["--pre", "torch==2.12.0+cpu", "alpha==2.0rc1", "beta==2.0", "gamma==1.5", "hub[cli]==0.34.0",
                    "app==1.0", "urluser==1.0", "Dotted.Name==1.0"],
                   [os.path.join(root, "v1", "app2-1.0-py3-none-any.whl")]],
        "direct": [["--find-links", cat["direct"], "urlpkg==2.0", "beta==1.0"],
                   [os.path.join(root, "sdists", "sproj-1.0.tar.gz"), os.path.join(root, "projects", "pstatic")],
                   ["-e", os.path.join(root, "projects", "pedit"), "-e", os.path.join(root, "projects", "pedit-dyn"),
                    "-e", os.path.join(root, "projects", "pedit-changed")],
                   ["vpkg @ git+file://%s@%s" % (cat["repo"], cat["first"])],
                   [os.path.join(root, "v2", "app2-1.0-py3-none-any.whl")],
                   [cat["archive"], "srvpkg @ %s/srvpkg-1.0-py3-none-any.whl" % cat["served"],
                    "%s/%s" % (cat["served"], cat["branch"]),
                    "git+file://%s@%s#subdirectory=one" % (cat["mono"], cat["mono_commit"])],
                   [cat["zip"], "%s/%s" % (cat["served"], cat["stable_url"])],
                   ["--no-deps", cat["tagtop"]]],
        "constrained": [["torch==2.12.0", "beta==1.0", "gamma==1.5", "alpha==2.1", "urlpkg==1.0"],
                        ["--no-deps", "urluser==1.0"]],
    }


# ---- the corpus --------------------------------------------------------------------------------

SPECS = {
    "alpha": ["", "==1.1", "==1.0", "!=1.1", "~=1.0", "~=2.0", ">=1.1", "<2", ">=2.0rc1", "==2.0rc1", "===1.1",
              "==1.*", ">1.1", "<=1.0", ">=2.0"],
    "beta": ["", "==1.0", ">=2", "<2", "!=2.0", "~=1.0", "==2.*"],
    "gamma": ["", "==1.0", ">=1.5", "<1.5", "!=1.0"],
    "torch": ["", "==2.12.0", "==" + ROCM, "==2.12.0+cpu", "!=2.12.0", ">=2.12", "<2.13", "===2.12.0+cpu",
              "==2.12.*", "~=2.12.0", "==2.12.0+rocm7.15.0a20260805", ">" + ROCM],
    "dotted": ["Dotted.Name", "dotted_name", "DOTTED-NAME==1.0", "dotted-name>=2", "dotted___name!=1.0"],
}


def corpus(cat):
    """[(id, request)] - request: name, requirements/constraints text, no_deps, environment."""
    root, links, direct = cat["root"], cat["links"], cat["direct"]
    cases = []

    def add(case_id, **request):
        cases.append((case_id, request))

    for package, specs in sorted(SPECS.items()):
        for spec in specs:
            text = spec if package == "dotted" else package + spec
            add("spec:%s" % text, name=[text])
    for text in ["hub", "hub[cli]", "hub[CLI]", "hub[nope]", "markers", 'alpha; python_version >= "3"',
                 'alpha>=9; python_version < "3"', "alpha ;", 'beta>=2; sys_platform == "win32"', "hub[cli]==0.34.0",
                 "app", "alpha==2.1", "urluser"]:
        add("extras-markers:%s" % text, name=[text])
    urlpkg = os.path.join(direct, "urlpkg-2.0-py3-none-any.whl")
    rocm_whl = os.path.join(links, "torch-%s-py3-none-any.whl" % ROCM)
    for case_id, text in [
            ("urlpkg @ file URL", "urlpkg @ file://" + urlpkg), ("bare file URL", "file://" + urlpkg),
            ("wheel path", urlpkg), ("torch %2B file URL", "file://" + rocm_whl.replace("+", "%2B")),
            ("torch @ %2B URL", "torch @ file://" + rocm_whl.replace("+", "%2B")), ("torch wheel path", rocm_whl),
            ("app2 v1 wheel", os.path.join(root, "v1", "app2-1.0-py3-none-any.whl")),
            ("app2 v2 wheel (new dependency)", os.path.join(root, "v2", "app2-1.0-py3-none-any.whl")),
            ("sdist", os.path.join(root, "sdists", "sproj-1.0.tar.gz")),
            ("sdist, other content same version", os.path.join(root, "sdists2", "sproj-1.0.tar.gz")),
            ("urlpkg from index", "urlpkg==2.0"),
            ("static project", os.path.join(root, "projects", "pstatic")),
            ("static project, new dependency", os.path.join(root, "projects", "pstatic-changed")),
            ("dynamic project", os.path.join(root, "projects", "pdyn")),
            ("vcs at the installed commit", "vpkg @ git+file://%s@%s" % (cat["repo"], cat["first"])),
            ("vcs at a tag", "vpkg @ git+file://%s@v1" % cat["repo"]),
            ("vcs default branch", "vpkg @ git+file://%s" % cat["repo"]),
            ("vcs at a newer commit", "vpkg @ git+file://%s@%s" % (cat["repo"], cat["second"]))]:
        add("artifact:%s" % case_id, name=[text])
    for case_id, src, names in [("static", "pstatic", []), ("static, new dependency", "pstatic-changed", []),
                                ("named by the caller", "pdyn", ["pdyn==1.0"]),
                                ("named with another version", "pdyn", ["pdyn==2.0"]),
                                ("static, named", "pstatic", ["pstatic==1.0"])]:
        add("src:%s" % case_id, src=os.path.join(root, "projects", src), name=names)
    for case_id, line in [("editable static", "-e ./projects/pedit"),
                          ("editable static, new dependency", "-e ./projects/pedit-changed"), ("editable dynamic", "-e ./projects/pedit-dyn"),
                          ("editable not installed", "-e ./projects/pstatic")]:
        add("editable:%s" % case_id, requirements=line + "\n")
    for names, constraint in [(["app"], "beta<2"), (["torch"], "torch==" + ROCM), (["alpha"], "gamma==1.0"),
                              (["alpha==2.1"], "gamma<1.5"), (["beta"], "beta==1.0"), (["hub[cli]"], "inq==0.3.4"),
                              (["urluser"], "urlpkg @ file://" + urlpkg), (["beta"], "gamma==1.5"),
                              (["alpha==2.1"], "gamma==1.5"), (["torch"], "torch==2.12.0+cpu")]:
        add("constraint:%s with %s" % (names[0], constraint), name=names, constraints=constraint + "\n")
    for case_id, text, env in [
            ("utf-8 BOM", "\ufeffalpha==1.1\nbeta\n", {}),
            ("continuation then comment", "alpha\\\n# comment\nbeta\\\n==1.0\n", {}),
            ("env var from the task's environment", "alpha==${ALPHA_VERSION}\n", {"ALPHA_VERSION": "1.1"}),
            ("env var, other value", "alpha==${ALPHA_VERSION}\n", {"ALPHA_VERSION": "2.0"}),
            ("nested -r and -c", "-r nested.txt\n-c pins.txt\nbeta\n", {}),
            ("comments, blanks, options", "# deps\n\n--pre\nalpha>=2.0rc1  # pre\n--prefer-binary\n", {}),
            ("hash option on a line", "gamma==1.0 --hash=sha256:00\n", {}),
            ("marker with semicolon and space", "alpha ; python_version >= '3.8'\n", {})]:
        add("file:%s" % case_id, requirements=text, environment=env)
    for text in ["app", "beta==2.0", "urluser", "alpha==2.1", "hub[cli]"]:
        add("no-deps:%s" % text, name=[text], no_deps=True)
    class_cases(cat, add)
    more_class_cases(cat, add)
    return cases


def _sha256(path):
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def class_cases(cat, add):
    """The false-"satisfied" classes: version-less archives, re-served files, #subdirectory=, editable installs
    replaced, odd installed metadata, wheel tags, #sha256= fragments, markers and requirement-file options."""
    served, mono, commit = cat["served"], cat["mono"], cat["mono_commit"]
    wheel_url = "%s/srvpkg-1.0-py3-none-any.whl" % served
    branch_url = "%s/%s" % (served, cat["branch"])
    alpha = os.path.join(cat["links"], "alpha-1.1-py3-none-any.whl")
    for case_id, text in [
            ("version-less archive, the branch moved", cat["archive"]),
            ("version-less archive as name @ file URL", "archproj @ file://" + cat["archive"]),
            ("version-less archive, another path", cat["archive_copy"]),
            ("served wheel, served again with a new dependency", "srvpkg @ " + wheel_url),
            ("served wheel, bare URL", wheel_url),
            ("served wheel with the served file's sha256", "%s#sha256=%s" % (
                wheel_url, _sha256(os.path.join(cat["served_dir"], "srvpkg-1.0-py3-none-any.whl")))),
            ("served branch archive", branch_url),
            ("served branch archive, named", "srvzip @ " + branch_url),
            ("git subdirectory, the installed project", "git+file://%s@%s#subdirectory=one" % (mono, commit)),
            ("git subdirectory, another project", "git+file://%s@%s#subdirectory=two" % (mono, commit)),
            ("git subdirectory, named, another project", "mtwo @ git+file://%s@%s#subdirectory=two" % (mono, commit)),
            ("git subdirectory, named, the installed project", "mone @ git+file://%s@%s#subdirectory=one" % (
                mono, commit)),
            ("wheel over an editable install", cat["editwheel"]),
            ("wheel over an editable install, file URL", "file://" + cat["editwheel"]),
            ("another directory of the same project", os.path.join(cat["root"], "projects", "pstatic-copy")),
            ("egg-info extra from requires.txt", "eggpkg[cli]"), ("egg-info", "eggpkg"),
            ("dist-info directory name's version", "mismatch==1.0"), ("dist-info METADATA's version", "mismatch==2.0"),
            ("two dist-info directories, 1.0", "twin==1.0"), ("two dist-info directories, 2.0", "twin==2.0"),
            ("wheel tags that do not fit", cat["tags_wheel"]),
            ("sha256 fragment that does not match", "file://%s#sha256=%s" % (alpha, "0" * 64)),
            ("sha256 fragment that matches", "file://%s#sha256=%s" % (alpha, _sha256(alpha))),
            ("marker using extras", 'alpha; "cli" in extras'),
            ("marker using extras in an or", 'gamma; extra == "x" or "y" in extras')]:
        add("class:%s" % case_id, name=[text])
    for case_id, text in [("quoted -c", '-c "%s"\ngamma\n' % cat["pins"]),
                          ("-c file URL", "-c file://%s\ngamma\n" % quote(cat["pins"])),
                          ("abbreviated --constr", "--constr=file://%s\nalpha\n" % quote(cat["pins"]))]:
        add("class:%s" % case_id, requirements=text)


def more_class_cases(cat, add):
    """The same classes in more shapes (each entry runs against every venv state)."""
    served, mono, commit, root = cat["served"], cat["mono"], cat["mono_commit"], cat["root"]
    wheel_url = "%s/srvpkg-1.0-py3-none-any.whl" % served
    branch_url = "%s/%s" % (served, cat["branch"])
    stable_url = "%s/%s" % (served, cat["stable_url"])
    alpha = os.path.join(cat["links"], "alpha-1.1-py3-none-any.whl")
    digests = dict((algo, hashlib.new(algo, open(alpha, "rb").read()).hexdigest()) for algo in ("sha512", "md5", "sha1"))
    sha = _sha256(alpha)
    names = [
        # version-less archives
        ("archive: moved branch with the new content's #sha256=", "%s#sha256=%s" % (cat["archive"], _sha256(
            cat["archive"]))),
        ("archive: file URL with the installed content's #sha256= (the file changed since)",
         "file://%s#sha256=%s" % (cat["archive"], _sha256(cat["archive_copy"]))),
        ("archive: unchanged local zip", cat["zip"]),
        ("archive: unchanged local zip, named", "zproj @ file://" + cat["zip"]),
        ("archive: unchanged local zip through a symlink", cat["zip_link"]),
        ("archive: unchanged local zip, relative path", "./" + os.path.relpath(cat["zip"], root)),
        # served files
        ("served: wheel with the hash recorded before it was served again", "%s#sha256=%s" % (
            wheel_url, cat["old_srvpkg_sha256"])),
        ("served: unchanged wheel", stable_url),
        ("served: unchanged wheel with its #sha256=", "stable @ %s#sha256=%s" % (stable_url, _sha256(cat["stable"]))),
        ("served: branch archive with the hash recorded before it moved", "srvzip @ %s#sha256=%s" % (
            branch_url, cat["old_branch_sha256"])),
        # subdirectories
        ("git subdirectory with a trailing slash", "git+file://%s@%s#subdirectory=one/" % (mono, commit)),
        ("git subdirectory and egg", "git+file://%s@%s#egg=mone&subdirectory=one" % (mono, commit)),
        ("git subdirectory first, then egg of the other project", "git+file://%s@%s#subdirectory=two&egg=mtwo" % (
            mono, commit)),
        ("git repository root without a project", "git+file://%s@%s" % (mono, commit)),
        ("git subdirectory at a branch", "mone @ git+file://%s@main#subdirectory=one" % mono),
        # editable installs and directories replaced
        ("wheel over an editable install, named", "pedit @ file://" + cat["editwheel"]),
        ("sdist over an editable install", cat["pedit_sdist"]),
        ("directory of an editable install, not editable", os.path.join(root, "projects", "pedit")),
        ("directory over a copy from the index", os.path.join(root, "projects", "alpha-src")),
        ("directory over a copy from the index, as a file URL", "alpha @ file://" + os.path.join(
            root, "projects", "alpha-src")),
        ("directory over a copy from a wheel", os.path.join(root, "projects", "app2-src")),
        ("installed directory, relative path", "./projects/pstatic"),
        ("installed directory through a symlink", os.path.join(root, "projects", "pstatic-link")),
        # legacy and odd installed metadata
        ("egg-info extra in upper case", "eggpkg[CLI]"),
        ("egg-info section with a marker", "eggm[gpu]"), ("egg-info marker-only section", "eggm"),
        ("egg-info extra not declared by PKG-INFO", "eggx[cli]"),
        ("dist-info requires.txt without Requires-Dist", "reqtxt"),
        ("dist-info without METADATA", "nometa==1.0"), ("dist-info without METADATA, other version", "nometa==2.0"),
        ("dist-info with PKG-INFO only", "pkgi"),
        ("dist-info named otherwise than its METADATA", "mismatch2"),
        ("legacy egg-link develop install", "linked==0.5"), ("legacy egg-link, other version", "linked==0.6"),
        # files pip refuses
        ("sha512 fragment that does not match", "file://%s#sha512=%s" % (alpha, "0" * 128)),
        ("sha512 fragment that matches", "file://%s#sha512=%s" % (alpha, digests["sha512"])),
        ("md5 fragment that matches", "file://%s#md5=%s" % (alpha, digests["md5"])),
        ("sha256 fragment in upper case", "file://%s#sha256=%s" % (alpha, sha.upper())),
        ("first hash of the URL does not match", "file://%s#sha1=%s&sha256=%s" % (alpha, "0" * 40, sha)),
        ("first hash matches, a later one does not",
         "file://%s#sha1=%s&sha256=%s" % (alpha, digests["sha1"], "0" * 64)),
        ("wheel through a symlinked directory", os.path.join(cat["alpha_dir_link"], "alpha-1.1-py3-none-any.whl")),
        ("a dependency wheel with foreign tags", "tagtop"),
        # markers
        ("marker using extra at the top level", 'alpha; extra == "cli"'),
        ("marker using dependency_groups", 'alpha; "dev" in dependency_groups'),
    ]
    for tag, path in sorted(cat["tag_wheels"].items()):
        names.append(("wheel tags %s" % tag, path))
    for case_id, text in names:
        add("class+:%s" % case_id, name=[text])
    nested, pins = cat["nested"], cat["pins"]
    for case_id, text in [
            ("--constraint with a quoted path", '--constraint "%s"\ngamma\n' % pins),
            ("--constraint= with a single-quoted path", "--constraint='%s'\ngamma\n" % pins),
            ("-c with the quoted path attached", "-c'%s'\ngamma\n" % pins),
            ("-c file://localhost URL", "-c file://localhost%s\ngamma\n" % quote(pins)),
            ("-r file URL whose file has a quoted relative -c", "-r file://%s\n" % quote(os.path.join(nested, "more.txt"))),
            # relative to the requirements file, which is written in cases/<state>/<index>/
            ("-r quoted relative path with a space", '-r "../../../%s"\n' % os.path.relpath(
                os.path.join(nested, "more.txt"), root)),
            ("-c file URL, then the pinned name", "-c file://%s\ngamma==1.0\n" % quote(pins))]:
        add("class+:%s" % case_id, requirements=text)
    add("class+:served wheel as a constraint", name=["stable"], constraints="stable @ %s\n" % stable_url)
    add("class+:re-served wheel as a constraint", name=["srvpkg"], constraints="srvpkg @ %s\n" % wheel_url)
    add("class+:src over a copy from the index", src=os.path.join(root, "projects", "alpha-src"), name=["alpha==1.1"])


# ---- running both sides --------------------------------------------------------------------------

class Worker(object):
    """pip in-process inside one venv (saves pip's start-up per case)."""

    def __init__(self, venv):
        self.proc = subprocess.Popen([os.path.join(venv, "bin", "python"), "-I", "-c", WORKER], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=pip_env())

    def __call__(self, args, cwd, env):
        self.proc.stdin.write(json.dumps({"args": args, "cwd": cwd, "env": env}) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def write_files(workdir, request):
    params = {"name": request.get("name") or [], "requirements": None, "constraints": [], "src": request.get("src")}
    for name, text in (("nested.txt", "gamma\n"), ("pins.txt", "gamma==1.0\n")):
        with open(os.path.join(workdir, name), "w") as handle:
            handle.write(text)
    if "requirements" in request:
        path = os.path.join(workdir, "requirements.txt")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(request["requirements"])
        params["requirements"] = path
    if "constraints" in request:
        path = os.path.join(workdir, "constraints.txt")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(request["constraints"])
        params["constraints"] = [path]
    return params


def module_verdict(pk, probe, params, environ, base_dir, toml_loads, no_deps):
    """('satisfied' | 'not satisfied' | 'error', reasons) by the module's own code path."""
    try:
        request = read_request(pk, params, environ, base_dir, toml_loads)
    except RequirementError as exc:
        return "error", [str(exc)]
    decision = decide_present(pk, probe, request.items, request.constraints, no_deps)
    return ("satisfied" if decision.satisfied else "not satisfied"), decision.reasons


def same_artifact(dist, download_info):
    """The installed copy (direct_url.json) came from what pip's plan reinstalls: the same directory (real path) or
    the same archive content (sha256). Only then is pip's same-version reinstall no change of what is installed."""
    direct = dist.direct_url if dist is not None and isinstance(dist.direct_url, dict) else {}
    url, recorded = download_info.get("url", ""), direct.get("url", "")
    if not (url.startswith("file:") and recorded.startswith("file:")):
        return False
    if (direct.get("subdirectory") or "") != (download_info.get("subdirectory") or ""):
        return False
    if "dir_info" in download_info and "dir_info" in direct:
        return bool(download_info["dir_info"].get("editable")) == bool(direct["dir_info"].get("editable")) and \
            os.path.realpath(url_path(url)) == os.path.realpath(url_path(recorded))
    new = ((download_info.get("archive_info") or {}).get("hashes") or {}).get("sha256")
    old = ((direct.get("archive_info") or {}).get("hashes") or {}).get("sha256")
    return bool(new) and new == old


def pip_verdict(result, report_path, probe):
    """('change' | 'no change' | 'error', entries that change the venv, same-artifact reinstalls)."""
    if result["rc"] != 0:
        return "error", [], []
    with open(report_path) as handle:
        report = json.load(handle)
    changes, reinstalls = [], []
    for entry in report["install"]:
        name = entry["metadata"]["name"].lower().replace("_", "-").replace(".", "-")
        version = entry["metadata"]["version"]
        dist = probe.dists.get(name)
        installed = dist.version if dist is not None else None
        if installed == version and same_artifact(dist, entry.get("download_info") or {}):
            reinstalls.append("%s==%s" % (name, version))
        else:
            changes.append("%s==%s (installed: %s)" % (name, version, installed))
    return ("change" if changes else "no change"), changes, reinstalls


@pytest.fixture(scope="module")
def corpus_world(tmp_path_factory):
    root = tmp_path_factory.mktemp("pip-diff")
    cat = build_catalog(root)
    template = str(root / "template")
    subprocess.run([PY312, "-m", "venv", template], check=True, env=pip_env())
    real = [d for d in packages.load_snapshot(packages.SNAPSHOT)["distributions"] if d["file"].startswith("pip-26.3-")]
    pip_wheel = downloads.fetch(os.path.join(REPO, ".cache", "world-downloads"), real)[0]
    subprocess.run([os.path.join(template, "bin", "python"), "-m", "pip", "install", "-q", "--no-index",
                    "--disable-pip-version-check", pip_wheel], check=True, env=pip_env())
    venvs = {}
    for name, steps in states(cat).items():
        venv = str(root / ("venv-" + name))
        subprocess.run(["cp", "-a", template, venv], check=True)
        for args in steps:
            pip_in(venv, cat, *args)
        venvs[name] = venv
    cat["venvs"] = venvs
    changed = root / "projects" / "pedit-changed"
    for rel, text in project_files("pedit-changed", "1.0", requires=["delta"]).items():
        (changed / rel).write_text(text)
    after_install(cat)
    yield cat
    cat["server"].close()


def run_state(cat, state, cases, pks, results):
    venv = cat["venvs"][state]
    probe = parse_probe(subprocess.run(probe_command(os.path.join(venv, "bin", "python")), capture_output=True,
                                       text=True, check=True).stdout)
    toml_loads = load_toml_loads(probe.site_dirs)
    worker = Worker(venv)
    base_dir = cat["root"]  # pip's working directory: relative project paths start here
    try:
        for index, (case_id, request) in enumerate(cases):
            workdir = os.path.join(cat["root"], "cases", state, str(index))
            os.makedirs(workdir)
            params = write_files(workdir, request)
            environ = pip_environ(pip_env(), request.get("environment"), False)
            verdicts = dict((label, module_verdict(pk, probe, params, environ, base_dir, toml_loads,
                                                   request.get("no_deps", False))) for label, pk in pks.items())
            report = os.path.join(workdir, "report.json")
            args = ["install", "--dry-run", "--report", report, "--disable-pip-version-check", "--no-input",
                    "--no-index", "--find-links", cat["links"]]
            for path in params["constraints"]:
                args += ["--constraint", path]
            if params["requirements"]:
                args += ["--requirement", params["requirements"]]
            if request.get("no_deps"):
                args.append("--no-deps")
            args += ["--"] + ([params["src"]] if params["src"] else params["name"])
            pip_result = worker(args, base_dir, environ)
            results.put((state, case_id, verdicts, pip_verdict(pip_result, report, probe),
                         (pip_result["out"] + pip_result["err"])[-600:]))
    finally:
        worker.close()


def test_offline_decision_never_says_satisfied_where_pip_would_change_the_venv(corpus_world):
    world = corpus_world
    cases = corpus(world)
    vendored = load_packaging([next(p for p in parse_probe(subprocess.run(
        probe_command(os.path.join(world["venvs"]["empty"], "bin", "python")), capture_output=True, text=True,
        check=True).stdout).site_dirs)], prefer_module=False)
    pks = {"module packaging": load_packaging(), "pip's vendored packaging": vendored}
    results = queue.Queue()
    start = time.monotonic()
    threads = [threading.Thread(target=run_state, args=(world, state, cases, pks, results))
               for state in sorted(world["venvs"])]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.monotonic() - start
    rows = []
    while not results.empty():
        rows.append(results.get())
    total = len(cases) * len(world["venvs"])
    assert len(rows) == total, "a worker died: %d of %d cases ran" % (len(rows), total)
    record_timing("pip_constrained differential corpus (%d cases, 2 packaging copies)" % total, seconds)

    doc = " ".join(pip_constrained.DOCUMENTATION.split())
    false_satisfied, refused_valid, undocumented, packaging_split = [], [], [], []
    tally = {}
    for state, case_id, verdicts, (pip_says, changes, reinstalls), output in rows:
        labels = sorted(set(v[0] for v in verdicts.values()))
        if len(labels) != 1:
            packaging_split.append((state, case_id, verdicts))
        module_says, reasons = verdicts["module packaging"]
        key = (module_says, pip_says)
        tally[key] = tally.get(key, 0) + 1
        where = "%s | %s" % (state, case_id)
        if module_says == "satisfied" and pip_says != "no change":
            false_satisfied.append((where, pip_says, changes, output))
        if module_says == "satisfied" and reinstalls:
            assert SAME_ARTIFACT_DOC in doc
        if module_says == "error" and pip_says != "error":
            refused_valid.append((where, reasons, output))
        if module_says == "not satisfied" and pip_says == "no change" and not reinstalls:
            documented = [k for k in DOCUMENTED if any(k in r for r in reasons)]
            if not documented or any(" ".join(DOCUMENTED[k].split()) not in doc for k in documented):
                undocumented.append((where, reasons))
    summary = ", ".join("module %s / pip %s: %d" % (m, p, n) for (m, p), n in sorted(tally.items()))
    print("\n%d cases in %.1f s: %s" % (total, seconds, summary))
    assert total >= MIN_CASES
    assert not false_satisfied, "module says satisfied, pip would change the venv:\n%s" % "\n".join(map(str, false_satisfied))
    assert not refused_valid, "module refuses what pip accepts:\n%s" % "\n".join(map(str, refused_valid))
    assert not undocumented, "disagreements without a documented reason:\n%s" % "\n".join(map(str, undocumented))
    assert not packaging_split, "the two packaging copies disagree:\n%s" % "\n".join(map(str, packaging_split))
    # The corpus exercises every verdict pair that matters (it is not all "not installed").
    assert tally.get(("satisfied", "no change"), 0) >= 50
    assert tally.get(("not satisfied", "change"), 0) >= 50
