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

A release that pins the ROCm SDK first (torch.sdk_packages: rocm, rocm-sdk-core, rocm-sdk-libraries ... at the
SDK's version) needs each of those at the date's rocm-sdk-devel version too.

It also proposes the TransformerEngine wheel: the newest transformer_engine_rocm_torch on the TE index (indexes.te)
for the same ROCm line and a nightly date no later than the chosen one, whose core wheel has a CPython 3.12 build, or
says that there is none. `--te` writes it (te.wheel, versions.transformer_engine, and sources.te at the commit its
label names: abbreviated, ref_kind short_commit).

A release file of the collection at the new nightly or an earlier one on the same line that fixes files the SDK
installs (installed_fixes: upstream's v26.5.1 links comgr's second copy for its nightly) gives its fixes to a new file
that has none, and the report names them; `--no-fixes` leaves them out.

`--resolve-commits` completes every abbreviated commit of the pins (sources.<name>.ref_kind short_commit) from its
repository (a blob-less bare clone, then git rev-parse) and writes the full commit with ref_kind commit; an
abbreviation that is not found or not unique is an error. It runs after the nightly move, or alone with
--no-nightly.

Exit status: 0 with a new file written, 2 when nothing changed (the current date is already the newest complete
one, and nothing else was asked), 1 when no date is complete or a commit cannot be resolved. Then re-make the lock
(tools/release_lock.py).
"""
import argparse
import concurrent.futures
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
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
# The SDK's own projects a release may pin first (torch.sdk_packages), each at the rocm-sdk-devel version of a date.
SDK_PROJECTS = ("rocm", "rocm-sdk-core", "rocm-sdk-libraries")
TE_GLUE, TE_CORE = "transformer-engine-rocm-torch", "transformer-engine-rocm7"
WHEEL = re.compile(r"^(?P<name>.+?)-(?P<version>[^-]+)(?:-\d[^-]*)?-(?P<tags>[^-]+-[^-]+-[^-]+)\.whl$")
SDIST = re.compile(r"^(?P<name>.+?)-(?P<version>\d[^-]*)\.tar\.gz$")
TE_LABEL = re.compile(r"\+rocm(\d+(?:\.\d+)*)a(20\d{6})\.([0-9a-f]{7,40})$")
LINE = re.compile(r"(\d+(?:\.\d+)*)a(20\d{6})")
TIMEOUT = 30
# The collection's release files: the fixes to installed files each release's nightly needs (installed_fixes).
RELEASES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "roles", "primus", "vars", "releases")


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


def judge(pages, archs, line, sdk=()):
    """([(date, {project: version}, [reasons])], newest first) over every date any project publishes.
    sdk: the SDK projects the pins install first, each needed at the date's rocm-sdk-devel version."""
    by_project = dict((p, published(files, line)) for p, files in pages.items())
    dates = sorted(set(d for dates in by_project.values() for d in dates), reverse=True)
    verdicts = []
    for date in dates:
        chosen, reasons = {}, []
        for project in sdk:
            versions = by_project.get(project, {}).get(date, {})
            want = [v for v, why in versions.items() if not why]
            if not versions:
                reasons.append("%s: not published" % project)
            elif not want:
                reasons.append("%s: %s" % (project, "; ".join(sorted(set(versions.values())))))
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
        devel = chosen.get("rocm-sdk-devel")
        for project in sdk:
            versions = by_project.get(project, {}).get(date, {})
            if devel and versions and devel not in versions:
                reasons.append("%s: no wheel at %s (has %s)" % (project, devel, ", ".join(sorted(versions))))
        verdicts.append((date, chosen, reasons))
    return verdicts


def te_proposal(glue_files, core_files, line, date):
    """(version, why): the newest TE glue version on the ROCm line whose label's date is not later than `date` and
    whose core wheel has a cp312 Linux build; version '' and why there is none otherwise."""
    core_ok = set()
    for name in core_files:
        match = WHEEL.match(name)
        if match and fits_cp312(match.group("tags")):
            core_ok.add(match.group("version"))
    candidates, seen = [], []
    for name in glue_files:
        match = SDIST.match(name) or WHEEL.match(name)
        if not match:
            continue
        version = match.group("version")
        label = TE_LABEL.search(version)
        if not label or label.group(1) != line:
            continue
        seen.append(version)
        if label.group(2) <= date and version in core_ok:
            candidates.append((label.group(2), _version_key(version), version))
    if candidates:
        return sorted(candidates)[-1][2], ""
    if not seen:
        return "", "the TE index publishes no transformer_engine_rocm_torch for ROCm %s" % line
    return "", ("no transformer_engine_rocm_torch for ROCm %s dated %s or earlier has a CPython 3.12 core wheel "
                "(published: %s)" % (line, date, ", ".join(sorted(seen))))


def _yaml_lines(lines):
    """Yield (index, key path, value text) of every `key: value` line of a block-style YAML text."""
    stack = []
    for index, line in enumerate(lines):
        match = re.match(r"^(\s*)([A-Za-z0-9_]+):(\s*)(.*?)\s*$", line)
        if not match or line.lstrip().startswith("#"):
            continue
        indent = len(match.group(1))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, match.group(2)))
        yield index, tuple(key for _i, key in stack), match.group(4)


