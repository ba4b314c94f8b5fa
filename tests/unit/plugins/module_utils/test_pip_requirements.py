"""Requirement items: name entries, requirements/constraints files as pip reads them, src identity."""
import os
import stat
import sys

import pip
import pytest

from ansible_collections.primus.trainenv.plugins.module_utils._pip.libs import load_toml_loads
from ansible_collections.primus.trainenv.plugins.module_utils._pip.requirements import (
    FileTrust, RequirementError, check_name_entry, classify, decode_requirements, logical_lines, normalize_url,
    read_requirements_file, split_vcs_url, static_project_metadata, wheel_metadata)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
from world.lib.wheel import build_sdist, build_wheel  # noqa: E402

PIP_SITE = os.path.dirname(os.path.dirname(os.path.abspath(pip.__file__)))


def test_plain_requirements(pk):
    item = classify(pk, "Torch==2.12.0+rocm7.15.0a20260720", "name[0]")
    assert (item.kind, item.name) == ("req", "torch")
    assert str(item.req.specifier) == "==2.12.0+rocm7.15.0a20260720"
    item = classify(pk, 'huggingface_hub[cli]>=0.20; python_version >= "3.8"', "name[1]")
    assert (item.kind, item.name, item.extras) == ("req", "huggingface-hub", ("cli",))
    assert item.marker is not None


@pytest.fixture
def wheels(tmp_path):
    """Real (tiny) wheel and sdist files named as the real ones are."""
    d = tmp_path / "w"
    build_wheel(str(d), "torch", "2.12.0+rocm7.15.0a20260720", requires=["filelock", "triton==3.7.1"],
                tag="cp312-cp312-linux_x86_64")
    build_wheel(str(d), "transformer_engine_rocm7", "2.15.0.dev0")
    build_wheel(str(d), "flash_attn", "2.8.1")
    build_sdist(str(d), "transformer_engine_rocm_torch", "2.15.0.dev0+rocm7.15.0a20260716.a07e607", {})
    (d / "not-a-wheel.whl").write_text("")
    return d


@pytest.mark.parametrize("text, name, version", [
    ("{w}/torch-2.12.0+rocm7.15.0a20260720-cp312-cp312-linux_x86_64.whl", "torch", "2.12.0+rocm7.15.0a20260720"),
    ("./w/transformer_engine_rocm7-2.15.0.dev0-py3-none-any.whl", "transformer-engine-rocm7", "2.15.0.dev0"),
    ("https://h/whl/amd_torch_device_gfx942-2.12.0+rocm7.15.0a20260720-py3-none-any.whl#sha256=ab",
     "amd-torch-device-gfx942", "2.12.0+rocm7.15.0a20260720"),
    # PyTorch-style index links quote the local label's '+'.
    ("https://download.example/whl/rocm6.0/torch-2.3.0%2Brocm6.0-cp312-cp312-linux_x86_64.whl", "torch",
     "2.3.0+rocm6.0"),
    ("torch @ https://h/torch-2.3.0%2Brocm6.0-cp312-cp312-linux_x86_64.whl ; python_version >= '3.8'", "torch",
     "2.3.0+rocm6.0"),
    ("torch @ file:///w/torch-2.12.0+cpu-py3-none-any.whl", "torch", "2.12.0+cpu"),
    ("{w}/transformer_engine_rocm_torch-2.15.0.dev0+rocm7.15.0a20260716.a07e607.tar.gz",
     "transformer-engine-rocm-torch", "2.15.0.dev0+rocm7.15.0a20260716.a07e607"),
    ("w/flash_attn-2.8.1-py3-none-any.whl", "flash-attn", "2.8.1"),
])
def test_archives_are_known_by_their_file_name(pk, wheels, text, name, version):
    item = classify(pk, text.format(w=wheels), "name[0]", base_dir=str(wheels.parent))
    assert (item.kind, item.name, item.version) == ("file", name, version)


def test_local_wheel_metadata_is_read_from_the_file(pk, wheels):
    item = classify(pk, str(wheels / "torch-2.12.0+rocm7.15.0a20260720-cp312-cp312-linux_x86_64.whl"), "name[0]")
    assert item.is_wheel and item.path.endswith(".whl")
    assert wheel_metadata(item.path) == (["filelock", "triton==3.7.1"], [])
    assert wheel_metadata(str(wheels / "not-a-wheel.whl")) == (None, None)


