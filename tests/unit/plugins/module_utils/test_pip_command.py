"""pip command lines and the isolated environment."""
import os

import pytest

from ansible_collections.primus.trainenv.plugins.module_utils._pip.command import (
    check_extra_args, check_pip_environment, install_args, pip_environ, uninstall_args, wheel_args)

PY = "/v/bin/python"
COMMON = ["--disable-pip-version-check", "--no-input", "--no-color", "--progress-bar", "off"]


def params(**kw):
    base = dict(index_url=None, extra_index_urls=[], find_links=[], no_index=False, pre=False, no_deps=False,
                no_build_isolation=False, state="present", constraints=[], requirements=None, extra_args=[])
    base.update(kw)
    return base


def test_default_environment_drops_every_pip_variable_and_config():
    base = {"PATH": "/bin", "PIP_FIND_LINKS": "/opt/wheels", "PIP_CONSTRAINT": "/etc/xdg/pip/constraints.txt",
            "PIP_CONFIG_FILE": "/home/u/pip.conf", "PIP_CERT": "/etc/ssl/ca.crt", "PIPX_HOME": "/x"}
    env = pip_environ(base, {"MAX_JOBS": 8, "PIP_NO_CACHE_DIR": "1"}, use_pip_config=False)
    assert env == {"PATH": "/bin", "PIPX_HOME": "/x", "PIP_CONFIG_FILE": os.devnull, "MAX_JOBS": "8",
                   "PIP_NO_CACHE_DIR": "1"}
    assert base["PIP_FIND_LINKS"] == "/opt/wheels"  # the caller's dict is not modified


def test_use_pip_config_keeps_the_users_configuration():
    base = {"PIP_FIND_LINKS": "/opt/wheels", "PIP_CONFIG_FILE": "/home/u/pip.conf"}
    env = pip_environ(base, {"GPU_ARCHS": "gfx942;gfx950", "EMPTY": None}, use_pip_config=True)
    assert env == {"PIP_FIND_LINKS": "/opt/wheels", "PIP_CONFIG_FILE": "/home/u/pip.conf",
                   "GPU_ARCHS": "gfx942;gfx950", "EMPTY": ""}


def test_install_args_carry_every_option_in_order_values_attached_and_requirements_after_dashdash():
    p = params(index_url="https://rocm/whl", extra_index_urls=["https://a", "https://b"], find_links=["/w"],
               no_index=True, pre=True, no_deps=True, no_build_isolation=True, constraints=["/c1", "/c2"],
               requirements="/r.txt", extra_args=["--no-cache-dir"])
    assert install_args(PY, p, ["torch==2.12.0+rocm7.15.0a20260720"], log_path="/t/d.log") == [
        PY, "-m", "pip", "install"] + COMMON + [
        "--retries", "0", "--log=/t/d.log",
        "--index-url=https://rocm/whl", "--extra-index-url=https://a", "--extra-index-url=https://b",
        "--find-links=/w", "--no-index", "--pre", "--no-deps", "--no-build-isolation",
        "--constraint=/c1", "--constraint=/c2", "--requirement=/r.txt", "--no-cache-dir",
        "--", "torch==2.12.0+rocm7.15.0a20260720"]


def test_a_value_that_looks_like_an_option_stays_a_value():
    args = install_args(PY, params(index_url="--target=/etc", constraints=["-r/etc/passwd"]), ["--user"])
    assert "--index-url=--target=/etc" in args and "--constraint=-r/etc/passwd" in args
    assert args[-2:] == ["--", "--user"]  # pip reads it as a requirement (and fails), never as an option


def test_dry_run_and_force_reinstall():
    args = install_args(PY, params(state="forcereinstall"), ["x"], report_path="/tmp/r.json")
    assert args[4:13] == COMMON + ["--retries", "0", "--dry-run", "--report=/tmp/r.json"]
    assert "--force-reinstall" in args and args[-2:] == ["--", "x"]


