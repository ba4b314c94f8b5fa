# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Move a release's ROCm pins to the newest nightly date the ROCm index still publishes completely.

AMD's nightly index prunes old dates and sometimes publishes a date only in part. This reads the index's
project pages of the nightly set - torch, torchaudio, torchvision, apex, rocm-sdk-devel and, for each
arch asked for, amd-torch-device-<arch>, rocm-sdk-device-<arch> and amd-torchvision-device-<arch> - and
finds the newest date on the pins' ROCm line (7.15.0 for rocm7.15.0a20260720) at which every one of
them has a wheel for CPython 3.12 on Linux x86_64, each device wheel at its companion's version. It
writes a new pins file from the current one with that date's versions in place of the old ones and
nothing else changed, and reports every later date that is incomplete and why:

    python3 tools/relock.py --pins roles/primus/vars/releases/v26.5.yml --out /tmp/v26.5.yml
    python3 tools/relock.py --pins ... --index https://mirror.example/rocm/whl-multi-arch --archs gfx942

Exit status: 0 with a new file written, 2 when the current date is already the newest complete one
(nothing written), 1 when no date is complete. Then re-make the lock (tools/release_lock.py).
"""
import argparse
import concurrent.futures
import os
import re
import sys
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".collections"))
from ansible_collections.primus.trainenv.plugins.module_utils import release_lock  # noqa: E402
from ansible_collections.primus.trainenv.plugins.module_utils.common import normalize_name, redact_url  # noqa: E402

# The nightly set: (project, pins `versions` key), and per arch (device project, companion whose version it has).
MAIN = (("torch", "torch"), ("torchaudio", "torchaudio"), ("torchvision", "torchvision"), ("apex", "apex"),
        ("rocm-sdk-devel", "rocm_sdk"))
DEVICE = (("amd-torch-device-{arch}", "torch"), ("rocm-sdk-device-{arch}", "rocm-sdk-devel"),
          ("amd-torchvision-device-{arch}", "torchvision"))
WHEEL = re.compile(r"^(?P<name>.+?)-(?P<version>[^-]+)(?:-\d[^-]*)?-(?P<tags>[^-]+-[^-]+-[^-]+)\.whl$")
LINE = re.compile(r"(\d+(?:\.\d+)*)a(20\d{6})")
TIMEOUT = 30


def fits_cp312(tags):
    """Whether a wheel's (compressed) tag set installs on CPython 3.12, Linux x86_64."""
    pys, abis, plats = tags.split("-")
    py_ok = any(p in ("cp312", "py3", "py312", "py2.py3") for p in pys.split("."))
    abi_ok = any(a in ("cp312", "abi3", "none") for a in abis.split("."))
    plat_ok = any(p == "any" or (p.startswith(("manylinux", "linux")) and p.endswith("x86_64")) for p in plats.split("."))
    return py_ok and abi_ok and plat_ok


def nightly(version):
    """(ROCm line, YYYYMMDD) of a nightly version (2.12.0+rocm7.15.0a20260720 -> ('7.15.0', '20260720'))."""
    match = LINE.search(version)
    return (match.group(1), match.group(2)) if match else (None, None)


def fetch(index_url, project, timeout=TIMEOUT):
    """The file names the index lists for a project ([] when it has none)."""
    url = "%s/%s/" % (index_url.rstrip("/"), normalize_name(project))
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return sorted(release_lock.parse_simple_page(response.read().decode("utf-8", "replace")))
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return []
        raise


def published(files, line):
    """{date: {version: why unusable or ''}} of one project's files on the ROCm line."""
    out = {}
    for name in files:
        match = WHEEL.match(name)
        if not match:
            continue
        file_line, date = nightly(match.group("version"))
        if file_line != line:
            continue
        usable = fits_cp312(match.group("tags"))
        versions = out.setdefault(date, {})
        if usable or match.group("version") not in versions:
            versions[match.group("version")] = "" if usable else "no cp312 Linux x86_64 wheel (%s)" % match.group("tags")
    return out


def _version_key(version):
    return [int(p) if p.isdigit() else p for p in re.split(r"[.+a-z]+", version) if p]


