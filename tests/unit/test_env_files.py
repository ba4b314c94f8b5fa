# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""env.sh and the modulefile as the playbook writes them: the real templates and the real table
(roles/primus/vars/env.yml), rendered by Ansible's own templating.

Defence in depth: preflight refuses unsafe paths, but even so every value is quoted for its
language. Here every input carries what is code in bash or Tcl ($(...), backticks, a newline,
quotes, [exec ...], ;, spaces, backslashes, braces); the files are sourced with bash, loaded with
tclsh (a minimal Modules stand-in) and with the real modulecmd, and must run nothing and give
every variable exactly the value the table's third renderer (the build environment) computes.
"""

import json
import os
import pwd
import shutil
import subprocess
import sys

import pytest
import yaml

from ansible_collections.primus.trainenv.plugins.filter import decisions
from ansible_collections.primus.trainenv.plugins.plugin_utils.env_table import render_dict, sh_quote, tcl_quote

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEMPLATES = os.path.join(REPO, "roles", "primus", "templates")
COLLECTIONS = os.path.join(REPO, ".collections")
TCLSH = shutil.which("tclsh")
MODULECMD = shutil.which("modulecmd")
# `make test` installs tclsh and modulecmd (TEST_SYSTEM_PACKAGES) and exports PRIMUS_TEST_OUTPUT: there a missing one is
# a failure (the test runs and cannot find it), never a skip; a bare pytest run without them skips.
IN_MAKE_TEST = bool(os.environ.get("PRIMUS_TEST_OUTPUT"))
NO_TCLSH = pytest.mark.skipif(TCLSH is None and not IN_MAKE_TEST, reason="tclsh is not installed (apt install tcl)")
NO_MODULECMD = pytest.mark.skipif(MODULECMD is None and not IN_MAKE_TEST,
                                  reason="Environment Modules is not installed (apt install environment-modules)")
# What is code in bash or Tcl, in one directory name.
EVIL = "h $(touch PWNED1) `touch PWNED2` '\"\n[exec touch PWNED3];\\{x}\t"
# Environment Modules 5.2 writes a value's newline unescaped into the shell code it prints (its own
# limitation: the value is cut, nothing runs); the real modulecmd gets everything else byte-exact.
EVIL_ONE_LINE = EVIL.replace("\n", "")

TCL_SHIM = r"""
proc setenv {name value} { set ::env($name) $value }
proc module-whatis {args} {}
proc conflict {args} {}
proc module-info {what args} { return [expr {$what eq "mode" && [lindex $args 0] eq "load"}] }
proc shim_add {first args} {
    set delim ":"
    if {[lindex $args 0] eq "-d"} { set delim [lindex $args 1]; set args [lrange $args 2 end] }
    set name [lindex $args 0]
    set have {}
    if {[info exists ::env($name)] && $::env($name) ne ""} { set have [split $::env($name) $delim] }
    foreach value [lrange $args 1 end] {
        set i [lsearch -exact $have $value]
        if {$i >= 0} { set have [lreplace $have $i $i] }
        if {$first} { set have [linsert $have 0 $value] } else { lappend have $value }
    }
    set ::env($name) [join $have $delim]
}
proc prepend-path {args} { shim_add 1 {*}$args }
proc append-path {args} { shim_add 0 {*}$args }
source [lindex $argv 0]
fconfigure stdout -translation binary
foreach name [lsort [array names ::env]] {
    puts -nonewline [encoding convertto utf-8 "$name=$::env($name)"]
    puts -nonewline \0
}
"""


def render(variables, *jobs):
    """Ansible's own templating of the templates / expressions in jobs, with the real table loaded."""
    request = {"variables": variables, "vars_files": [os.path.join(REPO, "roles", "primus", "vars", "env.yml")],
               "jobs": [{"template": os.path.join(TEMPLATES, j)} if j.endswith(".j2") else {"expr": j} for j in jobs]}
    proc = subprocess.run([sys.executable, os.path.join(REPO, "tests", "unit", "render_templates.py")],
                          input=json.dumps(request), capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def layout(base, build=None, cache=None, release="v26.5", archs=("gfx942", "gfx950"), max_jobs=7, host="node1",
           python_version="3.12", jit_local=False):
    venv = base + "/venv"
    site = venv + "/lib/python3.12/site-packages"
    return {
        "inventory_hostname": host,
        "preflight_plan": {"max_jobs": max_jobs, "jit_local": jit_local},
        "primus_jit_local": jit_local,
        "primus_pins": {"release": release, "python_version": python_version, "torch": {"default_archs": list(archs)}},
        "primus_paths": {
            "base": base, "venv": venv, "venv_python": venv + "/bin/python", "site_packages": site,
            "rocm": site + "/_rocm_sdk_devel", "workspace": base + "/workspace", "python": base + "/python",
            "bin": base + "/bin", "env_sh": base + "/env.sh", "constraints": base + "/pip-constraints.txt",
            "nltk_data": base + "/nltk_data",
            "build": build or "/tmp/primus-build-x", "build_given": build is not None,
            "cache": cache or "/tmp/primus-cache-x", "cache_given": cache is not None,
        },
    }


def make_base(variables, venv=True):
    """The directories and files the table's conditions look for."""
    paths = variables["primus_paths"]
    for directory in (paths["rocm"], paths["site_packages"] + "/z3/lib"):
        os.makedirs(directory)
    with open(paths["constraints"], "w") as handle:
        handle.write("torch==2.12.0+rocm7.15.0a20260720\n")
    if venv:
        os.makedirs(paths["venv"] + "/bin", exist_ok=True)
        with open(paths["venv"] + "/bin/activate", "w") as handle:   # what a venv's activate does
            handle.write('VIRTUAL_ENV="$VENV_DIR"; export VIRTUAL_ENV\nPATH="$VIRTUAL_ENV/bin:$PATH"; export PATH\n')


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text)
    return path