def test_src_metadata_run_is_offline_without_build_isolation():
    args = install_args(PY, params(no_build_isolation=True, index_url="https://i", constraints=["/c"]), ["/src"],
                        report_path="/r.json", metadata_only=True)
    expected = [PY, "-m", "pip", "install"] + COMMON + [
        "--retries", "0", "--dry-run", "--report=/r.json", "--no-deps", "--no-build-isolation", "--no-index", "--",
        "/src"]
    assert args == expected
    args = install_args(PY, params(index_url="https://i"), ["/src"], report_path="/r.json", metadata_only=True)
    assert "--index-url=https://i" in args and "--no-index" not in args and "--constraint=/c" not in args


def test_uninstall_args():
    assert uninstall_args(PY, ["tilelang", "quack-kernels"]) == [
        PY, "-m", "pip", "uninstall", "--yes", "--disable-pip-version-check", "--no-input", "--no-color", "--",
        "tilelang", "quack-kernels"]


@pytest.mark.parametrize("extra, ok", [
    (["--no-cache-dir", "--use-pep517", "-v", "-vv", "--config-settings=--build-option=-j8"], True),
    (["--target=/etc"], False), (["--target", "/etc"], False), (["-t/etc"], False), (["--prefix=/usr"], False),
    (["--root=/"], False), (["--user"], False), (["-r/etc/passwd"], False), (["--index-url=http://evil"], False),
    (["-U"], False), (["-qU"], False), (["--upgrade"], False), (["--report=/x"], False), (["--retries=5"], False),
    (["evilpkg"], False), (["--no-cache-dir", "torch"], False),
    # pip reads any unique prefix of a long option as that option (optparse): the allow-list sees through it
    (["--targ=/tmp/x"], False), (["--tar", "/tmp/x"], False), (["--prefi=/usr"], False), (["--pref=/usr"], False),
    (["--roo=/"], False), (["--use=1"], False), (["--index=https://evil"], False), (["--extra-ind=https://e"], False),
    (["--find=/w"], False), (["--no-ind"], False), (["--upg"], False), (["--force-r"], False), (["--no-dep"], False),
    (["--requirement-file=x"], False), (["--src=/x"], False), (["--pyth=/usr/bin/python3"], False),
    (["--frobnicate"], False), (["--no-cache"], True), (["--verb"], True), (["--timeout=30"], True),
    (["--only-binary=:all:"], True), (["-C", "k=v"], False), (["-Ck=v"], True),
])
def test_extra_args_are_options_that_keep_the_install_in_the_venv(extra, ok):
    if ok:
        check_extra_args(extra)
    else:
        with pytest.raises(ValueError, match=r"extra_args\[\d\]"):
            check_extra_args(extra)


def test_wheel_args_build_src_alone_with_the_tasks_indexes_constraints_and_isolation_choice():
    p = params(index_url="https://u:tok@rocm/whl", extra_index_urls=["https://a"], find_links=["/w"], no_index=True,
               pre=True, no_deps=False, no_build_isolation=True, constraints=["/c1", "/c2"], requirements="/r.txt",
               state="forcereinstall", extra_args=["--no-cache-dir"])
    assert wheel_args(PY, p, "/src/turbo", "/base/wheels/.pip-wheel-x", log_path="/t/d.log") == [
        PY, "-m", "pip", "wheel"] + COMMON + [
        "--retries", "0", "--verbose", "--log=/t/d.log", "--no-deps", "--wheel-dir=/base/wheels/.pip-wheel-x",
        "--index-url=https://u:tok@rocm/whl", "--extra-index-url=https://a", "--find-links=/w", "--no-index", "--pre",
        "--no-build-isolation", "--constraint=/c1", "--constraint=/c2", "--no-cache-dir", "--", "/src/turbo"]
    # requirements and --force-reinstall are install options: a build of src never carries them.
    args = wheel_args(PY, params(), "-rsrc", "/w")
    assert "--no-build-isolation" not in args and "--no-deps" in args and args[-2:] == ["--", "-rsrc"]
    assert not any(a.startswith(("--requirement", "--force-reinstall", "--index-url")) for a in args)


