"""Two releases on one node: v26.5 and v26.5.1 (the second release file, from its Dockerfile), side by side.

One scenario, in order, on the unprivileged target user: the v26.5 base converges every default stage (the current
link and the shared modulefiles directory set); the v26.5.1 base converges beside it with the same wheel cache; then
what each step must show is checked on those two bases - v26.5.1's ROCm SDK and its fixes to installed files, the
components whose build key did not change compiled 0 times (counted from the world's build records), the v26.5 base
byte for byte as it was, both releases in `module avail` and each one's own stack after `module load`, a run of one
release refused on the other's base, the current link moved only after a verify that passed, a retired base gone
with exactly its files. Then the two ways to a newer nightly that need no second file of ours: TE's source mode of
v26.5.1 without its full commit, and tools/relock.py on v26.5's pins.
"""
import hashlib
import json
import os
import re
import stat
import subprocess
import sys
import time

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from harness import REPO, installed, installed_from_indexes, record_timing

sys.path.insert(0, os.path.join(REPO, "tests"))
from world.lib import packages, stages  # noqa: E402

pytestmark = pytest.mark.functional

OLD, NEW = "v26.5", "v26.5.1"
COMGR = "_rocm_sdk_core/lib/libamd_comgr.so.3"
COMGR_DEVEL = "_rocm_sdk_devel/lib/libamd_comgr.so.3"
ROCPROF = "_rocm_sdk_devel/bin/rocprofv3"


def site(base):
    return os.path.join(base, "venv", "lib", "python3.12", "site-packages")


def build_ids(base):
    """{world component (canonical name): build id} of every compiled wheel installed in the base (the world's
    records, one world_build.json per package directory)."""
    out = {}
    top = site(base)
    for name in sorted(os.listdir(top)):
        record = os.path.join(top, name, "world_build.json")
        if os.path.isfile(record):
            with open(record) as handle:
                data = json.load(handle)
            out[canonicalize_name(data["component"])] = data["build"]["id"]
    return out


def git_commit(base, name):
    """The commit a distribution was installed from (its direct_url.json), or None."""
    for entry in os.listdir(site(base)):
        if entry.endswith(".dist-info") and canonicalize_name(entry[:-10].rsplit("-", 1)[0]) == name:
            path = os.path.join(site(base), entry, "direct_url.json")
            if os.path.exists(path):
                return read_json(path).get("vcs_info", {}).get("commit_id")
    return None


def stamps(base):
    out = {}
    for name in sorted(os.listdir(os.path.join(base, "state"))):
        if name.endswith(".json"):
            with open(os.path.join(base, "state", name)) as handle:
                out[name[:-5]] = json.load(handle)
    return out


def fingerprint(base):
    """sha256 over every path, type, mode and content (link targets) under the venv, env.sh, the modulefiles and
    state/ of a base: what a job running from it sees."""
    digest = hashlib.sha256()
    for top in ("venv", "env.sh", "modulefiles", "state", "pip-constraints.txt"):
        path = os.path.join(base, top)
        walk = [(path, [], [])] if not os.path.isdir(path) else os.walk(path)
        for root, dirs, files in walk:
            dirs.sort()
            for name in ([""] if root == path and not os.path.isdir(path) else sorted(files + dirs)):
                full = os.path.join(root, name) if name else root
                st = os.lstat(full)
                digest.update(repr((os.path.relpath(full, base), stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode),
                                    st.st_mtime_ns if stat.S_ISREG(st.st_mode) else 0)).encode())
                if stat.S_ISLNK(st.st_mode):
                    digest.update(os.readlink(full).encode())
                elif stat.S_ISREG(st.st_mode):
                    with open(full, "rb") as handle:
                        digest.update(hashlib.sha256(handle.read()).digest())
    return digest.hexdigest()


def read_json(path):
    with open(path) as handle:
        return json.load(handle)


def log_size(world):
    return os.path.getsize(os.path.join(world["root"], "server.log"))


def requests_since(world, offset):
    with open(os.path.join(world["root"], "server.log")) as handle:
        handle.seek(offset)
        return [line for line in handle.read().splitlines() if '"GET ' in line]


