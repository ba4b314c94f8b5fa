# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Read a venv's installed distributions and marker environment with ONE run of its python.

The probe runs as `<venv>/bin/python -I -c PROBE_SCRIPT`: isolated mode keeps the current
directory, PYTHONPATH and the user site out of sys.path, so the installed set is exactly the
venv's own site-packages (plus the system site-packages when the venv was created with them).
It finds distributions like importlib.metadata does (*.dist-info and *.egg-info in each sys.path
directory, first one wins) but reads only the header block of each METADATA file: a venv of
300 real distributions has megabytes of long descriptions that the decision never needs.

The probe also returns the stat (mtime, ctime, size, inode) of everything it read: each sys.path
directory, each .dist-info/.egg-info directory and the files read in it, and the .pth files (which
add sys.path entries). That is the key of a snapshot (`<venv>/.pip-constrained-snapshot.json`)
that later tasks read instead of running the venv's python again, as long as every one of those
stats, the interpreter, pyvenv.cfg and the kernel are unchanged: an install, a removal or a hand
edit changes a directory's or a file's stat. A snapshot whose files changed within RACY_SECONDS of
the probe is not stored (a change in the same clock tick could leave a stat unchanged).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import hashlib
import json
import os

from ansible_collections.primus.trainenv.plugins.module_utils.common import normalize_name

PROBE_MARKER = '@@primus-pip-probe@@'

