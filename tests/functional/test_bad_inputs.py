"""The bad-input matrix (issue 9, Must-show 1): every case is an inventory host of ONE playbook run
(`--tags venv,torch`, so a case that slipped through preflight would really build), all reaching the
same unprivileged target user over SSH. Each case must stop its host with its own clear message,
change nothing - the digest of its base's nearest existing directory is the same before and after -
and leave the target's interpreters untouched.
"""
import copy
import difflib
import hashlib
import json
import os
import pwd
import re
import shutil
import stat
import subprocess
import sys

import pytest
import yaml

from harness import REPO, record_timing

sys.path.insert(0, os.path.join(REPO, ".collections"))
from ansible_collections.primus.trainenv.plugins.module_utils import stage_state  # noqa: E402

pytestmark = pytest.mark.functional

ROOT_OWNED = os.geteuid() == 0   # as root the target is another user, so root's directories are foreign to it


def digest(path, shallow=False):
    """sha256 over (relative path, type, mode, owner, size, content) of everything under path;
    shallow: of path's own entries only."""
    sha = hashlib.sha256()
    if not os.path.lexists(path):
        return "absent"

    def add(full, name):
        st = os.lstat(full)
        sha.update(repr((name, stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), st.st_uid,
                         0 if stat.S_ISDIR(st.st_mode) else st.st_size)).encode())
        if stat.S_ISREG(st.st_mode) and not shallow:
            with open(full, "rb") as handle:
                sha.update(hashlib.sha256(handle.read()).digest())
        elif stat.S_ISLNK(st.st_mode):
            sha.update(os.readlink(full).encode())

    add(path, ".")
    if shallow:
        for name in sorted(os.listdir(path)):
            add(os.path.join(path, name), name)
        return sha.hexdigest()
    for root, dirs, files in os.walk(path):
        dirs.sort()
        for name in sorted(files) + dirs:
            full = os.path.join(root, name)
            add(full, os.path.relpath(full, path))
    return sha.hexdigest()


def interpreters_digest(paths):
    """The interpreters' executables (content) and their library directories (listing)."""
    sha = hashlib.sha256()
    for path in paths:
        real = os.path.realpath(path)
        with open(real, "rb") as handle:
            sha.update(hashlib.sha256(handle.read()).digest())
        lib = os.path.join(os.path.dirname(os.path.dirname(real)), "lib")
        for name in sorted(os.listdir(lib)):
            if name.startswith("python3"):
                sha.update(digest(os.path.join(lib, name), shallow=True).encode())
                for sub in ("site-packages", "dist-packages"):
                    if os.path.isdir(os.path.join(lib, name, sub)):
                        sha.update(digest(os.path.join(lib, name, sub), shallow=True).encode())
    return sha.hexdigest()


