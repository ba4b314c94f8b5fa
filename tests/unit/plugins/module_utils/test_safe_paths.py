# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Directory settings checked and normalised before anything uses them (plugins/module_utils/safe_paths.py)."""

import os
import stat

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.primus.trainenv.plugins.filter.path_check import FilterModule, path_check, path_list_check
from ansible_collections.primus.trainenv.plugins.module_utils.modes import current, make_dirs, restrict_umask, write_atomic
from ansible_collections.primus.trainenv.plugins.module_utils.safe_paths import (
    check_command,
    check_dir,
    describe_char,
    is_safe,
    normalise,
    private_dir_problem,
    visible,
)


@pytest.mark.parametrize("given, path", [
    ("/home/u/envs/primus-env", "/home/u/envs/primus-env"),
    ("/home/u/envs/primus-env/", "/home/u/envs/primus-env"),
    ("//home//u///envs/primus-env//", "/home/u/envs/primus-env"),
    ("/home/./u/envs/./primus-env/.", "/home/u/envs/primus-env"),
    ("/scratch/u@site/env=1,x+y%z_v-2.5", "/scratch/u@site/env=1,x+y%z_v-2.5"),
])
def test_accepted_directories_are_normalised_once(given, path):
    result = check_dir(given, "PRIMUS_BASE")
    assert (result["path"], result["problem"], result["given"]) == (path, "", given)
    assert check_dir(result["path"], "PRIMUS_BASE")["path"] == path


@pytest.mark.parametrize("given, char, position", [
    ("/home/u/$(touch x)", "'$' (U+0024)", 9),
    ("/home/u/`id`", "'`' (U+0060)", 9),
    ("/home/u/a\nb", "a newline (U+000A)", 10),
    ("/home/u/a\tb", "a tab (U+0009)", 10),
    ("/home/u/it's", "''' (U+0027)", 11),
    ('/home/u/"x"', "'\"' (U+0022)", 9),
    ("/home/u/[exec touch x]", "'[' (U+005B)", 9),
    ("/home/u/a;b", "';' (U+003B)", 10),
    ("/home/u/my env", "a space (U+0020)", 11),
    ("/home/u/a\\b", "'\\' (U+005C)", 10),
    ("/home/u/{a}", "'{' (U+007B)", 9),
    ("/home/u/a}", "'}' (U+007D)", 10),
    ("/home/u/a:b", "':' (U+003A)", 10),
    ("/home/u/*", "'*' (U+002A)", 9),
    ("/home/u/caf\u00e9", "'\u00e9' (U+00E9)", 12),
    ("/home/u/\u200bx", "the invisible character ZERO WIDTH SPACE (U+200B)", 9),
    ("/home/u/a\x00b", "a NUL byte (U+0000)", 10),
    ("/home/~u", "'~' (U+007E)", 7),
    ("/home/u/a!b", "'!' (U+0021)", 10),
])
def test_unsafe_characters_are_named_visibly(given, char, position):
    result = check_dir(given, "PRIMUS_BASE")
    assert result["problem"].startswith("PRIMUS_BASE %s contains %s at position %d; only letters" % (visible(given), char, position))
    assert "\n" not in result["problem"] and "\t" not in result["problem"]
    assert result["fix"].startswith("choose a directory whose path uses only those characters")
    assert result["path"] == given


@pytest.mark.parametrize("given", ["/", "//", "/./", "/..", "///.//", "/tmp/..", "/a/b/../.."])
def test_paths_that_are_the_root_are_refused(given):
    result = check_dir(given, "PRIMUS_BASE")
    assert result["problem"] == "PRIMUS_BASE %s is the root directory / once normalised" % visible(given)


def test_dotdot_is_refused_with_the_lexical_path_offered():
    result = check_dir("/home/u/../shared/env", "primus_build_dir (SRC_DIR)")
    assert "contains a '..' component" in result["problem"]
    assert "'/home/shared/env'" in result["fix"]


def test_relative_tilde_empty_and_not_a_string():
    assert check_dir("envs/x", "PRIMUS_BASE")["problem"] == "PRIMUS_BASE must be an absolute path, got 'envs/x'"
    assert check_dir("~/x", "PRIMUS_BASE")["problem"] == \
        "PRIMUS_BASE must be an absolute path, got '~/x' (~ is not expanded here)"
    assert check_dir("", "PRIMUS_BASE")["problem"] == "PRIMUS_BASE is not set"
    assert check_dir("", "primus_cache_dir", required=False)["problem"] == ""
    assert check_dir(5, "PRIMUS_BASE")["problem"] == "PRIMUS_BASE must be a string, got a number"


def test_length_limits_are_explained_before_the_kernel_says_errno_36():
    long_name = "/home/" + "x" * 256
    assert "a component of 256 characters" in check_dir(long_name, "PRIMUS_BASE")["problem"]
    assert check_dir("/home/" + "x" * 255, "PRIMUS_BASE")["problem"] == ""
    deep = "/home" + "/abcdefghij" * 103
    assert "characters long; at most 1024" in check_dir(deep, "PRIMUS_BASE")["problem"]


def test_interpreter_settings():
    assert check_command("", "PRIMUS_PYTHON")["problem"] == ""
    assert check_command("python3.12", "PRIMUS_PYTHON")["problem"] == ""
    assert check_command("/opt/py/bin/python3.12", "PRIMUS_PYTHON")["problem"] == ""
    assert "contains '$' (U+0024)" in check_command("/opt/$(x)/python", "PRIMUS_PYTHON")["problem"]
    assert "must be an absolute path or a command name" in check_command("bin/python", "PRIMUS_PYTHON")["problem"]
    assert "a component of 300 characters" in check_command("/" + "p" * 300, "PRIMUS_PYTHON")["problem"]


