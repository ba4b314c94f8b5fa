"""The offline decision: does anything need to change? (run with both packaging copies)."""
import hashlib
import json
import os
import sys

import pytest

from ansible_collections.primus.trainenv.plugins.module_utils._pip.decide import (
    decide_present, is_pattern, matches_pattern, plan_absent, same_version, split_pattern, version_satisfies)
from ansible_collections.primus.trainenv.plugins.module_utils._pip.probe import PROBE_MARKER, parse_probe
from ansible_collections.primus.trainenv.plugins.module_utils._pip.requirements import classify, read_requirements_file

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
from world.lib.wheel import build_sdist, build_wheel  # noqa: E402

ROCM = "2.12.0+rocm7.15.0a20260720"
VENV_MARKERS = {
    "implementation_name": "cpython", "implementation_version": "3.10.13", "os_name": "posix",
    "platform_machine": "x86_64", "platform_release": "6.8.0", "platform_system": "Linux",
    "platform_version": "#1 SMP", "python_full_version": "3.10.13", "platform_python_implementation": "CPython",
    "python_version": "3.10", "sys_platform": "linux",
}


def probe(*dists, **kw):
    """dists: (name, version[, requires[, direct_url[, provides_extra]]]), as the probe prints them."""
    rows = []
    for dist in dists:
        name, version = dist[0], dist[1]
        requires = dist[2] if len(dist) > 2 else []
        direct = json.dumps(dist[3]) if len(dist) > 3 and dist[3] is not None else None
        extras = dist[4] if len(dist) > 4 else []
        rows.append([name, version, requires, direct, "/site/%s.dist-info" % name, 1, extras])
    data = {"dists": rows, "markers": kw.get("markers", VENV_MARKERS)}
    if "tags" in kw:
        data["tags"] = kw["tags"]
    return parse_probe("%s\n%s\n" % (PROBE_MARKER, json.dumps(data)))


def items(pk, *texts):
    return [classify(pk, t, "name[%d]" % i) for i, t in enumerate(texts)]


def decide(pk, installed, *texts, **kw):
    return decide_present(pk, installed, items(pk, *texts), kw.get("constraints", ()), kw.get("no_deps", False))


def test_local_label_pin_is_exact(pk):
    cpu = probe(("torch", "2.12.0+cpu"))
    decision = decide(pk, cpu, "torch==%s" % ROCM)
    assert not decision.satisfied
    assert decision.reasons == ["installed torch 2.12.0+cpu does not satisfy torch==%s" % ROCM]
    assert decide(pk, probe(("torch", ROCM)), "torch==%s" % ROCM).satisfied
    assert not decide(pk, probe(("torch", "2.12.0")), "torch==%s" % ROCM).satisfied


def test_public_pin_follows_pep440_like_pip(pk):
    # Without a local label in the pin, any local build of that version satisfies it (PEP 440, as pip).
    assert decide(pk, probe(("torch", "2.12.0+cpu")), "torch==2.12.0").satisfied
    assert not decide(pk, probe(("torch", "2.11.0")), "torch>=2.12").satisfied


def test_unpinned_name_satisfied_by_any_version_and_missing_is_reported(pk):
    installed = probe(("Einops", "0.8.1"), ("onnx", "1.0.0rc1"))
    assert decide(pk, installed, "einops", "ONNX").satisfied
    assert decide(pk, installed, "onnx>=0.9").satisfied  # installed pre-releases count, like pip
    decision = decide(pk, installed, "einops", "psutil")
    assert decision.reasons == ["psutil is not installed"]


def test_markers_are_evaluated_for_the_venvs_python_not_the_modules(pk):
    installed = probe(("a", "1"))
    # The venv is 3.10 here even though the tests run on 3.12.
    decision = decide(pk, installed, 'b; python_version >= "3.12"', 'a; python_version < "3.11"')
    assert decision.satisfied
    assert decision.ignored == ['b; python_version >= "3.12"']
    assert not decide(pk, installed, 'b; python_version < "3.11"').satisfied


