"""PEP 503 "simple" index writer over a directory of distribution files."""
import hashlib
import html
import os
import re

from .wheel import normalize

_PROJECT = re.compile(r"^(?P<name>.+?)-(?P<version>\d[^-]*)(-.*)?\.(whl|tar\.gz|zip)$")


def project_of(filename):
    """Project name encoded in a wheel or sdist file name."""
    match = _PROJECT.match(filename)
    if not match:
        raise ValueError("not a distribution file name: %s" % filename)
    return normalize(match.group("name"))


def write_simple_index(files_dir, index_dir, files_url_prefix):
    """Write index_dir/<project>/index.html linking every file of files_dir.

    files_url_prefix: URL path prefix under which files_dir is served (e.g. "/rocm/files").
    Links carry #sha256= fragments like real indexes do.
    """
    projects = {}
    for filename in sorted(os.listdir(files_dir)):
        path = os.path.join(files_dir, filename)
        if not os.path.isfile(path):
            continue
        projects.setdefault(project_of(filename), []).append(filename)
    os.makedirs(index_dir, exist_ok=True)
    root = ["<!DOCTYPE html>", "<html><body>"]
    for project in sorted(projects):
        root.append('<a href="%s/">%s</a>' % (project, project))
        lines = ["<!DOCTYPE html>", "<html><body>"]
        for filename in projects[project]:
            with open(os.path.join(files_dir, filename), "rb") as handle:
                digest = hashlib.sha256(handle.read()).hexdigest()
            lines.append('<a href="%s/%s#sha256=%s">%s</a>'
                         % (files_url_prefix.rstrip("/"), html.escape(filename), digest, html.escape(filename)))
        lines.append("</body></html>")
        os.makedirs(os.path.join(index_dir, project), exist_ok=True)
        with open(os.path.join(index_dir, project, "index.html"), "w") as handle:
            handle.write("\n".join(lines) + "\n")
    root.append("</body></html>")
    with open(os.path.join(index_dir, "index.html"), "w") as handle:
        handle.write("\n".join(root) + "\n")
    return sorted(projects)