@pytest.mark.parametrize("text, message", [
    ("{w}/not-a-wheel.whl", "not a valid wheel file name"),
    ("{w}/missing-1.0-py3-none-any.whl", "looks like a file name, but .* does not exist"),
    ("./nothing-here", "looks like a path, but .* does not exist"),
    ("{w}", "is not installable: it has neither setup.py nor pyproject.toml"),
    ("torch=2.12", "= is not a valid operator; did you mean ==?"),
])
def test_bad_paths_and_names_are_errors_that_say_why(pk, wheels, text, message):
    with pytest.raises(RequirementError, match=message):
        classify(pk, text.format(w=wheels), "name[0]", base_dir=str(wheels.parent))


@pytest.mark.parametrize("text", ["--target=/tmp/x", "-r/etc/passwd", "--index-url=http://evil/simple", " -e .",
                                  "torch\n--target=/tmp", "torch\x00"])
def test_a_name_entry_is_never_an_option(pk, text):
    with pytest.raises(RequirementError, match=r"name\[3\]: .*(starts with \"-\"|line break or NUL)"):
        check_name_entry(pk, text, "name[3]")


def test_markers_empty_and_after_urls_like_pip(pk):
    item = classify(pk, "einops ;", "name[0]")
    assert (item.kind, item.name, item.marker) == ("req", "einops", None)
    item = classify(pk, "einops;python_version>='3'", "name[0]")
    assert item.marker is not None
    item = classify(pk, "git+https://h/r.git@%s#egg=r; python_version >= '3'" % ("a" * 40), "name[0]")
    assert (item.kind, item.name, item.rev) == ("vcs", "r", "a" * 40) and item.marker is not None


def test_extras_on_a_project_path(pk, tmp_path):
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "setup.py").write_text("")
    item = classify(pk, "./proj[cli,Test]", "name[0]", base_dir=str(tmp_path))
    assert (item.kind, item.path, item.extras) == ("dir", str(tmp_path / "proj"), ("cli", "test"))


@pytest.mark.parametrize("text, name, url, rev", [
    ("git+https://github.com/mlcommons/logging.git@6.0.0-rc5", None, "https://github.com/mlcommons/logging.git",
     "6.0.0-rc5"),
    ("git+https://github.com/mlperf/logging.git#egg=mlperf-logging", "mlperf-logging",
     "https://github.com/mlperf/logging.git", None),
    ("mlperf_logging @ git+https://user:tok@h/r.git@abc#subdirectory=py", "mlperf-logging", "https://user:tok@h/r.git",
     "abc"),
    ("git+ssh://git@github.com/x/y.git@v1", None, "ssh://git@github.com/x/y.git", "v1"),
])
def test_vcs_urls(pk, text, name, url, rev):
    item = classify(pk, text, "name[0]")
    assert (item.kind, item.name, item.url, item.vcs, item.rev) == ("vcs", name, url, "git", rev)


def test_split_and_normalize_urls():
    assert split_vcs_url("git+https://h/r.git@v1#egg=r&subdirectory=s") == (
        "git", "https://h/r.git", "v1", {"egg": "r", "subdirectory": "s"})
    assert normalize_url("HTTPS://User:Pw@Host.Example/r.git/") == "https://host.example/r.git"


def test_paths_and_directories(pk, tmp_path):
    (tmp_path / "setup.py").write_text("")
    item = classify(pk, str(tmp_path), "name[0]")
    assert (item.kind, item.path) == ("dir", str(tmp_path))
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "pyproject.toml").write_text("")
    item = classify(pk, "./proj", "r.txt:3", base_dir=str(tmp_path))
    assert (item.kind, item.path) == ("dir", str(tmp_path / "proj"))
    item = classify(pk, "file://%s" % tmp_path, "name[0]")
    assert item.kind == "dir"
    item = classify(pk, "https://h/x/archive.tar.gz", "name[0]")
    assert item.kind == "archive"
    # A local file that is no archive: refused by name, its content never read (pip fails on it with a raw error).
    with pytest.raises(RequirementError, match="file:///etc/passwd is a local file that is neither a wheel"):
        classify(pk, "file:///etc/passwd", "name[0]")
    item = classify(pk, "./proj", "r.txt:4", base_dir=str(tmp_path), editable=True)
    assert (item.kind, item.path) == ("editable", str(tmp_path / "proj"))
    # pip does not expand ~ in requirements: it is a relative path like any other.
    with pytest.raises(RequirementError, match="does not exist"):
        classify(pk, "~/proj", "name[0]", base_dir=str(tmp_path))