@pytest.fixture(scope="module")
def matrix(playbook, target, world, python310, python312, shared_dir):
    """(run, cases): cases[name] = (message words, directories that must not change)."""
    home = target.home
    top = os.path.join(home, "bad-inputs-%d" % os.getpid())
    foreign = os.path.join(shared_dir, "bad-inputs-foreign")   # root's, readable by the target user
    if ROOT_OWNED:
        os.makedirs(os.path.join(foreign, "cache"), mode=0o755)
        os.makedirs(os.path.join(foreign, "build"), mode=0o755)
        os.makedirs("/root/primus-bad-inputs-python", mode=0o700, exist_ok=True)
        with open("/root/primus-bad-inputs-python/python3.12", "w") as handle:
            handle.write("#!/bin/sh\necho 3.12\n")
        os.chmod("/root/primus-bad-inputs-python/python3.12", 0o755)

    def d(case, *parts):
        return os.path.join(top, case, *parts)

    n300 = "n" * 300
    cases = {
        # PRIMUS_BASE: every character that is code in bash or Tcl, or a separator
        "base-cmdsubst": ({"primus_base": d("base-cmdsubst", "x$(touch PWNED)")}, ["contains '$' (U+0024) at position"]),
        "base-backtick": ({"primus_base": d("base-backtick", "x`touch PWNED`")}, ["contains '`' (U+0060)"]),
        "base-newline": ({"primus_base": d("base-newline", "x\ny")}, ["contains a newline (U+000A)", "x\\ny'"]),
        "base-tab": ({"primus_base": d("base-tab", "x\ty")}, ["contains a tab (U+0009)"]),
        "base-squote": ({"primus_base": d("base-squote", "it's")}, ["contains ''' (U+0027)"]),
        "base-dquote": ({"primus_base": d("base-dquote", 'say"hi"')}, ["contains '\"' (U+0022)"]),
        "base-tcl": ({"primus_base": d("base-tcl", "[exec touch PWNED]")}, ["contains '[' (U+005B)"]),
        "base-semicolon": ({"primus_base": d("base-semicolon", "a;touch PWNED")}, ["contains ';' (U+003B)"]),
        "base-space": ({"primus_base": d("base-space", "my env")}, ["contains a space (U+0020)"]),
        "base-backslash": ({"primus_base": d("base-backslash", "a\\b")}, ["contains '\\' (U+005C)"]),
        "base-braces": ({"primus_base": d("base-braces", "{a}")}, ["contains '{' (U+007B)"]),
        "base-colon": ({"primus_base": d("base-colon", "a:b")}, ["contains ':' (U+003A)"]),
        "base-glob": ({"primus_base": d("base-glob", "*")}, ["contains '*' (U+002A)"]),
        "base-non-ascii": ({"primus_base": d("base-non-ascii", "caf\u00e9")}, ["contains '\u00e9' (U+00E9)"]),
        "base-root": ({"primus_base": "/"}, ["PRIMUS_BASE '/' is the root directory / once normalised"]),
        "base-slashslash": ({"primus_base": "//"}, ["PRIMUS_BASE '//' is the root directory"]),
        "base-dot": ({"primus_base": "/./"}, ["PRIMUS_BASE '/./' is the root directory"]),
        "base-dotdot": ({"primus_base": "/.."}, ["PRIMUS_BASE '/..' is the root directory"]),
        "base-parent": ({"primus_base": d("base-parent", "..", "x")}, ["contains a '..' component", "realpath -m"]),
        "base-relative": ({"primus_base": "envs/primus-env"}, ["PRIMUS_BASE must be an absolute path, got 'envs/primus-env'"]),
        "base-tilde": ({"primus_base": "~/envs/primus-env"}, ["~ is not expanded"]),
        "base-empty": ({"primus_base": ""}, ["PRIMUS_BASE is not set", 'export PRIMUS_BASE="$HOME/envs/primus-env"']),
        "base-long-name": ({"primus_base": d("base-long-name", n300)},
                           ["has a component of 300 characters", "Linux allows at most 255"]),
        "base-too-long": ({"primus_base": d("base-too-long") + "/abcdefghij" * 110}, ["characters long; at most 1024"]),
        "base-file": ({"primus_base": d("base-file", "afile", "base")},
                      ["exists and is not a directory", "Nothing was created"]),
        "base-unwritable": ({"primus_base": "/root/primus-env"}, ["is not writable by user %s" % target.user]),
        # the other directories
        "build-cmdsubst": ({"primus_build_dir": d("build-cmdsubst", "b$(touch PWNED)")},
                           ["primus_build_dir (SRC_DIR) '", "contains '$' (U+0024)"]),
        "build-relative": ({"primus_build_dir": "build"}, ["primus_build_dir (SRC_DIR) must be an absolute path, got 'build'"]),
        "cache-newline": ({"primus_cache_dir": d("cache-newline", "c\nd")}, ["primus_cache_dir '", "a newline (U+000A)"]),
        "cache-root": ({"primus_cache_dir": "//"}, ["primus_cache_dir '//' is the root directory"]),
        "venv-space": ({"primus_venv_dir": d("venv-space", "v env")}, ["primus_venv_dir (VENV_DIR) '", "a space"]),
        "workspace-quote": ({"primus_workspace_dir": d("workspace-quote", "w'x")},
                            ["primus_workspace_dir (WORKSPACE_DIR) '", "''' (U+0027)"]),
        "cache-world-writable": ({"primus_cache_dir": d("cache-world-writable", "open")},
                                 ["The cache directory %s (primus_cache_dir) is writable by others (mode 0777)"
                                  % d("cache-world-writable", "open"), "chmod go-w"]),
        "cache-symlink": ({"primus_cache_dir": d("cache-symlink", "link")},
                          ["The cache directory %s (primus_cache_dir) is a symbolic link" % d("cache-symlink", "link")]),
        # the directories stages hand to builds: rocSHMEM (Primus-Turbo's ROCSHMEM_HOME), Megatron checkouts
        "rocshmem-cmdsubst": ({"primus_rocshmem_home": d("rocshmem-cmdsubst", "r$(touch PWNED)")},
                              ["primus_rocshmem_home (ROCSHMEM_HOME) '", "contains '$' (U+0024)"]),
        "rocshmem-relative": ({"primus_rocshmem_home": "opt/rocshmem"},
                              ["primus_rocshmem_home (ROCSHMEM_HOME) must be an absolute path, got 'opt/rocshmem'"]),
        "megatron-newline": ({"primus_megatron_checkouts": [d("megatron-newline", "Pri\nmus")]},
                             ["primus_megatron_checkouts '", "contains a newline (U+000A)"]),
        "megatron-relative": ({"primus_megatron_checkouts": ["~/.cache/Primus", "src/Primus"]},
                              ["primus_megatron_checkouts must be an absolute path, got 'src/Primus'"]),
        "megatron-string": ({"primus_megatron_checkouts": d("megatron-string", "Primus")},
                            ["primus_megatron_checkouts must be a list of directories, got a string"]),
        "megatron-other-home": ({"primus_megatron_checkouts": ["~root/Primus"]},
                                ["primus_megatron_checkouts must be an absolute path, got '~root/Primus' (~ is not expanded here)"]),
        # PRIMUS_PYTHON that is not a Python
        "python-text": ({"primus_python": d("python-text", "notes.txt")},
                        ["is not Python 3.12: it cannot be run: it is not executable by user %s (mode 0644)" % target.user]),
        "python-dir": ({"primus_python": d("python-dir")}, ["is not Python 3.12: it cannot be run: it is a directory"]),
        "python-garbage": ({"primus_python": d("python-garbage", "python")},
                           ["is not Python 3.12: it ran but printed 'hello world' instead of a version"]),
        "python-dangling": ({"primus_python": d("python-dangling", "python")},
                            ["is not Python 3.12: it cannot be run: it is a dangling symlink"]),
        "python-not-a-program": ({"primus_python": d("python-not-a-program", "python")},
                                 ["the kernel cannot execute it (Exec format error): it is not a program"]),
        "python-310": ({"primus_python": python310}, ["is not Python 3.12: it is Python 3.10"]),
        "python-hostile": ({"primus_python": "/usr/bin/python3$(touch PWNED)"},
                           ["PRIMUS_PYTHON (primus_python) '/usr/bin/python3$(touch PWNED)' contains '$'"]),
        "python-long": ({"primus_python": "/" + n300}, ["PRIMUS_PYTHON (primus_python) has a component of 300 characters"]),
        # other settings
        "te-mode": ({"primus_te_mode": "fast"}, ["PRIMUS_TE_MODE must be one of auto, wheel, source (got 'fast')"]),
        "max-jobs-word": ({"primus_max_jobs": "lots"}, ["MAX_JOBS (primus_max_jobs) must be a positive integer, got 'lots'"]),
        "max-jobs-zero": ({"primus_max_jobs": "0"}, ["must be a positive integer, got '0'"]),
        "max-jobs-injection": ({"primus_max_jobs": "8; touch PWNED"}, ["must be a positive integer, got '8; touch PWNED'"]),
        "arch-typo": ({"primus_arch_override": "gfx942;gfx95x"}, ["'gfx95x' is not a GPU arch"]),
        # (the core role's argument spec refuses it before preflight's own check)
        "min-free": ({"primus_min_free_gib": "lots"}, ["primus_min_free_gib", "'lots'", "cannot be converted to an int"]),
        "jit-cache": ({"primus_jit_cache": "shared"}, ["primus_jit_cache", "auto, node, base", "shared"]),
        "mamba-cutlass": ({"primus_mamba_cutlass": "latest"}, ["primus_mamba_cutlass", "purge, pin", "latest"]),
    }
    pins_dir = d("pins-files")
    cases.update({
        # More characters that are code in bash or Tcl, or invisible
        "base-bang": ({"primus_base": d("base-bang", "a!b")}, ["contains '!' (U+0021)"]),
        "base-hash": ({"primus_base": d("base-hash", "a#b")}, ["contains '#' (U+0023)"]),
        "base-amp": ({"primus_base": d("base-amp", "a&b")}, ["contains '&' (U+0026)"]),
        "base-pipe": ({"primus_base": d("base-pipe", "a|b")}, ["contains '|' (U+007C)"]),
        "base-redirect": ({"primus_base": d("base-redirect", "a>b")}, ["contains '>' (U+003E)"]),
        "base-paren": ({"primus_base": d("base-paren", "a(b)")}, ["contains '(' (U+0028)"]),
        "base-question": ({"primus_base": d("base-question", "a?")}, ["contains '?' (U+003F)"]),
        "base-tilde-inside": ({"primus_base": d("base-tilde-inside", "a~b")}, ["contains '~' (U+007E)"]),
        "base-var": ({"primus_base": d("base-var", "${HOME}")}, ["contains '$' (U+0024)"]),
        "base-cr": ({"primus_base": d("base-cr", "a\rb")}, ["contains a carriage return (U+000D)"]),
        "base-zero-width": ({"primus_base": d("base-zero-width", "a\u200bb")},
                            ["contains the invisible character ZERO WIDTH SPACE (U+200B)"]),
        "base-rtl": ({"primus_base": d("base-rtl", "a\u202eb")}, ["(U+202E)"]),
        "base-fullwidth-slash": ({"primus_base": d("base-fullwidth-slash", "a\uff0fb")}, ["(U+FF0F)"]),
        # Hole 1: PRIMUS_BASE a real directory of the user's, empty or a base of this collection
        "base-link-etc": ({"primus_base": d("base-link-etc", "envs")},
                          ["PRIMUS_BASE '%s' cannot be used: %s is a symbolic link (to '/etc')"
                           % (d("base-link-etc", "envs"), d("base-link-etc", "envs")), "realpath"]),
        "base-link-parent": ({"primus_base": d("base-link-parent", "envs", "primus-env")},
                             ["%s is a symbolic link (to '/etc')" % d("base-link-parent", "envs")]),
        "base-link-own": ({"primus_base": d("base-link-own", "link")},
                          ["%s is a symbolic link (to '%s')" % (d("base-link-own", "link"), d("base-link-own", "real")),
                           "symlinks are followed only where the system put them"]),
        "base-not-a-base": ({"primus_base": d("base-not-a-base", "docs")},
                            ["is not empty and is not a base of primus.trainenv", "'notes.txt'",
                             "choose a new directory for PRIMUS_BASE"]),
        "base-home": ({"primus_base": home}, ["PRIMUS_BASE '%s' is not empty and is not a base of primus.trainenv" % home]),
        "base-world-writable": ({"primus_base": d("base-world-writable", "open")}, ["is writable by every user (mode 0777)"]),
        "venv-link": ({"primus_venv_dir": d("venv-link", "venv")},
                      ["The venv directory %s (primus_venv_dir (VENV_DIR)) %s is a symbolic link"
                       % (d("venv-link", "venv"), d("venv-link", "venv"))]),
        "workspace-link": ({"primus_workspace_dir": d("workspace-link", "ws")},
                           ["The workspace directory %s (primus_workspace_dir (WORKSPACE_DIR))" % d("workspace-link", "ws"),
                            "is a symbolic link"]),
        # Hole 6: what the run writes under the base is never reached through a link
        "state-link": ({"primus_base": d("state-link", "base")},
                       ["The state directory %s" % d("state-link", "base", "state"), "is a symbolic link (to '%s')"
                        % d("state-link", "elsewhere")]),
        "logs-link": ({"primus_base": d("logs-link", "base")}, ["The logs directory %s" % d("logs-link", "base", "logs"),
                                                                "is a symbolic link"]),
        "manifest-link": ({"primus_base": d("manifest-link", "base")}, ["The manifest directory", "is a symbolic link"]),
        # The base's lock file: never opened unless it is a regular file, never rm advice for a directory
        "lock-fifo": ({"primus_base": d("lock-fifo", "base")},
                      ["is in the way (it is a named pipe (FIFO), not a lock file)", "mv '"]),
        "lock-dir": ({"primus_base": d("lock-dir", "base")}, ["is in the way (it is a directory, not a lock file)", "mv '"]),
        "lock-garbage": ({"primus_base": d("lock-garbage", "base")},
                         ["cannot be read as a lock of primus.trainenv (it is not a JSON lock record)",
                          "rm -f '%s/.primus.lock'" % d("lock-garbage", "base")]),
        # Hole 2: the release name and its pins file
        "release-dotdot": ({"primus_release": "../../etc/passwd", "primus_release_file": ""},
                           ["primus_release '../../etc/passwd' is not a release name"]),
        "release-slash": ({"primus_release": "v26.5/x", "primus_release_file": ""}, ["primus_release 'v26.5/x' is not a release name"]),
        "release-unknown": ({"primus_release": "v99.1", "primus_release_file": ""},
                            ["the pins file", "v99.1.yml' cannot be used: it does not exist", "ships (v26.5"]),
        "pins-release-dotdot": ({"primus_release_file": os.path.join(pins_dir, "release-dotdot.yml")},
                                ["primus_pins.release is the string '../../../../tmp/x': not a release name"]),
        "pins-source-name": ({"primus_release_file": os.path.join(pins_dir, "source-name.yml")},
                             ["primus_pins.sources has the key '../x', which is not component names"]),
        "pins-missing": ({"primus_release_file": os.path.join(pins_dir, "none.yml")},
                         ["primus_release_file '%s' cannot be used: it does not exist" % os.path.join(pins_dir, "none.yml")]),
        "pins-not-yaml": ({"primus_release_file": os.path.join(pins_dir, "not-yaml.yml")}, ["is not valid YAML at line"]),
        "pins-list": ({"primus_release_file": os.path.join(pins_dir, "list.yml")},
                      ["has no top-level primus_pins mapping (it holds a list)"]),
        "pins-other-mapping": ({"primus_release_file": os.path.join(pins_dir, "other.yml")},
                               ["has no top-level primus_pins mapping (it holds a mapping of other keys)"]),
        "pins-missing-key": ({"primus_release_file": os.path.join(pins_dir, "missing-key.yml")},
                             ["primus_pins.te is missing: expected a mapping"]),
        "pins-missing-subkey": ({"primus_release_file": os.path.join(pins_dir, "missing-subkey.yml")},
                                ["primus_pins.torch.packages is missing: expected a list of requirements"]),
        "pins-wrong-type": ({"primus_release_file": os.path.join(pins_dir, "wrong-type.yml")},
                            ["primus_pins.sources is a list, expected a mapping of component names"]),
        # The release file's schema: wrong types at several depths, an unknown key, a bad version, a source without a
        # ref, the rocSHMEM placeholder outside the base, a fix that leaves site-packages (each refused naming the key).
        "pins-packages-string": ({"primus_release_file": os.path.join(pins_dir, "packages-string.yml")},
                                 ["primus_pins.torch.packages is the string 'torch==2.12.0+rocm7.15.0a20260720', expected "
                                  "a list of requirements"]),
        "pins-unknown-key": ({"primus_release_file": os.path.join(pins_dir, "unknown-key.yml")},
                             ["primus_pins.torch.pakages is not a key the schema knows", "did you mean packages?"]),
        "pins-bad-version": ({"primus_release_file": os.path.join(pins_dir, "bad-version.yml")},
                             ["primus_pins.versions.torch is the string '2.12 rocm': not a PEP 440 version"]),
        "pins-source-no-ref": ({"primus_release_file": os.path.join(pins_dir, "source-no-ref.yml")},
                               ["primus_pins.sources.te.ref is missing: expected a commit or branch"]),
        "pins-flag-type": ({"primus_release_file": os.path.join(pins_dir, "flag-type.yml")},
                           ["primus_pins.sources.aiter.build.isolation is the string 'yes', expected true or false"]),
        "pins-repo-option": ({"primus_release_file": os.path.join(pins_dir, "repo-option.yml")},
                             ["primus_pins.sources.turbo.repo is the string '--upload-pack=touch /tmp/PWNED': not a git "
                              "repository URL"]),
        "pins-placeholder-outside": ({"primus_release_file": os.path.join(pins_dir, "placeholder-outside.yml")},
                                     ["primus_pins.turbo.rocshmem_placeholder is the string '../../outside/x': not a "
                                      "relative path that stays inside its directory"]),
        "pins-fix-outside": ({"primus_release_file": os.path.join(pins_dir, "fix-outside.yml")},
                             ["primus_pins.installed_fixes[0].path is the string '../../../etc/profile': not a relative "
                              "path"]),
        # Releases side by side: the current link and the shared modulefiles directory
        "current-link-in-base": ({"primus_base": d("current-link-in-base", "base"),
                                  "primus_current_link": d("current-link-in-base", "base", "current")},
                                 ["primus_current_link %s is inside PRIMUS_BASE" % d("current-link-in-base", "base", "current")]),
        "current-link-dir": ({"primus_current_link": d("current-link-dir", "current")},
                             ["primus_current_link: %s is a directory, not a link; it is never replaced"
                              % d("current-link-dir", "current")]),
        "current-link-no-parent": ({"primus_current_link": d("current-link-no-parent", "none", "current")},
                                   ["its directory %s does not exist" % d("current-link-no-parent", "none")]),
        "current-link-cmdsubst": ({"primus_current_link": d("current-link-cmdsubst", "c$(touch PWNED)")},
                                  ["primus_current_link '", "contains '$' (U+0024)"]),
        "modulefiles-file": ({"primus_modulefiles_dir": d("modulefiles-file", "modules")},
                             ["primus_modulefiles_dir: %s/primus/%s is a file, not a link"
                              % (d("modulefiles-file", "modules"), "v26.5")]),
        # One release per base: a base whose stages recorded another release
        "base-other-release": ({"primus_base": d("base-other-release", "envs", "primus-v26.4")},
                               ["PRIMUS_BASE '%s' holds release v26.4 (recorded by stages venv), and this run is for "
                                "release v26.5" % d("base-other-release", "envs", "primus-v26.4"),
                                "-e primus_base=%s" % d("base-other-release", "envs", "primus-v26.5")]),
        # TE's full commit given by the user
        "te-source-ref-short": ({"primus_te_source_ref": "a07e607"},
                                ["primus_te_source_ref 'a07e607' is not a full commit (40 lower-case hex digits)"]),
        "te-source-ref-other": ({"primus_te_source_ref": "1" * 40},
                                ["primus_te_source_ref '%s' does not start with the commit the release names" % ("1" * 40)]),
        "pins-fifo": ({"primus_release_file": os.path.join(pins_dir, "fifo.yml")}, ["is not a regular file (a FIFO or a device)"]),
        "pins-dir": ({"primus_release_file": pins_dir}, ["is a directory, not a pins file"]),
        "pins-relative": ({"primus_release_file": "pins.yml"}, ["primus_release_file must be an absolute path, got 'pins.yml'"]),
        "pins-binary": ({"primus_release_file": os.path.join(pins_dir, "binary.yml")}, ["is not UTF-8 text (byte 0)"]),
        "pins-huge": ({"primus_release_file": os.path.join(pins_dir, "huge.yml")}, ["larger than any pins file"]),
        # More settings
        "max-jobs-huge": ({"primus_max_jobs": "99999999999999999999"}, ["MAX_JOBS (primus_max_jobs) is '99999999999999999999', "
                                                                        "more than 4096 parallel compile jobs"]),
        "max-jobs-5000": ({"primus_max_jobs": "5000"}, ["is '5000', more than 4096"]),
        "max-jobs-negative": ({"primus_max_jobs": "-1"}, ["must be a positive integer, got '-1'"]),
        "max-jobs-float": ({"primus_max_jobs": "1.5"}, ["must be a positive integer, got '1.5'"]),
        "te-mode-upper": ({"primus_te_mode": "WHEEL"}, ["PRIMUS_TE_MODE must be one of auto, wheel, source (got 'WHEEL')"]),
        "arch-cuda": ({"primus_arch_override": "sm_90"}, ["'sm_90' is not a GPU arch"]),
        "venv-relative": ({"primus_venv_dir": "venv"}, ["primus_venv_dir (VENV_DIR) must be an absolute path, got 'venv'"]),
        "workspace-root": ({"primus_workspace_dir": "/"}, ["primus_workspace_dir (WORKSPACE_DIR) '/' is the root directory"]),
        "build-dotdot": ({"primus_build_dir": d("build-dotdot", "..", "b")}, ["primus_build_dir (SRC_DIR)", "a '..' component"]),
        "cache-space": ({"primus_cache_dir": d("cache-space", "c d")}, ["primus_cache_dir '", "contains a space (U+0020)"]),
        "rocshmem-newline": ({"primus_rocshmem_home": d("rocshmem-newline", "r\ns")},
                             ["primus_rocshmem_home (ROCSHMEM_HOME) '", "contains a newline (U+000A)"]),
        "python-relative": ({"primus_python": "bin/python3.12"},
                            ["PRIMUS_PYTHON (primus_python) must be an absolute path or a command name, got 'bin/python3.12'"]),
        "python-space": ({"primus_python": "/usr/bin/python 3"}, ["PRIMUS_PYTHON (primus_python) '/usr/bin/python 3' contains a space"]),
        "python-missing": ({"primus_python": d("python-missing", "python3.12")},
                           ["is not Python 3.12: it cannot be run: it does not exist"]),
        # (the core role's argument spec refuses a mapping before preflight's own check)
        "megatron-mapping": ({"primus_megatron_checkouts": {"a": "/x"}},
                             ["argument 'primus_megatron_checkouts' is of type dict"]),
        "megatron-number": ({"primus_megatron_checkouts": [7]}, ["primus_megatron_checkouts must be a string, got a number"]),
        # Round 4: a checkout whose Megatron datasets directory every user can write (anyone could put a Makefile there)
        "megatron-open": ({"primus_megatron_checkouts": [d("megatron-open", "Primus")]},
                          ["The Megatron checkout %s cannot be built in by user %s: %s is writable by every user (mode "
                           "0777)" % (d("megatron-open", "Primus"), target.user, d("megatron-open", "Primus", DATASETS)),
                           "nothing is run there", "chmod -R go-w"]),
    })
    if ROOT_OWNED:
        cases.update({
            "base-foreign-owned": ({"primus_base": os.path.join(foreign, "open-base")},
                                   ["PRIMUS_BASE '%s' is owned by root (uid 0), not by you" % os.path.join(foreign, "open-base")]),
            "base-in-other-home": ({"primus_base": os.path.join(foreign, "nobody-home", "base")},
                                   ["would be created in %s, a directory of user nobody" % os.path.join(foreign, "nobody-home")]),
            "pins-shadow": ({"primus_release_file": "/etc/shadow"}, ["primus_release_file '/etc/shadow' "]),
            "cache-foreign": ({"primus_cache_dir": os.path.join(foreign, "cache")},
                              ["The cache directory %s (primus_cache_dir) is owned by root (uid 0), not by you"
                               % os.path.join(foreign, "cache"), "ask root (or an admin) to remove"]),
            "build-foreign": ({"primus_build_dir": os.path.join(foreign, "build")},
                              ["The build directory %s (primus_build_dir (SRC_DIR)) is owned by root (uid 0)"
                               % os.path.join(foreign, "build"), "set primus_build_dir to a directory of your own"]),
            "python-unreachable": ({"primus_python": "/root/primus-bad-inputs-python/python3.12"},
                                   ["it cannot be run: user %s may not reach or run it (permission denied" % target.user]),
            # Round 4: another user's checkout (root's, its datasets directory open so that a build there would
            # succeed) with a Makefile that writes a canary: refused before anything runs, naming it and its owner.
            "megatron-foreign": ({"primus_megatron_checkouts": [os.path.join(foreign, "megatron", "Primus")]},
                                 ["The Megatron checkout %s cannot be built in by user %s: %s is owned by root (uid 0), "
                                  "not by you" % (os.path.join(foreign, "megatron", "Primus"), target.user,
                                                  os.path.join(foreign, "megatron", "Primus")),
                                  "build helpers_cpp there as root", "Nothing was created or changed."]),
        })

    defaulted = sorted(name for name, (host_vars, _words) in cases.items() if "primus_base" not in host_vars)
    for name, (host_vars, _words) in cases.items():
        host_vars.setdefault("primus_base", d(name, "envs", "primus-env"))
    # The target user's own files for the cases: one directory per case, the base's nearest existing one.
    script = ["set -e", "umask 022"]
    for name in cases:
        script.append("mkdir -p %s" % quote(d(name)))
    script += [
        "echo x > %s" % quote(d("base-file", "afile")),
        "mkdir -m 777 %s && chmod 777 %s" % (quote(d("cache-world-writable", "open")), quote(d("cache-world-writable", "open"))),
        "mkdir -m 700 %s && ln -s %s %s" % (quote(d("cache-symlink", "real")), quote(d("cache-symlink", "real")),
                                            quote(d("cache-symlink", "link"))),
        "echo notes > %s && chmod 644 %s" % (quote(d("python-text", "notes.txt")), quote(d("python-text", "notes.txt"))),
        "printf '#!/bin/sh\\necho \"hello world\"\\n' > %s && chmod 755 %s" % (
            quote(d("python-garbage", "python")), quote(d("python-garbage", "python"))),
        "ln -s %s %s" % (quote(d("python-dangling", "gone")), quote(d("python-dangling", "python"))),
        "printf 'ELF\\001garbage' > %s && chmod 755 %s" % (
            quote(d("python-not-a-program", "python")), quote(d("python-not-a-program", "python"))),
    ]
    script += [
        "ln -s /etc %s" % quote(d("base-link-etc", "envs")),
        "ln -s /etc %s" % quote(d("base-link-parent", "envs")),
        "mkdir %s && ln -s %s %s" % (quote(d("base-link-own", "real")), quote(d("base-link-own", "real")),
                                     quote(d("base-link-own", "link"))),
        "mkdir %s && echo notes > %s" % (quote(d("base-not-a-base", "docs")), quote(d("base-not-a-base", "docs", "notes.txt"))),
        "mkdir -m 777 %s && chmod 777 %s" % (quote(d("base-world-writable", "open")), quote(d("base-world-writable", "open"))),
        "mkdir %s && ln -s %s %s" % (quote(d("venv-link", "real")), quote(d("venv-link", "real")), quote(d("venv-link", "venv"))),
        "mkdir %s && ln -s %s %s" % (quote(d("workspace-link", "real")), quote(d("workspace-link", "real")),
                                     quote(d("workspace-link", "ws"))),
    ]
    script += [
        "mkdir -p %s && printf 'default:\\n\\ttrue\\n' > %s && chmod 777 %s" % (
            quote(d("megatron-open", "Primus", DATASETS)), quote(d("megatron-open", "Primus", DATASETS, "Makefile")),
            quote(d("megatron-open", "Primus", DATASETS))),
    ]
    stamp = json.dumps(stage_state.make_stamp("venv", "v26.4", {"release": "v26.4"}, {}, "node", "2026-01-01T00:00:00Z"))
    other_state = d("base-other-release", "envs", "primus-v26.4", "state")
    modules = d("modulefiles-file", "modules", "primus")
    script += [
        "mkdir -p %s && printf '%%s' %s > %s"
        % (quote(other_state), quote(stamp), quote(os.path.join(other_state, "venv.json"))),
        "mkdir -p %s" % quote(d("current-link-dir", "current")),
        "mkdir -p %s && echo '#%%Module' > %s" % (quote(modules), quote(os.path.join(modules, "v26.5"))),
    ]
    for name in ("state", "logs", "manifest"):
        case = "%s-link" % name
        inside = d(case, "base", "state" if name != "state" else "x")
        elsewhere = d(case, "elsewhere")
        script.append("mkdir -p %s %s && ln -s %s %s" % (quote(inside), quote(elsewhere), quote(elsewhere),
                                                         quote(d(case, "base", name))))
    script.append("rmdir %s" % quote(d("state-link", "base", "x")))
    for name, make in (("lock-fifo", "mkfifo"), ("lock-dir", "mkdir"), ("lock-garbage", "echo garbage >")):
        script.append("mkdir -p %s && %s %s" % (quote(d(name, "base", "state")), make, quote(d(name, "base", ".primus.lock"))))
    made = target.run(["bash", "-c", "\n".join(script)])
    assert made.returncode == 0, made.stderr

    # The pins files of the release cases (read on the controller).
    os.makedirs(pins_dir, exist_ok=True)
    with open(world["pins"]) as handle:
        good = handle.read()
    pins = yaml.safe_load(good)

    def variant(name, change):
        data = copy.deepcopy(pins)
        change(data["primus_pins"])
        with open(os.path.join(pins_dir, name), "w") as handle:
            yaml.safe_dump(data, handle)
    variant("release-dotdot.yml", lambda p: p.update(release="../../../../tmp/x"))
    variant("source-name.yml", lambda p: p["sources"].update({"../x": {}}))
    variant("missing-key.yml", lambda p: p.pop("te"))
    variant("missing-subkey.yml", lambda p: p["torch"].pop("packages"))
    variant("wrong-type.yml", lambda p: p.update(sources=["flash_attn"]))
    variant("packages-string.yml", lambda p: p["torch"].update(packages="torch==2.12.0+rocm7.15.0a20260720"))
    variant("unknown-key.yml", lambda p: p["torch"].update(pakages=[]))
    variant("bad-version.yml", lambda p: p["versions"].update(torch="2.12 rocm"))
    variant("source-no-ref.yml", lambda p: p["sources"]["te"].pop("ref"))
    variant("flag-type.yml", lambda p: p["sources"]["aiter"]["build"].update(isolation="yes"))
    variant("repo-option.yml", lambda p: p["sources"]["turbo"].update(repo="--upload-pack=touch /tmp/PWNED"))
    variant("placeholder-outside.yml", lambda p: p["turbo"].update(rocshmem_placeholder="../../outside/x"))
    variant("fix-outside.yml", lambda p: p.update(installed_fixes=[{"name": "x", "stage": "torch",
                                                                    "path": "../../../etc/profile",
                                                                    "before": "a", "after": "b"}]))
    for name, text in (("not-yaml.yml", "primus_pins: [unclosed\n  key: {\n"), ("list.yml", "- a\n- b\n"),
                       ("other.yml", "name: x\nversion: 1\n")):
        with open(os.path.join(pins_dir, name), "w") as handle:
            handle.write(text)
    with open(os.path.join(pins_dir, "binary.yml"), "wb") as handle:
        handle.write(b"\xff\xfe\x00garbage")
    with open(os.path.join(pins_dir, "huge.yml"), "w") as handle:
        handle.write("# x\n" * 300000)
    os.mkfifo(os.path.join(pins_dir, "fifo.yml"))
    if ROOT_OWNED:
        hostile_checkout(os.path.join(foreign, "megatron", "Primus"), os.path.join(foreign, "canary"))
        os.makedirs(os.path.join(foreign, "open-base"), mode=0o777)
        os.chmod(os.path.join(foreign, "open-base"), 0o777)
        os.makedirs(os.path.join(foreign, "nobody-home"), mode=0o777)
        os.chmod(os.path.join(foreign, "nobody-home"), 0o777)
        os.chown(os.path.join(foreign, "nobody-home"), pwd.getpwnam("nobody").pw_uid, -1)

    watched = {name: [d(name)] for name in cases}
    for name in ("base-link-etc", "base-link-parent", "pins-shadow"):
        watched.setdefault(name, []).append("/etc")   # its names: the target user cannot read all of it
    for name in ("base-foreign-owned", "base-in-other-home", "megatron-foreign"):
        watched.setdefault(name, []).append(foreign)
    for name in ("base-root", "base-slashslash", "base-dot", "base-dotdot"):
        watched[name].append("/")
    watched["cache-foreign"] = watched.get("cache-foreign", []) + [foreign]
    watched["build-foreign"] = watched.get("build-foreign", []) + [foreign]
    # A relative base would land in the remote user's working directory (its home), "~/..." in a "~" there.
    relative = [os.path.join(home, "envs"), os.path.join(home, "~")]
    assert not any(os.path.lexists(p) for p in relative)

    def snapshot():
        return {name: [",".join(sorted(os.listdir(p))) if p == "/etc" else digest(p, shallow=p == "/") for p in paths]
                for name, paths in watched.items()}

    interpreters = [python312, python310, "/usr/bin/python3"]
    before, interpreters_before = snapshot(), interpreters_digest(interpreters)
    run = playbook("venv,torch", hosts={"bad-" + name: case[0] for name, case in cases.items()})
    record_timing("bad-input matrix: %d cases in one run (unprivileged, SSH)" % len(cases), run.seconds)
    after, interpreters_after = snapshot(), interpreters_digest(interpreters)
    names = {top: "<dir>", foreign: "<root's dir>", pins_dir: "<pins>", home: "~", world["pins"]: "<world pins>",
             target.user: "<user>", python312: "<python3.12>", python310: "<python3.10>",
             # The checkout's own collection (ansible.cfg's collections_path): the same table from any clone.
             os.path.join(REPO, ".collections", "ansible_collections", "primus", "trainenv"): "<collection>"}
    yield run, cases, before, after, (interpreters_before, interpreters_after), relative, names, defaulted
    subprocess.run(["rm", "-rf", top], check=False)
    shutil.rmtree(foreign, ignore_errors=True)


