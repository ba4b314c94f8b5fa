# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Make an offline wheelhouse of a release: every locked file as PEP 503 indexes, every git remote as a bundle.

    python3 tools/wheelhouse.py --pins roles/primus/vars/releases/v26.5.yml --dest /shared/wheelhouse-v26.5
    ansible-playbook playbooks/primus.yml -e primus_wheelhouse=/shared/wheelhouse-v26.5   # no network

Layout (docs/offline.md, "Air-gapped clusters"):

    <dest>/<index>/files/<file>                   every file of the lock (<pins>.lock.json), sha256-verified
    <dest>/<index>/simple/<project>/index.html    PEP 503 pages linking them with #sha256=
    <dest>/git/<host[:port]>/<path of the URL>    a git bundle of each remote of the pins' sources, of each git
                                                  requirement of the lock ("vcs": a git+ URL of Primus's
                                                  requirements.txt) and of every submodule of their commits
                                                  (recursively), all refs
    <dest>/store/<component>/<key id>/<file>.whl  with --store: the built wheels of the source stages, in the
    <dest>/store/<component>/<key id>/<file>.whl.sha256   fleet's wheel store layout (docs/fleets.md)
    <dest>/wheelhouse.json                        what was put there, with each file's sha256

A file already there with its locked sha256 is not fetched again; one with other bytes is replaced.
--index NAME=URL reads an index from elsewhere (a site mirror) than the pins say; --git PREFIX=PREFIX
fetches git remotes from a mirror prefix. A download whose bytes differ from the lock fails, named.

