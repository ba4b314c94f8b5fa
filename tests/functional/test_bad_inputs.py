"""The bad-input matrix (issue 9, Must-show 1): every case is an inventory host of ONE playbook run
(`--tags venv,torch`, so a case that slipped through preflight would really build), all reaching the
same unprivileged target user over SSH. Each case must stop its host with its own clear message,
change nothing - the digest of its base's nearest existing directory is the same before and after -
and leave the target's interpreters untouched.
"""
import hashlib
import os
import shutil
import stat
import subprocess

import pytest

from harness import record_timing

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
def matrix(playbook, target, python310, python312, shared_dir):
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
    if ROOT_OWNED:
        cases.update({
            "cache-foreign": ({"primus_cache_dir": os.path.join(foreign, "cache")},
                              ["The cache directory %s (primus_cache_dir) is owned by root (uid 0), not by you"
                               % os.path.join(foreign, "cache"), "ask root (or an admin) to remove"]),
            "build-foreign": ({"primus_build_dir": os.path.join(foreign, "build")},
                              ["The build directory %s (primus_build_dir (SRC_DIR)) is owned by root (uid 0)"
                               % os.path.join(foreign, "build"), "set primus_build_dir to a directory of your own"]),
            "python-unreachable": ({"primus_python": "/root/primus-bad-inputs-python/python3.12"},
                                   ["it cannot be run: user %s may not reach or run it (permission denied" % target.user]),
        })

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
    made = target.run(["bash", "-c", "\n".join(script)])
    assert made.returncode == 0, made.stderr

    watched = {name: [d(name)] for name in cases}
    for name in ("base-root", "base-slashslash", "base-dot", "base-dotdot"):
        watched[name].append("/")
    watched["cache-foreign"] = watched.get("cache-foreign", []) + [foreign]
    watched["build-foreign"] = watched.get("build-foreign", []) + [foreign]
    # A relative base would land in the remote user's working directory (its home), "~/..." in a "~" there.
    relative = [os.path.join(home, "envs"), os.path.join(home, "~")]
    assert not any(os.path.lexists(p) for p in relative)

    def snapshot():
        return {name: [digest(p, shallow=p == "/") for p in paths] for name, paths in watched.items()}

    interpreters = [python312, python310, "/usr/bin/python3"]
    before, interpreters_before = snapshot(), interpreters_digest(interpreters)
    run = playbook("venv,torch", hosts={"bad-" + name: case[0] for name, case in cases.items()})
    record_timing("bad-input matrix: %d cases in one run (unprivileged, SSH)" % len(cases), run.seconds)
    after, interpreters_after = snapshot(), interpreters_digest(interpreters)
    yield run, cases, before, after, (interpreters_before, interpreters_after), relative
    subprocess.run(["rm", "-rf", top], check=False)
    shutil.rmtree(foreign, ignore_errors=True)


def quote(text):
    return "'" + text.replace("'", "'\\''") + "'"


def test_the_matrix_has_at_least_30_cases_and_the_run_fails(matrix):
    run, cases = matrix[0], matrix[1]
    assert len(cases) >= 30
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
    run, cases, before, after, interpreters, relative = matrix
    changed = [name for name in cases if before[name] != after[name]]
    assert not changed, "changed: %s" % changed
    assert interpreters[0] == interpreters[1], "an interpreter of the target changed"
    assert not any(os.path.lexists(p) for p in relative)
    pwned = subprocess.run(["find", "/tmp", os.path.dirname(relative[0]), "-maxdepth", "4", "-name", "PWNED*"],
                           capture_output=True, text=True, check=False).stdout
    assert pwned == ""