def set_values(text, values):
    """The pins text with each {key path tuple: new scalar text} set in place (comments and order kept); KeyError
    names a path the text does not have."""
    lines = text.splitlines(True)
    done = set()
    for index, path, _value in list(_yaml_lines(lines)):
        if path in values:
            match = re.match(r"^(\s*[A-Za-z0-9_]+:\s*)(.*?)(\s*)$", lines[index])
            lines[index] = match.group(1) + values[path] + "\n"
            done.add(path)
    missing = set(values) - done
    if missing:
        raise KeyError("the pins file has no %s" % ", ".join(".".join(p) for p in sorted(missing)))
    return "".join(lines)


def resolve_commit(repo, short, git="git", timeout=600):
    """The full commit an abbreviated one names in the repository (a blob-less bare clone); ValueError says why not."""
    if repo.startswith("-") or not re.match(r"^[0-9a-f]{7,39}$", short):
        raise ValueError("%r / %r is not a repository and an abbreviated commit" % (redact_url(repo), short))
    tmp = tempfile.mkdtemp(prefix="relock-")
    try:
        env = dict(os.environ, GIT_TERMINAL_PROMPT="0")
        clone = subprocess.run([git, "clone", "--quiet", "--bare", "--filter=blob:none", "--", repo, tmp + "/r"],
                               capture_output=True, text=True, timeout=timeout, env=env, check=False)
        if clone.returncode:
            last = clone.stderr.strip().splitlines()[-1] if clone.stderr.strip() else ""
            raise ValueError("cannot clone %s: %s" % (redact_url(repo), redact_url(last)))
        found = subprocess.run([git, "-C", tmp + "/r", "rev-parse", "--verify", "--quiet", short + "^{commit}"],
                               capture_output=True, text=True, timeout=timeout, env=env, check=False)
        full = found.stdout.strip()
        if found.returncode or not COMMIT.match(full):
            raise ValueError("%s has no single commit %s (not found, or the abbreviation is ambiguous)"
                             % (redact_url(repo), short))
        return full
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


COMMIT = re.compile(r"^[0-9a-f]{40}$")


def rewrite(text, versions, chosen):
    """The pins text with each old nightly version replaced by the chosen date's (nothing else touched)."""
    replacements = {}
    for project, key in MAIN:
        old = str(versions[key])
        replacements[old] = chosen[project]
    pattern = re.compile(r"(?<![\w.+])(?:" + "|".join(re.escape(v) for v in sorted(replacements, key=len, reverse=True)) + r")(?![\w.+])")
    return pattern.sub(lambda m: replacements[m.group(0)], text)


