"""Real build tools of the world: downloaded once from PyPI, verified by sha256.

Source builds really execute these (setuptools/wheel for every setup.py, pybind11's headers for
Megatron's helpers.cpp, pip itself in every venv), so they cannot be stand-ins. Which files (name,
version, URL, sha256) is the metadata snapshot's business (packages.REAL names in
tests/world/pypi-snapshot.json). They are kept in a git-ignored cache (default
<repo>/.cache/world-downloads); later builds need no network.
"""
import hashlib
import os
import tempfile
import urllib.request


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def isolated_pip_env(base=None):
    """Environment for a pip that ignores this machine's pip config (find-links, extra indexes)."""
    env = dict(os.environ if base is None else base)
    for key in list(env):
        if key.startswith("PIP_") or key in ("PYTHONPATH", "VIRTUAL_ENV"):
            del env[key]
    env["PIP_CONFIG_FILE"] = os.devnull
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PIP_NO_INPUT"] = "1"
    return env


def fetch(cache_dir, dists, log=print):
    """Paths of the real files of dists (snapshot entries), downloading the missing ones.

    Raises if a download does not match the snapshot's sha256.
    """
    os.makedirs(cache_dir, exist_ok=True)
    paths = []
    for dist in dists:
        path = os.path.join(cache_dir, dist["file"])
        if not (os.path.isfile(path) and _sha256(path) == dist["sha256"]):
            log("downloading %s into %s" % (dist["url"], cache_dir))
            handle, tmp = tempfile.mkstemp(prefix=".download-", dir=cache_dir)
            try:
                with os.fdopen(handle, "wb") as out, urllib.request.urlopen(dist["url"], timeout=120) as response:
                    out.write(response.read())
                if _sha256(tmp) != dist["sha256"]:
                    raise RuntimeError("sha256 mismatch for %s: expected %s (the snapshot's), got %s"
                                       % (dist["url"], dist["sha256"], _sha256(tmp)))
                os.replace(tmp, path)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
        paths.append(path)
    return paths
