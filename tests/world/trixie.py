"""A real glibc >= 2.38 userland for TE wheel mode: a Debian trixie root with CPython 3.12 copied in.

    python3 tests/world/trixie.py build [--dest DIR]                  # as root; reused once complete
    python3 tests/world/trixie.py run [--dest DIR] [--user NAME] -- CMD [ARG...]

This machine's glibc is older than 2.38, so the TE staging wheel's core library is refused here
(as on Ubuntu 22.04). Debian trixie has glibc 2.41 and libstdc++ with GLIBCXX_3.4.33: there the
same library loads. `build` makes that root with debootstrap (variant minbase, from Debian's
mirror, nothing else; installs the debootstrap package first when it is missing and this is
root) plus the shared libraries a CPython 3.12 needs, and copies the given interpreter's prefix
to /opt/python3.12 with its RUNPATH set to /opt/python3.12/lib (patchelf from trixie, run
inside the root). The root is cached (default <repo>/.cache/trixie-root, git-ignored) and
rebuilt only when this recipe changes. `run` executes a command inside it with chroot, as root
or, with --user, as that (unprivileged) user of this machine; the root shares this machine's
network, so the world's loopback indexes are reachable from inside.
"""
import argparse
import json
import os
import pwd
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))

SUITE = "trixie"
MIRROR = os.environ.get("PRIMUS_TRIXIE_MIRROR") or "http://deb.debian.org/debian"
DEFAULT_DEST = os.environ.get("PRIMUS_TRIXIE_ROOT") or os.path.join(REPO_ROOT, ".cache", "trixie-root")
PY312 = os.environ.get("PRIMUS_TEST_PYTHON312") or "/root/.pyenv/versions/3.12.1/bin/python3.12"
PREFIX = "/opt/python3.12"
PYTHON = PREFIX + "/bin/python3.12"
# What minbase lacks for CPython 3.12's extension modules (ssl, ctypes, sqlite3, bz2, lzma,
# readline, curses, uuid, pyexpat) and for the TE core library (libstdc++), plus patchelf; and
# what preflight requires of every node and the source builds run (git, make, a C++ compiler).
PACKAGES = ("libstdc++6", "libssl3t64", "libffi8", "libsqlite3-0", "libbz2-1.0", "liblzma5", "zlib1g",
            "libreadline8t64", "libncursesw6", "libtinfo6", "libuuid1", "libexpat1", "patchelf",
            "git", "make", "g++")
MODULES = "ssl, ctypes, sqlite3, bz2, lzma, zlib, readline, curses, uuid, pyexpat, hashlib, venv, ensurepip"
STAMP = ".primus-trixie.json"
PATH = "/usr/local/bin:/usr/bin:/bin"


def _recipe(python):
    prefix = os.path.dirname(os.path.dirname(os.path.realpath(python)))
    return {"suite": SUITE, "packages": list(PACKAGES), "python_prefix": prefix, "prefix": PREFIX}


def _ignore(directory, names):
    """Leave out the interpreter's test suite and whatever was pip-installed into it."""
    rel = directory.rstrip("/")
    if rel.endswith("/site-packages"):
        return [n for n in names if n != "README.txt"]
    if os.path.basename(os.path.dirname(rel)) == "lib" and os.path.basename(rel).startswith("python3"):
        return [n for n in names if n in ("test", "idlelib", "tkinter", "turtledemo")]
    return []


def _check(cmd, what):
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    if proc.returncode != 0:
        raise SystemExit("%s failed (exit %d): %s\n%s" % (what, proc.returncode, " ".join(cmd), proc.stdout[-3000:]))
    return proc.stdout


def is_built(dest=DEFAULT_DEST, python=PY312):
    try:
        with open(os.path.join(dest, STAMP)) as handle:
            return json.load(handle)["recipe"] == _recipe(python)
    except (OSError, ValueError, KeyError):
        return False


