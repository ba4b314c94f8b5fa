"""PEP 503 "simple" index writer over a directory of distribution files, with PyPI's extras.

Like pypi.org, each link carries the file's `#sha256=`, `data-requires-python` (PEP 503) and,
for wheels, the sha256 of the wheel's core metadata in `data-dist-info-metadata` and
`data-core-metadata` (PEP 658 / PEP 714), served next to the wheel as `<file>.metadata`: pip
resolves from those without downloading a wheel. `publish` puts a file under a path that
contains its hash, like files.pythonhosted.org, so a URL never changes content and the server
can let clients cache files for good (lib/server.py).
"""
import email.parser
import hashlib
import html
import os
import re
import shutil
import tarfile
import urllib.parse
import zipfile

from .wheel import normalize

_PROJECT = re.compile(r"^(?P<name>.+?)-(?P<version>\d[^-]*)(-.*)?\.(whl|tar\.gz|zip)$")


def parse_filename(filename):
    """(normalized project, version) encoded in a wheel or sdist file name."""
    match = _PROJECT.match(filename)
    if not match:
        raise ValueError("not a distribution file name: %s" % filename)
    return normalize(match.group("name")), match.group("version")


def project_of(filename):
    """Project name encoded in a wheel or sdist file name."""
    return parse_filename(filename)[0]


def _sha256(data):
    return hashlib.sha256(data).hexdigest()


def publish(src, files_dir):
    """Copy the distribution file src to files_dir/<sha256 prefix>/<name>; return that path."""
    with open(src, "rb") as handle:
        digest = _sha256(handle.read())
    dest = os.path.join(files_dir, digest[:16], os.path.basename(src))
    if os.path.exists(dest):
        raise RuntimeError("%s is published twice" % dest)
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    shutil.copyfile(src, dest)
    return dest


def distribution_files(files_dir):
    """{path relative to files_dir: absolute path} of every distribution file below files_dir."""
    out = {}
    for dirpath, _dirnames, filenames in os.walk(files_dir):
        for filename in filenames:
            if _PROJECT.match(filename):
                path = os.path.join(dirpath, filename)
                out[os.path.relpath(path, files_dir)] = path
    return out


def core_metadata(path):
    """The core metadata bytes of a wheel (.dist-info/METADATA) or an sdist (PKG-INFO)."""
    if path.endswith(".whl"):
        with zipfile.ZipFile(path) as wheel:
            names = [n for n in wheel.namelist() if re.match(r"^[^/]+\.dist-info/METADATA$", n)]
            if len(names) != 1:
                raise ValueError("%s: expected one .dist-info/METADATA, found %s" % (path, names))
            return wheel.read(names[0])
    with tarfile.open(path) as sdist:
        member = [m for m in sdist.getmembers() if re.match(r"^[^/]+/PKG-INFO$", m.name)]
        if len(member) != 1:
            raise ValueError("%s: expected one PKG-INFO at the top, found %s" % (path, [m.name for m in member]))
        return sdist.extractfile(member[0]).read()


def write_simple_index(files_dir, index_dir, files_url_prefix, metadata=True):
    """Write index_dir/<project>/index.html linking every distribution file below files_dir.

    files_url_prefix: URL path under which files_dir is served (e.g. "/rocm/files").
    metadata: write `<wheel>.metadata` next to each wheel and announce it (PEP 658/714);
    False gives an index without it (as the self-test's control case).
    """
    projects = {}
    for rel, path in sorted(distribution_files(files_dir).items()):
        projects.setdefault(project_of(os.path.basename(rel)), []).append((rel, path))
    os.makedirs(index_dir, exist_ok=True)
    root = ["<!DOCTYPE html>", "<html><body>"]
    for project in sorted(projects):
        root.append('<a href="%s/">%s</a>' % (project, project))
        lines = ["<!DOCTYPE html>", "<html><body>"]
        for rel, path in sorted(projects[project], key=lambda item: os.path.basename(item[0])):
            with open(path, "rb") as handle:
                digest = _sha256(handle.read())
            meta = core_metadata(path)
            attrs = ""
            requires_python = email.parser.BytesParser().parsebytes(meta, headersonly=True).get("Requires-Python")
            if requires_python:
                attrs += ' data-requires-python="%s"' % html.escape(requires_python)
            if metadata and path.endswith(".whl"):
                with open(path + ".metadata", "wb") as handle:
                    handle.write(meta)
                attrs += ' data-dist-info-metadata="sha256=%s" data-core-metadata="sha256=%s"' % ((_sha256(meta),) * 2)
            url = "%s/%s" % (files_url_prefix.rstrip("/"), urllib.parse.quote(rel.replace(os.sep, "/")))
            lines.append('<a href="%s#sha256=%s"%s>%s</a><br />'
                         % (html.escape(url), digest, attrs, html.escape(os.path.basename(rel))))
        lines.append("</body></html>")
        os.makedirs(os.path.join(index_dir, project), exist_ok=True)
        with open(os.path.join(index_dir, project, "index.html"), "w") as handle:
            handle.write("\n".join(lines) + "\n")
    root.append("</body></html>")
    with open(os.path.join(index_dir, "index.html"), "w") as handle:
        handle.write("\n".join(root) + "\n")
    return sorted(projects)