def test_invalid_requirement_names_its_origin(pk):
    with pytest.raises(RequirementError, match=r"name\[2\]: invalid requirement"):
        classify(pk, "torch[", "name[2]")


PRIMUS_LIKE = r"""# Primus requirements (shape of the real file at b511d1b)
loguru
wandb
mlflow==3.11.1   # pinned
megatron-energon==7.3.2
torchdata>=0.8.0
datasets>=3.6.0 \
    ; python_version >= "3.8"
git+https://github.com/mlcommons/logging.git@6.0.0-rc5
tqdm==4.67.3 --hash=sha256:0123
--prefer-binary
-r nested.txt
-c pins.txt
pyarrow==${PYARROW_VERSION}
"""


def test_requirements_file_like_pip(pk, tmp_path):
    (tmp_path / "requirements.txt").write_text(PRIMUS_LIKE)
    (tmp_path / "nested.txt").write_text("hip-python\n-r requirements.txt\n")  # cycles are cut
    (tmp_path / "pins.txt").write_text("torch==2.12.0+rocm7.15.0a20260720\n")
    items, constraints = read_requirements_file(pk, str(tmp_path / "requirements.txt"),
                                                environ={"PYARROW_VERSION": "21.0.0"})
    texts = [i.text for i in items]
    assert texts == ["loguru", "wandb", "mlflow==3.11.1", "megatron-energon==7.3.2", "torchdata>=0.8.0",
                     'datasets>=3.6.0     ; python_version >= "3.8"',
                     "git+https://github.com/mlcommons/logging.git@6.0.0-rc5", "tqdm==4.67.3",
                     "hip-python", "pyarrow==21.0.0"]
    assert items[6].kind == "vcs" and items[6].rev == "6.0.0-rc5"
    assert items[5].marker is not None
    assert items[0].origin.endswith("requirements.txt:2")
    assert [c.text for c in constraints] == ["torch==2.12.0+rocm7.15.0a20260720"]
    assert constraints[0].origin == "%s:1" % (tmp_path / "pins.txt")


def test_constraints_file_nested_files_stay_constraints(pk, tmp_path):
    (tmp_path / "c.txt").write_text("# Generated by tools/installation/setup.sh.\n"
                                    "# Keeps pip from replacing the ROCm GPU stack with upstream builds.\n"
                                    "torch==2.12.0+rocm7.15.0a20260720\n-r more.txt\n")
    (tmp_path / "more.txt").write_text("triton==3.7.1+gitabc.rocm7.15.0a20260720\n")
    items, constraints = read_requirements_file(pk, str(tmp_path / "c.txt"), constraint=True)
    assert items == []
    assert [c.name for c in constraints] == ["torch", "triton"]


def test_unknown_option_and_missing_file_are_errors(pk, tmp_path):
    (tmp_path / "r.txt").write_text("--frobnicate\n")
    with pytest.raises(RequirementError, match="unsupported option"):
        read_requirements_file(pk, str(tmp_path / "r.txt"))
    with pytest.raises(RequirementError, match="cannot read"):
        read_requirements_file(pk, str(tmp_path / "missing.txt"))


def test_editable_and_short_options(pk, tmp_path):
    (tmp_path / "r.txt").write_text("-e ./local\n-rsub.txt\n--requirement=sub2.txt\n--pre\n")
    (tmp_path / "sub.txt").write_text("a\n")
    (tmp_path / "sub2.txt").write_text("b\n")
    (tmp_path / "local").mkdir()
    (tmp_path / "local" / "setup.py").write_text("")
    items = read_requirements_file(pk, str(tmp_path / "r.txt"), base_dir=str(tmp_path))[0]
    assert [(i.kind, i.text) for i in items] == [("editable", "./local"), ("req", "a"), ("req", "b")]


def toml():
    return load_toml_loads([PIP_SITE])


def static_project_identity(pk, src, toml_loads):
    meta = static_project_metadata(pk, src, toml_loads)
    if meta["name"] and meta["version"]:
        return meta["name"], meta["version"], meta["how"]
    return None, None, meta["reason"]