def test_extras_bring_their_requirements(pk):
    hub = ("huggingface-hub", "0.34.0", ["filelock", "InquirerPy==0.3.4; extra == \"cli\"", "pytest; extra == 'testing'"],
           None, ["cli", "testing"])
    installed = probe(hub, ("filelock", "3.0"))
    assert decide(pk, installed, "huggingface_hub").satisfied
    decision = decide(pk, installed, "huggingface_hub[cli]")
    assert decision.reasons == ["InquirerPy==0.3.4 (required by huggingface-hub 0.34.0) is not installed"]
    assert decide(pk, probe(hub, ("filelock", "3.0"), ("inquirerpy", "0.3.4")), "huggingface_hub[CLI]").satisfied


def test_undeclared_extras_are_ignored_like_pip(pk):
    # pip: "WARNING: hub 1.0 does not provide the extra 'cli'" and installs nothing for it.
    undeclared = probe(("hub", "1.0", ['inq==1.0; extra == "cli"']))
    assert decide(pk, undeclared, "hub[cli]").satisfied
    declared = probe(("hub", "1.0", ['inq==1.0; extra == "cli"'], None, ["cli"]))
    assert not decide(pk, declared, "hub[cli]").satisfied


def test_dependency_closure_is_checked_unless_no_deps(pk):
    installed = probe(("foo", "1.0", ["bar>=2", 'winonly; sys_platform == "win32"']), ("bar", "1.0", ["foo"]))
    decision = decide(pk, installed, "foo")
    assert decision.reasons == ["installed bar 1.0 does not satisfy bar>=2 (required by foo 1.0)"]
    assert decide(pk, installed, "foo", no_deps=True).satisfied
    fixed = probe(("foo", "1.0", ["bar>=2"]), ("bar", "2.0", ["foo", "baz[x]"]),
                  ("baz", "1", ["q; extra == 'x'"], None, ["x"]))
    decision = decide(pk, fixed, "foo")
    assert decision.reasons == ["q (required by baz 1) is not installed"]  # extras of dependencies too


def test_cycles_terminate_and_count(pk):
    installed = probe(("a", "1", ["b"]), ("b", "1", ["c"]), ("c", "1", ["a"]))
    decision = decide(pk, installed, "a")
    assert decision.satisfied and decision.checked == 3


def test_constraints_apply_to_the_closure_only(pk, tmp_path):
    (tmp_path / "c.txt").write_text("torch==%s\n" % ROCM)
    constraints = read_requirements_file(pk, str(tmp_path / "c.txt"), constraint=True)[1]
    installed = probe(("torch", "2.12.0+cpu"), ("cuda-app", "1.0", ["torch"]), ("tqdm", "4.67.3"))
    decision = decide(pk, installed, "cuda-app", constraints=constraints)
    assert decision.reasons == ["installed torch 2.12.0+cpu does not satisfy the constraint torch==%s (%s:1)"
                                % (ROCM, tmp_path / "c.txt")]
    assert decide(pk, installed, "tqdm==4.67.3", constraints=constraints).satisfied
    assert decide(pk, probe(("torch", ROCM), ("cuda-app", "1.0", ["torch"])), "cuda-app", constraints=constraints).satisfied


def test_wheel_files_need_exactly_their_version(pk, tmp_path):
    whl = build_wheel(str(tmp_path), "torch", ROCM, tag="cp312-cp312-linux_x86_64")
    assert decide(pk, probe(("torch", ROCM)), whl).satisfied
    decision = decide(pk, probe(("torch", "2.12.0+cpu")), whl)
    assert decision.reasons == ["installed torch 2.12.0+cpu is not %s from %s" % (ROCM, whl)]
    other = build_wheel(str(tmp_path), "x", "1.0")
    assert not decide(pk, probe(("x", "1.0+cpu")), other).satisfied
    assert decide(pk, probe(("x", "1.0.0")), other).satisfied  # 1.0 == 1.0.0