def test_wheel_args_of_a_locked_requirement_build_the_hash_checked_file_without_constraints():
    p = params(index_url="https://pypi/simple", constraints=["/c1"], extra_args=["--no-binary=tensorstore"])
    args = wheel_args(PY, p, "tensorstore==0.1.45", "/w", requirement_file="/t/locked-requirements.txt")
    assert args[-3:] == ["--no-binary=tensorstore", "--require-hashes", "--requirement=/t/locked-requirements.txt"]
    assert "tensorstore==0.1.45" not in args and "--" not in args
    assert not any(a.startswith("--constraint") for a in args) and "--index-url=https://pypi/simple" in args


@pytest.mark.parametrize("arg, reads_as", [("--targ=/tmp/x", "--target"), ("--prefi=/usr", "--prefix"),
                                           ("--index=https://evil", "--index-url"), ("--ignore-i", "--ignore-installed")])
def test_an_abbreviated_option_is_refused_naming_what_pip_reads_it_as(arg, reads_as):
    with pytest.raises(ValueError) as info:
        check_extra_args(["--no-cache-dir", arg])
    message = str(info.value)
    assert message.startswith("extra_args[1]: %r is refused" % arg) and "pip reads as %s" % reads_as in message
    assert "remove it from extra_args" in message


def test_pip_environment_allow_list():
    check_pip_environment({"PIP_CONFIG_FILE": os.devnull, "PIP_NO_CACHE_DIR": "1", "PIP_PROXY": "http://p:1"},
                          {"PIP_NO_CACHE_DIR": "1"}, False)
    check_pip_environment({"PIP_CONFIG_FILE": "/etc/pip.conf", "PIP_CERT": "/ca.pem"}, {}, True)
    for key, value in (("PIP_TARGET", "/x"), ("PIP_PREFIX", "/usr"), ("PIP_USER", "1"), ("PIP_INDEX_URL", "https://e"),
                       ("PIP_EXTRA_INDEX_URL", "https://e"), ("PIP_FIND_LINKS", "/w"), ("PIP_NO_INDEX", "1"),
                       ("PIP_SRC", "/s"), ("PIP_PYTHON", "/usr/bin/python3"), ("PIP_REQUIREMENT", "/r.txt")):
        with pytest.raises(ValueError, match="environment.%s='%s' is refused" % (key, value)):
            check_pip_environment({key: value}, {key: value}, False)


def test_the_option_tables_are_pips_own():
    """PIP_INSTALL_LONG is pip install's option list (pip 26.3, as in this venv); the allow-list is inside it."""
    from ansible_collections.primus.trainenv.plugins.module_utils._pip import command
    from ansible_collections.primus.trainenv.plugins.module_utils._pip.requirements import FILE_OPTIONS, FILE_SHORT
    pip = pytest.importorskip("pip")
    if pip.__version__ != "26.3":
        pytest.skip("the tables are pip 26.3's; this pip is %s" % pip.__version__)
    pip_internal = pytest.importorskip("pip._internal.commands.install")
    req_file = pytest.importorskip("pip._internal.req.req_file")
    parser = pip_internal.InstallCommand("install", "x").parser
    assert sorted(parser._long_opt) == sorted(command.PIP_INSTALL_LONG)
    assert dict((k, v.get_opt_string()) for k, v in parser._short_opt.items()) == command.PIP_INSTALL_SHORT
    assert set(command.EXTRA_ARGS_ALLOWED) <= set(command.PIP_INSTALL_LONG)
    file_parser = req_file.build_parser()
    assert dict((k, v.takes_value()) for k, v in file_parser._long_opt.items() if k != "--help") == FILE_OPTIONS
    assert dict((k, v.get_opt_string()) for k, v in file_parser._short_opt.items() if k != "-h") == FILE_SHORT
