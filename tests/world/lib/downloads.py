"""Real build tools of the world: downloaded once from PyPI, pinned and verified by sha256.

Source builds really execute these (setuptools/wheel for every setup.py, pybind11's headers for
Megatron's helpers.cpp, pip itself in every venv), so they cannot be stand-ins. They are kept in
a git-ignored cache (default <repo>/.cache/world-downloads); later builds need no network.
"""
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

REAL_WHEELS = (
    ("pip", "26.3", "pip-26.3-py3-none-any.whl",
     "f3b60b20ffaadd4415ed7957212a38ac63fa4c5fa375bd0f4a797777940fad13"),
    ("setuptools", "75.1.0", "setuptools-75.1.0-py3-none-any.whl",
     "35ab7fd3bcd95e6b7fd704e4a1539513edad446c097797f2985e0e4b960772f2"),
    # Primus-Turbo's requirements.txt pins it (upstream-facts §10.3)
    ("setuptools", "69.5.1", "setuptools-69.5.1-py3-none-any.whl",
     "c636ac361bc47580504644275c9ad802c50415c7522212252c033bd15f301f32"),
    ("wheel", "0.45.1", "wheel-0.45.1-py3-none-any.whl",
     "708e7481cc80179af0e556bbf0cc00b8444c7321e2700b8d8580231d13017248"),
    ("packaging", "25.0", "packaging-25.0-py3-none-any.whl",
     "29572ef2b1f17581046b3a2227d5c611fb25ec70ca1ba8554b24b0e69331a484"),
    # headers for Megatron's helpers.cpp, `python3 -m pybind11 --includes`
    ("pybind11", "3.0.4", "pybind11-3.0.4-py3-none-any.whl",
     "961720ee652da51d531b7b2451a6bd2bc042b0106e6d9baa48ecb7d58034ce63"),
)

PYPI = "https://pypi.org/simple"


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


def fetch(cache_dir, log=print):
    """Paths of the real wheels, downloading the missing ones. Raises if a hash does not match."""
    os.makedirs(cache_dir, exist_ok=True)
    paths = []
    for name, version, filename, sha in REAL_WHEELS:
        path = os.path.join(cache_dir, filename)
        if not (os.path.isfile(path) and _sha256(path) == sha):
            log("downloading %s==%s from PyPI into %s" % (name, version, cache_dir))
            tmp = tempfile.mkdtemp(prefix="world-dl-", dir=cache_dir)
            try:
                subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                                "--index-url", PYPI, "--dest", tmp, "%s==%s" % (name, version)],
                               check=True, env=isolated_pip_env(), stdout=subprocess.DEVNULL)
                got = os.path.join(tmp, filename)
                if not os.path.isfile(got):
                    raise RuntimeError("pip download of %s==%s did not produce %s" % (name, version, filename))
                if _sha256(got) != sha:
                    raise RuntimeError("sha256 mismatch for %s: expected %s, got %s" % (filename, sha, _sha256(got)))
                os.replace(got, path)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        paths.append(path)
    return paths
