"""tools/relock.py against a served world index: the newest complete cp312 nightly wins, incomplete later dates are
explained, and the new pins file differs from the current one only in the nightly versions."""
import contextlib
import os
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import relock  # noqa: E402
from world.lib import server  # noqa: E402
from world.lib.index import publish, write_simple_index  # noqa: E402
from world.lib.wheel import build_wheel  # noqa: E402

PINS = os.path.join(ROOT, "roles", "primus", "vars", "releases", "v26.5.yml")
ARCHS = ("gfx942", "gfx950")
CP312 = "cp312-cp312-manylinux_2_28_x86_64"


def nightly_set(date, torch="2.12.0", audio="2.11.0", vision="0.27.0", apex="1.12.0", sdk="7.15.0",
                skip=(), tags=None):
    """(name, version, tag) of one date's complete set, less `skip`; tags: {name: tag} overrides."""
    label = "rocm%sa%s" % (sdk, date)
    out = [("torch", "%s+%s" % (torch, label), CP312), ("torchaudio", "%s+%s" % (audio, label), CP312),
           ("torchvision", "%s+%s" % (vision, label), CP312), ("apex", "%s+%s" % (apex, label), CP312),
           ("rocm-sdk-devel", "%sa%s" % (sdk, date), "py3-none-linux_x86_64")]
    for arch in ARCHS:
        out += [("amd-torch-device-%s" % arch, "%s+%s" % (torch, label), "py3-none-linux_x86_64"),
                ("rocm-sdk-device-%s" % arch, "%sa%s" % (sdk, date), "py3-none-linux_x86_64"),
                ("amd-torchvision-device-%s" % arch, "%s+%s" % (vision, label), "py3-none-linux_x86_64")]
    return [(n, v, (tags or {}).get(n, t)) for n, v, t in out if n not in skip]


@contextlib.contextmanager
def world_index(tmp_path, wheels):
    """The wheels published as the world publishes its ROCm index (content-addressed files, PEP 503 pages), served."""
    build, files = tmp_path / "build", tmp_path / "root" / "rocm" / "files"
    build.mkdir()
    for name, version, tag in wheels:
        publish(build_wheel(str(build), name, version, tag=tag), str(files))
    write_simple_index(str(files), str(tmp_path / "root" / "rocm" / "whl-multi-arch"), "/rocm/files")
    with server.serve(str(tmp_path / "root")) as url:
        yield url + "/rocm/whl-multi-arch"


def run(tmp_path, index, *extra):
    out = tmp_path / "new.yml"
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "relock.py"), "--pins", PINS, "--out", str(out),
                           "--index", index] + list(extra), capture_output=True, text=True, check=False)
    return proc, out


def test_picks_the_complete_later_date_and_explains_the_incomplete_one(tmp_path):
    wheels = (nightly_set("20260720")
              + nightly_set("20260810", torch="2.13.0", vision="0.28.0")
              # newer, but apex is missing and torch is published for CPython 3.11 only
              + nightly_set("20260815", torch="2.13.0", vision="0.28.0", skip=("apex",),
                            tags={"torch": "cp311-cp311-manylinux_2_28_x86_64"})
              # another ROCm line at a later date: not this release's
              + nightly_set("20260820", sdk="10.0.0"))
    with world_index(tmp_path, wheels) as index:
        proc, out = run(tmp_path, index)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = proc.stdout
    assert "20260815 incomplete" in report
    assert "apex: not published" in report
    assert "torch: no cp312 Linux x86_64 wheel (cp311-cp311-manylinux_2_28_x86_64)" in report
    assert "amd-torch-device-gfx942: no wheel at" not in report   # the devices are judged against a usable torch only
    assert "20260810 complete" in report and "20260820" not in report
    with open(PINS) as handle:
        old_text = handle.read()
    new_text = out.read_text()
    # v26.5.1's fixes to installed files (its nightly 20260727 is no later than 20260810) come along, appended
    assert "installed fixes: comgr_single_copy, rocprofv3_library_ctor, from release v26.5.1 (nightly 20260727" in report
    with open(os.path.join(os.path.dirname(PINS), "v26.5.1.yml")) as handle:
        fixes = yaml.safe_load(handle)["primus_pins"]["installed_fixes"]
    appended = new_text[len(new_text.split("\n  installed_fixes:\n")[0]):]
    assert yaml.safe_load(new_text)["primus_pins"]["installed_fixes"] == fixes
    new_text = new_text[:len(new_text) - len(appended)] + "\n"
    old, new = yaml.safe_load(old_text)["primus_pins"], yaml.safe_load(new_text)["primus_pins"]
    assert new["versions"] == dict(old["versions"], torch="2.13.0+rocm7.15.0a20260810",
                                   torchvision="0.28.0+rocm7.15.0a20260810", torchaudio="2.11.0+rocm7.15.0a20260810",
                                   apex="1.12.0+rocm7.15.0a20260810", rocm_sdk="7.15.0a20260810")
    assert new["torch"]["packages"][0] == "torch==2.13.0+rocm7.15.0a20260810"
    assert "amd-torchvision-device-{arch}==0.28.0+rocm7.15.0a20260810" in new["torch"]["device_packages"]
    # nothing else changed: the same lines but those holding the nightly's versions
    changed = [(a, b) for a, b in zip(old_text.splitlines(), new_text.splitlines()) if a != b]
    assert len(old_text.splitlines()) == len(new_text.splitlines())
    assert all("a20260720" in a and "a20260810" in b for a, b in changed), changed
    assert dict((k, v) for k, v in new.items() if k not in ("versions", "torch")) == \
        dict((k, v) for k, v in old.items() if k not in ("versions", "torch"))
    assert new["versions"]["transformer_engine"] == old["versions"]["transformer_engine"]


