"""A new plain git-built component needs its pins entry, a registry entry and a playbook include, nothing else
(docs/architecture.md, "Add a stage"): a stand-in `deepep` component that exists only in a test pins file, a registry
overlay and a copy of the playbook with one more include is built, stamped, verified and converged on a re-run."""
import json
import os
import pwd
import subprocess

import pytest
import yaml

from harness import REPO, record_timing

import stage_registry

pytestmark = pytest.mark.functional

STAGE = "deepep"
SETUP_PY = '''import os
from setuptools import setup
from setuptools.command.build_py import build_py

# What the build saw, recorded in the package, and one line per compile in a log of builds (build_py runs once per
# wheel; pip also runs setup.py for the metadata, which builds nothing).
seen = {k: os.environ.get(k, "") for k in ("GPU_ARCHS", "DEEPEP_STANDIN_FLAG", "MAX_JOBS")}


class Build(build_py):
    def run(self):
        os.makedirs("deepep_standin", exist_ok=True)
        with open(os.path.join("deepep_standin", "_built_with.py"), "w") as handle:
            handle.write("BUILT_WITH = %r\\n" % (seen,))
        with open(os.environ["DEEPEP_STANDIN_LOG"], "a") as handle:
            handle.write(repr(seen) + "\\n")
        build_py.run(self)


setup(name="deepep_standin", version="0.0.1", packages=["deepep_standin"], cmdclass={"build_py": Build})
'''


def git(*args, cwd):
    return subprocess.run(["git"] + list(args), cwd=cwd, check=True, capture_output=True, text=True,
                          env=dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
                                   GIT_COMMITTER_EMAIL="t@t")).stdout.strip()


@pytest.fixture(scope="module")
def component(shared_dir, target):
    """The stand-in's bare repository (readable by the target user) and the log its builds append to."""
    root = os.path.join(shared_dir, "deepep")
    work = os.path.join(root, "work")
    os.makedirs(os.path.join(work, "deepep_standin"))
    with open(os.path.join(work, "setup.py"), "w") as handle:
        handle.write(SETUP_PY)
    with open(os.path.join(work, "deepep_standin", "__init__.py"), "w") as handle:
        handle.write("from deepep_standin._built_with import BUILT_WITH  # noqa: F401\n")
    git("init", "-q", "-b", "main", cwd=work)
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", "deepep stand-in", cwd=work)
    commit = git("rev-parse", "HEAD", cwd=work)
    bare = os.path.join(root, "deepep.git")
    git("clone", "-q", "--bare", work, bare, cwd=root)
    # Owned by the target user, as a user's own mirror would be (git refuses a repository another user owns).
    owner = pwd.getpwnam(target.user)
    for folder, _dirs, files in os.walk(root):
        os.chmod(folder, 0o755)
        os.chown(folder, owner.pw_uid, owner.pw_gid)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o644)
            os.chown(os.path.join(folder, name), owner.pw_uid, owner.pw_gid)
    # The log of this session's compiles, in the directory the target user owns.
    return {"repo": "file://" + bare, "commit": commit, "log": os.path.join(root, "builds.log")}