def test_a_local_wheel_is_walked_with_its_own_requirements_not_the_installed_copys(pk, tmp_path):
    # Same name and version installed, but the file on disk now needs einops: pip installs einops.
    whl = build_wheel(str(tmp_path), "app", "1.0", requires=["einops>=0.8"])
    installed = probe(("app", "1.0", []))
    decision = decide(pk, installed, whl)
    assert decision.reasons == ["einops>=0.8 (required by app 1.0) is not installed"]
    assert decide(pk, probe(("app", "1.0", []), ("einops", "0.8.1")), whl).satisfied
    # The same holds when the wheel is a dependency given by URL.
    decision = decide(pk, probe(("top", "1", ["app @ file://%s" % whl]), ("app", "1.0", [])), "top")
    assert decision.reasons == ["einops>=0.8 (required by app 1.0) is not installed"]


def test_a_direct_url_dependency_is_not_any_installed_version(pk, tmp_path):
    whl = build_wheel(str(tmp_path), "dep", "2.0")
    top = ("top", "1", ["dep @ file://%s" % whl])
    decision = decide(pk, probe(top, ("dep", "1.0")), "top")
    assert decision.reasons == ["installed dep 1.0 is not 2.0 from %s (required by top 1)" % whl]
    assert decide(pk, probe(top, ("dep", "2.0")), "top").satisfied
    remote = ("top", "1", ["dep @ https://h/dep-2.0-py3-none-any.whl"])
    assert not decide(pk, probe(remote, ("dep", "2.0")), "top").satisfied  # installed from elsewhere
    recorded = {"url": "https://h/dep-2.0-py3-none-any.whl", "archive_info": {"hashes": {"sha256": "ab" * 32}}}
    # Installed from that URL, but the file may have been served again with other dependencies: pip decides.
    decision = decide(pk, probe(remote, ("dep", "2.0", [], recorded)), "top")
    assert "may have changed" in decision.reasons[0]
    # Even with the recorded #sha256=: pip downloads the file again, and fails if the server now serves another.
    hashed = ("top", "1", ["dep @ https://h/dep-2.0-py3-none-any.whl#sha256=" + "ab" * 32])
    assert "may have changed" in decide(pk, probe(hashed, ("dep", "2.0", [], recorded)), "top").reasons[0]


def test_a_local_sdist_counts_only_when_installed_from_that_very_file(pk, tmp_path):
    sdist = build_sdist(str(tmp_path), "proj", "1.0", {})
    digest = hashlib.sha256(open(sdist, "rb").read()).hexdigest()
    same = {"url": "file://" + sdist, "archive_info": {"hash": "sha256=" + digest, "hashes": {"sha256": digest}}}
    assert decide(pk, probe(("proj", "1.0", [], same)), sdist).satisfied
    changed = dict(same, archive_info={"hashes": {"sha256": "0" * 64}})
    assert not decide(pk, probe(("proj", "1.0", [], changed)), sdist).satisfied
    assert not decide(pk, probe(("proj", "1.0")), sdist).satisfied  # from an index: pip would rebuild


def test_vcs_requirements_need_a_commit_recorded_in_pep610_direct_url(pk):
    commit = "f" * 40
    url = "git+https://github.com/mlcommons/logging.git@%s" % commit
    recorded = {"url": "https://github.com/mlcommons/logging.git",
                "vcs_info": {"vcs": "git", "commit_id": commit, "requested_revision": "6.0.0-rc5"}}
    installed = probe(("mlperf-logging", "4.1.0", [], recorded))
    assert decide(pk, installed, url).satisfied
    assert decide(pk, installed, "mlperf_logging @ %s" % url).satisfied
    # A tag or branch may have moved since: pip decides.
    decision = decide(pk, installed, "git+https://github.com/mlcommons/logging.git@6.0.0-rc5")
    assert "may have moved" in decision.reasons[0]
    assert not decide(pk, installed, "git+https://github.com/other/logging.git@%s" % commit).satisfied
    assert not decide(pk, probe(("mlperf-logging", "4.1.0")), "mlperf_logging @ " + url).satisfied