def quote(text):
    return "'" + text.replace("'", "'\\''") + "'"


DATASETS = os.path.join("third_party", "Megatron-LM", "megatron", "core", "datasets")


def hostile_checkout(checkout, canaries):
    """A Primus checkout of root's with Megatron's datasets Makefile (the world's) that first writes a canary into
    canaries (a directory every user can write) - and no helpers_cpp; its datasets directory every user can write, so
    that a build there would succeed for any user. Returns the canary's path."""
    sys.path.insert(0, os.path.join(REPO, "tests"))
    from world.lib.repos import MEGATRON_HELPERS, MEGATRON_MAKEFILE  # pylint: disable=import-outside-toplevel
    datasets = os.path.join(checkout, DATASETS)
    os.makedirs(datasets)
    os.makedirs(canaries, exist_ok=True)
    os.chmod(canaries, 0o777)
    canary = os.path.join(canaries, "made-by-their-makefile")
    with open(os.path.join(datasets, "Makefile"), "w") as handle:
        handle.write("CANARY := $(shell touch %s)\n" % canary + MEGATRON_MAKEFILE)
    with open(os.path.join(datasets, "helpers.cpp"), "w") as handle:
        handle.write(MEGATRON_HELPERS)
    for root, dirs, _files in os.walk(checkout):
        for name in dirs:
            os.chmod(os.path.join(root, name), 0o755)
    os.chmod(checkout, 0o755)
    os.chmod(datasets, 0o777)
    return canary