@pytest.fixture(scope="module")
def lab(target, world):
    """Two bases under ~/envs of the target user, one wheel cache and build directory, the current link and the
    shared modulefiles directory beside them."""
    root = target.base("releases")
    envs = os.path.join(root, "envs")
    assert target.run(["mkdir", "-p", envs]).returncode == 0
    common = {"primus_cache_dir": os.path.join(root, "cache"), "primus_build_dir": os.path.join(root, "build"),
              "primus_current_link": os.path.join(envs, "primus-current"),
              "primus_modulefiles_dir": os.path.join(root, "privatemodules"),
              "primus_report_dir": os.path.join(root, "report")}
    # This machine's glibc (2.36) builds TE from source: v26.5.1 names only TE's abbreviated commit, so its runs here
    # give the full one, as a user does (the world's commit of that abbreviation).
    te_full = world["releases"][NEW]["sources"]["te"]["pinned"]
    yield {"root": root, "envs": envs, "common": common, "pins": world["pins_by_release"],
           "release_vars": {OLD: {}, NEW: {"primus_te_source_ref": te_full}}, "te_full": te_full,
           "base": dict((r, os.path.join(envs, "primus-%s" % r)) for r in (OLD, NEW))}
    target.run(["rm", "-rf", root])


def run_release(playbook, lab, release, base=None, **kwargs):
    extra = dict(lab["common"], primus_release_file=lab["pins"][release], **lab["release_vars"][release])
    extra.update(kwargs.pop("extra", {}))
    run = playbook(kwargs.pop("tags", None), base or lab["base"][release], extra=extra, **kwargs)
    if os.environ.get("PRIMUS_TEST_DEBUG_DIR") and hasattr(run, "output"):
        with open(os.path.join(os.environ["PRIMUS_TEST_DEBUG_DIR"], "run-%d.log" % int(time.time() * 1000)), "w") as out:
            out.write(run.output)
    return run


@pytest.fixture(scope="module")
def old(playbook, lab):
    """v26.5, every default stage on an empty base of the MI300X host (gfx942), as a user's first converge; its run
    summary, drift report and manifest as that run wrote them (the later runs write the same report directory)."""
    run = run_release(playbook, lab, OLD)
    record_timing("release %s on an empty base, every default stage, empty cache" % OLD, run.seconds)
    if run.rc != 0:
        pytest.fail(repr(run), pytrace=False)
    report = lab["common"]["primus_report_dir"]
    summary = read_json(os.path.join(report, "summary.json"))
    (host, _record), = summary["hosts"].items()
    return {"run": run, "fingerprint": fingerprint(lab["base"][OLD]), "ids": build_ids(lab["base"][OLD]),
            "summary": summary, "drift": read_json(os.path.join(report, "drift.json")),
            "manifest": read_json(os.path.join(report, "manifests", host + ".json"))}


@pytest.fixture(scope="module")
def new(playbook, lab, old, world):
    offset = log_size(world)
    run = run_release(playbook, lab, NEW)
    record_timing("release %s beside %s, every default stage, the same wheel cache" % (NEW, OLD), run.seconds)
    assert run.rc == 0, run
    again_offset = log_size(world)
    again = run_release(playbook, lab, NEW)
    return {"run": run, "requests": requests_since(world, offset), "again": again,
            "again_requests": requests_since(world, again_offset), "ids": build_ids(lab["base"][NEW])}


# --------------------------------------------------------------------------- v26.5 against the real PyPI
# tests/world/pypi-snapshot.json records, per release, each pip call of a converge resolved against pypi.org on top of
# what the calls before it installed (tests/world/snapshot_metadata.py, "stages"): a real node's outcome. There,
# pydeps' datasets==3.6.0 holds through Primus's requirements: megatron-energon==7.3.2 brings s3fs at the fsspec datasets
# 3.6.0 allows (2025.3.0), aiobotocore 2.26.0, and takes wrapt back to 1.17.3. The v26.5 base converged here by the
# real playbook, pip and git on the world must end with exactly those versions, its turbo stage with Primus-Turbo's
# real requirements.txt (edc8d2cc), and verify and the drift report (which holds the host to pydeps' datasets==3.6.0:
# it is not among the release's drift_superseded pins) must pass.

