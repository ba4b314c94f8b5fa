"""tools/wheelhouse.py --store: the built wheels of a wheel store go into the wheelhouse in the store's own layout,
each checked against its .sha256 file; tampered bytes and broken entries are refused naming the file, before anything
is copied; an entry without its .sha256 (an unfinished write, or a key whose builder failed) is skipped, as the store
itself skips it."""
import hashlib
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import wheelhouse  # noqa: E402

KEY_A, KEY_B, KEY_C = "0123456789abcdef", "fedcba9876543210", "00000000000000aa"


def put(store, component, key, wheel, data, sha256=None):
    """An entry as the playbook's store writes it: the wheel, then '<sha256>  <file>' in <file>.sha256 (sha256=False:
    no .sha256 file - a write that did not finish)."""
    entry = store / component / key
    entry.mkdir(parents=True, exist_ok=True)
    (entry / wheel).write_bytes(data)
    if sha256 is not False:
        (entry / (wheel + ".sha256")).write_text("%s  %s\n" % (sha256 or hashlib.sha256(data).hexdigest(), wheel))
    return entry / wheel


@pytest.fixture
def release(tmp_path):
    """A pins file and its (empty) lock: the wheelhouse of a release that locks nothing, so main() needs no network."""
    pins = tmp_path / "pins.yml"
    pins.write_text("primus_pins:\n  indexes: {pypi: 'http://127.0.0.1:9/simple'}\n")
    (tmp_path / "pins.lock.json").write_text(json.dumps({"lock_version": 1, "release": "t", "files": []}))
    return str(pins)


@pytest.fixture
def store(tmp_path):
    store = tmp_path / "wheel-store"
    put(store, "torchtune", KEY_A, "torchtune-0.6.1-py3-none-any.whl", b"tune wheel")
    put(store, "flash_attn", KEY_B, "flash_attn-2.8.3-cp312-cp312-linux_x86_64.whl", b"fa wheel")
    # a copy to the store that did not finish: the wheel is there, its .sha256 is not
    put(store, "flash_attn", KEY_C, "flash_attn-2.8.3-cp312-cp312-linux_x86_64.whl", b"half", sha256=False)
    # a key whose builder failed: the playbook made its directory, nobody stored a wheel
    (store / "grouped_gemm" / KEY_A).mkdir(parents=True)
    return store


def test_the_store_is_added_in_its_own_layout_verified_and_recorded(store, release, tmp_path, capsys):
    dest = tmp_path / "wheelhouse"
    assert wheelhouse.main(["--pins", release, "--dest", str(dest), "--store", str(store)]) == 0
    out = capsys.readouterr().out
    added = sorted(os.path.relpath(os.path.join(d, f), dest / "store") for d, _s, files in os.walk(dest / "store") for f in files)
    assert added == ["flash_attn/%s/flash_attn-2.8.3-cp312-cp312-linux_x86_64.whl" % KEY_B,
                     "flash_attn/%s/flash_attn-2.8.3-cp312-cp312-linux_x86_64.whl.sha256" % KEY_B,
                     "torchtune/%s/torchtune-0.6.1-py3-none-any.whl" % KEY_A,
                     "torchtune/%s/torchtune-0.6.1-py3-none-any.whl.sha256" % KEY_A]
    for rel in added:
        assert (dest / "store" / rel).read_bytes() == (store / rel).read_bytes()
    record = json.loads((dest / "wheelhouse.json").read_text())
    assert record["store"] == {
        "store/flash_attn/%s/flash_attn-2.8.3-cp312-cp312-linux_x86_64.whl" % KEY_B: hashlib.sha256(b"fa wheel").hexdigest(),
        "store/torchtune/%s/torchtune-0.6.1-py3-none-any.whl" % KEY_A: hashlib.sha256(b"tune wheel").hexdigest()}
    assert "2 built wheels" in out
    # the unfinished entry and the failed key are skipped and said so
    assert "skipped flash_attn/%s of the wheel store: no .sha256 file" % KEY_C in out
    assert "skipped grouped_gemm/%s" % KEY_A in out
    # made again without --store: the store's wheels stay listed
    assert wheelhouse.main(["--pins", release, "--dest", str(dest)]) == 0
    assert json.loads((dest / "wheelhouse.json").read_text())["store"] == record["store"]


def test_a_wheel_whose_bytes_differ_from_its_sha256_is_refused_naming_it_and_nothing_is_copied(store, release, tmp_path):
    tampered = store / "torchtune" / KEY_A / "torchtune-0.6.1-py3-none-any.whl"
    with open(tampered, "ab") as handle:
        handle.write(b"\0")
    dest = tmp_path / "wheelhouse"
    with pytest.raises(SystemExit) as exc:
        wheelhouse.main(["--pins", release, "--dest", str(dest), "--store", str(store)])
    message = str(exc.value)
    assert str(tampered) in message and "not put in the wheelhouse" in message
    assert "rm -rf '%s'" % tampered.parent in message
    assert not dest.exists()