def test_the_matrix_has_at_least_100_cases_and_the_run_fails(matrix):
    run, cases = matrix[0], matrix[1]
    assert len(cases) >= 100 or not ROOT_OWNED
    assert run.rc != 0, run
    assert set(run.stats) == set("bad-" + name for name in cases), run


def test_each_case_stops_its_host_with_its_own_message(matrix):
    run, cases = matrix[0], matrix[1]
    problems = []
    for name, (_vars, words) in sorted(cases.items()):
        host = "bad-" + name
        # The host fails again after the run summary with the same message (roles/report): that is not a second failure.
        failed = [r for r in run.results if r["host"] == host and r["status"] == "failed"
                  and not r["task"].endswith("Stop - this host failed")]
        stats = run.stats.get(host, {})
        if len(failed) != 1 or stats.get("failed") != 1 or stats.get("changed") != 0:
            unreachable = [r["result"].get("msg") for r in run.results if r["host"] == host and r["status"] == "unreachable"]
            problems.append("%s: %d failed task(s), recap %s %s" % (name, len(failed), stats, unreachable))
            continue
        message = failed[0]["result"].get("msg", "")
        missing = [w for w in words if w not in message]
        if missing:
            problems.append("%s: %r not in %r" % (name, missing, message))
        if "Traceback" in str(failed[0]["result"].get("exception", "")) or "Traceback" in message or "[Errno" in message:
            problems.append("%s: a raw Python error: %r" % (name, message))
    assert not problems, "\n".join(problems)