def environ(user, **extra):
    env = {"HOME": "/nonexistent", "USER": user, "LOGNAME": user, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    env.update(extra)
    return env


def parse_env0(data):
    return dict(item.split("=", 1) for item in data.decode("utf-8").split("\0") if "=" in item)


def pwned(root):
    return [os.path.join(d, f) for d, dirs, files in os.walk(root) for f in files + dirs if "PWNED" in f
            and f.startswith("PWNED")]


def source_env_sh(env_sh, cwd, env):
    proc = subprocess.run(["bash", "-c", 'source "$1" && env -0', "bash", env_sh], cwd=cwd, env=env,
                          capture_output=True, check=False)
    return proc


def load_with_tclsh(modulefile, cwd, env, tmp):
    shim = write(os.path.join(tmp, "shim.tcl"), TCL_SHIM)
    return subprocess.run([TCLSH, shim, modulefile], cwd=cwd, env=env, capture_output=True, check=False)


def load_with_modulecmd(modulefile, cwd, env):
    return subprocess.run(["bash", "-c", 'eval "$(modulecmd bash load "$1")" && env -0', "bash", modulefile],
                          cwd=cwd, env=env, capture_output=True, check=False)


@pytest.fixture
def hostile(tmp_path):
    return make_hostile(tmp_path, EVIL)


def make_hostile(tmp_path, evil):
    """A base, build and cache directory named with evil, and hostile values in every other input."""
    root = str(tmp_path / "sandbox")
    os.makedirs(root)
    base = os.path.join(root, "base-" + evil)
    variables = layout(base, build=os.path.join(root, "build-" + evil), cache=os.path.join(root, "cache-" + evil),
                       release="v26.5 $(touch PWNED4)%s[exec touch PWNED5] }" % ("\n" if "\n" in evil else " "),
                       archs=("gfx942$(touch PWNED6)", "gfx950`touch PWNED7`'"),
                       max_jobs="7'; touch PWNED8; '", host="node1\n$(touch PWNED9)\\",
                       python_version='3.12"$(touch PWNED10)', jit_local=True)
    make_base(variables)
    aiter_jit = variables["primus_paths"]["site_packages"] + "/aiter/jit"
    os.makedirs(aiter_jit)
    write(aiter_jit + "/module_aiter_enum.so", "prebuilt")
    table_expr = "{{ primus_env_table | combine({'conditions': {'jit_local': {'decided': primus_jit_local}}}, recursive=true) }}"
    env_text, module_text, table = render(variables, "env.sh.j2", "modulefile.tcl.j2", table_expr)
    env_sh = write(os.path.join(str(tmp_path), "out", "env.sh"), env_text)
    modulefile = write(os.path.join(str(tmp_path), "out", "modulefiles", "primus", "v26.5"), module_text)
    user = "tester"
    expected = render_dict(
        table,
        runtime={"user": user, "archs": ";".join(variables["primus_pins"]["torch"]["default_archs"]), "atomic": "0",
                 "max_jobs": variables["preflight_plan"]["max_jobs"]},
        conditions={"venv": True, "constraints": True, "rocm_sdk": True, "z3": True},
        inherit={"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": "", "PIP_CONSTRAINT": "", "NLTK_DATA": ""})
    # env.sh and the modulefile compute MAX_JOBS on the node; the hostile value arrives exported (and wins).
    env = environ(user, PRIMUS_BASE=base, PRIMUS_KFD_NODES=os.path.join(root, "no-kfd"),
                  MAX_JOBS=variables["preflight_plan"]["max_jobs"])
    return root, env_sh, modulefile, expected, env, str(tmp_path)


def assert_exact(got, expected):
    for name, value in expected.items():
        assert got.get(name) == value, "%s: %r != %r" % (name, got.get(name), value)


def test_the_hostile_values_reach_every_kind_of_entry(hostile):
    """The oracle itself holds the hostile text, so the comparisons below are about it."""
    root, env_sh, modulefile, expected, env, tmp = hostile
    assert EVIL in expected["PRIMUS_BASE"] and EVIL in expected["ROCM_PATH"] and EVIL in expected["PATH"]
    assert EVIL in expected["PRIMUS_CACHE_DIR"] and EVIL in expected["SRC_DIR"] and EVIL in expected["PIP_CONSTRAINT"]
    assert expected["MAX_JOBS"] == "7'; touch PWNED8; '" and "PWNED6" in expected["PYTORCH_ROCM_ARCH"]
    assert expected["HIP_ARCHITECTURES"] == expected["PYTORCH_ROCM_ARCH"].replace(";", ",")
    assert EVIL in expected["VIRTUAL_ENV"]
    assert expected["AITER_JIT_DIR"] == expected["PRIMUS_CACHE_DIR"] + "/aiter-jit"
    with open(env_sh) as handle:
        text = handle.read()
    # Comments carry values escaped: no hostile line break survives into a comment.
    assert "on node1\\x0a$(touch PWNED9)\\x5c." in text
    # The plan's MAX_JOBS is the build's: neither file holds it.
    with open(modulefile) as handle:
        assert "PWNED8" not in text and "PWNED8" not in handle.read()


def test_env_sh_with_hostile_values_runs_nothing_and_is_exact(hostile):
    root, env_sh, modulefile, expected, env, tmp = hostile
    proc = source_env_sh(env_sh, root, env)
    assert proc.returncode == 0, proc.stderr.decode()
    assert pwned(tmp) == []
    got = parse_env0(proc.stdout)
    assert_exact(got, expected)
    # The cache directory was made private (0700) under its hostile name.
    assert oct(os.stat(expected["PRIMUS_CACHE_DIR"]).st_mode & 0o777) == "0o700"


@NO_TCLSH
def test_modulefile_with_hostile_values_runs_nothing_and_is_exact_in_tclsh(hostile):
    root, env_sh, modulefile, expected, env, tmp = hostile
    proc = load_with_tclsh(modulefile, root, env, tmp)
    assert proc.returncode == 0, proc.stderr.decode()
    assert pwned(tmp) == []
    assert_exact(parse_env0(proc.stdout), expected)


@NO_MODULECMD
def test_modulefile_with_hostile_values_runs_nothing_and_is_exact_in_modulecmd(tmp_path):
    root, env_sh, modulefile, expected, env, tmp = make_hostile(tmp_path, EVIL_ONE_LINE)
    proc = load_with_modulecmd(modulefile, root, env)
    assert proc.returncode == 0, proc.stderr.decode()
    assert pwned(tmp) == []
    assert_exact(parse_env0(proc.stdout), expected)


@NO_MODULECMD
def test_modulefile_with_a_newline_runs_nothing_in_modulecmd(hostile):
    root, env_sh, modulefile, expected, env, tmp = hostile
    load_with_modulecmd(modulefile, root, env)
    assert pwned(tmp) == []


# ------------------------------------------------------------------ cache directories of others

def plain(tmp_path, cache):
    base = str(tmp_path / "base")
    variables = layout(base, cache=cache)
    make_base(variables, venv=False)
    env_text, module_text = render(variables, "env.sh.j2", "modulefile.tcl.j2")
    env_sh = write(str(tmp_path / "out" / "env.sh"), env_text)
    modulefile = write(str(tmp_path / "out" / "mf"), module_text)
    return base, env_sh, modulefile


def foreign_dirs(tmp_path):
    """(name, path, words in the warning) for directories that must not be adopted."""
    cases = []
    open_dir = str(tmp_path / "world-writable")
    os.makedirs(open_dir)
    os.chmod(open_dir, 0o777)
    cases.append(("world-writable", open_dir, "is writable by others (mode 777)"))
    target = str(tmp_path / "mine")
    os.makedirs(target, mode=0o700)
    link = str(tmp_path / "link")
    os.symlink(target, link)
    cases.append(("symlink", link, "is a symbolic link"))
    if os.geteuid() == 0:
        theirs = str(tmp_path / "theirs")
        os.makedirs(theirs, mode=0o755)
        os.chown(theirs, pwd.getpwnam("nobody").pw_uid, -1)
        os.chmod(str(tmp_path), 0o755)
        cases.append(("another user's", theirs, "is owned by"))
    return cases


def test_env_sh_never_uses_a_foreign_cache_dir(tmp_path):
    for label, cache, words in foreign_dirs(tmp_path):
        base, env_sh, _module = plain(tmp_path / label.replace(" ", "-"), cache)
        before = sorted(os.listdir(cache))
        proc = source_env_sh(env_sh, str(tmp_path), environ("tester", PRIMUS_BASE=base, TMPDIR=str(tmp_path)))
        assert proc.returncode == 0, proc.stderr.decode()
        got = parse_env0(proc.stdout)
        stderr = proc.stderr.decode()
        assert "[env] WARNING: PRIMUS_CACHE_DIR=%s %s" % (cache, words) in stderr, (label, stderr)
        fallback = got["PRIMUS_CACHE_DIR"]
        assert fallback != cache and fallback.startswith(str(tmp_path / "primus-cache-tester.")), label
        assert os.stat(fallback).st_uid == os.geteuid() and os.stat(fallback).st_mode & 0o077 == 0
        assert got["PIP_CACHE_DIR"] == fallback + "/pip" and got["TRITON_CACHE_DIR"] == fallback + "/triton"
        assert sorted(os.listdir(cache)) == before, "nothing was written into %s" % cache


@NO_TCLSH
def test_modulefile_never_uses_a_foreign_cache_dir(tmp_path):
    for label, cache, words in foreign_dirs(tmp_path):
        base, _env_sh, modulefile = plain(tmp_path / label.replace(" ", "-"), cache)
        proc = load_with_tclsh(modulefile, str(tmp_path), environ("tester", TMPDIR=str(tmp_path)), str(tmp_path))
        assert proc.returncode == 0, proc.stderr.decode()
        got = parse_env0(proc.stdout)
        assert "PRIMUS_CACHE_DIR=%s %s" % (cache, words) in proc.stderr.decode(), label
        assert got["PRIMUS_CACHE_DIR"].startswith(str(tmp_path / "primus-cache-tester.")), label


def test_env_sh_creates_its_own_cache_dir_private(tmp_path):
    cache = str(tmp_path / "new" / "cache")
    base, env_sh, _module = plain(tmp_path, cache)
    proc = source_env_sh(env_sh, str(tmp_path), environ("tester", PRIMUS_BASE=base))
    assert proc.returncode == 0 and "PRIMUS_CACHE_DIR" not in proc.stderr.decode(), proc.stderr.decode()
    assert parse_env0(proc.stdout)["PRIMUS_CACHE_DIR"] == cache
    assert os.stat(cache).st_mode & 0o777 == 0o700


# ------------------------------------------------------------------ the base the files were written for

def own_base(tmp_path):
    """A plain base, a symlink to it and another directory."""
    base, env_sh, modulefile = plain(tmp_path, str(tmp_path / "cache"))
    os.symlink(base, str(tmp_path / "link"))
    os.makedirs(str(tmp_path / "other"))
    return base, env_sh, modulefile, str(tmp_path / "link"), str(tmp_path / "other")


def loaders():
    return ["bash"] + (["tclsh"] if TCLSH or IN_MAKE_TEST else []) + (["modulecmd"] if MODULECMD or IN_MAKE_TEST else [])


def load(loader, tmp_path, env_sh, modulefile, env):
    if loader == "bash":
        return source_env_sh(env_sh, str(tmp_path), env)
    if loader == "tclsh":
        return load_with_tclsh(modulefile, str(tmp_path), env, str(tmp_path))
    return load_with_modulecmd(modulefile, str(tmp_path), env)


@pytest.mark.parametrize("loader", ["bash", "tclsh", "modulecmd"])
def test_primus_base_unset_or_naming_the_base_uses_the_base_the_files_were_written_for(tmp_path, loader):
    if loader not in loaders():
        pytest.skip("%s is not installed" % loader)
    base, env_sh, modulefile, link, _other = own_base(tmp_path)
    for exported in (None, "", base, link):
        env = environ("tester") if exported is None else environ("tester", PRIMUS_BASE=exported)
        proc = load(loader, tmp_path, env_sh, modulefile, env)
        assert proc.returncode == 0, (exported, proc.stderr.decode())
        got = parse_env0(proc.stdout)
        assert got["PRIMUS_BASE"] == base and got["PRIMUS_PIP_CONSTRAINTS"] == base + "/pip-constraints.txt", exported
        assert "ERROR" not in proc.stderr.decode(), (exported, proc.stderr.decode())


@pytest.mark.parametrize("loader", ["bash", "tclsh", "modulecmd"])
def test_an_exported_primus_base_of_another_directory_is_refused_naming_the_base(tmp_path, loader):
    if loader not in loaders():
        pytest.skip("%s is not installed" % loader)
    base, env_sh, modulefile, _link, other = own_base(tmp_path)
    for exported in (other, str(tmp_path / "missing")):
        proc = load(loader, tmp_path, env_sh, modulefile, environ("tester", PRIMUS_BASE=exported))
        assert proc.returncode != 0, exported
        stderr = proc.stderr.decode()
        assert "belongs to PRIMUS_BASE=%s, but PRIMUS_BASE is '%s'" % (base, exported) in stderr, stderr
        assert "export PRIMUS_BASE='%s'" % base in stderr
        assert "PRIMUS_PIP_CONSTRAINTS" not in parse_env0(proc.stdout)


def test_env_sh_refuses_a_relative_primus_base_naming_its_own(tmp_path):
    base, env_sh, _modulefile, _link, _other = own_base(tmp_path)
    proc = source_env_sh(env_sh, str(tmp_path), environ("tester", PRIMUS_BASE="base"))
    assert proc.returncode == 1
    assert "PRIMUS_BASE must be an absolute path, got 'base'" in proc.stderr.decode()
    assert "Unset it (this env.sh then uses '%s')" % base in proc.stderr.decode()


# ------------------------------------------------------------------ a build environment from the same table

BUILD_ENV = ("{{ primus_env_table | combine({'conditions': {'jit_local': {'decided': preflight_plan.jit_local}}}, "
             "recursive=true) | primus.trainenv.env_dict("
             "runtime={'user': primus_node.user, 'archs': preflight_plan.pytorch_rocm_arch, "
             "'atomic': preflight_plan.ck_atomic_fp32, 'max_jobs': preflight_plan.max_jobs}, "
             "conditions={'venv': true, 'constraints': true, 'rocm_sdk': true, 'z3': false}, "
             "inherit=primus_node.environment, overrides={'GPU_ARCHS': preflight_plan.pytorch_rocm_arch}) }}")


def test_a_cross_compiling_build_environment_from_the_same_table(tmp_path):
    """What a stage such as flash_attn gets (issue 11): GPU_ARCHS is the arch list, env.sh keeps native."""
    variables = layout("/b")
    variables["preflight_plan"].update(pytorch_rocm_arch="gfx942;gfx950", ck_atomic_fp32="1")
    variables["primus_node"] = {"user": "alice", "environment": {"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": "",
                                                                 "PIP_CONSTRAINT": "", "NLTK_DATA": "/mine/nltk"}}
    env, env_sh, module = render(variables, BUILD_ENV, "env.sh.j2", "modulefile.tcl.j2")
    rocm = "/b/venv/lib/python3.12/site-packages/_rocm_sdk_devel"
    assert env["GPU_ARCHS"] == "gfx942;gfx950" and env["PYTORCH_ROCM_ARCH"] == "gfx942;gfx950"
    assert env["HIP_ARCHITECTURES"] == env["ROCM_AMDGPU_TARGETS"] == "gfx942,gfx950"
    assert env["PATH"] == "%s/bin:%s/llvm/bin:/b/venv/bin:/usr/bin:/bin" % (rocm, rocm)
    assert env["LD_LIBRARY_PATH"].split(":")[0] == rocm + "/lib" and env["LIBRARY_PATH"] == "%s/lib:%s/lib64" % (rocm, rocm)
    assert (env["SRC_DIR"], env["PRIMUS_CACHE_DIR"], env["PIP_CACHE_DIR"]) == (
        "/tmp/primus-build-alice", "/tmp/primus-cache-alice", "/tmp/primus-cache-alice/pip")
    assert (env["MAX_JOBS"], env["NVTE_CK_IS_V3_ATOMIC_FP32"], env["PRIMUS_SKIP_PIP"]) == ("7", "1", "1")
    assert env["PIP_CONSTRAINT"] == "/b/pip-constraints.txt" and env["VIRTUAL_ENV"] == "/b/venv"
    # The user's own nltk data directories first, then the base's (the pydeps stage downloads into it).
    assert env["NLTK_DATA"] == "/mine/nltk:/b/nltk_data"
    assert "[ -n \"${GPU_ARCHS:-}\" ] || GPU_ARCHS='native'; export GPU_ARCHS" in env_sh
    assert "setenv GPU_ARCHS [set primus_env(GPU_ARCHS) [primus_getenv GPU_ARCHS {native}]]" in module
    # Every variable the build environment has, env.sh and the modulefile set too (one table).
    for name in env:
        assert (" %s=" % name in env_sh or "export %s=" % name in env_sh or "_primus_add %s " % name in env_sh
                or name == "VIRTUAL_ENV"), name
        assert ("setenv %s " % name in module or "-path %s " % name in module or "-path -d { } %s " % name in module
                or '-path -d " " %s ' % name in module), name


def build_steps_environment(variables):
    """The environment of build steps as the playbook decides it (the task of roles/preflight/tasks/sources.yml)."""
    with open(os.path.join(REPO, "roles", "preflight", "tasks", "sources.yml")) as handle:
        tasks = yaml.safe_load(handle)
    task = [t for t in tasks if t.get("name") == "Decide the environment of build steps"][0]
    expression = task["ansible.builtin.set_fact"]["preflight_environment"]
    return render(dict(variables, primus_pip_environment={}), expression)[0]


def test_build_steps_keep_the_plans_max_jobs():
    """The plan's MAX_JOBS reaches the build steps; env.sh and the modulefile compute their node's instead."""
    variables = layout("/b", max_jobs=13)
    variables["preflight_plan"].update(pytorch_rocm_arch="gfx942;gfx950", ck_atomic_fp32="1")
    variables["primus_node"] = {"user": "alice", "environment": {"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": "",
                                                                 "PIP_CONSTRAINT": "", "NLTK_DATA": ""}}
    env = build_steps_environment(variables)
    env_sh, module = render(variables, "env.sh.j2", "modulefile.tcl.j2")
    assert env["MAX_JOBS"] == "13"
    assert '[ -n "${MAX_JOBS:-}" ] || MAX_JOBS="$_primus_max_jobs"; export MAX_JOBS' in env_sh
    assert 'setenv MAX_JOBS [set primus_env(MAX_JOBS) [primus_getenv MAX_JOBS "$primus_rt(max_jobs)"]]' in module
    assert "'13'" not in env_sh and "{13}" not in module


# ------------------------------------------------------------------ aiter's JIT cache on the node

def jit_base(tmp_path, jit_local):
    base, cache = str(tmp_path / "base"), str(tmp_path / "cache")
    variables = layout(base, cache=cache, jit_local=jit_local)
    make_base(variables, venv=False)
    aiter_jit = variables["primus_paths"]["site_packages"] + "/aiter/jit"
    for name in ("module_aiter_enum.so", "module_activation.so", "core.py"):
        write(os.path.join(aiter_jit, name), "prebuilt " + name)
    env_text, module_text = render(variables, "env.sh.j2", "modulefile.tcl.j2")
    return base, cache, aiter_jit, write(str(tmp_path / "out" / "env.sh"), env_text), write(str(tmp_path / "out" / "mf"), module_text)


def test_env_sh_keeps_aiter_jit_on_the_node_with_the_prebuilt_kernels_linked(tmp_path):
    base, cache, aiter_jit, env_sh, _module = jit_base(tmp_path, True)
    jit = cache + "/aiter-jit"
    os.makedirs(jit, mode=0o700)
    write(jit + "/module_activation.so", "rebuilt for this node's GPU")   # a JIT build: kept as it is
    for _attempt in range(2):
        proc = source_env_sh(env_sh, str(tmp_path), environ("tester", PRIMUS_BASE=base))
        assert proc.returncode == 0, proc.stderr.decode()
        got = parse_env0(proc.stdout)
        assert got["AITER_JIT_DIR"] == jit and got["TRITON_CACHE_DIR"] == cache + "/triton"
        assert sorted(os.listdir(jit)) == ["module_activation.so", "module_aiter_enum.so"], "only kernel modules"
        assert os.readlink(jit + "/module_aiter_enum.so") == aiter_jit + "/module_aiter_enum.so"
        assert not os.path.islink(jit + "/module_activation.so")
    # A user's own AITER_JIT_DIR wins, and gets the prebuilt kernels too; a new one is made private.
    mine = str(tmp_path / "mine")
    proc = source_env_sh(env_sh, str(tmp_path), environ("tester", PRIMUS_BASE=base, AITER_JIT_DIR=mine))
    assert parse_env0(proc.stdout)["AITER_JIT_DIR"] == mine and os.path.islink(mine + "/module_aiter_enum.so")
    assert os.stat(mine).st_mode & 0o077 == 0


def test_env_sh_leaves_aiter_jit_alone_on_a_local_base(tmp_path):
    base, cache, aiter_jit, env_sh, module = jit_base(tmp_path, False)
    assert "AITER_JIT_DIR" not in open(env_sh).read() and "AITER_JIT_DIR" not in module
    proc = source_env_sh(env_sh, str(tmp_path), environ("tester", PRIMUS_BASE=base))
    assert proc.returncode == 0 and "AITER_JIT_DIR" not in parse_env0(proc.stdout)


@NO_TCLSH
def test_modulefile_keeps_aiter_jit_on_the_node_with_the_prebuilt_kernels_linked(tmp_path):
    base, cache, aiter_jit, _env_sh, module = jit_base(tmp_path, True)
    proc = load_with_tclsh(module, str(tmp_path), environ("tester"), str(tmp_path))
    assert proc.returncode == 0, proc.stderr.decode()
    jit = parse_env0(proc.stdout)["AITER_JIT_DIR"]
    assert jit == cache + "/aiter-jit" and os.stat(jit).st_mode & 0o077 == 0
    assert sorted(os.listdir(jit)) == ["module_activation.so", "module_aiter_enum.so"]
    assert os.readlink(jit + "/module_aiter_enum.so") == aiter_jit + "/module_aiter_enum.so"


# ------------------------------------------------------------------ MAX_JOBS of the node that uses the files

GIB_KIB = decisions.GIB // 1024
AS_ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="a fake /proc/meminfo needs root (unshare -m, mount --bind); "
                                                       "CI runs the unit tests as root")