def move_nightly(text, pins, index, archs, out=print):
    """(new text, date, chosen) at the newest complete date, or (None, reason code, message): 2 nothing newer, 1 none."""
    line, current = nightly(str(pins["versions"]["rocm_sdk"]))
    if not line:
        return None, 1, "versions.rocm_sdk %r is not a nightly version" % pins["versions"]["rocm_sdk"]
    sdk_names = set(normalize_name(re.split(r"[=<>!~\[; ]", r, 1)[0]) for r in pins["torch"].get("sdk_packages") or [])
    sdk = [p for p in SDK_PROJECTS if p in sdk_names]
    projects = list(dict(MAIN)) + sdk + [pattern.format(arch=a) for a in archs for pattern in dict(DEVICE)]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        pages = dict(zip(projects, pool.map(lambda p: fetch(index, p), projects)))
    verdicts = judge(pages, archs, line, sdk)
    out("ROCm index %s, line %s, archs %s, current date %s" % (redact_url(index), line, ",".join(archs), current))
    for date, chosen, reasons in verdicts:
        if reasons:
            out("  %s incomplete: %s" % (date, "; ".join(reasons)))
            continue
        out("  %s complete: %s" % (date, ", ".join("%s %s" % kv for kv in sorted(chosen.items()))))
        if date == current:
            return None, 2, "%s is already the newest complete date" % current
        return rewrite(text, pins["versions"], chosen), date, chosen
    return None, 1, ("no date publishes the complete set: keep the current pins and use a wheelhouse or a site mirror "
                     "that still has them (docs/offline.md, \"When the nightly disappears\")")


def known_fixes(line, date, releases_dir=RELEASES):
    """(release, its nightly date, its installed_fixes) of the newest release file in releases_dir on the ROCm line
    whose nightly is no later than date and that fixes installed files, or None: an SDK at a later nightly has the
    files an earlier one's fixes were made for, until a release file says otherwise."""
    import yaml
    best = None
    for path in sorted(glob.glob(os.path.join(releases_dir, "*.yml"))):
        try:
            with open(path) as handle:
                pins = (yaml.safe_load(handle) or {}).get("primus_pins") or {}
        except (OSError, yaml.YAMLError, AttributeError) as exc:
            raise ValueError("release file %s cannot be read as a release file: %s" % (path, str(exc).splitlines()[0]))
        fixes = pins.get("installed_fixes") or []
        their_line, their_date = nightly(str((pins.get("versions") or {}).get("rocm_sdk", "")))
        if fixes and their_date and their_line == line and their_date <= date and (best is None or their_date > best[1]):
            best = (str(pins.get("release") or os.path.basename(path)[:-4]), their_date, fixes)
    return best


def add_fixes(text, fixes):
    """The pins text with an installed_fixes list appended to primus_pins (the file's last block); ValueError when
    the text's layout does not take it there."""
    import yaml
    block = yaml.safe_dump(fixes, default_flow_style=False, sort_keys=False, width=1000)
    new = text.rstrip("\n") + "\n  installed_fixes:\n" + "".join("    " + line + "\n" for line in block.splitlines())
    try:
        parsed = ((yaml.safe_load(new) or {}).get("primus_pins") or {}).get("installed_fixes")
    except yaml.YAMLError:
        parsed = None
    if parsed != fixes:
        raise ValueError("primus_pins is not the last block of the file with two-space indentation")
    return new