# Runs inside the venv's interpreter (3.8+). Prints one JSON line after PROBE_MARKER.
PROBE_SCRIPT = r'''
import json, os, platform, re, sys, sysconfig

def full(info):
    v = "%d.%d.%d" % (info.major, info.minor, info.micro)
    if info.releaselevel != "final":
        v += info.releaselevel[0] + str(info.serial)
    return v

def head(path):
    # The header block of a METADATA file (up to the first blank line), without the description.
    chunks = []
    with open(path, "rb") as handle:
        while True:
            block = handle.read(16384)
            if not block:
                break
            chunks.append(block)
            data = b"".join(chunks).replace(b"\r\n", b"\n")
            end = data.find(b"\n\n")
            if end >= 0:
                return data[:end].decode("utf-8", "replace")
    return b"".join(chunks).replace(b"\r\n", b"\n").decode("utf-8", "replace")

def headers(text):
    out = {}
    last = None
    for line in text.split("\n"):
        if line[:1] in (" ", "\t") and last is not None:
            out[last][-1] += " " + line.strip()
            continue
        key, sep, value = line.partition(":")
        if not sep:
            continue
        last = key.strip().lower()
        out.setdefault(last, []).append(value.strip())
    return out

def canonical(name):
    return re.sub(r"[-_.]+", "-", name).lower()

def read(path, name):
    try:
        with open(os.path.join(path, name), encoding="utf-8") as handle:
            return handle.read()
    except (OSError, ValueError):
        return None

keys = []   # [path, stat]: what a snapshot of this result depends on

def key(path):
    try:
        s = os.stat(path)
        keys.append([path, [s.st_mtime_ns, s.st_ctime_ns, s.st_size, s.st_ino]])
    except OSError:
        keys.append([path, None])

def requires_txt(path):
    # pip's _iter_egg_info_dependencies/_iter_egg_info_extras: requires.txt sections as markers, extras canonical
    requires, extras = [], []
    extra = marker = ""
    for line in (read(path, "requires.txt") or "").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            extra, _sep, marker = line.strip("[]").partition(":")
            continue
        name = canonical(extra)
        if name and marker:
            condition = '(%s) and extra == "%s"' % (marker, name)
        elif name:
            condition = 'extra == "%s"' % name
        else:
            condition = marker
        requires.append("%s ; %s" % (line, condition) if condition else line)
        if name and name not in extras:
            extras.append(name)
    return requires, extras

def metadata_text(path):
    # importlib.metadata's PathDistribution.metadata: METADATA, else PKG-INFO (the first that is not empty), else the
    # path itself (a legacy .egg-info file); only the header block is read
    # (a file that cannot be read counts as missing, as importlib.metadata's read_text has it)
    for name in ("METADATA", "PKG-INFO") if os.path.isdir(path) else ("",):
        target = os.path.join(path, name) if name else path
        try:
            if os.path.getsize(target) > 0:
                return head(target)
        except (OSError, ValueError):
            continue
    return ""

def lookup_key(low):
    # importlib.metadata's Lookup groups a directory's *.dist-info/*.egg-info by the project of their name
    name = low.rpartition(".")[0].partition("-")[0]
    return re.sub(r"[-_.]+", "-", name).lower().replace("-", "_")

dists = []
found = set()

def scan(entry):
    # the distributions of one sys.path entry in the order importlib.metadata (and so pip) yields them: grouped
    # by the project of the directory name, groups in order of first appearance, each in directory order
    key(entry)
    if not os.path.isdir(entry):
        return []
    try:
        listing = os.listdir(entry)
    except OSError:
        return []
    groups = {}
    links = []
    for base in listing:
        path = os.path.join(entry, base)
        if base.endswith(".pth"):
            key(path)
            continue
        if base.endswith(".egg-link"):
            links.append(path)
        low = base.lower()
        if low.endswith((".dist-info", ".egg-info")) and not base.startswith("~"):
            # "~" : pip's leftovers of an interrupted uninstall ("~orch-2.12.0.dist-info")
            groups.setdefault(lookup_key(low), []).append(base)
    for bases in groups.values():
        for base in bases:
            one(entry, base)
    return links

def one(entry, base):
    path = os.path.join(entry, base)
    key(path)
    for name in ("METADATA", "PKG-INFO", "requires.txt", "direct_url.json"):
        key(os.path.join(path, name))
    meta = headers(metadata_text(path))
    name = (meta.get("name") or [None])[0]
    version = (meta.get("version") or [None])[0]
    requires = meta.get("requires-dist") or []
    extras = meta.get("provides-extra") or []
    if not requires or not extras:
        # pip adds requires.txt (a legacy .egg-info's, or any) when the metadata has no Requires-Dist/Provides-Extra
        txt_requires, txt_extras = requires_txt(path)
        requires = requires or txt_requires
        extras = extras or txt_extras
    # pip (metadata/importlib/_compat.py) takes the name from the directory name (name-version.dist-info,
    # name-....egg-info) when it has one, the version from name-version.dist-info when it has one; METADATA's
    # spelling of the name is kept for display where the two agree
    if base.endswith(".dist-info"):
        dir_name, sep, dir_version = base[:-len(".dist-info")].partition("-")
        if sep and dir_version:
            version = dir_version if version is None or version.replace("-", "_") != dir_version else version
    elif base.endswith(".egg-info"):
        dir_name, sep = base[:-len(".egg-info")].split("-", 1)[0], "-"
    else:
        dir_name, sep = "", ""
    if sep and dir_name and (not name or canonical(name) != canonical(dir_name)):
        name = dir_name
    if not name or version is None or canonical(name) in found:
        return
    found.add(canonical(name))
    try:
        stamp = os.stat(path).st_mtime_ns
    except OSError:
        stamp = None
    dists.append([name, version, requires, read(path, "direct_url.json"), path, stamp, extras])

for entry in sys.path:
    if not entry:
        continue
    for link in scan(entry):
        # pip's find_legacy_editables: the project an .egg-link points at, right after its directory's own
        key(link)
        try:
            with open(link, encoding="utf-8") as handle:
                target = next((line.strip() for line in handle if line.strip()), "")
        except (OSError, ValueError):
            continue
        if target:
            scan(os.path.join(entry, target))

def tag_facts():
    # What packaging.tags.sys_tags() is built from: interpreter, ABI, platform, glibc.
    impl = {"cpython": "cp", "pypy": "pp"}.get(sys.implementation.name, sys.implementation.name)
    soabi = sysconfig.get_config_var("SOABI") or ""
    parts = soabi.split("-")
    abi = None
    if impl == "cp" and len(parts) > 1 and parts[0] == "cpython":
        abi = "cp" + parts[1]
    try:
        glibc = os.confstr("CS_GNU_LIBC_VERSION").split()[1].split(".")[:2]
        glibc = [int(glibc[0]), int(glibc[1])]
    except (AttributeError, ValueError, OSError, IndexError, TypeError):
        glibc = None
    return {"impl": impl, "python": list(sys.version_info[:2]), "abi": abi,
            "abi3": bool(abi) and abi[-1:].isdigit(),
            "platform": sysconfig.get_platform().replace("-", "_").replace(".", "_"), "glibc": glibc,
            "interpreter": "%s%d%d" % (impl, sys.version_info[0], sys.version_info[1])}

paths = sysconfig.get_paths()
out = {
    "executable": sys.executable,
    "prefix": sys.prefix,
    "base_prefix": getattr(sys, "base_prefix", sys.prefix),
    "version": list(sys.version_info[:3]),
    "purelib": paths.get("purelib"),
    "platlib": paths.get("platlib"),
    "markers": {
        "implementation_name": sys.implementation.name,
        "implementation_version": full(sys.implementation.version),
        "os_name": os.name,
        "platform_machine": platform.machine(),
        "platform_release": platform.release(),
        "platform_system": platform.system(),
        "platform_version": platform.version(),
        "python_full_version": platform.python_version(),
        "platform_python_implementation": platform.python_implementation(),
        "python_version": ".".join(platform.python_version_tuple()[:2]),
        "sys_platform": sys.platform,
    },
    "dists": dists,
    "tags": tag_facts(),
    "keys": keys,
}
sys.stdout.write("%s\n%s\n" % ("@@primus-pip-probe@@", json.dumps(out)))
'''