def test_nothing_changed_anywhere(matrix):
    run, cases, before, after, interpreters, relative = matrix[:6]
    changed = [name for name in cases if before[name] != after[name]]
    assert not changed, "changed: %s" % changed
    assert interpreters[0] == interpreters[1], "an interpreter of the target changed"
    assert not any(os.path.lexists(p) for p in relative)
    pwned = subprocess.run(["find", "/tmp", os.path.dirname(relative[0]), "-maxdepth", "4", "-name", "PWNED*"],
                           capture_output=True, text=True, check=False).stdout
    assert pwned == ""


def test_no_message_quotes_a_file_or_advises_deleting_outside_the_user_s_own_dirs(matrix):
    run = matrix[0]
    messages = [r["result"].get("msg", "") for r in run.results if r["status"] == "failed"]
    shadow = ""
    if ROOT_OWNED:
        with open("/etc/shadow") as handle:
            shadow = handle.readline().strip()
    for message in messages:
        assert not shadow or shadow.split(":")[0] + ":" not in message, message
        for system in ("/usr", "/etc", "/root/.pyenv", "/bin", "/lib"):
            assert "rm -rf '%s" % system not in message and "rm '%s" % system not in message, message


# The README's table of the matrix: generated from this run, never written by hand (tests/unit/test_bad_input_table.py
# checks that it lists exactly the cases of this file). PRIMUS_WRITE_README=1 rewrites it; otherwise a table that
# differs from this run's messages fails the test.
TABLE_BEGIN = "<!-- The bad-input table: generated by tests/functional/test_bad_inputs.py (PRIMUS_WRITE_README=1); do not edit. -->"
TABLE_END = "<!-- End of the bad-input table. -->"
README = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "docs", "reliability.md")