def test_archive_url_and_editable_dir(pk, tmp_path):
    archive = "https://h/pkgs/thing-latest.zip"
    (tmp_path / "pyproject.toml").write_text("")
    installed = probe(("thing", "1", [], {"url": "https://h/pkgs/thing-latest.zip",
                                          "archive_info": {"hashes": {"sha256": "cd" * 32}}}),
                      ("dev", "0.1", [], {"url": "file://%s" % tmp_path, "dir_info": {"editable": True}}))
    assert "may have changed" in decide(pk, installed, archive).reasons[0]  # a branch archive moves
    # pip downloads it again even with the recorded hash (and fails when the server serves other content now)
    assert "may have changed" in decide(pk, installed, archive + "#sha256=" + "cd" * 32).reasons[0]
    assert not decide(pk, installed, archive + "#sha256=00").satisfied  # another content
    assert not decide(pk, installed, "https://h/pkgs/other.zip").satisfied
    editable = classify(pk, str(tmp_path), "r:1", editable=True)
    decision = decide_present(pk, installed, [editable])
    assert "dependencies are not static" in decision.reasons[0]
    editable.requires, editable.provides_extra = [], []
    assert decide_present(pk, installed, [editable]).satisfied
    editable.requires = ["einops"]  # the project now needs einops
    assert not decide_present(pk, installed, [editable]).satisfied
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "setup.py").write_text("")
    other = classify(pk, str(tmp_path / "sub"), "r:2", editable=True)
    other.requires = []
    assert not decide_present(pk, installed, [other]).satisfied


def test_project_directory_needs_a_known_identity_and_its_own_dependencies(pk, tmp_path):
    (tmp_path / "setup.py").write_text("")
    item = classify(pk, str(tmp_path), "src")
    decision = decide_present(pk, probe(("x", "1")), [item])
    assert not decision.satisfied and "without static name and version" in decision.reasons[0]
    item.name, item.version = "x", "1"
    from_here = ("x", "1", [], {"url": "file://%s" % tmp_path, "dir_info": {}})
    assert decide_present(pk, probe(from_here), [item]).satisfied
    # the same name and version installed from an index (or a wheel): pip builds and installs the directory over it
    decision = decide_present(pk, probe(("x", "1")), [item])
    assert not decision.satisfied and "was not installed from the directory" in decision.reasons[0]
    wheel_copy = ("x", "1", [], {"url": "file:///w/x-1-py3-none-any.whl", "archive_info": {}})
    assert not decide_present(pk, probe(wheel_copy), [item]).satisfied
    item.requires = ["einops"]   # its static dependencies changed since the install
    assert not decide_present(pk, probe(from_here), [item]).satisfied
    item.requires = None
    item.version = "1+abc"
    assert not decide_present(pk, probe(from_here), [item]).satisfied
    item.version = "1"
    editable_copy = ("x", "1", [], {"url": "file://%s" % tmp_path, "dir_info": {"editable": True}})
    assert not decide_present(pk, probe(editable_copy), [item]).satisfied  # pip reinstalls non-editable


def test_unreadable_metadata_requirement_sends_to_pip(pk):
    decision = decide(pk, probe(("a", "1", ["b ==="[:-3] + "[[["])), "a")
    assert not decision.satisfied and "unreadable requirement" in decision.reasons[0]


def test_version_helpers(pk):
    assert version_satisfies(pk, "1.0", pk.SpecifierSet(""))
    assert not version_satisfies(pk, "not-a-version!", pk.SpecifierSet(">=1"))
    assert same_version(pk, "2.12.0+rocm7.15.0a20260720", "2.12.0+rocm7.15.0a20260720")
    assert not same_version(pk, "2.12.0+cpu", "2.12.0+rocm7.15.0a20260720")


@pytest.mark.parametrize("pattern, key, version, hit", [
    ("nvidia-*", "nvidia-cublas-cu12", "12.1", True),
    ("NVIDIA_*", "nvidia-cudnn-cu12", "9.1", True),
    ("nvidia-*", "torch", "2.13.0", False),
    ("torch==*+cu*", "torch", "2.13.0+cu126", True),
    ("torch==*+cu*", "torch", ROCM, False),
    ("triton==3.7.0", "triton", "3.7.0", True),
    ("triton==3.7.0", "triton", "3.7.1+gitabc.rocm7.15.0a20260720", False),
    ("torch!=*+rocm*", "torch", "2.13.0", True),
    ("torch!=*+rocm*", "torch", "2.12.0+cpu", True),
    ("torch!=*+rocm*", "torch", ROCM, False),
    ("triton!=*+*rocm*", "triton", "3.7.0", True),
    ("triton!=*+*rocm*", "triton", "3.7.1+gitabc.rocm7.15.0a20260720", False),
])
def test_patterns(pattern, key, version, hit):
    assert matches_pattern(key, version, pattern) is hit


