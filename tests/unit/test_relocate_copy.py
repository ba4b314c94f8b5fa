"""tests/functional/bases.py: the copy of a converged base at another path of the same length."""
import base64
import hashlib
import importlib.util
import json
import os

import pytest

_SPEC = importlib.util.spec_from_file_location(
    "functional_bases", os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "functional",
                                     "bases.py"))
bases = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(bases)


def sha_hex(data):
    return hashlib.sha256(data).hexdigest()


def sha_record(data):
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


@pytest.fixture
def tree(tmp_path):
    """A small base: a script naming the base, a binary naming it, a manifest and a RECORD of their digests, a
    symlink into the base and one outside it, a hard link, a read-only file."""
    src = tmp_path / "golden-aaaa"
    (src / "venv" / "bin").mkdir(parents=True)
    (src / "venv" / "lib").mkdir()
    script = ("#!%s/venv/bin/python\nprint('hi')\n" % src).encode()
    (src / "venv" / "bin" / "tool").write_bytes(script)
    binary = b"\x7fELF\x00\x01" + os.fsencode(str(src)) + b"/lib\x00\xff" * 3
    (src / "venv" / "lib" / "x.so").write_bytes(binary)
    env = ("export PRIMUS_BASE='%s'\n" % src).encode()
    (src / "env.sh").write_bytes(env)
    (src / "manifest.json").write_text(json.dumps({"env_sh": {"sha256": sha_hex(env)}, "base": str(src)}))
    (src / "summary.txt").write_text("env.sh (sha256 %s)\n" % sha_hex(env)[:16])
    (src / "venv" / "lib" / "RECORD").write_text("../bin/tool,sha256=%s,%d\nx.so,,\n" % (sha_record(script), len(script)))
    os.symlink(str(src / "venv" / "lib"), str(src / "venv" / "lib64"))
    os.symlink("/usr/bin/python3", str(src / "venv" / "bin" / "python"))
    os.link(str(src / "env.sh"), str(src / "env.sh.hardlink"))
    (src / "readonly.txt").write_text("in %s\n" % src)
    os.chmod(str(src / "readonly.txt"), 0o444)
    os.utime(str(src / "env.sh"), ns=(1_000_000_000, 1_000_000_000))
    return src


def test_every_path_of_the_copy_names_the_copy_and_sizes_and_mtimes_stay(tree, tmp_path):
    dest = tmp_path / "copy-00bbbb"
    before = bases.fingerprint(str(tree))
    done = bases.relocate_copy(str(tree), str(dest))
    assert done["files"] == 5 and done["links"] == 1   # env.sh and its hard link are one file
    for path in ("venv/bin/tool", "venv/lib/x.so", "env.sh", "manifest.json", "readonly.txt"):
        data = (dest / path).read_bytes()
        assert os.fsencode(str(tree)) not in data and os.fsencode(str(dest)) in data, path
        assert len(data) == (tree / path).stat().st_size
    assert os.readlink(str(dest / "venv" / "lib64")) == str(dest / "venv" / "lib")
    assert os.readlink(str(dest / "venv" / "bin" / "python")) == "/usr/bin/python3"
    assert (dest / "env.sh").stat().st_mtime_ns == 1_000_000_000
    assert os.path.samefile(str(dest / "env.sh"), str(dest / "env.sh.hardlink"))
    assert oct((dest / "readonly.txt").stat().st_mode & 0o777) == "0o444"
    assert bases.fingerprint(str(tree)) == before


def test_the_digests_of_rewritten_files_are_updated_where_the_copy_records_them(tree, tmp_path):
    dest = tmp_path / "copy-00bbbb"
    done = bases.relocate_copy(str(tree), str(dest))
    manifest = json.loads((dest / "manifest.json").read_text())
    assert manifest["env_sh"]["sha256"] == sha_hex((dest / "env.sh").read_bytes())
    assert manifest["base"] == str(dest)
    record = (dest / "venv" / "lib" / "RECORD").read_text()
    assert "sha256=%s," % sha_record((dest / "venv" / "bin" / "tool").read_bytes()) in record
    assert (dest / "summary.txt").read_text() == "env.sh (sha256 %s)\n" % sha_hex((dest / "env.sh").read_bytes())[:16]
    assert done["digests"] == 3


def test_a_digest_chain_settles(tmp_path):
    """A file recording the digest of a file that records the digest of a rewritten one: each is updated in turn."""
    src = tmp_path / "golden-aaaa"
    src.mkdir()
    first = ("%s\n" % src).encode()
    second = ("sha256 %s\n" % sha_hex(first)).encode()
    (src / "a").write_bytes(first)
    (src / "b").write_bytes(second)
    (src / "c").write_text("sha256 %s\n" % sha_hex(second))
    dest = tmp_path / "copy-00bbbb"
    bases.relocate_copy(str(src), str(dest))
    assert (dest / "b").read_text() == "sha256 %s\n" % sha_hex((dest / "a").read_bytes())
    assert (dest / "c").read_text() == "sha256 %s\n" % sha_hex((dest / "b").read_bytes())


@pytest.mark.parametrize("name", ["short", "a-name-far-too-long"])
def test_a_path_of_another_length_is_refused_and_nothing_is_copied(tree, tmp_path, name):
    with pytest.raises(ValueError, match="same length"):
        bases.relocate_copy(str(tree), str(tmp_path / name))
    assert not (tmp_path / name).exists()


def test_an_existing_destination_is_refused_and_kept(tree, tmp_path):
    dest = tmp_path / "copy-00bbbb"
    dest.mkdir()
    (dest / "mine").write_text("keep")
    with pytest.raises(FileExistsError):
        bases.relocate_copy(str(tree), str(dest))
    assert (dest / "mine").read_text() == "keep" and not (dest / "env.sh").exists()


def test_same_length_name():
    assert bases.same_length_name("golden-0123456789", 32, 7) == "golden-0123456789______-00000007"
    assert len(bases.same_length_name("a-label-longer-than-the-room-there-is", 32, 123456789)) == 32
    with pytest.raises(ValueError):
        bases.same_length_name("x", 9, 1)