def table_text(rows):
    lines = [TABLE_BEGIN, "", "| Case | Input | Message (its start; `<dir>` is the case's directory, `N` a position in it, "
             "`<commit>` a commit of the simulated world) |", "|---|---|---|"]
    for name, given, message in rows:
        lines.append("| `%s` | %s | %s |" % (name, cell(given, 90), cell(message, 300)))
    return "\n".join(lines + ["", TABLE_END])


def cell(text, limit):
    text = text if len(text) <= limit else text[:limit - 1].rstrip() + "\u2026"
    return "`%s`" % text.replace("|", "\\|").replace("`", "'") if text else ""


def shown(value, names):
    text = value if isinstance(value, str) else json.dumps(value)
    text = text.encode("unicode_escape").decode("ascii") if any(not (" " <= c <= "~") for c in text) else text
    for path, name in sorted(names.items(), key=lambda item: -len(item[0])):
        text = text.replace(path, name)
    # What depends on this run's paths and on what else is in the user's home: the table stays the same run to run.
    text = re.sub(r" at position \d+", " at position N", text)
    # The world's commits and its server's port are made anew by each world build.
    text = re.sub(r"\b[0-9a-f]{40}\b", "<commit>", text)
    text = re.sub(r"http://127\.0\.0\.1:\d+", "http://<world>", text)
    text = re.sub(r" is \d+ characters long", " is N characters long", text)
    return re.sub(r"(not a base of primus\.trainenv \(it has no state/ directory and holds ).*?(, which a run)", "\\1\u2026\\2",
                  text)