@pytest.mark.parametrize("case, expect", [
    ("no wheel", "names torchtune-0.6.1-py3-none-any.whl, which is not beside it"),
    ("bad line", "does not hold '<sha256>  <wheel file>'"),
    ("two sums", "holds 2 .sha256 files"),
])
def test_a_broken_entry_is_refused_naming_its_file(store, release, tmp_path, case, expect):
    entry = store / "torchtune" / KEY_A
    if case == "no wheel":
        (entry / "torchtune-0.6.1-py3-none-any.whl").unlink()
    elif case == "bad line":
        (entry / "torchtune-0.6.1-py3-none-any.whl.sha256").write_text("not a checksum\n")
    else:
        put(store, "torchtune", KEY_A, "torchtune-0.6.2-py3-none-any.whl", b"other")
    with pytest.raises(SystemExit) as exc:
        wheelhouse.main(["--pins", release, "--dest", str(tmp_path / "wheelhouse"), "--store", str(store)])
    assert expect in str(exc.value) and str(entry) in str(exc.value)
    assert not (tmp_path / "wheelhouse").exists()


def test_a_store_that_is_missing_or_not_a_directory_or_not_a_store_is_refused(tmp_path, release):
    dest = str(tmp_path / "wheelhouse")
    with pytest.raises(SystemExit, match="no such directory.*primus_wheel_store"):
        wheelhouse.main(["--pins", release, "--dest", dest, "--store", str(tmp_path / "nowhere")])
    (tmp_path / "file").write_text("x")
    with pytest.raises(SystemExit, match="is not a directory"):
        wheelhouse.main(["--pins", release, "--dest", dest, "--store", str(tmp_path / "file")])
    (tmp_path / "other" / "docs").mkdir(parents=True)
    with pytest.raises(SystemExit, match="is not a build key's directory of a wheel store"):
        (tmp_path / "other" / "docs" / "README").write_text("x")
        wheelhouse.main(["--pins", release, "--dest", dest, "--store", str(tmp_path / "other")])
    with pytest.raises(SystemExit, match="the wheelhouse's own store"):
        wheelhouse.main(["--pins", release, "--dest", dest, "--store", os.path.join(dest, "store")])


def test_a_key_made_again_replaces_the_wheel_an_earlier_run_put_there(store, release, tmp_path):
    dest = tmp_path / "wheelhouse"
    assert wheelhouse.main(["--pins", release, "--dest", str(dest), "--store", str(store)]) == 0
    # the key's entry rebuilt under another file name (rm -rf of the entry, then a new build)
    entry = store / "torchtune" / KEY_A
    for name in os.listdir(entry):
        os.unlink(entry / name)
    put(store, "torchtune", KEY_A, "torchtune-0.6.1-1-py3-none-any.whl", b"rebuilt")
    assert wheelhouse.main(["--pins", release, "--dest", str(dest), "--store", str(store)]) == 0
    wheel = "torchtune-0.6.1-1-py3-none-any.whl"
    assert sorted(os.listdir(dest / "store" / "torchtune" / KEY_A)) == [wheel, wheel + ".sha256"]
    stored = json.loads((dest / "wheelhouse.json").read_text())["store"]
    assert sorted(k for k in stored if "/torchtune/" in k) == ["store/torchtune/%s/%s" % (KEY_A, wheel)]


def test_a_git_requirement_of_the_lock_is_bundled_with_its_submodules(tmp_path):
    """The lock's vcs section (a git+ URL of Primus's requirements.txt): its repository and, recursively, the
    submodules of the locked commit get bundles at <dest>/git/<host>/<path>, usable offline by git clone."""
    def git(*argv, cwd=None):
        env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
                   GIT_COMMITTER_EMAIL="t@t", GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1",
                   GIT_ALLOW_PROTOCOL="file")
        return subprocess.run(["git", "-c", "protocol.file.allow=always"] + list(argv), cwd=cwd, env=env, check=True,
                              capture_output=True, text=True).stdout.strip()

    sub, top = tmp_path / "sub", tmp_path / "logging"
    for repo in (sub, top):
        git("init", "-q", str(repo))
        (repo / "README").write_text(repo.name)
        git("add", "README", cwd=str(repo))
        git("commit", "-q", "-m", repo.name, cwd=str(repo))
    git("submodule", "add", "-q", "file://%s" % sub, "third_party/sub", cwd=str(top))
    git("commit", "-q", "-m", "with sub", cwd=str(top))
    git("tag", "6.0.0-rc5", cwd=str(top))
    commit = git("rev-parse", "HEAD", cwd=str(top))
    bundles = wheelhouse.bundle_sources({}, str(tmp_path / "wh"), {}, [
        {"name": "mlperf-logging", "version": "6.0.0rc5", "vcs": "git", "url": "file://%s" % top, "commit": commit}])
    assert sorted(bundles) == sorted(["file://%s" % top, "file://%s" % sub])
    clone = tmp_path / "clone"
    git("clone", "-q", os.path.join(str(tmp_path / "wh"), bundles["file://%s" % top]), str(clone))
    assert git("rev-parse", "6.0.0-rc5", cwd=str(clone)) == commit