def judge(pages, archs, line):
    """([(date, {project: version}, [reasons])], newest first) over every date any project publishes."""
    by_project = dict((p, published(files, line)) for p, files in pages.items())
    dates = sorted(set(d for dates in by_project.values() for d in dates), reverse=True)
    verdicts = []
    for date in dates:
        chosen, reasons = {}, []
        for project in dict(MAIN):
            versions = by_project.get(project, {}).get(date, {})
            good = sorted((v for v, why in versions.items() if not why), key=_version_key)
            if good:
                chosen[project] = good[-1]
            elif versions:
                reasons.append("%s: %s" % (project, "; ".join(sorted(set(versions.values())))))
            else:
                reasons.append("%s: not published" % project)
        for arch in archs:
            for pattern, companion in DEVICE:
                project = pattern.format(arch=arch)
                versions = by_project.get(project, {}).get(date, {})
                want = chosen.get(companion)
                if not versions:
                    reasons.append("%s: not published" % project)
                elif want is None:
                    continue
                elif want not in versions:
                    has = " (has %s)" % ", ".join(sorted(versions)) if versions else ""
                    reasons.append("%s: no wheel at %s%s" % (project, want, has))
                elif versions[want]:
                    reasons.append("%s: %s" % (project, versions[want]))
        verdicts.append((date, chosen, reasons))
    return verdicts


def rewrite(text, versions, chosen):
    """The pins text with each old nightly version replaced by the chosen date's (nothing else touched)."""
    replacements = {}
    for project, key in MAIN:
        old = str(versions[key])
        replacements[old] = chosen[project]
    pattern = re.compile(r"(?<![\w.+])(?:" + "|".join(re.escape(v) for v in sorted(replacements, key=len, reverse=True)) + r")(?![\w.+])")
    return pattern.sub(lambda m: replacements[m.group(0)], text)


def main(argv=None):
    import yaml  # the controller's (ansible-core requires PyYAML)
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pins", required=True, help="the current release pins file")
    parser.add_argument("--out", required=True, help="the new pins file to write")
    parser.add_argument("--index", help="the ROCm index (default: the pins' indexes.torch)")
    parser.add_argument("--archs", help="comma-separated GPU archs (default: the pins' torch.device_archs)")
    args = parser.parse_args(argv)
    with open(args.pins) as handle:
        text = handle.read()
    pins = (yaml.safe_load(text) or {}).get("primus_pins") or {}
    index = args.index or pins["indexes"]["torch"]
    archs = [a for a in (args.archs.split(",") if args.archs else pins["torch"]["device_archs"]) if a]
    line, current = nightly(str(pins["versions"]["rocm_sdk"]))
    if not line:
        print("%s: versions.rocm_sdk %r is not a nightly version" % (args.pins, pins["versions"]["rocm_sdk"]), file=sys.stderr)
        return 1
    projects = list(dict(MAIN)) + [pattern.format(arch=a) for a in archs for pattern in dict(DEVICE)]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        pages = dict(zip(projects, pool.map(lambda p: fetch(index, p), projects)))
    verdicts = judge(pages, archs, line)
    print("ROCm index %s, line %s, archs %s, current date %s" % (redact_url(index), line, ",".join(archs), current))
    newest = None
    for date, chosen, reasons in verdicts:
        if reasons:
            print("  %s incomplete: %s" % (date, "; ".join(reasons)))
        else:
            print("  %s complete: %s" % (date, ", ".join("%s %s" % kv for kv in sorted(chosen.items()))))
            newest = (date, chosen)
            break
    if newest is None:
        print("no date publishes the complete set: keep the current pins and use a wheelhouse or a site mirror that "
              "still has them (docs/offline.md, \"When the nightly disappears\")", file=sys.stderr)
        return 1
    if newest[0] == current:
        print("%s is already the newest complete date: nothing written" % current)
        return 2
    new_text = rewrite(text, pins["versions"], newest[1])
    with open(args.out, "w") as handle:
        handle.write(new_text)
    print("wrote %s: nightly %s -> %s. Next: converge once with primus_lock_record and make the lock "
          "(tools/release_lock.py)." % (args.out, current, newest[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