def expected_state(node_archs):
    """({name: version} a real node has from the indexes after the default stages, {name: version} of the rest) from
    the snapshot's stages up to cleanup. The rest is what the node builds or clones itself: the source builds, the git
    requirements and pydeps' build_from_sdist wheels (installed from files: they carry a direct_url.json). Device
    wheels of the node's archs only (the snapshot resolves every arch of the pins)."""
    recorded = packages.load_snapshot()["stages"][OLD]
    state = stages.final_state(recorded, upto="cleanup")
    pins = yaml.safe_load(open(os.path.join(REPO, "roles", "primus", "vars", "releases", OLD + ".yml")))
    own = set(canonicalize_name(world["name"]) for _stage, world in stages.SOURCE_BUILDS)
    own |= set(canonicalize_name(name) for name, _version in stages.GIT_STAND_INS.values())
    own |= set(canonicalize_name(pin.split("==")[0]) for pin in pins["primus_pins"]["pydeps"]["build_from_sdist"])
    state = dict((canonicalize_name(n), v) for n, v in state.items()
                 if "-device-" not in n or n.rsplit("-", 1)[-1] in node_archs)
    indexes = dict((n, v) for n, v in state.items() if n not in own)
    indexes["pip"] = pins["primus_pins"]["venv"]["bootstrap"][0].split("==")[1]  # the venv's own pip, not a step's
    return indexes, dict((n, v) for n, v in state.items() if n in own)


def test_v26_5_ends_with_what_real_pypi_gave_the_same_stages(old, lab, target):
    base = lab["base"][OLD]
    node = dict(installed_from_indexes(base))
    assert len(node) == len(installed_from_indexes(base))  # one version per name
    expected, built = expected_state(["gfx942"])
    assert dict((n, (node.get(n), expected.get(n))) for n in set(node) | set(expected)
                if node.get(n) != expected.get(n)) == {}
    # what the node built: the sdist-only pin at its version; the source builds and git requirements by name (the
    # world's builds carry their commit in the version: TE's 2.15.0.dev0+<commit>, mlperf_logging's of its tag)
    everything = installed(target, base)
    assert set(built) <= set(everything) and not set(built) & set(node), sorted(set(built) - set(everything))
    assert everything["tensorstore"] == built["tensorstore"] == "0.1.45"
    # the outcome that differs from each group resolved alone: pydeps' datasets holds, Primus's energon adapts to it
    assert (node["datasets"], node["s3fs"], node["fsspec"]) == ("3.6.0", "2025.3.0", "2025.3.0")
    assert (node["aiobotocore"], node["multidict"], node["wrapt"]) == ("2.26.0", "6.9.1", "1.17.3")
    # turbo installed Primus-Turbo's real requirements.txt
    assert (node["pre-commit"], node["ruff"], node["clang-format"]) == ("4.5.1", "0.15.12", "20.1.6")
    for name in ("twine", "pytest-xdist", "pytest-timeout", "setuptools-scm", "expecttest", "build"):
        assert name in node, name
    assert node["setuptools"] == "75.1.0"   # requirements_skip: Turbo's setuptools==69.5.1 left out
    assert node["flydsl"] == "0.2.4"


def test_v26_5_verify_and_the_drift_report_pass_with_datasets_held_to_its_pin(old):
    (record,) = old["summary"]["hosts"].values()
    statuses = dict((e["stage"], e["status"]) for e in record["stages"])
    assert record["result"] == "ok" and statuses["verify"] == "ran" and statuses["primus"] == "built", record
    drift = old["drift"]
    assert drift["errors"] == [] and drift["drift"] == [] and drift["no_manifest"] == []
    assert old["manifest"]["distributions"]["datasets"] == "3.6.0"
    pins = yaml.safe_load(open(os.path.join(REPO, "roles", "primus", "vars", "releases", OLD + ".yml")))
    assert "datasets" not in pins["primus_pins"]["drift_superseded"] and "datasets==3.6.0" in \
        pins["primus_pins"]["pydeps"]["packages"]
    assert "drift: " in old["run"].stdout


