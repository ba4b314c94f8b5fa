# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Make the release lock (<release>.lock.json beside the pins file) from a converged environment.

A converge run with `-e primus_lock_record=/path/plans.jsonl` appends pip's plan of every install to
that file on the node (pip_constrained's lock_record: name, version, URL and the sha256 the index
states, per planned file). This script reads it, finds each planned file on the pins' indexes
(their project pages, in parallel), asks each file's size (HEAD) and writes the lock: every file the
converge installed from an index - the whole resolved set, dependencies and files removed again later
(the cleanup and the CUTLASS purge) included - with its index, URL, size and sha256:

    python3 tools/release_lock.py --pins roles/primus/vars/releases/v26.5.yml --record plans.jsonl
    # writes roles/primus/vars/releases/v26.5.lock.json

Wheels built on the node (from the source stages' checkouts and from sdists) and VCS items are not index files:
they are listed as skipped (the checkouts are locked by the pins' commits). The sdist a wheel is built from is an
index file and is locked like the others (pip_constrained records it before the build). A git requirement (a git+
URL of a requirements file) is listed under "vcs" with the commit pip checked out, for the wheelhouse's bundles. A planned file that no index lists, or lists
with another hash than pip saw, is an error (exit 1), named.
"""
import argparse
import concurrent.futures
import datetime
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".collections"))
from ansible_collections.primus.trainenv.plugins.module_utils import release_lock  # noqa: E402
from ansible_collections.primus.trainenv.plugins.module_utils.common import normalize_name, redact_url  # noqa: E402

WORKERS = 8
TIMEOUT = 30


def load_pins(path):
    import yaml  # the controller's (ansible-core requires PyYAML)
    with open(path) as handle:
        data = yaml.safe_load(handle)
    pins = (data or {}).get("primus_pins")
    if not isinstance(pins, dict) or not isinstance(pins.get("indexes"), dict):
        raise SystemExit("%s is not a primus.trainenv pins file (primus_pins.indexes missing)" % path)
    return pins


def read_record(path):
    """The planned files of a lock record, each once (first occurrence)."""
    seen = {}
    with open(path) as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except ValueError as exc:
                raise SystemExit("%s:%d is not a JSON line: %s" % (path, number, exc))
            key = item.get("url") or "%s==%s" % (item.get("name"), item.get("version"))
            seen.setdefault(key, item)
    return list(seen.values())


def fetch_page(index_url, project, timeout=TIMEOUT):
    """{file name: {'href', 'sha256'}} of index_url/<project>/ (absolute hrefs), or {} when it has none."""
    url = "%s/%s/" % (index_url.rstrip("/"), project)
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            text = response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return {}
        raise
    files = release_lock.parse_simple_page(text)
    for entry in files.values():
        entry["href"] = urllib.parse.urljoin(url, entry["href"])
    return files


def head_size(url, timeout=TIMEOUT):
    request = urllib.request.Request(url, method="HEAD")
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return int(response.headers.get("Content-Length") or -1)


def with_every_arch(items, pins):
    """The items, plus each device wheel's counterpart for every other arch of the pins' device_archs: a lock made on
    gfx942 nodes also serves a fleet's gfx950 nodes."""
    archs = [str(a) for a in (pins.get("torch") or {}).get("device_archs") or []]
    out, seen = list(items), set(i["url"] for i in items)
    for item in items:
        for arch in archs:
            if normalize_name(item["name"]).endswith("-" + arch):
                for other in archs:
                    url = item["url"].replace(arch, other)
                    if other != arch and url not in seen:
                        seen.add(url)
                        out.append(dict(item, name=item["name"].replace(arch, other), url=url, sha256=""))
    return out


def make_lock(pins, items, workers=WORKERS, timeout=TIMEOUT):
    """(lock, skipped, problems) from the planned items of a record."""
    indexes = pins["indexes"]
    wanted = with_every_arch([i for i in items if i.get("kind") == "index"], pins)
    skipped = sorted("%s==%s (%s)" % (i.get("name"), i.get("version"), i.get("kind")) for i in items
                     if i.get("kind") != "index")
    projects = sorted(set(normalize_name(i["name"]) for i in wanted))
    keys = [(index, project) for index in sorted(indexes) for project in projects]
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        pages = dict(zip(keys, pool.map(lambda k: fetch_page(indexes[k[0]], k[1], timeout), keys)))
    entries, problems = [], []
    for item in wanted:
        filename = release_lock.filename_of(item["url"])
        found = [(index, pages[(index, normalize_name(item["name"]))][filename]) for index in sorted(indexes)
                 if filename in pages[(index, normalize_name(item["name"]))]]
        if not found:
            problems.append("%s (%s==%s): no index of the pins lists it" % (filename, item["name"], item["version"]))
            continue
        for index, listed in found:
            if item.get("sha256") and listed["sha256"] and listed["sha256"] != item["sha256"]:
                if len(found) == 1:
                    problems.append("%s: the %s index lists sha256 %s, pip planned %s" % (
                        filename, index, listed["sha256"], item["sha256"]))
                continue
            entries.append({"filename": filename, "name": item["name"], "version": item["version"], "index": index,
                            "url": listed["href"], "size": -1, "sha256": listed["sha256"] or item["sha256"]})
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        for entry, size in zip(entries, pool.map(lambda e: head_size(e["url"], timeout), entries)):
            entry["size"] = size
    entries.sort(key=lambda e: (e["index"], normalize_name(e["name"]), e["filename"]))
    # VCS requirements (a git+ URL in Primus's requirements.txt): not files, but the wheelhouse bundles them.
    git_items = [i for i in items if i.get("kind") == "direct" and i.get("vcs") == "git" and i.get("repo")]
    by_commit = dict(((i["repo"], i["commit"]), {"name": i["name"], "version": i["version"], "vcs": i["vcs"],
                                                 "url": i["repo"], "commit": i["commit"]}) for i in git_items)
    vcs = [by_commit[key] for key in sorted(by_commit)]
    lock = {"lock_version": release_lock.LOCK_VERSION, "release": pins.get("release", ""),
            "python_version": str(pins.get("python_version", "")),
            "generated": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "indexes": dict((k, redact_url(v)) for k, v in sorted(indexes.items())),
            "files": entries, "vcs": vcs}
    return lock, skipped, problems


def default_out(pins_path):
    return os.path.splitext(pins_path)[0] + ".lock.json"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pins", required=True, help="the release pins file")
    parser.add_argument("--record", required=True, help="the plans a converge recorded (primus_lock_record)")
    parser.add_argument("--out", help="the lock to write (default: <pins>.lock.json beside the pins file)")
    parser.add_argument("--index", action="append", default=[],
                        help="NAME=URL: read the pins' index NAME from URL (a site mirror)")
    args = parser.parse_args(argv)
    pins = load_pins(args.pins)
    for given in args.index:
        name, sep, url = given.partition("=")
        if not sep or name not in pins["indexes"]:
            raise SystemExit("--index %s: want NAME=URL with NAME one of %s" % (redact_url(given), ", ".join(pins["indexes"])))
        pins["indexes"][name] = url
    lock, skipped, problems = make_lock(pins, read_record(args.record))
    if problems:
        print("cannot lock %d planned file(s):\n  %s" % (len(problems), "\n  ".join(problems)), file=sys.stderr)
        return 1
    out = args.out or default_out(args.pins)
    tmp = out + ".tmp"
    with open(tmp, "w") as handle:
        json.dump(lock, handle, indent=1, sort_keys=True)
        handle.write("\n")
    os.replace(tmp, out)
    print("locked %d files of release %s in %s (%d planned items not from an index: %s)"
          % (len(lock["files"]), lock["release"], out, len(skipped), ", ".join(skipped) or "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