def test_split_pattern():
    assert split_pattern("Quack_Kernels*") == ("quack-kernels*", None, None)
    assert split_pattern("torch==*+cu*") == ("torch", "==", "*+cu*")
    assert split_pattern("torch!=*+rocm*") == ("torch", "!=", "*+rocm*")


@pytest.mark.parametrize("text, pattern", [("nvidia-*", True), ("tri?on", True), ("nvidia-*-cu1[0-9]", True),
                                           ("huggingface_hub[cli]", False), ("torch", False), ("x[", True)])
def test_globs_and_extras_are_told_apart(pk, text, pattern):
    assert is_pattern(pk, text) is pattern


def test_absent_of_name_with_extra_removes_the_distribution(pk):
    installed = probe(("huggingface-hub", "0.34.0"), ("einops", "0.8.1"))
    assert [d.name for d in plan_absent(pk, installed, items(pk, "huggingface_hub[cli]"))] == ["huggingface-hub"]


@pytest.mark.parametrize("patterns, texts", [(["*"], []), (["p*"], []), (["?ip"], []), (["setup*"], []),
                                             (["whe*"], []), ([], ["pip"]), ([], ["PIP>=1"])])
def test_absent_never_removes_pip_setuptools_or_wheel_by_pattern(pk, patterns, texts):
    installed = probe(("pip", "26.3"), ("setuptools", "75.1.0"), ("wheel", "0.45.1"))
    with pytest.raises(ValueError, match="refus"):
        plan_absent(pk, installed, items(pk, *texts), patterns)


def test_plan_absent(pk):
    installed = probe(("tilelang", "0.1.8"), ("quack-kernels", "0.3.1"), ("nvidia-cutlass-dsl", "4.6.0"),
                      ("nvidia-cutlass-dsl-libs-base", "4.6.0"), ("triton", "3.7.1+gitabc"), ("torch", ROCM))
    removed = plan_absent(pk, installed, items(pk, "tilelang", "absent-already"), ["quack-kernels*", "nvidia-cutlass-dsl*"])
    assert [d.name for d in removed] == ["nvidia-cutlass-dsl", "nvidia-cutlass-dsl-libs-base", "quack-kernels", "tilelang"]
    # A specifier narrows the match instead of removing whatever version is there.
    assert plan_absent(pk, installed, items(pk, "triton==3.7.0")) == []
    assert [d.name for d in plan_absent(pk, installed, items(pk, "triton>=3.7.1"))] == ["triton"]
    assert plan_absent(pk, installed, items(pk, 'torch; python_version >= "3.12"')) == []  # venv is 3.10
    with pytest.raises(ValueError, match="needs a distribution name"):
        plan_absent(pk, installed, items(pk, "git+https://h/r.git"))


# ---- the classes of issue "the remaining false satisfied classes" ------------------------------------------------

def test_a_versionless_local_archive_counts_only_with_the_same_content(pk, tmp_path):
    archive = str(tmp_path / "proj-main.tar.gz")
    with open(archive, "wb") as handle:
        handle.write(b"first content")
    digest = hashlib.sha256(b"first content").hexdigest()
    recorded = {"url": "file://" + archive, "archive_info": {"hashes": {"sha256": digest}}}
    assert decide(pk, probe(("proj", "1.0", [], recorded)), archive).satisfied
    with open(archive, "wb") as handle:
        handle.write(b"a new version")   # the branch moved: new version, new dependency
    decision = decide(pk, probe(("proj", "1.0", [], recorded)), archive)
    assert not decision.satisfied and "same file content" in decision.reasons[0]
    assert not decide(pk, probe(("proj", "1.0", [], recorded)), "proj @ file://" + archive).satisfied