def test_a_device_wheel_at_another_version_makes_the_date_incomplete(tmp_path):
    wheels = nightly_set("20260720") + [w for w in nightly_set("20260810") if w[0] != "amd-torch-device-gfx950"]
    wheels.append(("amd-torch-device-gfx950", "2.12.1+rocm7.15.0a20260810", "py3-none-linux_x86_64"))
    with world_index(tmp_path, wheels) as index:
        proc, out = run(tmp_path, index)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert ("amd-torch-device-gfx950: no wheel at 2.12.0+rocm7.15.0a20260810 (has 2.12.1+rocm7.15.0a20260810)"
            in proc.stdout)
    assert "20260720 is already the newest complete date" in proc.stdout
    assert not out.exists()


def test_only_the_archs_asked_for_are_required(tmp_path):
    wheels = nightly_set("20260720") + [w for w in nightly_set("20260810") if not w[0].endswith("gfx950")]
    with world_index(tmp_path, wheels) as index:
        proc = run(tmp_path, index, "--archs", "gfx942")[0]
        assert proc.returncode == 0 and "20260810 complete" in proc.stdout, proc.stdout
        proc = run(tmp_path, index)[0]
        assert proc.returncode == 2 and "rocm-sdk-device-gfx950: not published" in proc.stdout, proc.stdout


def test_no_complete_date_fails_with_what_to_do(tmp_path):
    with world_index(tmp_path, nightly_set("20260810", skip=("torchaudio",))) as index:
        proc, out = run(tmp_path, index)
    assert proc.returncode == 1
    assert "torchaudio: not published" in proc.stdout and "wheelhouse or a site mirror" in proc.stderr
    assert not out.exists()


@pytest.mark.parametrize("tags, fits", [
    ("cp312-cp312-manylinux_2_28_x86_64", True), ("py3-none-any", True), ("cp312-abi3-linux_x86_64", True),
    ("cp311-cp311-manylinux_2_28_x86_64", False), ("cp312-cp312-manylinux_2_28_aarch64", False),
    ("cp312-cp312-win_amd64", False),
])
def test_fits_cp312(tags, fits):
    assert relock.fits_cp312(tags) is fits


PINS_SDK = os.path.join(ROOT, "roles", "primus", "vars", "releases", "v26.5.1.yml")


def sdk_set(date, skip=()):
    """The SDK projects a release that pins the SDK first needs at a date (besides rocm-sdk-devel)."""
    return [(n, "7.15.0a%s" % date, "py3-none-linux_x86_64") for n in ("rocm", "rocm-sdk-core", "rocm-sdk-libraries")
            if n not in skip]