def build(dest=DEFAULT_DEST, python=PY312, mirror=MIRROR, log=print):
    """Make (or reuse) the trixie root at dest; returns dest. Needs root."""
    dest = os.path.abspath(dest)
    if is_built(dest, python):
        return dest
    if os.geteuid() != 0:
        raise SystemExit("building the trixie root needs root (debootstrap, chroot); run `%s build` as root "
                         "once, or point PRIMUS_TRIXIE_ROOT at a built one" % os.path.relpath(__file__))
    if not shutil.which("debootstrap"):
        log("installing debootstrap (apt-get)")
        _check(["apt-get", "install", "-y", "-qq", "--no-install-recommends", "debootstrap"], "apt-get install debootstrap")
    partial = dest + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    started = time.time()
    log("debootstrap %s from %s into %s" % (SUITE, mirror, partial))
    _check(["debootstrap", "--variant=minbase", "--include=" + ",".join(PACKAGES), SUITE, partial, mirror],
           "debootstrap")
    seconds = round(time.time() - started, 1)
    prefix = _recipe(python)["python_prefix"]
    shutil.copytree(prefix, partial + PREFIX, symlinks=True, ignore=_ignore)
    _check(["chroot", partial, "patchelf", "--set-rpath", PREFIX + "/lib", PYTHON], "patchelf in the trixie root")
    os.symlink(PYTHON, os.path.join(partial, "usr", "local", "bin", "python3.12"))
    proc = run(partial, [PYTHON, "-c", "import %s" % MODULES])
    if proc.returncode != 0:
        raise SystemExit("the copied python cannot import %s in the trixie root:\n%s" % (MODULES, proc.stdout))
    with open(os.path.join(partial, STAMP), "w") as handle:
        json.dump({"recipe": _recipe(python), "mirror": mirror, "debootstrap_seconds": seconds,
                   "glibc": glibc(partial)}, handle, indent=1, sort_keys=True)
    shutil.rmtree(dest, ignore_errors=True)
    os.rename(partial, dest)
    log("trixie root ready at %s (debootstrap %.0f s)" % (dest, seconds))
    return dest


def run(root, argv, user=None, env=None, timeout=600):
    """Run argv inside root (chroot) with a clean environment, as user (name or uid) if given.

    Returns a CompletedProcess with stdout and stderr merged in .stdout.
    """
    cmd = ["chroot"]
    if user is not None:
        entry = pwd.getpwuid(user) if isinstance(user, int) else pwd.getpwnam(user)
        cmd.append("--userspec=%d:%d" % (entry.pw_uid, entry.pw_gid))
    variables = {"PATH": PATH, "HOME": "/tmp", "LANG": "C.UTF-8", "PIP_CONFIG_FILE": "/dev/null"}
    variables.update(env or {})
    cmd += [root, "/usr/bin/env", "-i"] + ["%s=%s" % item for item in sorted(variables.items())] + list(argv)
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                          timeout=timeout, check=False)


def glibc(root):
    """glibc version of the root, as its own loader reports it (e.g. "2.41")."""
    out = run(root, ["/usr/bin/getconf", "GNU_LIBC_VERSION"]).stdout.split()
    return out[-1] if out else None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("action", choices=("build", "run"))
    parser.add_argument("--dest", default=DEFAULT_DEST, help="the root (default $PRIMUS_TRIXIE_ROOT or %(default)s)")
    parser.add_argument("--python", default=PY312, help="the CPython 3.12 to copy in")
    parser.add_argument("--mirror", default=MIRROR)
    parser.add_argument("--user", help="run as this user of this machine (default: root)")
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv[argv.index("--") + 1:] if "--" in argv else []
    args = parser.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    if args.action == "build":
        build(args.dest, args.python, args.mirror)
        return 0
    if not is_built(args.dest, args.python):
        parser.error("no trixie root at %s: run `build` first" % args.dest)
    if not command:
        parser.error("run needs a command after --")
    proc = run(args.dest, command, user=args.user)
    sys.stdout.write(proc.stdout)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