TWO_CPUS = pytest.mark.skipif(not {0, 1} <= os.sched_getaffinity(0), reason="needs CPUs 0 and 1 (taskset -c 0,1)")
LOADERS = ["bash", "tclsh", "modulecmd"]


@pytest.fixture(scope="module")
def node_files(tmp_path_factory):
    """env.sh and the modulefile of a base whose release default is two archs (no GPU on the test node)."""
    tmp = tmp_path_factory.mktemp("max-jobs")
    base = str(tmp / "base")
    variables = layout(base, archs=("gfx942", "gfx950"), max_jobs=99)
    make_base(variables, venv=False)
    env_text, module_text = render(variables, "env.sh.j2", "modulefile.tcl.j2")
    return (str(tmp), base, write(str(tmp / "out" / "env.sh"), env_text),
            write(str(tmp / "out" / "modulefiles" / "primus" / "v26.5"), module_text), env_text, module_text)


def on_fake_node(node_files, loader, cpus, mem_kib, **extra):
    """MAX_JOBS after sourcing env.sh / loading the modulefile in a clean environment, on CPUs cpus (taskset)
    with MemAvailable mem_kib kB (None: no such line) in a /proc/meminfo bind-mounted in a mount namespace."""
    tmp, base, env_sh, modulefile, _env_text, _module_text = node_files
    lines = ["MemTotal:       %d kB" % (2 * 1024 * GIB_KIB), "MemFree:        1024 kB"]
    if mem_kib is not None:
        lines.append("MemAvailable:   %d kB" % mem_kib)
    meminfo = write(os.path.join(tmp, "meminfo-%s" % mem_kib), "\n".join(lines + ["Buffers:        0 kB", ""]))
    if loader == "bash":
        argv = ["bash", "-c", 'source "$1" && env -0', "bash", env_sh]
    elif loader == "modulecmd":
        argv = ["bash", "-c", 'eval "$(modulecmd bash load "$1")" && env -0', "bash", modulefile]
    else:
        argv = [TCLSH, write(os.path.join(tmp, "shim.tcl"), TCL_SHIM), modulefile]
    env = environ("tester", PRIMUS_BASE=base, PRIMUS_KFD_NODES=os.path.join(tmp, "no-kfd"), **extra)
    proc = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                           'mount --bind "$1" /proc/meminfo && shift && exec taskset -c "$@"', "sh", meminfo, cpus]
                          + argv, cwd=tmp, env=env, capture_output=True, check=False)
    assert proc.returncode == 0, proc.stderr.decode()
    return parse_env0(proc.stdout)["MAX_JOBS"]