def test_a_release_that_pins_the_sdk_first_needs_the_sdk_projects_at_the_date(tmp_path):
    wheels = (nightly_set("20260727") + sdk_set("20260727")
              + nightly_set("20260801") + sdk_set("20260801", skip=("rocm-sdk-core",))
              + nightly_set("20260803") + [("rocm", "7.15.0a20260803", "py3-none-linux_x86_64"),
                                           ("rocm-sdk-core", "7.15.0a20260802", "py3-none-linux_x86_64"),
                                           ("rocm-sdk-libraries", "7.15.0a20260803", "py3-none-linux_x86_64")])
    with world_index(tmp_path, wheels) as index:
        proc = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "relock.py"), "--pins", PINS_SDK, "--out",
                               str(tmp_path / "new.yml"), "--index", index, "--te-index", index],
                              capture_output=True, text=True, check=False)
        # the release file without the SDK step: the SDK projects are not needed
        proc_plain, _out = run(tmp_path, index, "--te-index", index)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "20260801 incomplete: rocm-sdk-core: not published" in proc.stdout
    assert "20260803 incomplete: rocm-sdk-core: not published" in proc.stdout   # 0802's is another date's
    assert "20260727 is already the newest complete date" in proc.stdout
    assert proc_plain.returncode == 0 and "20260803 complete" in proc_plain.stdout, proc_plain.stdout


TE_GLUE = "transformer_engine_rocm_torch"
TE_CORE = "transformer_engine_rocm7"


@pytest.mark.parametrize("glue, core, date, want", [
    # the newest of the line dated no later than the nightly, whose core has a cp312 wheel
    (["2.15.0.dev0+rocm7.15.0a20260716.a07e607", "2.15.0.dev0+rocm7.15.0a20260724.2a26bf8",
      "2.15.0.dev0+rocm7.15.0a20260801.c0ffee1", "2.16.0.dev0+rocm10.0.0a20260725.1234567"],
     ["2.15.0.dev0+rocm7.15.0a20260716.a07e607", "2.15.0.dev0+rocm7.15.0a20260724.2a26bf8",
      "2.15.0.dev0+rocm7.15.0a20260801.c0ffee1"], "20260727", "2.15.0.dev0+rocm7.15.0a20260724.2a26bf8"),
    # the newer one's core has no cp312 wheel: the older one
    (["2.15.0.dev0+rocm7.15.0a20260716.a07e607", "2.15.0.dev0+rocm7.15.0a20260724.2a26bf8"],
     ["2.15.0.dev0+rocm7.15.0a20260716.a07e607"], "20260727", "2.15.0.dev0+rocm7.15.0a20260716.a07e607"),
    (["2.16.0.dev0+rocm10.0.0a20260725.1234567"], [], "20260727", ""),
])
def test_the_te_proposal_is_the_newest_usable_wheel_of_the_line(glue, core, date, want):
    glue_files = ["%s-%s.tar.gz" % (TE_GLUE, v) for v in glue]
    core_files = ["%s-%s-cp312-cp312-linux_x86_64.whl" % (TE_CORE, v) for v in core] + [
        "%s-%s-cp311-cp311-linux_x86_64.whl" % (TE_CORE, v) for v in glue]
    version, why = relock.te_proposal(glue_files, core_files, "7.15.0", date)
    assert version == want
    assert bool(why) == (not want)
    if not want:
        assert "no transformer_engine_rocm_torch for ROCm 7.15.0" in why


def git(*argv, cwd=None):
    return subprocess.run(["git"] + list(argv), cwd=cwd, capture_output=True, text=True, check=True,
                          env=dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
                                   GIT_COMMITTER_EMAIL="t@t")).stdout.strip()


def test_te_and_resolve_commits_write_the_proposal_and_the_full_commit(tmp_path):
    repo = tmp_path / "TransformerEngine"
    repo.mkdir()
    git("init", "-q", "-b", "main", cwd=repo)
    (repo / "a").write_text("1")
    git("add", "a", cwd=repo)
    git("commit", "-qm", "one", cwd=repo)
    full = git("rev-parse", "HEAD", cwd=repo)
    version = "2.15.0.dev0+rocm7.15.0a20260719.%s" % full[:7]
    wheels = [(TE_GLUE, version, "py3-none-any"), (TE_CORE, version, "cp312-cp312-linux_x86_64")]
    with open(PINS) as handle:
        text = handle.read().replace("https://github.com/ROCm/TransformerEngine.git", "file://%s" % repo)
    pins = tmp_path / "pins.yml"
    pins.write_text(text)
    with world_index(tmp_path, nightly_set("20260720") + wheels) as index:
        argv = [sys.executable, os.path.join(ROOT, "tools", "relock.py"), "--pins", str(pins), "--index", index,
                "--te-index", index]
        proposed = subprocess.run(argv + ["--out", str(tmp_path / "p.yml")], capture_output=True, text=True,
                                  check=False)
        written = subprocess.run(argv + ["--out", str(tmp_path / "te.yml"), "--te"], capture_output=True, text=True,
                                 check=False)
    assert proposed.returncode == 2 and "TE: proposed %s" % version in proposed.stdout, proposed.stdout
    assert written.returncode == 0, written.stdout + written.stderr
    te = yaml.safe_load((tmp_path / "te.yml").read_text())["primus_pins"]
    assert te["te"]["wheel"] == "transformer_engine_rocm_torch==" + version
    assert te["versions"]["transformer_engine"] == version
    assert te["sources"]["te"]["ref"] == full[:7] and te["sources"]["te"]["ref_kind"] == "short_commit"
    resolved = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "relock.py"), "--pins",
                               str(tmp_path / "te.yml"), "--out", str(tmp_path / "full.yml"), "--no-nightly",
                               "--resolve-commits", "--te-index", "http://127.0.0.1:9/none"],
                              capture_output=True, text=True, check=False)
    assert resolved.returncode == 0, resolved.stdout + resolved.stderr
    final = yaml.safe_load((tmp_path / "full.yml").read_text())["primus_pins"]
    assert final["sources"]["te"]["ref"] == full and final["sources"]["te"]["ref_kind"] == "commit"
    # nothing else of the file changed
    assert dict(final, sources=None) == dict(te, sources=None)