# --------------------------------------------------------------------------- v26.5.1 on its own

def test_the_new_release_converges_with_its_sdk_first_and_its_fixes_applied(new, lab):
    base = lab["base"][NEW]
    run = new["run"]
    # The SDK task ran before the pre-torch pins and installed the whole SDK of one nightly.
    order = [r["task"] for r in run.results if "primus.trainenv.torch :" in r["task"]]
    sdk = [i for i, t in enumerate(order) if "Install the ROCm SDK first" in t]
    pre = [i for i, t in enumerate(order) if "Install the pre-torch pins" in t]
    assert sdk and pre and sdk[0] < pre[0], order
    versions = json.loads(open(os.path.join(base, "manifest", "manifest.json")).read())["distributions"]
    for name in ("rocm", "rocm-sdk-core", "rocm-sdk-devel", "rocm-sdk-libraries", "rocm-sdk-device-gfx942"):
        assert versions[name] == "7.15.0a20260727", (name, versions.get(name))
    assert versions["torch"] == "2.12.0+rocm7.15.0a20260727"
    # The fixes: the core copy of comgr is a link to the devel copy, rocprofv3's line is changed.
    core = os.path.join(site(base), COMGR)
    assert os.path.islink(core) and os.path.samefile(core, os.path.join(site(base), COMGR_DEVEL))
    text = open(os.path.join(site(base), ROCPROF)).read()
    assert 'update_env("ROCPROFILER_LIBRARY_CTOR", False)' in text and 'CTOR", True)' not in text
    manifest = json.loads(open(os.path.join(base, "manifest", "manifest.json")).read())
    assert [(f["name"], f["state"]) for f in manifest["installed_fixes"]] == [
        ("comgr_single_copy", "applied"), ("rocprofv3_library_ctor", "applied")]
    checks = dict((r["name"], r) for r in manifest["verify"])
    assert checks["installed_fixes"]["status"] == "ok" and checks["launch"]["status"] == "ok", checks
    assert "verify passed" in run.output


def test_a_converged_new_release_changes_nothing_and_asks_nothing(new):
    again = new["again"]
    assert again.rc == 0, again
    assert again.stats["node1"]["changed"] == 0, again.changed_tasks()
    assert new["again_requests"] == [], new["again_requests"][:5]


def test_a_reinstalled_comgr_is_planned_exactly_restored_and_caught_by_verify(playbook, lab, new, target, tmp_path):
    base = lab["base"][NEW]
    core = os.path.join(site(base), COMGR)
    # What a pip reinstall of rocm-sdk-core leaves: the core copy as a second regular file.
    restore = 'set -e; rm "$1"; cp "$2" "$1"'
    assert target.run(["bash", "-c", restore, "-", core, os.path.join(site(base), COMGR_DEVEL)]).returncode == 0
    before = fingerprint(base)
    plan = run_release(playbook, lab, NEW, check=True, diff=True)
    assert plan.rc == 0, plan
    assert plan.changed_tasks() == ["primus.trainenv.torch : Fix installed files of the ROCm SDK - comgr_single_copy, "
                                    "rocprofv3_library_ctor"], plan.changed_tasks()
    diff = plan.task("Fix installed files of the ROCm SDK")["result"]["diff"]
    assert len(diff) == 1 and diff[0]["before_header"].endswith(COMGR) and "regular file" in diff[0]["before"]
    assert fingerprint(base) == before and not os.path.islink(core)
    fixed = run_release(playbook, lab, NEW)
    assert fixed.rc == 0, fixed
    assert os.path.islink(core)
    assert [t for t in fixed.changed_tasks() if "Fix installed files" in t] == [
        "primus.trainenv.torch : Fix installed files of the ROCm SDK - comgr_single_copy, rocprofv3_library_ctor"]
    # With the fix skipped (the release file without installed_fixes, a test's switch), the launch check aborts
    # like the real torch does with two copies of comgr, and verify names it.
    assert target.run(["bash", "-c", restore, "-", core, os.path.join(site(base), COMGR_DEVEL)]).returncode == 0
    with open(lab["pins"][NEW]) as handle:
        pins = yaml.safe_load(handle)
    pins["primus_pins"].pop("installed_fixes")
    unfixed = tmp_path / "pins-without-fixes.yml"
    unfixed.write_text(yaml.safe_dump(pins))
    os.chmod(str(unfixed), 0o644)
    os.chmod(str(tmp_path), 0o755)
    failed = run_release(playbook, lab, NEW, tags="verify", extra={"primus_release_file": str(unfixed)})
    assert failed.rc != 0
    message = failed.task("Check that every verify check passed")["result"]["msg"]
    assert "Check launch (stage" in message and "libamd_comgr.so.3" in message, message
    assert run_release(playbook, lab, NEW).rc == 0 and os.path.islink(core)