def main(argv=None):
    import yaml  # the controller's (ansible-core requires PyYAML)
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pins", required=True, help="the current release pins file")
    parser.add_argument("--out", required=True, help="the new pins file to write")
    parser.add_argument("--index", help="the ROCm index (default: the pins' indexes.torch)")
    parser.add_argument("--te-index", help="the TE index (default: the pins' indexes.te)")
    parser.add_argument("--archs", help="comma-separated GPU archs (default: the pins' torch.device_archs)")
    parser.add_argument("--te", action="store_true", help="write the proposed TE wheel into the new pins")
    parser.add_argument("--resolve-commits", action="store_true",
                        help="complete every abbreviated commit (ref_kind short_commit) from its repository")
    parser.add_argument("--no-nightly", action="store_true", help="keep the nightly (with --resolve-commits)")
    parser.add_argument("--no-fixes", action="store_true",
                        help="do not add the installed_fixes a release file of the new nightly or an earlier one has")
    parser.add_argument("--releases-dir", default=RELEASES, help="the release files whose installed_fixes are taken "
                        "(default: the collection's, roles/primus/vars/releases)")
    args = parser.parse_args(argv)
    with open(args.pins) as handle:
        text = handle.read()
    pins = (yaml.safe_load(text) or {}).get("primus_pins") or {}
    index = args.index or pins["indexes"]["torch"]
    archs = [a for a in (args.archs.split(",") if args.archs else pins["torch"]["device_archs"]) if a]
    new_text, status = text, 2
    line, date = nightly(str(pins["versions"]["rocm_sdk"]))
    if not args.no_nightly:
        moved, code, detail = move_nightly(text, pins, index, archs)
        if moved is None:
            print(detail, file=sys.stderr if code == 1 else sys.stdout)
            if code == 1:
                return code
        else:
            new_text, status, date = moved, 0, code
            print("nightly %s -> %s" % (nightly(str(pins["versions"]["rocm_sdk"]))[1], date))
    if status == 0 and not args.no_fixes and not pins.get("installed_fixes"):
        try:
            found = known_fixes(line, date, args.releases_dir)
        except ValueError as exc:
            print("installed fixes: %s; fix it, give another --releases-dir, or --no-fixes" % exc, file=sys.stderr)
            return 1
        if found:
            release, their_date, fixes = found
            try:
                new_text = add_fixes(new_text, fixes)
            except ValueError as exc:
                print("installed fixes: cannot add those of release %s: %s; add its installed_fixes by hand, or "
                      "--no-fixes" % (release, exc), file=sys.stderr)
                return 1
            print("installed fixes: %s, from release %s (nightly %s, no later than %s); --no-fixes leaves them out"
                  % (", ".join(str(f.get("name")) for f in fixes), release, their_date, date))
    te_index = args.te_index or pins["indexes"]["te"]
    try:
        glue, core = fetch(te_index, TE_GLUE), fetch(te_index, TE_CORE)
        proposal, why = te_proposal(glue, core, line, date)
    except (urllib.error.URLError, OSError) as exc:
        proposal, why = "", "the TE index %s cannot be read: %s" % (redact_url(te_index), exc)
    current_te = str(pins["versions"]["transformer_engine"])
    if not proposal:
        print("TE: no proposal: %s; te.wheel stays %s" % (why, current_te))
    elif proposal == current_te:
        print("TE: %s is the newest for ROCm %s dated %s or earlier; unchanged" % (current_te, line, date))
    elif not args.te:
        print("TE: proposed %s (the pins have %s); re-run with --te to write it" % (proposal, current_te))
    else:
        commit = TE_LABEL.search(proposal).group(3)
        name = pins["te"]["wheel"].split("==")[0]
        new_text = set_values(new_text, {
            ("primus_pins", "versions", "transformer_engine"): proposal,
            ("primus_pins", "te", "wheel"): "%s==%s" % (name, proposal),
            ("primus_pins", "sources", "te", "ref"): commit,
            ("primus_pins", "sources", "te", "ref_kind"): "commit" if COMMIT.match(commit) else "short_commit"})
        status = 0
        note = "" if COMMIT.match(commit) else ": abbreviated, see --resolve-commits"
        print("TE: %s -> %s (source mode builds commit %s%s)" % (current_te, proposal, commit, note))
    if args.resolve_commits:
        current = (yaml.safe_load(new_text) or {}).get("primus_pins") or {}
        for name, source in sorted((current.get("sources") or {}).items()):
            if source.get("ref_kind") != "short_commit":
                continue
            try:
                full = resolve_commit(source["repo"], source["ref"])
            except (ValueError, OSError, subprocess.SubprocessError) as exc:
                print("sources.%s: %s" % (name, exc), file=sys.stderr)
                return 1
            new_text = set_values(new_text, {("primus_pins", "sources", name, "ref"): full,
                                             ("primus_pins", "sources", name, "ref_kind"): "commit"})
            status = 0
            print("sources.%s: %s -> %s" % (name, source["ref"], full))
    if status == 2:
        print("nothing written")
        return 2
    with open(args.out, "w") as handle:
        handle.write(new_text)
    print("wrote %s. Next: converge once with primus_lock_record and make the lock (tools/release_lock.py)." % args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