--store DIR adds the built wheels of a wheel store (primus_wheel_store, by default
~/.cache/primus-trainenv/wheel-store on the controller; or a primus_wheel_store_shared directory), so that an
air-gapped fleet builds nothing: run it with -e primus_wheel_store=<dest>/store (and, on a single node,
-e primus_wheel_store_enabled=true). Each entry's wheel is checked against its .sha256 file before anything is
copied: a wheel whose sha256 differs, a .sha256 naming no wheel there, or a .sha256 that is not "<sha256>  <file>"
fails naming the file, and nothing of the store is copied. An entry without its .sha256 is an unfinished write (the
store writes the .sha256 last and counts an entry only with it; an empty key directory is a builder that failed): it
is skipped and listed, as the store itself ignores it.
"""
import argparse
import concurrent.futures
import hashlib
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".collections"))
from ansible_collections.primus.trainenv.plugins.module_utils import release_lock  # noqa: E402
from ansible_collections.primus.trainenv.plugins.module_utils.common import normalize_name, redact_url  # noqa: E402
from ansible_collections.primus.trainenv.plugins.plugin_utils import wheel_store  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from release_lock import default_out, fetch_page, load_pins  # noqa: E402

WORKERS = 8
TIMEOUT = 60
STORE = "store"
# The store's directory names: a component's normalised name (a source or an sdist-built pin) and a key id (16 hex).
COMPONENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
KEY_ID = re.compile(r"^[0-9a-f]{16}$")


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def git_path(dest, url):
    """Where the bundle of a remote URL goes: <dest>/git/<netloc>/<path>."""
    parts = urllib.parse.urlsplit(url)
    return os.path.join(dest, "git", parts.netloc, parts.path.lstrip("/"))


def fetch_file(entry, dest, indexes, timeout=TIMEOUT):
    """Download one locked file into <dest>/<index>/files/, verified; returns its path."""
    path = os.path.join(dest, entry["index"], "files", entry["filename"])
    if os.path.exists(path) and sha256_of(path) == entry["sha256"]:
        return path
    url = entry["url"]
    given = indexes.get(entry["index"])
    if given:
        # the file as the (mirrored) index links it now
        page = fetch_page(given, normalize_name(entry["name"]), timeout)
        if entry["filename"] in page:
            url = page[entry["filename"]]["href"]
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".part-")
    with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as response:
        shutil.copyfileobj(response, out)
    got = sha256_of(tmp)
    if got != entry["sha256"]:
        os.unlink(tmp)
        raise SystemExit("%s from %s has sha256 %s, the lock says %s: not put in the wheelhouse"
                         % (entry["filename"], redact_url(url), got, entry["sha256"]))
    os.replace(tmp, path)
    return path


def write_pages(dest, lock):
    """<dest>/<index>/simple/<project>/index.html for every index of the lock."""
    projects = {}
    for entry in lock["files"]:
        projects.setdefault((entry["index"], normalize_name(entry["name"])), {})[entry["filename"]] = entry["sha256"]
    for (index, project), files in sorted(projects.items()):
        page_dir = os.path.join(dest, index, "simple", project)
        os.makedirs(page_dir, exist_ok=True)
        links = "".join('<a href="../../files/%s#sha256=%s">%s</a><br />\n'
                        % (urllib.parse.quote(name), sha, html.escape(name)) for name, sha in sorted(files.items()))
        with open(os.path.join(page_dir, "index.html"), "w") as handle:
            handle.write("<!DOCTYPE html>\n<html><body>\n%s</body></html>\n" % links)
    for index in sorted(set(key[0] for key in projects)):
        names = sorted(key[1] for key in projects if key[0] == index)
        with open(os.path.join(dest, index, "simple", "index.html"), "w") as handle:
            handle.write("<!DOCTYPE html>\n<html><body>\n%s</body></html>\n"
                         % "".join('<a href="%s/">%s</a><br />\n' % (p, p) for p in names))


def git(*argv, cwd=None, env=None):
    proc = subprocess.run(["git"] + list(argv), cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit("git %s failed: %s" % (" ".join(redact_url(a) for a in argv), redact_url(proc.stderr.strip())))
    return proc.stdout


def submodules(mirror, commit):
    """[(url, commit)] of the submodules of a commit of a mirror clone."""
    try:
        text = git("show", "%s:.gitmodules" % commit, cwd=mirror)
    except SystemExit:
        return []
    fd, path = tempfile.mkstemp(suffix=".gitmodules")
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    try:
        entries = git("config", "-f", path, "--get-regexp", r"^submodule\..*\.(path|url)$").splitlines()
    finally:
        os.unlink(path)
    paths, urls = {}, {}
    for line in entries:
        key, value = line.split(" ", 1)
        name, field = key[len("submodule."):].rsplit(".", 1)
        (paths if field == "path" else urls)[name] = value
    out = []
    for name, sub_path in paths.items():
        tree = git("ls-tree", commit, "--", sub_path, cwd=mirror).split()
        if len(tree) >= 3 and tree[1] == "commit" and name in urls:
            out.append((urls[name], tree[2]))
    return out


def bundle_sources(pins, dest, git_prefixes, vcs=()):
    """A bundle of every source remote and of every git requirement of the lock (vcs), and, recursively, of the
    submodules of the commits used."""
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0")
    if git_prefixes:
        env["GIT_CONFIG_COUNT"] = str(len(git_prefixes))
        for n, (prefix, mirror) in enumerate(sorted(git_prefixes.items())):
            env["GIT_CONFIG_KEY_%d" % n] = "url.%s.insteadOf" % mirror
            env["GIT_CONFIG_VALUE_%d" % n] = prefix
    todo = [(s["repo"], s["ref"]) for s in (pins.get("sources") or {}).values()]
    todo += [(v["url"], v["commit"]) for v in vcs]
    done, bundles = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        while todo:
            url, ref = todo.pop(0)
            mirror = done.get(url)
            if mirror is None:
                mirror = os.path.join(tmp, str(len(done)))
                git("clone", "-q", "--mirror", "--", url, mirror, env=env)
                done[url] = mirror
                target = git_path(dest, url)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                git("bundle", "create", "-q", target + ".part", "--all", cwd=mirror, env=env)
                os.replace(target + ".part", target)
                bundles[url] = os.path.relpath(target, dest)
            commit = git("rev-parse", "--verify", "-q", "%s^{commit}" % ref, cwd=mirror).strip()
            todo.extend(submodules(mirror, commit))
    return bundles


def scan_store(store):
    """The finished entries of a wheel store, each wheel checked against its .sha256 file.

    Returns (entries, unfinished): entries [{component, key, file, sha256, text}] in path order; unfinished the
    <component>/<key id> directories without a .sha256 file (skipped, as the store skips them). Anything else that
    is not the store's layout fails (SystemExit) naming the path and the fix; nothing is copied then.
    """
    if not os.path.exists(store):
        raise SystemExit("--store %s: no such directory. Give the fleet's wheel store (primus_wheel_store, by default "
                         "~/.cache/primus-trainenv/wheel-store on the controller, or the primus_wheel_store_shared "
                         "directory)." % store)
    if not os.path.isdir(store):
        raise SystemExit("--store %s is not a directory: give the wheel store's directory "
                         "(<store>/<component>/<key id>/<file>.whl)." % store)
    entries, unfinished = [], []
    for component in sorted(os.listdir(store)):
        top = os.path.join(store, component)
        if not os.path.isdir(top) or not COMPONENT.match(component):
            raise SystemExit("%s is not a component directory of a wheel store (<store>/<component>/<key id>/): "
                             "is --store %s the wheel store?" % (top, store))
        for key in sorted(os.listdir(top)):
            entry = os.path.join(top, key)
            if not os.path.isdir(entry) or not KEY_ID.match(key):
                raise SystemExit("%s is not a build key's directory of a wheel store (<store>/<component>/<key id>/): "
                                 "is --store %s the wheel store?" % (entry, store))
            sums = sorted(n for n in os.listdir(entry) if n.endswith(wheel_store.SUM_SUFFIX))
            if not sums:
                unfinished.append("%s/%s" % (component, key))
                continue
            fix = "Fix: remove that entry (rm -rf '%s') and build it again, or leave --store out." % entry
            if len(sums) > 1:
                raise SystemExit("the wheel store's entry %s holds %d .sha256 files (%s) instead of one. %s"
                                 % (entry, len(sums), ", ".join(sums), fix))
            sum_path = os.path.join(entry, sums[0])
            with open(sum_path, errors="replace") as handle:
                text = handle.read()
            try:
                recorded = wheel_store.record(text, sum_path)
            except wheel_store.WheelStoreError as exc:
                raise SystemExit(str(exc)) from None
            wheel = os.path.join(entry, recorded["file"])
            if sums[0] != recorded["file"] + wheel_store.SUM_SUFFIX or not os.path.isfile(wheel):
                raise SystemExit("%s names %s, which is not beside it. %s" % (sum_path, recorded["file"], fix))
            got = sha256_of(wheel)
            if got != recorded["sha256"]:
                raise SystemExit("%s has sha256 %s, its %s says %s: not put in the wheelhouse. %s"
                                 % (wheel, got, sums[0], recorded["sha256"], fix))
            entries.append({"component": component, "key": key, "file": recorded["file"], "sha256": got, "text": text})
    return entries, unfinished


def copy_store(store, entries, dest):
    """Copy the checked entries into <dest>/store/ in the store's layout, the wheel first (checked again after the
    copy), its .sha256 last; an entry already there with the same sha256 is kept, any other file of its key's directory
    removed. Returns {relative path under dest: sha256}."""
    copied = {}
    for entry in entries:
        rel = "/".join((entry["component"], entry["key"], entry["file"]))
        target = os.path.join(dest, STORE, entry["component"], entry["key"])
        path = os.path.join(target, entry["file"])
        os.makedirs(target, exist_ok=True)
        # one wheel per key, as in the store: another wheel an earlier run put in this key's directory goes
        for name in os.listdir(target):
            if name not in (entry["file"], entry["file"] + wheel_store.SUM_SUFFIX):
                os.unlink(os.path.join(target, name))
        if not (os.path.exists(path) and sha256_of(path) == entry["sha256"]):
            fd, tmp = tempfile.mkstemp(dir=target, prefix=".part-")
            os.close(fd)
            shutil.copyfile(os.path.join(store, rel), tmp)
            got = sha256_of(tmp)
            if got != entry["sha256"]:
                os.unlink(tmp)
                raise SystemExit("%s changed while it was copied (sha256 %s, its .sha256 says %s): not put in the "
                                 "wheelhouse" % (os.path.join(store, rel), got, entry["sha256"]))
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        with open(path + wheel_store.SUM_SUFFIX + ".part", "w") as handle:
            handle.write(entry["text"])
        os.replace(path + wheel_store.SUM_SUFFIX + ".part", path + wheel_store.SUM_SUFFIX)
        copied["%s/%s" % (STORE, rel)] = entry["sha256"]
    return copied


def previous_store(dest):
    """{relative path: sha256} of the store wheels an earlier run put in the wheelhouse and that are still there."""
    try:
        with open(os.path.join(dest, "wheelhouse.json")) as handle:
            earlier = json.load(handle).get("store") or {}
    except (OSError, ValueError, AttributeError):
        return {}
    return dict((rel, sha) for rel, sha in sorted(earlier.items()) if os.path.isfile(os.path.join(dest, rel)))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pins", required=True)
    parser.add_argument("--lock", help="default: <pins>.lock.json beside the pins file")
    parser.add_argument("--dest", required=True)
    parser.add_argument("--index", action="append", default=[], help="NAME=URL: read this index from URL")
    parser.add_argument("--git", action="append", default=[], help="PREFIX=MIRROR: fetch git remotes from a mirror")
    parser.add_argument("--store", help="a wheel store (primus_wheel_store) whose built wheels are added under <dest>/store")
    args = parser.parse_args(argv)
    dest = os.path.abspath(args.dest)
    store = os.path.abspath(args.store) if args.store is not None else ""
    stored, unfinished = [], []
    if store:
        if store == os.path.join(dest, STORE):
            raise SystemExit("--store %s is the wheelhouse's own store: give the wheel store it is made from" % store)
        stored, unfinished = scan_store(store)
    pins = load_pins(args.pins)
    lock_path = args.lock or default_out(args.pins)
    with open(lock_path) as handle:
        lock = release_lock.load(handle.read(), lock_path)
    clash = sorted(set(e["index"] for e in lock["files"]) & {"git", STORE})
    if clash:
        raise SystemExit("%s: an index named %s would share the wheelhouse's directory of the same name: rename it in "
                         "the pins and the lock" % (lock_path, clash[0]))
    indexes = dict(pins["indexes"], **dict(a.split("=", 1) for a in args.index))
    git_prefixes = dict(a.split("=", 1) for a in args.git)
    os.makedirs(dest, exist_ok=True)
    with concurrent.futures.ThreadPoolExecutor(WORKERS) as pool:
        list(pool.map(lambda e: fetch_file(e, dest, indexes), lock["files"]))
    write_pages(dest, lock)
    bundles = bundle_sources(pins, dest, git_prefixes, lock.get("vcs") or [])
    # the wheels an earlier --store added stay (and stay listed); an entry of this store replaces its key's
    copied = copy_store(store, stored, dest)
    store_files = dict(previous_store(dest), **copied)
    record = {"release": lock.get("release", ""), "lock": os.path.basename(lock_path),
              "indexes": sorted(set(e["index"] for e in lock["files"])),
              "files": dict(("%s/files/%s" % (e["index"], e["filename"]), e["sha256"]) for e in lock["files"]),
              "git": dict((redact_url(k), v) for k, v in sorted(bundles.items())), "store": store_files}
    with open(os.path.join(dest, "wheelhouse.json"), "w") as handle:
        json.dump(record, handle, indent=1, sort_keys=True)
        handle.write("\n")
    print("wheelhouse %s: %d files of %s, %d git bundles, %d built wheels"
          % (dest, len(lock["files"]), ", ".join(record["indexes"]), len(bundles), len(store_files)))
    for entry in unfinished:
        print("skipped %s of the wheel store: no .sha256 file (an unfinished write or a failed build)" % entry)
    return 0


if __name__ == "__main__":
    sys.exit(main())