def test_a_served_branch_archive_or_rewheel_is_handed_to_pip_without_a_hash(pk):
    url = "https://github.com/org/proj/archive/refs/heads/main.zip"
    recorded = {"url": url, "archive_info": {"hashes": {"sha256": "ee" * 32}}}
    installed = probe(("proj", "1.0", [], recorded))
    assert "may have changed" in decide(pk, installed, url).reasons[0]
    assert "may have changed" in decide(pk, installed, "proj @ " + url).reasons[0]
    # the recorded hash in the URL does not help: pip downloads the branch archive again and fails on a new content
    assert "may have changed" in decide(pk, installed, "proj @ %s#sha256=%s" % (url, "ee" * 32)).reasons[0]
    wheel = "https://h/w/proj-1.0-py3-none-any.whl"
    installed = probe(("proj", "1.0", [], dict(recorded, url=wheel)))
    assert "may have changed" in decide(pk, installed, wheel).reasons[0]


def test_an_unnamed_git_url_with_a_subdirectory_is_that_project_only(pk):
    commit = "a" * 40
    repo = "https://h/org/mono.git"
    recorded = {"url": repo, "subdirectory": "pkgs/one", "vcs_info": {"vcs": "git", "commit_id": commit}}
    installed = probe(("one", "1.0", [], recorded))
    assert decide(pk, installed, "git+%s@%s#subdirectory=pkgs/one" % (repo, commit)).satisfied
    decision = decide(pk, installed, "git+%s@%s#subdirectory=pkgs/two" % (repo, commit))
    assert not decision.satisfied and "nothing installed from" in decision.reasons[0]
    assert not decide(pk, installed, "git+%s@%s" % (repo, commit)).satisfied
    assert not decide(pk, installed, "one @ git+%s@%s#subdirectory=pkgs/two" % (repo, commit)).satisfied


def test_a_wheel_or_another_directory_replaces_an_editable_install(pk, tmp_path):
    whl = build_wheel(str(tmp_path), "dev", "0.1")
    editable = {"url": "file://%s" % tmp_path, "dir_info": {"editable": True}}
    for text in (whl, "file://" + whl, "dev @ file://" + whl):
        decision = decide(pk, probe(("dev", "0.1", [], editable)), text)
        assert not decision.satisfied and "editable install" in decision.reasons[0]
    assert decide(pk, probe(("dev", "0.1")), whl).satisfied
    one, two = tmp_path / "one", tmp_path / "two"
    for path in (one, two):
        path.mkdir()
        (path / "pyproject.toml").write_text('[project]\nname = "dev"\nversion = "0.1"\ndependencies = []\n')
    from_one = {"url": "file://%s" % one, "dir_info": {}}
    item = classify(pk, str(two), "name[0]")
    item.name, item.version, item.requires, item.provides_extra = "dev", "0.1", [], []
    decision = decide_present(pk, probe(("dev", "0.1", [], from_one)), [item])
    assert not decision.satisfied and "installed from the directory %s" % one in decision.reasons[0]
    item = classify(pk, str(one), "name[0]")
    item.name, item.version, item.requires, item.provides_extra = "dev", "0.1", [], []
    assert decide_present(pk, probe(("dev", "0.1", [], from_one)), [item]).satisfied


def test_a_sha256_fragment_that_does_not_match_the_local_file_is_not_satisfied(pk, tmp_path):
    whl = build_wheel(str(tmp_path), "dev", "0.1")
    digest = hashlib.sha256(open(whl, "rb").read()).hexdigest()
    assert decide(pk, probe(("dev", "0.1")), "file://%s#sha256=%s" % (whl, digest)).satisfied
    decision = decide(pk, probe(("dev", "0.1")), "file://%s#sha256=%s" % (whl, "0" * 64))
    assert not decision.satisfied and "does not match its #sha256=" in decision.reasons[0]