class ProbeError(Exception):
    pass


class Dist(object):
    """One installed distribution."""

    __slots__ = ('name', 'key', 'version', 'requires', 'direct_url', 'path', 'stamp', 'provides_extra')

    def __init__(self, name, key, version, requires=None, direct_url=None, path=None, stamp=None, provides_extra=None):
        self.name = name
        self.key = key
        self.version = version
        self.requires = requires or []
        self.direct_url = direct_url
        self.path = path
        self.stamp = stamp  # mtime (ns) of the .dist-info directory: a reinstall makes a new one
        self.provides_extra = set(normalize_name(e) for e in provides_extra or [])  # pip ignores other extras

    def __repr__(self):
        return 'Dist(%s==%s)' % (self.name, self.version)


class Probe(object):
    """The venv as its own interpreter sees it."""

    def __init__(self, data, dists):
        self.data = data
        self.dists = dists  # key (canonical name) -> Dist; first on sys.path wins, like imports
        self.markers = dict(data.get('markers') or {})
        self.executable = data.get('executable')
        self.version = tuple(data.get('version') or ())
        self.site_dirs = [d for d in (data.get('purelib'), data.get('platlib')) if d]

    @property
    def python_version(self):
        return '.'.join(str(p) for p in self.version)

    def reinstalled(self, other):
        """Names installed at the same version in both probes but in a new .dist-info directory."""
        out = []
        for key, dist in self.dists.items():
            new = other.dists.get(key)
            if new is not None and new.version == dist.version and (new.path, new.stamp) != (dist.path, dist.stamp):
                out.append(dist.name)
        return sorted(out, key=str.lower)

    def versions(self):
        """{key: (name, version)} of the installed set."""
        return dict((key, (d.name, d.version)) for key, d in self.dists.items())


def probe_payload(stdout):
    """The probe's JSON result from its output. Raises ProbeError with a readable reason."""
    text = stdout or ''
    idx = text.rfind(PROBE_MARKER)
    if idx < 0:
        raise ProbeError('the probe printed no result (is this a Python 3.8+ interpreter?)')
    payload = text[idx + len(PROBE_MARKER):].strip().splitlines()
    if not payload:
        raise ProbeError('the probe printed an empty result')
    try:
        data = json.loads(payload[0])
    except ValueError as exc:
        raise ProbeError('the probe printed invalid JSON: %s' % exc)
    if not isinstance(data, dict) or not isinstance(data.get('dists'), list):
        raise ProbeError('the probe result has no distribution list')
    return data


def parse_probe(stdout):
    """Parse the probe's output into a Probe. Raises ProbeError with a readable reason."""
    return probe_from_data(probe_payload(stdout))


def probe_from_data(data):
    """A Probe from the probe's JSON result (fresh, or read from a snapshot)."""
    dists = {}
    for entry in data['dists']:
        name, version, requires, direct, path, stamp, extras = (list(entry) + [None] * 7)[:7]
        if not name or version is None:
            continue
        key = normalize_name(name)  # without `packaging`: the probe is read before it is loaded
        if key in dists:
            continue
        direct_url = None
        if direct:
            try:
                direct_url = json.loads(direct)
            except ValueError:
                direct_url = None
        dists[key] = Dist(name, key, str(version), list(requires or []), direct_url, path, stamp, extras)
    return Probe(data, dists)