def need(loader):
    if loader not in loaders():
        pytest.skip("%s is not installed (apt install tcl environment-modules)" % loader)


def test_the_files_take_the_rule_s_constants_from_the_plan_s_code(node_files):
    env_text, module_text = node_files[4:]
    for name, value in (("gib", decisions.GIB), ("per_arch", decisions.JOB_GIB_PER_ARCH),
                        ("cap", decisions.JOBS_WITHOUT_MEMORY_FACT)):
        assert "-v %s=%s" % (name, sh_quote(value)) in env_text, name
    for name, value in (("gib", decisions.GIB), ("per_arch", decisions.JOB_GIB_PER_ARCH),
                        ("cap", decisions.JOBS_WITHOUT_MEMORY_FACT)):
        assert "set jobs_%s %s\n" % (name, tcl_quote(value)) in module_text, name
    assert "'99'" not in env_text and "{99}" not in module_text   # the plan's value is the build's only


# (CPUs, MemAvailable in KiB or None, PYTORCH_ROCM_ARCH or None (the release's two archs), OMP_NUM_THREADS or None)
NODES = {
    "one-cpu-much-memory": ("0", 400 * GIB_KIB, None, None),
    "two-cpus-much-memory": ("0,1", 400 * GIB_KIB, None, None),
    "two-jobs-of-two-archs-exactly": ("0,1", 2 * 2 * decisions.JOB_GIB_PER_ARCH * GIB_KIB, None, None),
    "a-kib-short-of-two-jobs": ("0,1", 2 * 2 * decisions.JOB_GIB_PER_ARCH * GIB_KIB - 1, None, None),
    "one-arch-two-jobs-exactly": ("0,1", 2 * decisions.JOB_GIB_PER_ARCH * GIB_KIB, "gfx942", None),
    "one-arch-a-kib-short": ("0,1", 2 * decisions.JOB_GIB_PER_ARCH * GIB_KIB - 1, "gfx942", None),
    "less-than-one-job": ("0,1", 5 * GIB_KIB, None, None),
    "no-memavailable": ("0,1", None, None, None),
    "omp-threads-do-not-count": ("0,1", 400 * GIB_KIB, None, "1"),
}