def test_src_identity_from_static_pyproject(pk, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "Primus_Turbo"\nversion = "0.2.0+edc8d2c"\n')
    assert static_project_identity(pk, str(tmp_path), toml()) == ("primus-turbo", "0.2.0+edc8d2c", "pyproject.toml")


def test_src_identity_dynamic_version_needs_pip(pk, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\ndynamic = ["version"]\nversion = "1"\n')
    name, version, reason = static_project_identity(pk, str(tmp_path), toml())
    assert (name, version) == (None, None) and "static" in reason
    (tmp_path / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: x\nVersion: 1.2\n\nbody\n")
    assert static_project_identity(pk, str(tmp_path), toml()) == ("x", "1.2", "PKG-INFO")


def test_src_identity_setup_py_only(pk, tmp_path):
    (tmp_path / "setup.py").write_text("from setuptools import setup\nsetup()\n")
    assert static_project_identity(pk, str(tmp_path), toml())[:2] == (None, None)
    (tmp_path / "pyproject.toml").write_text('[project\n')
    with pytest.raises(RequirementError, match="cannot parse"):
        static_project_identity(pk, str(tmp_path), toml())


def test_no_toml_parser_falls_back_to_pkg_info(pk, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "1"\n')
    assert static_project_identity(pk, str(tmp_path), None) == (None, None, "no TOML parser to read pyproject.toml")


@pytest.mark.parametrize("data", [
    b"\xef\xbb\xbfeinops\ntqdm==4.67.3\n",                       # UTF-8 BOM (Windows editors)
    "\ufeffeinops\ntqdm==4.67.3\n".encode("utf-16"),              # UTF-16 with BOM
    b"# -*- coding: latin-1 -*-\neinops\ntqdm==4.67.3  # caf\xe9\n",  # PEP 263 line
])
def test_requirements_file_encodings_like_pip(pk, tmp_path, data):
    (tmp_path / "r.txt").write_bytes(data)
    assert [i.text for i in read_requirements_file(pk, str(tmp_path / "r.txt"))[0]] == ["einops", "tqdm==4.67.3"]


def test_continuation_followed_by_a_comment_line_like_pip():
    # pip joins "a\\" with the comment line (prefixed by a space), then strips the comment: "a".
    text = "einops\\\n# a comment\ntqdm\\\n==4.67.3\n# trailing \\\nwheel\n"
    assert list(logical_lines(text)) == [(1, "einops"), (3, "tqdm==4.67.3"), (6, "wheel")]


def test_env_vars_come_from_pips_environment_and_empty_ones_stay_literal(pk, tmp_path):
    (tmp_path / "r.txt").write_text("pyarrow==${PYARROW_VERSION}\nx==${EMPTY}\nlower==${lower}\n")
    with pytest.raises(RequirementError, match=r"x==\$\{EMPTY\}"):
        read_requirements_file(pk, str(tmp_path / "r.txt"), environ={"PYARROW_VERSION": "21.0.0", "EMPTY": ""})
    (tmp_path / "r.txt").write_text("pyarrow==${PYARROW_VERSION}\n")
    items = read_requirements_file(pk, str(tmp_path / "r.txt"), environ={"PYARROW_VERSION": "21.0.0"})[0]
    assert items[0].text == "pyarrow==21.0.0"
    with pytest.raises(RequirementError):  # not in the given environment: literal, as pip leaves it
        read_requirements_file(pk, str(tmp_path / "r.txt"), environ={})


@pytest.mark.parametrize("line, message", [
    ("./proj", "unnamed requirements are not allowed as constraints"),
    ("-e ./proj", "editable requirements are not allowed as constraints"),
    ("hub[cli]==1.0", "constraints cannot have extras"),
])
def test_constraints_pip_refuses_are_refused(pk, tmp_path, line, message):
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "setup.py").write_text("")
    (tmp_path / "c.txt").write_text(line + "\n")
    with pytest.raises(RequirementError, match=message):
        read_requirements_file(pk, str(tmp_path / "c.txt"), constraint=True, base_dir=str(tmp_path))


def test_decode_requirements_plain_utf8():
    assert decode_requirements("caf\u00e9\n".encode("utf-8")) == "caf\u00e9\n"


def test_static_dependencies_of_a_project(pk, tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "proj"\nversion = "1.0"\ndependencies = ["a>=1", "b; python_version < \'3\'"]\n'
        '[project.optional-dependencies]\ncli = ["c==2"]\n')
    meta = static_project_metadata(pk, str(tmp_path), toml())
    assert (meta["name"], meta["version"], meta["how"]) == ("proj", "1.0", "pyproject.toml")
    assert meta["requires"][:2] == ["a>=1", "b; python_version < '3'"]
    assert meta["requires"][2].replace(" ", "") == 'c==2;extra=="cli"' and meta["provides_extra"] == ["cli"]
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "proj"\nversion = "1.0"\ndynamic = ["dependencies"]\n')
    meta = static_project_metadata(pk, str(tmp_path), toml())
    assert meta["version"] == "1.0" and meta["requires"] is None


@pytest.mark.parametrize("line, option, fix", [
    ("-i https://evil.example/simple", "--index-url", "index_url"),
    ("-ihttps://evil.example/simple", "--index-url", "index_url"),
    ("--index-url=https://evil.example/simple", "--index-url", "index_url"),
    ("--index https://evil.example/simple", "--index-url", "index_url"),
    ("--extra-index-url https://evil.example/simple", "--extra-index-url", "extra_index_urls"),
    ("--extra=https://evil.example/simple", "--extra-index-url", "extra_index_urls"),
    ("-f /opt/wheels", "--find-links", "find_links"),
    ("--find-links=/opt/wheels", "--find-links", "find_links"),
    ("--find /opt/wheels", "--find-links", "find_links"),
    ("--no-index", "--no-index", "no_index"),
])
def test_index_options_in_requirements_and_constraints_files_are_refused(pk, tmp_path, line, option, fix):
    for constraint in (False, True):
        (tmp_path / "r.txt").write_text("alpha\n%s\n" % line)
        with pytest.raises(RequirementError) as info:
            read_requirements_file(pk, str(tmp_path / "r.txt"), constraint=constraint)
        message = str(info.value)
        assert message.startswith("%s:2: %s" % (tmp_path / "r.txt", option))
        assert "refused" in message and "use the option %s" % fix in message


def test_option_lines_are_read_like_pip_quotes_file_urls_and_abbreviations(pk, tmp_path):
    (tmp_path / "my pins.txt").write_text("gamma==1.0\n")
    (tmp_path / "url.txt").write_text("delta==2.0\n")
    (tmp_path / "more.txt").write_text("beta\n")
    (tmp_path / "r.txt").write_text('-c "my pins.txt"\n-c file://%s\n--requirem more.txt\n--constr=%s\n--pre\n'
                                    '--prefer\nalpha\n' % (tmp_path / "url.txt", tmp_path / "url.txt"))
    items, constraints = read_requirements_file(pk, str(tmp_path / "r.txt"))
    assert [i.text for i in items] == ["beta", "alpha"]
    assert [c.text for c in constraints] == ["gamma==1.0", "delta==2.0"]
    (tmp_path / "bad.txt").write_text("--pr\n")   # --pre or --prefer-binary: pip refuses it too
    with pytest.raises(RequirementError, match="ambiguous option"):
        read_requirements_file(pk, str(tmp_path / "bad.txt"))


# ---- what a refusal may show of a file, and whose files a line may include --------------------------------------

SECRET = "root:$6$SECRETSALT42$hashhashhash:19000:0:99999:7:::"


class _St(object):
    def __init__(self, uid, mode=stat.S_IFREG | 0o644, gid=None):
        self.st_uid, self.st_mode, self.st_gid = uid, mode, uid if gid is None else gid


def _trust(owners, uid=1000):
    """A FileTrust whose files are owned as owners says ({path: uid or (uid, mode)}); others are the user's."""
    def stat_fn(path):
        owner = owners.get(path, uid)
        return _St(*owner) if isinstance(owner, tuple) else _St(owner)
    return FileTrust(uid, stat_fn, {0: "root", 1000: "me", 1001: "bob"}.get)


@pytest.mark.parametrize("option", ["-r", "-c", "--requirement", "--constraint=", "-c file://"])
def test_a_line_of_an_included_file_is_never_shown(pk, tmp_path, option):
    """The user's own file includes another (the user's own too, so it is read): its bad line is named by file and
    line number and what is wrong, never by its text."""
    (tmp_path / "secret.txt").write_text("# shadow-like\n%s\n" % SECRET)
    separator = "" if option.endswith(("=", "//")) else " "
    (tmp_path / "r.txt").write_text("alpha\n%s%s%s\n" % (option, separator, tmp_path / "secret.txt"))
    with pytest.raises(RequirementError) as info:
        read_requirements_file(pk, str(tmp_path / "r.txt"), trust=_trust({}))
    message = str(info.value)
    assert message.startswith("%s:2: " % (tmp_path / "secret.txt")), message
    assert "not shown" in message and "SECRETSALT" not in message and "root:" not in message, message
    assert "not a valid requirement (PEP 508" in message, message


def test_a_line_of_the_user_s_own_named_file_is_shown_and_of_another_user_s_is_not(pk, tmp_path):
    (tmp_path / "r.txt").write_text("alpha\ntorch=2.1\n")
    with pytest.raises(RequirementError) as info:
        read_requirements_file(pk, str(tmp_path / "r.txt"), trust=_trust({}))
    assert "invalid requirement 'torch=2.1'" in str(info.value) and "did you mean ==?" in str(info.value)
    with pytest.raises(RequirementError) as info:
        read_requirements_file(pk, str(tmp_path / "r.txt"), trust=_trust({str(tmp_path / "r.txt"): 0}))
    assert str(info.value) == ("%s:2: not a valid requirement (PEP 508: a name, then extras, versions or a marker) "
                               "(= is not a valid operator; did you mean ==?) (the line is not shown: %s is not a file "
                               "of yours that the task names)" % (tmp_path / "r.txt", tmp_path / "r.txt"))


@pytest.mark.parametrize("owner, problem", [
    (0, "is owned by root (uid 0), not by you"),
    (1001, "is owned by bob (uid 1001), not by you"),
    ((1000, stat.S_IFREG | 0o666), "is writable by every user (mode 0666)"),
    ((1000, stat.S_IFREG | 0o664, 50), "is writable by its group, gid 50, which holds other users (mode 0664)"),
    ((1000, stat.S_IFDIR | 0o755), "is not a regular file"),
])
def test_a_file_another_user_can_change_is_not_included_nor_read(pk, tmp_path, owner, problem):
    (tmp_path / "theirs.txt").write_text("%s\n" % SECRET)
    (tmp_path / "r.txt").write_text("alpha\n-c %s\n" % (tmp_path / "theirs.txt"))
    read = []

    def reader(path):
        read.append(path)
        with open(path, "rb") as handle:
            return handle.read()
    with pytest.raises(RequirementError) as info:
        read_requirements_file(pk, str(tmp_path / "r.txt"), read=reader,
                               trust=_trust({str(tmp_path / "theirs.txt"): owner}))
    assert str(info.value) == (
        "%s:2: the file it includes, %s, %s. A file another user can change could make pip install (and build) anything "
        "with your rights, so it is not read. Fix: copy what you need from it into a file of your own"
        % (tmp_path / "r.txt", tmp_path / "theirs.txt", problem))
    assert read == [str(tmp_path / "r.txt")]
    # the user's own group's write bit is no problem
    own = FileTrust(1000, lambda path: _St(1000, stat.S_IFREG | 0o664), str, lambda gid: gid == 1000)
    assert own.problem(str(tmp_path / "theirs.txt")) == ""


def test_shadow_included_as_root_is_refused_without_a_line_of_it(pk, tmp_path):
    """As root, -r /etc/shadow and -c /etc/shadow: root owns the file, so it is read; its lines are no requirements,
    and the refusal shows none of them. As another user it is not read at all (root's file)."""
    if not os.path.exists("/etc/shadow"):
        pytest.skip("no /etc/shadow on this machine")
    uid = os.geteuid()
    for option in ("-r", "-c"):
        (tmp_path / "r.txt").write_text("alpha\n%s /etc/shadow\n" % option)
        with pytest.raises(RequirementError) as info:
            read_requirements_file(pk, str(tmp_path / "r.txt"), trust=FileTrust(uid))
        message = str(info.value)
        if uid == 0:
            with open("/etc/shadow") as handle:
                lines = [line.strip() for line in handle if line.strip()]
            assert message.startswith("/etc/shadow:1: "), message
            assert not any(line in message or line.split(":")[0] + ":" in message for line in lines), message
        else:
            assert "the file it includes, /etc/shadow, is owned by root (uid 0), not by you" in message


def test_read_and_decode_errors_name_no_content(pk, tmp_path):
    (tmp_path / "bad.txt").write_bytes(b"alpha\n\xffsecret\n")
    (tmp_path / "r.txt").write_text("-r bad.txt\n")
    with pytest.raises(RequirementError) as info:
        read_requirements_file(pk, str(tmp_path / "r.txt"), trust=_trust({}))
    assert str(info.value) == "cannot decode %s: it is not utf-8 text (byte 6) (save it as UTF-8)" % (tmp_path / "bad.txt")
    with pytest.raises(RequirementError) as info:
        read_requirements_file(pk, str(tmp_path / "none.txt"))
    assert str(info.value) == "cannot read %s: no such file or directory" % (tmp_path / "none.txt")