@pytest.fixture(scope="module")
def overlay(world, component, shared_dir):
    """The five-file change, written as a test's overlay: 1. the pins entry, 2. the registry entry (extra-vars win over
    the core role's vars), 3. the playbook include (the changelog is not code; the tag table is generated)."""
    with open(world["pins"]) as handle:
        pins = yaml.safe_load(handle)
    pins["primus_pins"]["sources"][STAGE] = {
        "repo": component["repo"], "ref": component["commit"], "ref_kind": "commit", "submodules": False,
        "build": {"distribution": "deepep_standin", "isolation": False, "archs": True, "arch_env": {"GPU_ARCHS": "list"},
                  "env": {"DEEPEP_STANDIN_FLAG": "1", "DEEPEP_STANDIN_LOG": component["log"]}}}
    pins_file = os.path.join(shared_dir, "pins-deepep.yml")
    with open(pins_file, "w") as handle:
        yaml.safe_dump(pins, handle)
    os.chmod(pins_file, 0o644)
    # The registry: venv, torch, the new stage (needs both), manifest, verify.
    entries = [e for e in stage_registry.entries() if e["name"] in ("venv", "torch", "manifest", "verify")]
    entries.insert(2, {"name": STAGE, "requires": ["venv", "torch"]})
    # The playbook: the site playbook with one more include, after torch's.
    with open(os.path.join(REPO, "playbooks", "primus.yml")) as handle:
        text = handle.read()
    anchor = "        - name: Stage flash_attn\n"
    assert anchor in text
    include = ("        - name: Stage %s\n          ansible.builtin.include_role:\n            name: primus.trainenv.source_build\n"
               "            apply:\n              tags: [%s]\n          vars:\n            source_build_name: %s\n"
               "          tags: [%s]\n" % (STAGE, STAGE, STAGE, STAGE))
    playbook_file = os.path.join(shared_dir, "primus-with-deepep.yml")
    with open(playbook_file, "w") as handle:
        handle.write(text.replace(anchor, include + anchor))
    return {"primus_release_file": pins_file, "primus_stages": entries}, playbook_file


def builds(target, component):
    proc = target.run(["cat", component["log"]])
    return proc.stdout.splitlines() if proc.returncode == 0 else []


def test_a_new_plain_component_is_built_stamped_verified_and_converges(playbook, target, overlay, component, golden):
    extra, playbook_file = overlay
    base = golden("new-stage")   # venv,torch converged: the new stage is the subject
    tags = "venv,torch,%s,manifest,verify" % STAGE
    first = playbook(tags, base, extra=extra, playbook_file=playbook_file)
    assert first.rc == 0, first
    record_timing("a new plain component (venv,torch,deepep,manifest,verify) on a venv,torch copy", first.seconds)
    # Built once, for the arch list, with its own build variable; installed; stamped with its seconds.
    assert len(builds(target, component)) == 1
    with open(os.path.join(base, "state", STAGE + ".json")) as handle:
        stamp = json.load(handle)
    assert stamp["key"]["commit"] == component["commit"] and stamp["key"]["archs"] == ["gfx942"]
    assert stamp["key"]["env"]["DEEPEP_STANDIN_FLAG"] == "1" and stamp["outputs"]["seconds"] >= 0
    assert stamp["outputs"]["distributions"] == {"deepep-standin": "0.0.1"}
    proc = target.run([os.path.join(base, "venv", "bin", "python"), "-c",
                       "import deepep_standin, json; print(json.dumps(deepep_standin.BUILT_WITH))"])
    assert json.loads(proc.stdout)["GPU_ARCHS"] == "gfx942", proc.stderr
    # verify judged the new stage as one of the base's default stages, and passed.
    assert "verify passed" in first.output
    with open(os.path.join(base, "manifest", "manifest.json")) as handle:
        manifest = json.load(handle)
    assert STAGE in manifest["timings"] and STAGE in manifest["build_keys"]
    # A re-run: nothing changes, nothing is built or cloned.
    second = playbook(tags, base, extra=extra, playbook_file=playbook_file)
    assert second.rc == 0, second
    assert second.stats["node1"]["changed"] == 0, second.changed_tasks()
    assert len(builds(target, component)) == 1
    record_timing("a new plain component, converged re-run", second.seconds)


def test_without_its_registry_entry_the_stage_is_refused(playbook, target, overlay):
    """The registry is what makes it a stage: its include alone (no registry entry) stops naming the problem."""
    extra, playbook_file = overlay
    entries = [e for e in extra["primus_stages"] if e["name"] != STAGE]
    run = playbook(STAGE, target.base("new-stage-unregistered"), extra=dict(extra, primus_stages=entries),
                   playbook_file=playbook_file)
    assert run.rc != 0
    assert "primus.trainenv.source_build is internal" in run.output and "no build plan for deepep" in run.output