# ---- the snapshot: the probe's result, reused while nothing it read has changed ----------------

SNAPSHOT_NAME = '.pip-constrained-snapshot.json'
# A new probe (another collection version) never reads an older probe's snapshot.
SNAPSHOT_FORMAT = hashlib.sha256(PROBE_SCRIPT.encode('utf-8')).hexdigest()[:16]
# Files changed this recently are not trusted to show a later change in their stat (a change within
# the same timestamp tick keeps the mtime; network file systems may stamp in whole seconds).
RACY_SECONDS = 2.0


def file_stat(path):
    """[mtime_ns, ctime_ns, size, inode] of path (following links), or None when it cannot be stat'ed."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino]


def snapshot_path(venv):
    return os.path.join(venv, SNAPSHOT_NAME)


def interpreter_key(venv, python):
    """What the probe's interpreter facts (version, markers, tags, sys.path) depend on, outside site-packages."""
    real = os.path.realpath(python)
    # mtime, size and inode, not ctime: a shared interpreter's ctime moves with every chmod or hard link made to it
    # (seen on a build host), which is no change to what it runs.
    binary = [(st[0], st[2], st[3]) if st else None for st in (file_stat(python), file_stat(real))]
    try:
        libc = os.confstr('CS_GNU_LIBC_VERSION')
    except (AttributeError, ValueError, OSError):
        libc = None
    return {'format': SNAPSHOT_FORMAT, 'python': [python, real] + [list(b) if b else None for b in binary],
            'pyvenv': file_stat(os.path.join(venv, 'pyvenv.cfg')), 'uname': list(os.uname()), 'libc': libc}


def racy(data, started):
    """True when something the probe read changed less than RACY_SECONDS before it started."""
    limit = int((started - RACY_SECONDS) * 1e9)
    return any(stat is not None and stat[0] >= limit for _path, stat in data.get('keys') or [])


def save_snapshot(venv, python, data, started):
    """Store the probe's result for later tasks; returns 'saved', or why not ('racy', 'no keys', an OS error)."""
    if not isinstance(data.get('keys'), list) or not data['keys']:
        return 'no keys'
    if racy(data, started):
        return 'racy'
    path = snapshot_path(venv)
    text = json.dumps({'key': interpreter_key(venv, python), 'probe': data}, sort_keys=True)
    try:
        import tempfile  # pylint: disable=import-outside-toplevel
        fd, tmp = tempfile.mkstemp(prefix=SNAPSHOT_NAME + '.', dir=venv)   # mode 0600
        try:
            with os.fdopen(fd, 'w') as handle:
                handle.write(text)
            os.rename(tmp, path)
        except BaseException:
            os.remove(tmp)
            raise
    except (IOError, OSError) as exc:
        return 'not written: %s' % exc
    return 'saved'


def load_snapshot(venv, python):
    """(the probe's result, None) from a valid snapshot, or (None, why not). Never trusts a changed key.

    Valid: a regular file owned by this user and writable by no one else, of this probe format, for the same
    interpreter, pyvenv.cfg and kernel, and every path the probe read has the same stat (or is still missing).
    """
    path = snapshot_path(venv)
    try:
        st = os.lstat(path)
    except OSError:
        return None, 'none'
    if not os.path.isfile(path) or os.path.islink(path) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
        return None, 'not trusted (not a regular file of this user, or writable by others)'
    try:
        with open(path) as handle:
            stored = json.load(handle)
        data = stored['probe']
        if stored['key'] != interpreter_key(venv, python):
            return None, 'stale (the interpreter, pyvenv.cfg or the kernel changed)'
        keys = data['keys']
        if not isinstance(data.get('dists'), list) or not isinstance(keys, list) or not keys:
            return None, 'unreadable'
        for entry, stat in keys:
            if file_stat(entry) != stat:
                return None, 'stale (%s changed)' % entry
    except (IOError, OSError, ValueError, KeyError, TypeError) as exc:
        return None, 'unreadable (%s)' % exc
    return data, None


def drop_snapshot(venv):
    """Remove the snapshot (before pip changes the venv: it must never outlive what it describes)."""
    try:
        os.remove(snapshot_path(venv))
    except OSError:
        pass


def probe_command(python):
    return [python, '-I', '-c', PROBE_SCRIPT]