def test_te_source_mode_without_the_full_commit_stops_before_any_download(playbook, lab, world, target, new):
    base = os.path.join(lab["envs"], "primus-te-source")
    offset = log_size(world)
    run = run_release(playbook, lab, NEW, base=base, tags="te",
                      extra={"primus_te_mode": "source", "primus_te_source_ref": ""})
    assert run.rc != 0
    message = run.task("Stop - TE source mode needs the full commit")["result"]["msg"]
    assert "names only the abbreviated TE commit" in message and "Nothing was downloaded or built" in message
    assert "primus_te_source_ref=<40-hex commit starting with" in message and "glibc >= 2.38" in message
    assert requests_since(world, offset) == []
    assert not os.path.exists(base)


# --------------------------------------------------------------------------- side by side

def test_only_the_components_whose_build_key_changed_are_compiled_again(old, new, lab):
    """Per compiled component, its build key in each base's stage record (pydeps: one per sdist it builds; a source
    stage: the stage's key) decides: the same key - the same wheel, its build id in the world's record unchanged;
    another key - compiled again, a new build id."""
    with open(lab["pins"][OLD]) as handle:
        sources = yaml.safe_load(handle)["primus_pins"]["sources"]
    old_stamps, new_stamps = stamps(lab["base"][OLD]), stamps(lab["base"][NEW])
    keys = {}   # component: (old key, new key)
    for name, key in (old_stamps["pydeps"]["key"].get("wheel_builds") or {}).items():
        keys[canonicalize_name(Requirement(name).name)] = (
            key, new_stamps["pydeps"]["key"]["wheel_builds"].get(name))
    for stage, source in sources.items():
        distribution = (source.get("build") or {}).get("distribution")
        if distribution and stage in old_stamps and stage in new_stamps:
            keys[canonicalize_name(distribution)] = (old_stamps[stage]["key_id"], new_stamps[stage]["key_id"])
    old_ids, new_ids = dict(old["ids"]), dict(new["ids"])
    assert sorted(old_ids) == sorted(new_ids) and set(keys) <= set(old_ids), (sorted(old_ids), sorted(keys))
    # The rest are git requirements pinned to a commit (pip builds them from that commit; its own wheel cache keeps
    # the build): the same commit in both releases, the same build.
    for name in sorted(set(old_ids) - set(keys)):
        assert git_commit(lab["base"][OLD], name) and git_commit(lab["base"][OLD], name) == git_commit(lab["base"][NEW], name)
        assert old_ids[name] == new_ids[name], name
        del old_ids[name], new_ids[name]
    same = sorted(name for name, (before, after) in keys.items() if before == after)
    changed = sorted(name for name in keys if name not in same)
    assert same and changed, (same, changed)
    assert sorted(name for name in new_ids if new_ids[name] == old_ids[name]) == same
    assert sorted(name for name in new_ids if new_ids[name] != old_ids[name]) == changed
    wheels = new["run"].task("Record what each stage did on this host")["result"]["ansible_facts"]["report_host"]["wheels"]
    assert wheels["compiled"] == len(changed) and wheels["cache"] == len(same), (wheels, same, changed)