def test_an_abbreviated_commit_the_repository_does_not_have_is_an_error(tmp_path):
    repo = tmp_path / "r"
    repo.mkdir()
    git("init", "-q", "-b", "main", cwd=repo)
    (repo / "a").write_text("1")
    git("add", "a", cwd=repo)
    git("commit", "-qm", "one", cwd=repo)
    with pytest.raises(ValueError, match="has no single commit 0000000"):
        relock.resolve_commit("file://%s" % repo, "0000000")
    with pytest.raises(ValueError, match="cannot clone"):
        relock.resolve_commit("file://%s/none" % tmp_path, "1234567")
    with pytest.raises(ValueError, match="is not a repository and an abbreviated commit"):
        relock.resolve_commit("--upload-pack=touch /tmp/x", "1234567")


def test_fixes_come_only_from_a_release_no_later_than_the_new_nightly_and_not_with_no_fixes(tmp_path):
    wheels = nightly_set("20260720") + nightly_set("20260724")
    with world_index(tmp_path, wheels) as index:
        proc, out = run(tmp_path, index)            # v26.5.1's nightly (20260727) is later than 20260724
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "installed fixes" not in proc.stdout
        assert "installed_fixes" not in yaml.safe_load(out.read_text())["primus_pins"]
        releases = tmp_path / "releases"
        releases.mkdir()
        with open(os.path.join(os.path.dirname(PINS), "v26.5.1.yml")) as handle:
            other = yaml.safe_load(handle)
        other["primus_pins"]["versions"]["rocm_sdk"] = "7.15.0a20260722"
        (releases / "v26.5.1.yml").write_text(yaml.safe_dump(other))
        proc, out = run(tmp_path, index, "--releases-dir", str(releases))
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "from release v26.5.1 (nightly 20260722, no later than 20260724)" in proc.stdout
        assert yaml.safe_load(out.read_text())["primus_pins"]["installed_fixes"] == other["primus_pins"]["installed_fixes"]
        proc, out = run(tmp_path, index, "--releases-dir", str(releases), "--no-fixes")
        assert proc.returncode == 0 and "installed fixes" not in proc.stdout
        assert "installed_fixes" not in yaml.safe_load(out.read_text())["primus_pins"]


def test_add_fixes_refuses_a_layout_it_cannot_append_to():
    fixes = [{"name": "a", "stage": "torch", "path": "x/y.so", "link_to": "z/y.so"}]
    text = "primus_pins:\n  release: v1\nother: 1\n"
    with pytest.raises(ValueError, match="last block"):
        relock.add_fixes(text, fixes)
    assert yaml.safe_load(relock.add_fixes("primus_pins:\n  release: v1\n", fixes))["primus_pins"]["installed_fixes"] == fixes


def test_a_release_file_that_is_not_yaml_is_named_and_nothing_is_written(tmp_path):
    releases = tmp_path / "releases"
    releases.mkdir()
    (releases / "broken.yml").write_text("primus_pins: [unclosed\n")
    with world_index(tmp_path, nightly_set("20260720") + nightly_set("20260724")) as index:
        proc, out = run(tmp_path, index, "--releases-dir", str(releases))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "release file %s cannot be read as a release file" % (releases / "broken.yml") in proc.stderr
    assert "--no-fixes" in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists()