@AS_ROOT
@TWO_CPUS
@pytest.mark.parametrize("loader", LOADERS)
@pytest.mark.parametrize("node", sorted(NODES))
def test_max_jobs_is_the_plan_s_rule_on_the_node_that_uses_the_files(node_files, loader, node):
    need(loader)
    cpus, mem_kib, archs, omp = NODES[node]
    extra = dict(([("PYTORCH_ROCM_ARCH", archs)] if archs else []) + ([("OMP_NUM_THREADS", omp)] if omp else []))
    got = on_fake_node(node_files, loader, cpus, mem_kib, **extra)
    want = decisions.max_jobs(len(cpus.split(",")), (mem_kib or 0) * 1024, None, archs or ["gfx942", "gfx950"])
    assert got == str(want["jobs"]), (got, want)


@AS_ROOT
@TWO_CPUS
@pytest.mark.parametrize("loader", LOADERS)
def test_max_jobs_differs_between_nodes_and_an_exported_one_wins(node_files, loader):
    need(loader)
    small = on_fake_node(node_files, loader, "0", 5 * GIB_KIB)
    large = on_fake_node(node_files, loader, "0,1", 400 * GIB_KIB)
    assert (small, large) == ("1", "2")
    assert on_fake_node(node_files, loader, "0,1", 400 * GIB_KIB, MAX_JOBS="37") == "37"
    assert on_fake_node(node_files, loader, "0", 5 * GIB_KIB, MAX_JOBS="37") == "37"