@pytest.mark.parametrize("fragment, ok", [
    ("sha512={sha512}", True), ("sha512=" + "0" * 128, False), ("md5={md5}", True), ("md5=" + "0" * 32, False),
    ("sha256={SHA256}", True),                   # pip lower-cases the digest of the URL
    ("sha256={sha256}&sha512=" + "0" * 128, True),   # pip checks the first hash of the URL only
    ("sha1=" + "0" * 40 + "&sha256={sha256}", False),
    ("egg=dev&sha224={sha224}", True),
])
def test_every_hash_pip_checks_a_local_file_against_decides_like_pip(pk, tmp_path, fragment, ok):
    whl = build_wheel(str(tmp_path), "dev", "0.1")
    data = open(whl, "rb").read()
    digests = dict((algo, hashlib.new(algo, data).hexdigest()) for algo in ("sha512", "md5", "sha256", "sha224"))
    digests["SHA256"] = digests["sha256"].upper()
    decision = decide(pk, probe(("dev", "0.1")), "file://%s#%s" % (whl, fragment.format(**digests)))
    assert decision.satisfied is ok
    if not ok:
        assert "does not match its #" in decision.reasons[0] and "pip refuses it" in decision.reasons[0]


def test_a_dependency_wheel_whose_tags_do_not_fit_is_not_satisfied(pk, tmp_path):
    foreign = build_wheel(str(tmp_path / "f"), "dep", "1.0", tag="cp27-cp27mu-manylinux1_x86_64")
    fitting = build_wheel(str(tmp_path / "g"), "dep", "1.0")
    for whl, fits in ((foreign, False), (fitting, True)):
        installed = probe(("top", "1", ["dep @ file://%s" % whl]), ("dep", "1.0"), tags=TAGS)
        decision = decide(pk, installed, "top")
        assert decision.satisfied is fits
        assert fits or "do not fit the venv's interpreter" in decision.reasons[0]
        constrained = decide(pk, probe(("dep", "1.0"), tags=TAGS), "dep", constraints=items(pk, "dep @ file://" + whl))
        assert constrained.satisfied is fits


TAGS = {"impl": "cp", "python": [3, 12], "abi": "cp312", "abi3": True, "platform": "linux_x86_64",
        "glibc": [2, 35], "interpreter": "cp312"}


@pytest.mark.parametrize("tag, fits", [
    ("py3-none-any", True), ("py2.py3-none-any", True), ("cp312-cp312-linux_x86_64", True),
    ("cp312-cp312-manylinux_2_28_x86_64", True), ("cp312-cp312-manylinux2014_x86_64", True),
    ("cp39-abi3-manylinux_2_17_x86_64", True), ("py312-none-any", True), ("cp312-none-any", True),
    ("cp311-cp311-linux_x86_64", False), ("cp313-cp313-linux_x86_64", False), ("py313-none-any", False),
    ("cp312-cp312-manylinux_2_39_x86_64", False), ("cp312-cp312-manylinux_2_28_aarch64", False),
    ("cp312-cp312-win_amd64", False), ("cp312-cp312-musllinux_1_2_x86_64", False), ("cp313-abi3-linux_x86_64", False),
])
def test_a_wheel_whose_tags_do_not_fit_the_venv_is_not_satisfied(pk, tmp_path, tag, fits):
    whl = build_wheel(str(tmp_path), "dev", "0.1", tag=tag)
    decision = decide(pk, probe(("dev", "0.1"), tags=TAGS), whl)
    assert decision.satisfied is fits
    if not fits:
        assert "do not fit the venv's interpreter cp312" in decision.reasons[0]


def test_a_marker_that_cannot_be_evaluated_goes_to_pip(pk):
    installed = probe(("alpha", "1.0"))
    decision = decide(pk, installed, 'alpha; "cli" in extras')
    assert not decision.satisfied and "cannot be evaluated" in decision.reasons[0]
    top = probe(("top", "1", ['alpha; "cli" in extras']), ("alpha", "1.0"))
    assert not decide(pk, top, "top").satisfied
    assert decide(pk, installed, 'alpha; python_version >= "3"').satisfied


def test_state_absent_narrowing_is_documented():
    from ansible_collections.primus.trainenv.plugins.modules import pip_constrained
    doc = " ".join(pip_constrained.DOCUMENTATION.split())
    assert "an entry whose environment marker is false for the venv is skipped" in doc
    assert "a wheel or sdist file narrows the match to its version" in doc
    assert "C(pip uninstall) itself ignores both" in doc