def test_helpers():
    assert normalise("//a//b/./c/") == "/a/b/c"
    assert is_safe("/a/b") and not is_safe("/a b") and not is_safe(None)
    assert describe_char("\n") == "a newline (U+000A)"
    assert visible("a\nb'c\\") == "'a\\nb\\'c\\\\'"


class _Stat(object):
    def __init__(self, mode, uid):
        self.st_mode, self.st_uid = mode, uid


def test_private_dir_problem():
    assert private_dir_problem(None, 1000) == ""
    assert private_dir_problem(_Stat(stat.S_IFDIR | 0o700, 1000), 1000) == ""
    assert private_dir_problem(_Stat(stat.S_IFDIR | 0o755, 1000), 1000) == ""
    assert private_dir_problem(_Stat(stat.S_IFDIR | 0o775, 1000), 1000) == "is writable by others (mode 0775)"
    assert private_dir_problem(_Stat(stat.S_IFDIR | 0o1777, 1000), 1000) == "is writable by others (mode 1777)"
    assert private_dir_problem(_Stat(stat.S_IFDIR | 0o700, 0), 1000, {0: "root"}.get) == \
        "is owned by root (uid 0), not by you"
    assert private_dir_problem(_Stat(stat.S_IFLNK | 0o777, 1000), 1000).startswith("is a symbolic link")
    assert private_dir_problem(_Stat(stat.S_IFREG | 0o600, 1000), 1000) == "exists and is not a directory"


def test_path_check_filter():
    assert FilterModule().filters() == {"path_check": path_check, "path_list_check": path_list_check}
    assert path_check("/a/b/", "PRIMUS_BASE")["path"] == "/a/b"
    assert path_check("python3.12", "PRIMUS_PYTHON", "command")["problem"] == ""


def test_path_list_check_expands_home_and_refuses_a_string():
    checked = path_list_check(["~/Primus", "/opt/x/", "rel"], "primus_megatron_checkouts", "/home/me")
    assert [c["path"] for c in checked[:2]] == ["/home/me/Primus", "/opt/x"]
    assert checked[2]["problem"].startswith("primus_megatron_checkouts must be an absolute path")
    # A string is one problem naming the setting, not a check of each of its characters.
    (only,) = path_list_check("/home/me/Primus", "primus_megatron_checkouts", "/home/me")
    assert only["problem"] == "primus_megatron_checkouts must be a list of directories, got a string"
    with pytest.raises(AnsibleFilterError, match="kind must be dir or command"):
        path_check("/a", "X", "file")


def test_make_dirs_gives_every_level_its_mode_whatever_the_umask(tmp_path):
    old = os.umask(0)
    try:
        created = make_dirs(str(tmp_path / "a" / "b" / "c"), 0o750)
    finally:
        os.umask(old)
    assert created == [str(tmp_path / "a"), str(tmp_path / "a" / "b"), str(tmp_path / "a" / "b" / "c")]
    assert all(stat.S_IMODE(os.stat(p).st_mode) == 0o750 for p in created)
    assert make_dirs(str(tmp_path / "a"), 0o700) == []


def test_make_dirs_accepts_a_directory_made_meanwhile(tmp_path, monkeypatch):
    real_mkdir = os.mkdir

    def racing_mkdir(path, mode=0o777):
        real_mkdir(path, mode)          # another run made it first
        real_mkdir(path, mode)

    monkeypatch.setattr(os, "mkdir", racing_mkdir)
    assert make_dirs(str(tmp_path / "x" / "y")) == []
    assert os.path.isdir(str(tmp_path / "x" / "y"))


def test_write_atomic_sets_the_mode_replaces_in_one_step_and_leaves_no_temporary_file(tmp_path):
    path = str(tmp_path / "d" / "env.sh")
    old = os.umask(0)
    try:
        write_atomic(path, b"old\n", 0o644, 0o750)
        before = os.stat(path).st_ino
        write_atomic(path, b"new\n", 0o600)
    finally:
        os.umask(old)
    assert current(path) == (b"new\n", 0o600)
    assert os.stat(path).st_ino != before, "a new file renamed over the old one"
    assert stat.S_IMODE(os.stat(str(tmp_path / "d")).st_mode) == 0o750
    assert os.listdir(str(tmp_path / "d")) == ["env.sh"]
    assert current(str(tmp_path / "missing")) == (None, None)


def test_write_atomic_on_failure_keeps_the_old_file_and_no_temporary_one(tmp_path, monkeypatch):
    path = str(tmp_path / "manifest.json")
    write_atomic(path, b"{}", 0o644)

    def broken_rename(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "rename", broken_rename)
    with pytest.raises(OSError, match="No space left"):
        write_atomic(path, b"{\"new\": 1}", 0o644)
    assert current(path) == (b"{}", 0o644)
    assert os.listdir(str(tmp_path)) == ["manifest.json"]


def test_restrict_umask_keeps_stricter_bits():
    old = os.umask(0o077)
    try:
        assert restrict_umask() == 0o077
        assert os.umask(0) == 0o077
        os.umask(0)
        restrict_umask()
        assert os.umask(0) == 0o022
    finally:
        os.umask(old)