def test_the_readme_table_is_this_run_s(matrix):
    if not ROOT_OWNED:
        pytest.skip("the README's table is the run as root (the root-only cases included)")
    run, cases, names, defaulted = matrix[0], matrix[1], matrix[6], matrix[7]
    rows = []
    for name in sorted(cases):
        failed = [r for r in run.results if r["host"] == "bad-" + name and r["status"] == "failed"]
        message = failed[0]["result"].get("msg", "") if failed else "(no failure)"
        given = ", ".join("%s=%s" % (key, shown(value, names)) for key, value in sorted(cases[name][0].items())
                          if not (key == "primus_base" and name in defaulted))
        rows.append((name, given, shown(message, names)))
    text = table_text(rows)
    with open(README) as handle:
        readme = handle.read()
    start, end = readme.find(TABLE_BEGIN), readme.find(TABLE_END)
    assert start >= 0 and end > start, "docs/reliability.md has no bad-input table markers"
    current = readme[start:end + len(TABLE_END)]
    if os.environ.get("PRIMUS_WRITE_README") == "1":
        with open(README, "w") as handle:
            handle.write(readme[:start] + text + readme[end + len(TABLE_END):])
        return
    changed = [line for line in difflib.unified_diff(current.splitlines(), text.splitlines(), lineterm="", n=0)
               if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    assert current == text, ("docs/reliability.md's bad-input table is not this run's (rerun with PRIMUS_WRITE_README=1):\n"
                             + "\n".join(changed[:20]))


def test_a_non_utf8_byte_in_primus_base_is_named_not_a_codec_traceback(playbook, target):
    """PRIMUS_BASE exported with a byte that is not UTF-8 (a name in another encoding): named, nothing created."""
    top = os.path.join(target.home, "bad-utf8-%d" % os.getpid())
    base = top + "/caf" + b"\xe9".decode("utf-8", "surrogateescape")   # Latin-1's e-acute
    run = playbook("venv", env={"PRIMUS_BASE": base})
    assert run.rc != 0
    failed = run.failed()
    assert len(failed) == 1, run
    message = failed[0]["result"]["msg"]
    assert "PRIMUS_BASE '%s/caf\\xe9' contains the byte 0xe9, which is not UTF-8" % top in message, message
    assert "codec" not in run.output and "Traceback" not in run.output
    assert not os.path.lexists(top)


# --------------------------------------------------------------------------- round 4: what a stage runs and reads
# Beside the matrix (which stops every host in preflight), runs that reach the stages: another user's Megatron checkout
# (a build there would run its Makefile), requirements files that include files the user did not write, and source
# repositories that are none, are not there or lack the commit.

SECRET = "primus-secret-line: s3cr3t-7f3a9c"


def git(*args, cwd):
    return subprocess.run(["git"] + list(args), cwd=cwd, check=True, capture_output=True, text=True,
                          env=dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
                                   GIT_COMMITTER_EMAIL="t@t")).stdout.strip()


def give(tree, user):
    """Everything under tree to user, as that user's own clone would be."""
    entry = pwd.getpwnam(user)
    os.chown(tree, entry.pw_uid, entry.pw_gid)
    for root, dirs, files in os.walk(tree):
        for name in dirs + files:
            os.lchown(os.path.join(root, name), entry.pw_uid, entry.pw_gid)


def pins_with_primus(world, path, repo, commit):
    """The world's pins with sources.primus at repo and commit (no submodules), written to path (readable by all)."""
    with open(world["pins"]) as handle:
        data = yaml.safe_load(handle)
    data["primus_pins"]["sources"]["primus"].update(repo=repo, ref=commit, ref_kind="commit", submodules=False)
    with open(path, "w") as handle:
        yaml.safe_dump(data, handle)
    os.chmod(path, 0o644)
    return path


def report_dir(shared_dir, name):
    path = os.path.join(shared_dir, "reports-" + name)
    os.makedirs(path, mode=0o700)
    os.chmod(path, 0o700)
    return path


def everything_written(run, bases, report):
    """The run's output, every task result, the hosts' stage logs and the run summary, as one text."""
    texts = [run.stdout, run.stderr, json.dumps(run.results)]
    for base in bases:
        logs = os.path.join(base, "logs")
        for name in sorted(os.listdir(logs)) if os.path.isdir(logs) else []:
            with open(os.path.join(logs, name), errors="replace") as handle:
                texts.append(handle.read())
    for name in sorted(os.listdir(report)):
        if os.path.isfile(os.path.join(report, name)):
            with open(os.path.join(report, name), errors="replace") as handle:
                texts.append(handle.read())
    return "\n".join(texts)


@pytest.fixture(scope="module")
def bad_primus(target, world, shared_dir):
    """A Primus stand-in (the target user's own repository, file://) with one commit per requirements file: one that
    includes /etc/shadow (-r, -c), one that includes a file with a secret line that the user can read but did not write
    (root's, as root); the pins file of each. (A run decides each component's commit once for all its hosts, so each
    case is a run of its own.)"""
    root = os.path.join(shared_dir, "bad-primus")
    work = os.path.join(root, "work")
    os.makedirs(work)
    secret = os.path.join(root, "secret.txt")
    with open(secret, "w") as handle:
        handle.write("%s\n" % SECRET)
    os.chmod(secret, 0o644)
    git("init", "-q", "-b", "main", cwd=work)
    requirements = (("requirements-r-shadow", "einops\n-r /etc/shadow\n"), ("requirements-c-shadow", "einops\n-c /etc/shadow\n"),
                    ("requirements-r-secret", "einops\n-r %s\n" % secret))
    commits = {}
    for name, text in requirements:
        with open(os.path.join(work, "requirements.txt"), "w") as handle:
            handle.write(text)
        git("add", "requirements.txt", cwd=work)
        git("commit", "-q", "-m", name, cwd=work)
        commits[name] = git("rev-parse", "HEAD", cwd=work)
    bare = os.path.join(root, "Primus.git")
    git("clone", "-q", "--bare", work, bare, cwd=root)
    for folder, _dirs, _files in os.walk(root):
        os.chmod(folder, 0o755)
    if ROOT_OWNED:
        give(bare, target.user)   # the user's own mirror (git refuses a repository another user owns)
    pins = dict((name, pins_with_primus(world, os.path.join(root, "pins-%s.yml" % name), "file://" + bare, commits[name]))
                for name, _text in requirements)
    return {"pins": pins, "order": [name for name, _text in requirements], "secret": secret}


def failure_of(run, host):
    failed = [r for r in run.failed() if r["host"] == host]
    assert len(failed) == 1, (host, run)
    return failed[0]


