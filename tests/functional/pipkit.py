"""Building blocks shared by the pip_constrained functional tests: projects with an in-tree PEP 517 backend."""
import json
import pathlib

# A PEP 517 backend kept inside the project (backend-path), so builds need no setuptools and no
# network. It records the MARK environment variable it saw, to prove `environment` reaches builds.
BACKEND = '''
import base64, hashlib, json, os, zipfile

def _project():
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "project.json")) as handle:
        return json.load(handle)

def _dist(p):
    return "%s-%s" % (p["name"].replace("-", "_"), p["version"])

def _metadata(p):
    lines = ["Metadata-Version: 2.1", "Name: %s" % p["name"], "Version: %s" % p["version"]]
    lines += ["Requires-Dist: %s" % r for r in p.get("requires", [])]
    return "\\n".join(lines) + "\\n"

def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    p = _project()
    info = _dist(p) + ".dist-info"
    os.makedirs(os.path.join(metadata_directory, info))
    with open(os.path.join(metadata_directory, info, "METADATA"), "w") as handle:
        handle.write(_metadata(p))
    return info

def _wheel(wheel_directory, p, files):
    info = _dist(p) + ".dist-info"
    files = dict(files)
    files[info + "/METADATA"] = _metadata(p)
    files[info + "/WHEEL"] = "Wheel-Version: 1.0\\nGenerator: test-backend\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"
    record = []
    for path, text in files.items():
        data = text.encode()
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append("%s,sha256=%s,%d" % (path, digest, len(data)))
    record.append(info + "/RECORD,,")
    name = _dist(p) + "-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as zf:
        for path, text in files.items():
            zf.writestr(path, text)
        zf.writestr(info + "/RECORD", "\\n".join(record) + "\\n")
    return name

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    p = _project()
    return _wheel(wheel_directory, p, {p["module"] + "/__init__.py": "BUILT_WITH_MARK = %r\\n" % os.environ.get("MARK")})

# PEP 660: an editable install is a .pth file pointing at the project.
prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel

def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    p = _project()
    here = os.path.dirname(os.path.abspath(__file__))
    return _wheel(wheel_directory, p, {"_%s_editable.pth" % p["module"]: here + "\\n"})
'''


def project_files(name, version, static=True, requires=()):
    """{file: text} of a project whose build needs no setuptools and no network (backend-path).

    static: a [project] table with name, version and dependencies; else everything comes from the backend.
    """
    project = {"name": name, "version": version, "module": name.replace("-", "_"), "requires": list(requires)}
    pyproject = '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n'
    if static:
        pyproject += '\n[project]\nname = "%s"\nversion = "%s"\ndependencies = %s\n' % (
            name, version, json.dumps(list(requires)))
    return {"project.json": json.dumps(project), "backend.py": BACKEND, "pyproject.toml": pyproject}


def make_project(path, name, version, static=True, requires=()):
    """Write project_files() into the directory `path` (created) and return it."""
    path = pathlib.Path(path)
    path.mkdir(parents=True)
    for rel, text in project_files(name, version, static, requires).items():
        (path / rel).write_text(text)
    return path
