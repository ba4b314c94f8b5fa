"""Deterministic wheel and sdist writer for stand-in packages.

The same inputs always give byte-identical archives (fixed timestamps, sorted entries), so a
world built twice has the same file hashes and a base converged against one build stays
converged against the next.
"""
import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

EPOCH = (2026, 7, 20, 0, 0, 0)
EPOCH_TS = 1784505600  # 2026-07-20T00:00:00Z


def normalize(name):
    """PEP 503 normalized project name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _dist_name(name):
    """Name as used in wheel/sdist file names and .dist-info directories."""
    return re.sub(r"[-_.]+", "_", name)


def _record_hash(data):
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _metadata(name, version, requires, summary, extra_metadata):
    lines = ["Metadata-Version: 2.1", "Name: %s" % name, "Version: %s" % version,
             "Summary: %s" % (summary or "stand-in for %s (primus.trainenv test world)" % name)]
    for req in requires:
        lines.append("Requires-Dist: %s" % req)
    for key, value in extra_metadata:
        lines.append("%s: %s" % (key, value))
    return "\n".join(lines) + "\n"


def _as_bytes(content):
    return content.encode("utf-8") if isinstance(content, str) else content


def _expand(tag):
    """The tags of a (possibly compressed) tag set: py2.py3-none-any -> py2-none-any, py3-none-any."""
    pys, abis, plats = tag.split("-")
    return ["%s-%s-%s" % (p, a, s) for p in pys.split(".") for a in abis.split(".") for s in plats.split(".")]


def build_wheel(dest_dir, name, version, requires=(), files=None, entry_points=None,
                tag="py3-none-any", summary=None, extra_metadata=(), executables=(), dist_name=None):
    """Write a wheel and return its path.

    files: {archive path: str|bytes} placed in purelib (e.g. "torch/__init__.py").
    entry_points: {"console_scripts": {"rocm-sdk": "rocm_sdk.cli:main"}}.
    executables: archive paths that get mode 0o755.
    dist_name: the name as spelled in the file name (default: the normalized form with "_").
    """
    files = dict(files or {})
    dist = dist_name or _dist_name(name)
    dist_info = "%s-%s.dist-info" % (dist, version)
    entries = []
    for path in sorted(files):
        entries.append((path, _as_bytes(files[path])))
    meta = {
        dist_info + "/METADATA": _metadata(name, version, requires, summary, extra_metadata),
        dist_info + "/WHEEL": "Wheel-Version: 1.0\nGenerator: primus-world\nRoot-Is-Purelib: %s\n%s"
        % ("true" if tag.endswith("none-any") else "false", "".join("Tag: %s\n" % t for t in _expand(tag))),
    }
    if entry_points:
        text = []
        for group in sorted(entry_points):
            text.append("[%s]" % group)
            for key in sorted(entry_points[group]):
                text.append("%s = %s" % (key, entry_points[group][key]))
            text.append("")
        meta[dist_info + "/entry_points.txt"] = "\n".join(text)
    for path in sorted(meta):
        entries.append((path, _as_bytes(meta[path])))
    record_path = dist_info + "/RECORD"
    record = "".join("%s,%s,%d\n" % (p, _record_hash(d), len(d)) for p, d in entries)
    record += "%s,,\n" % record_path
    entries.append((record_path, record.encode("utf-8")))

    os.makedirs(dest_dir, exist_ok=True)
    out = os.path.join(dest_dir, "%s-%s-%s.whl" % (dist, version, tag))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for path, data in entries:
            info = zipfile.ZipInfo(path, date_time=EPOCH)
            mode = 0o755 if path in executables else 0o644
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    with open(out, "wb") as handle:
        handle.write(buf.getvalue())
    return out


def build_sdist(dest_dir, name, version, files, requires=(), extra_metadata=()):
    """Write a .tar.gz sdist (files relative to the project root) and return its path.

    PKG-INFO is added (with requires as Requires-Dist and extra_metadata, e.g. Requires-Python,
    as setuptools writes it); the caller supplies setup.py / pyproject.toml and the sources.
    """
    base = "%s-%s" % (_dist_name(name), version)
    members = dict(files)
    members.setdefault("PKG-INFO", _metadata(name, version, requires, None, extra_metadata))
    os.makedirs(dest_dir, exist_ok=True)
    out = os.path.join(dest_dir, base + ".tar.gz")
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(members):
            data = _as_bytes(members[path])
            info = tarfile.TarInfo("%s/%s" % (base, path))
            info.size = len(data)
            info.mtime = EPOCH_TS
            info.mode = 0o644
            info.uname = info.gname = "root"
            tar.addfile(info, io.BytesIO(data))
    import gzip
    with open(out, "wb") as handle:
        with gzip.GzipFile(filename="", mode="wb", fileobj=handle, mtime=EPOCH_TS) as gz:
            gz.write(raw.getvalue())
    return out