def test_an_included_file_the_user_did_not_write_is_refused_and_no_line_of_it_appears_anywhere(
        bad_primus, playbook, target, shared_dir, golden):
    """-r /etc/shadow, -c /etc/shadow and -r of a file with a secret line (root's, readable by the user): each refused
    before pip runs, naming the line and the file's owner; no line of those files is in the module's result, the run's
    output, the stage logs or the run summary. One base, a copy of a venv,torch one: the primus stage of each case."""
    base = golden("bad-requirements")   # venv,torch converged: the primus stage's requirements are the subject
    report = report_dir(shared_dir, "bad-requirements")
    secrets = [SECRET, SECRET.split(": ")[1]]
    if os.access("/etc/shadow", os.R_OK):
        with open("/etc/shadow") as handle:
            secrets += [line.strip() for line in handle if line.strip()]
    try:
        for index, name in enumerate(bad_primus["order"]):
            include = "/etc/shadow" if "shadow" in name else bad_primus["secret"]
            run = playbook("venv,torch,primus" if index == 0 else "primus", base,
                           extra={"primus_release_file": bad_primus["pins"][name], "primus_report_dir": report})
            record_timing("bad requirements file (%s)" % name, run.seconds)
            failed = failure_of(run, "node1")
            message = failed["result"]["msg"]
            assert failed["task"].endswith("Install Primus's requirements"), (name, failed)
            assert failed["result"]["failure"] == "bad_request" and failed["result"]["commands"] == [], failed["result"]
            checkout = os.path.join(base, "workspace", "Primus")
            if include == "/etc/shadow" or ROOT_OWNED:   # root's file: not read at all
                assert message.startswith("%s/requirements.txt:2: the file it includes, %s, is owned by root (uid 0), "
                                          "not by you. " % (checkout, include)), message
                assert "it is not read" in message and "copy what you need from it into a file of your own" in message
            else:   # the tests' own user's file: read, its line not shown
                assert message.startswith("%s:1: not a valid requirement" % include) and "not shown" in message, message
            written = everything_written(run, [base], report)
            # The run summary says why the host failed; the stage log holds the checkout's git output.
            with open(os.path.join(report, "summary.txt")) as handle:
                assert "node1" in handle.read()
            assert os.path.exists(os.path.join(base, "logs", "primus.log"))
            leaked = [line for line in secrets if line in written]
            assert not leaked, (name, leaked[:1])
    finally:
        subprocess.run(["rm", "-rf", base], check=False)


def test_another_user_s_megatron_checkout_runs_nothing_and_the_runner_s_own_builds(
        playbook, target, shared_dir, golden):
    """root's checkout (its datasets directory open, so a build there would succeed) with a Makefile that writes a
    canary, and no helpers_cpp: the run stops in preflight naming the path and its owner, and the canary is never
    written. Given to the user running the stage, the same checkout builds (and its Makefile, then the user's own,
    writes the canary)."""
    if not ROOT_OWNED:
        pytest.skip("another user's checkout needs the tests to run as root")
    root = os.path.join(shared_dir, "megatron-foreign")
    checkout = os.path.join(root, "Primus")
    canary = hostile_checkout(checkout, os.path.join(root, "canaries"))
    os.chmod(root, 0o755)
    base = golden("megatron-foreign")   # venv,torch converged: the checkout's owner is the subject
    extra = {"primus_megatron_checkouts": [checkout], "primus_report_dir": report_dir(shared_dir, "megatron")}
    try:
        run = playbook("venv,torch,primus", base, extra=extra)
        record_timing("another user's Megatron checkout, venv,torch,primus", run.seconds)
        failed = failure_of(run, "node1")
        assert failed["task"].endswith("Check the inputs and the node"), failed
        assert failed["result"]["msg"].startswith(
            "The Megatron checkout %s cannot be built in by user %s: %s is owned by root (uid 0), not by you. A build "
            "there runs its Makefile with your rights, so nothing is run there." % (checkout, target.user, checkout))
        assert not os.path.lexists(canary), "their Makefile ran"
        datasets = os.path.join(checkout, DATASETS)
        assert not [f for f in os.listdir(datasets) if f.startswith("helpers_cpp")]

        give(checkout, target.user)
        os.chmod(datasets, 0o755)
        again = playbook("venv,torch,primus", base, extra=extra)
        record_timing("the same checkout, the user's own, venv,torch,primus", again.seconds)
        assert again.rc == 0, again
        entries = again.task("Build Megatron's helpers_cpp in every Primus checkout")["result"]["checkouts"]
        assert [(e["checkout"], e["status"]) for e in entries] == [(checkout, "built")], entries
        built = [f for f in os.listdir(datasets) if f.startswith("helpers_cpp")]
        assert built == ["helpers_cpp.cpython-312-x86_64-linux-gnu.so"]
        assert pwd.getpwuid(os.stat(os.path.join(datasets, built[0])).st_uid).pw_name == target.user
        assert pwd.getpwuid(os.stat(canary).st_uid).pw_name == target.user
    finally:
        subprocess.run(["rm", "-rf", base], check=False)


UNKNOWN = "0123456789abcdef0123456789abcdef01234567"


def test_a_source_repository_that_is_none_is_not_there_or_lacks_the_commit_keeps_git_s_cause(
        playbook, target, world, shared_dir, tmp_path):
    """file:///etc, a repository the world's git server does not have, an unknown commit of the world's Primus: each
    stage stops with git's own lines (not its hint "and the repository exists.") and the fix of that class, tried once
    (only the network's failures are tried again). The primus stage alone (a registry overlay whose primus needs no
    venv) reaches its checkout at once."""
    import stage_registry  # pylint: disable=import-outside-toplevel
    top = os.path.join(target.home, "bad-repos-%d" % os.getpid())
    primus = "http://127.0.0.1:%d/git/Primus.git" % world["port"]
    missing = "http://127.0.0.1:%d/git/no-such-repository.git" % world["port"]
    with open(world["pins"]) as handle:
        good = yaml.safe_load(handle)["primus_pins"]["sources"]["primus"]
    assert good["repo"] == primus, good
    # A run decides each component's commit once, for all its hosts: every case asks for the same unknown commit (the
    # clone of the first two fails before any commit is asked for).
    cases = {"repo-etc": ("file:///etc", UNKNOWN, "not_a_repository",
                          "fatal: '/etc' does not appear to be a git repository; fatal: Could not read from remote "
                          "repository.", "Fix: check the repository URL: file:///etc is not a git repository"),
             "repo-missing": (missing, UNKNOWN, "not_a_repository",
                              "fatal: repository '%s/' not found." % missing,
                              "Fix: check the repository URL: %s is not a git repository" % missing),
             "repo-commit": (primus, UNKNOWN, "unknown_commit", "error: Unable to find %s under %s" % (UNKNOWN, primus),
                             "Fix: %s has no commit %s" % (primus, UNKNOWN))}
    hosts = {}
    for name, (repo, commit, _kind, _cause, _fix) in cases.items():
        pins = pins_with_primus(world, os.path.join(shared_dir, "pins-%s.yml" % name), repo, commit)
        hosts[name] = {"primus_base": os.path.join(top, name), "primus_release_file": pins}
    entries = [dict(e, requires=[]) if e["name"] == "primus" else e for e in stage_registry.entries()]
    overlay = tmp_path / "overlay.json"
    overlay.write_text(json.dumps({"primus_stages": entries}))
    os.chmod(str(tmp_path), 0o755)
    run = playbook("primus", hosts=hosts, args=("-e", "@%s" % overlay))
    record_timing("bad source repositories: %d hosts, --tags primus" % len(hosts), run.seconds)
    try:
        for name, (repo, commit, kind, cause, fix) in cases.items():
            clone = [r for r in run.results if r["host"] == name and r["task"].endswith(
                "Clone at the planned commit, with that commit's submodules - primus")]
            assert clone and clone[-1]["result"].get("failure") == kind, (name, clone)
            assert clone[-1]["result"].get("attempts", 1) == 1, (name, clone[-1]["result"])   # not tried again
            stop = [r for r in run.failed() if r["host"] == name and r["task"].endswith("Stop - the checkout failed - primus")]
            assert len(stop) == 1, (name, run)
            message = stop[0]["result"]["msg"]
            assert message.startswith("[primus] cannot clone %s at %s into %s/workspace/Primus: %s"
                                      % (repo, commit, hosts[name]["primus_base"], cause)), message
            assert fix in message, message
            assert ("sources.primus.ref" if kind == "unknown_commit" else "sources.primus.repo") in message, message
            assert "the repository exists" not in message and "check the network" not in message, message
    finally:
        subprocess.run(["rm", "-rf", top], check=False)