def test_the_running_release_is_untouched_and_both_are_modules(old, new, lab, target):
    assert fingerprint(lab["base"][OLD]) == old["fingerprint"]
    modules = lab["common"]["primus_modulefiles_dir"]
    avail = target.bash('eval "$(modulecmd bash use %s)"; modulecmd bash avail primus 2>&1' % modules)
    assert "primus/%s" % OLD in avail.stdout + avail.stderr and "primus/%s" % NEW in avail.stdout + avail.stderr, avail
    for release, torch in ((OLD, "2.12.0+rocm7.15.0a20260720"), (NEW, "2.12.0+rocm7.15.0a20260727")):
        loaded = target.bash('eval "$(modulecmd bash use %s)"; eval "$(modulecmd bash load primus/%s)"; python -c '
                             '"import torch, transformer_engine, flash_attn, mamba_ssm; print(torch.__version__); '
                             'print(torch.__file__)"' % (modules, release))
        assert loaded.returncode == 0, loaded
        version, where = loaded.stdout.split()[-2:]
        assert version == torch and where.startswith(lab["base"][release] + "/"), loaded.stdout


def test_a_run_of_one_release_is_refused_on_the_others_base(playbook, lab, old, new):
    run = run_release(playbook, lab, NEW, base=lab["base"][OLD])
    assert run.rc != 0
    message = run.task("Check the inputs and the node")["result"]["msg"]
    assert "holds release %s" % OLD in message and "this run is for release %s" % NEW in message, message
    assert "-e primus_base=%s" % lab["base"][NEW] in message
    assert fingerprint(lab["base"][OLD]) == old["fingerprint"]


def test_the_current_link_moves_only_after_a_verify_that_passed(playbook, lab, old, new, target):
    link = lab["common"]["primus_current_link"]
    assert os.readlink(link) == lab["base"][NEW]
    # The old run moved it to the old base first; the new one moved it after its verify.
    assert old["run"].task("Move the current link to this base")["status"] == "ok"
    # A shell that sourced env.sh through the link keeps its base when the link moves.
    script = ('source %s/env.sh; touch %s/sourced; while [ ! -e %s/go ]; do sleep 0.2; done; '
              'python -c "import torch; print(torch.__file__)"' % (link, lab["root"], lab["root"]))
    holder = subprocess.Popen(["runuser", "-u", target.user, "--", "env", "-i", "HOME=%s" % target.home,
                               "PATH=/usr/bin:/bin", "bash", "-c", script] if os.getuid() == 0 else
                              ["env", "-i", "HOME=%s" % target.home, "PATH=/usr/bin:/bin", "bash", "-c", script],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 60
        while not os.path.exists(os.path.join(lab["root"], "sourced")) and time.time() < deadline:
            time.sleep(0.2)
        # verify of the old base with something broken in it: the link stays where it is.
        flydsl = os.path.join(site(lab["base"][OLD]), "flydsl", "expr", "vector.py")
        assert target.run(["mv", flydsl, flydsl + ".away"]).returncode == 0
        try:
            failed = run_release(playbook, lab, OLD, tags="verify")
        finally:
            assert target.run(["mv", flydsl + ".away", flydsl]).returncode == 0
        assert failed.rc != 0 and os.readlink(link) == lab["base"][NEW]
        assert not [r for r in failed.results if "Move the current link" in r["task"]]
        # verify of the old base that passes moves it there, while the shell holds the new base's env.sh.
        moved = run_release(playbook, lab, OLD, tags="verify")
        assert moved.rc == 0 and os.readlink(link) == lab["base"][OLD], moved
        target.run(["touch", os.path.join(lab["root"], "go")])
        out, err = holder.communicate(timeout=120)
    finally:
        holder.kill()
    assert holder.returncode == 0, err
    assert out.strip().startswith(lab["base"][NEW] + "/"), out
    back = run_release(playbook, lab, NEW, tags="verify")
    assert back.rc == 0 and os.readlink(link) == lab["base"][NEW]


def retire(playbook, lab, path, check=False):
    return playbook(None, path, check=check, diff=True, playbook_file="playbooks/retire.yml",
                    extra=dict(lab["common"], primus_retire_base=path))


def test_retiring_removes_exactly_the_old_base_and_refuses_what_must_stay(playbook, lab, old, new, target):
    old_base, new_base = lab["base"][OLD], lab["base"][NEW]
    modules = lab["common"]["primus_modulefiles_dir"]
    foreign = os.path.join(lab["envs"], "not-a-base")
    assert target.run(["mkdir", "-p", os.path.join(foreign, "venv")]).returncode == 0
    for path, words in ((new_base, "is the current base"), (foreign, "is not a base this collection built"),
                        (lab["common"]["primus_current_link"], "is a symbolic link")):
        refused = retire(playbook, lab, path)
        assert refused.rc != 0 and words in refused.task("Retire ")["result"]["msg"], refused
    lock = os.path.join(old_base, ".primus.lock")
    assert target.run(["bash", "-c", 'printf %s "$1" > "$2"', "-", json.dumps(
        {"format": 1, "run_id": "abc", "controller_host": "login1", "controller_user": "me", "inventory_host": "n1",
         "since": "2026-01-01T00:00:00Z"}), lock]).returncode == 0
    locked = retire(playbook, lab, old_base)
    assert locked.rc != 0 and "is locked" in locked.task("Retire ")["result"]["msg"]
    assert target.run(["rm", lock]).returncode == 0
    assert os.path.isdir(new_base) and os.path.isdir(foreign) and os.path.isdir(old_base)
    before = sorted(os.listdir(lab["envs"])), sorted(os.listdir(os.path.join(modules, "primus")))
    plan = retire(playbook, lab, old_base, check=True)
    assert plan.rc == 0, plan
    planned = plan.task("Retire ")["result"]
    assert sorted(e["name"] for e in planned["entries"]) == sorted(os.listdir(old_base))
    assert planned["modulefile_links"] == [os.path.join(modules, "primus", OLD)]
    assert (sorted(os.listdir(lab["envs"])), sorted(os.listdir(os.path.join(modules, "primus")))) == before
    done = retire(playbook, lab, old_base)
    assert done.rc == 0, done
    assert sorted(os.listdir(lab["envs"])) == sorted(set(before[0]) - {"primus-%s" % OLD})
    assert sorted(os.listdir(os.path.join(modules, "primus"))) == [NEW]
    # The wheel cache stays: the next base of v26.5 would compile nothing.
    assert os.listdir(os.path.join(lab["common"]["primus_cache_dir"], "wheels"))


# --------------------------------------------------------------------------- the other way to a newer nightly

def test_relock_moves_v26_5_to_the_second_nightly_and_that_file_converges(playbook, lab, world, target, tmp_path):
    out = tmp_path / "v26.5-relocked.yml"
    proc = subprocess.run([sys.executable, os.path.join(REPO, "tools", "relock.py"), "--pins", lab["pins"][OLD],
                           "--out", str(out)], capture_output=True, text=True, check=False,
                          env=dict(os.environ, PIP_CONFIG_FILE=os.devnull))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "20260727 complete" in proc.stdout and re.search(r"20260805 incomplete", proc.stdout), proc.stdout
    assert "TE: proposed 2.15.0.dev0+rocm7.15.0a20260724.2a26bf8" in proc.stdout, proc.stdout
    # That nightly's SDK ships comgr twice: the fixes of v26.5.1 (the release file of that nightly) come along.
    assert "installed fixes: comgr_single_copy, rocprofv3_library_ctor, from release v26.5.1" in proc.stdout, proc.stdout
    pins = yaml.safe_load(out.read_text())["primus_pins"]
    assert pins["versions"]["torch"] == "2.12.0+rocm7.15.0a20260727" and pins["versions"]["rocm_sdk"] == "7.15.0a20260727"
    assert [f["name"] for f in pins["installed_fixes"]] == ["comgr_single_copy", "rocprofv3_library_ctor"]
    os.chmod(str(out), 0o644)
    os.chmod(str(tmp_path), 0o755)
    base = os.path.join(lab["envs"], "primus-relocked")
    # Every default stage on an empty base, with the wheel cache the two releases filled: the keys this file shares
    # with v26.5.1 (the same nightly, the same commits) are taken from it.
    run = playbook(None, base, extra=dict(lab["common"], primus_release_file=str(out), primus_current_link="",
                                          primus_modulefiles_dir=""))
    record_timing("v26.5 re-locked to the second nightly, every default stage, the shared wheel cache", run.seconds)
    if run.rc != 0:
        failed = [str(r["result"].get("msg", ""))[:2000] for r in run.results if r["status"] == "failed"]
        pytest.fail("%r\n%s" % (run, "\n".join(failed)), pytrace=False)
    versions = json.loads(open(os.path.join(base, "manifest", "manifest.json")).read())["distributions"]
    assert versions["torch"] == "2.12.0+rocm7.15.0a20260727" and versions["rocm-sdk-devel"] == "7.15.0a20260727"


# --------------------------------------------------------------------------- kill -9 in the new steps

def kill_held(target, pattern, running):
    """Wait until a module is held at the pattern (modes.hold_point), then kill -9 it and the run."""
    at = os.path.join(target.faults, pattern + ".at")
    deadline = time.time() + 300
    while not os.path.exists(at) and time.time() < deadline and running.proc.poll() is None:
        time.sleep(0.1)
    assert os.path.exists(at), "the run never reached %s" % pattern
    with open(at) as handle:
        pid = int(handle.read().split()[0])
    os.killpg(running.proc.pid, 9)
    os.kill(pid, 9)
    running.finish()


def test_a_fix_killed_while_it_links_comgr_is_made_by_the_next_run(playbook, lab, new, target):
    base = lab["base"][NEW]
    core = os.path.join(site(base), COMGR)
    restore = 'set -e; rm "$1"; cp "$2" "$1"'
    assert target.run(["bash", "-c", restore, "-", core, os.path.join(site(base), COMGR_DEVEL)]).returncode == 0
    pattern = "write:libamd_comgr.so.3"
    hold = os.path.join(target.faults, pattern + ".hold")
    open(hold, "w").close()
    try:
        running = run_release(playbook, lab, NEW, background=True)
        kill_held(target, pattern, running)
    finally:
        os.unlink(hold)
        if os.path.exists(os.path.join(target.faults, pattern + ".at")):
            os.unlink(os.path.join(target.faults, pattern + ".at"))
    assert not os.path.islink(core)       # killed before the rename: the second copy is still there
    rerun = run_release(playbook, lab, NEW)
    assert rerun.rc == 0, rerun
    assert os.path.islink(core) and not [n for n in os.listdir(os.path.dirname(core)) if n.endswith(".primus-link")]
    again = run_release(playbook, lab, NEW)
    assert again.rc == 0 and again.stats["node1"]["changed"] == 0, again.changed_tasks()


def test_a_retire_killed_midway_is_finished_by_the_next(playbook, lab, target, old):
    base = os.path.join(lab["envs"], "primus-short-lived")
    made = run_release(playbook, lab, OLD, base=base, tags="venv", extra={"primus_current_link": "",
                                                                          "primus_modulefiles_dir": ""})
    assert made.rc == 0, made
    pattern = "retire:primus-short-lived"
    hold = os.path.join(target.faults, pattern + ".hold")
    open(hold, "w").close()
    try:
        running = playbook(None, base, playbook_file="playbooks/retire.yml", background=True,
                           extra=dict(lab["common"], primus_retire_base=base))
        kill_held(target, pattern, running)
    finally:
        os.unlink(hold)
        if os.path.exists(os.path.join(target.faults, pattern + ".at")):
            os.unlink(os.path.join(target.faults, pattern + ".at"))
    aside = os.path.join(lab["envs"], ".primus-short-lived.retiring")
    assert not os.path.exists(base) and os.path.isdir(aside)
    finished = retire(playbook, lab, base)
    assert finished.rc == 0, finished
    assert not os.path.exists(aside) and not os.path.exists(base)
