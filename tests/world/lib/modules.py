"""Python sources of the stand-ins that do more than carry a version (the traps and the tools)."""

HEADER = '"""Stand-in for %(name)s %(version)s (primus.trainenv test world): not the real package."""\n'


def plain(name, version):
    return HEADER % {"name": name, "version": version} + '__version__ = "%s"\n' % version


# --- torch -------------------------------------------------------------------------------------

TORCH_INIT = '''\
"""Stand-in for torch %(version)s (primus.trainenv test world): not the real package."""
__version__ = "%(version)s"
from . import version  # noqa: E402
from . import cuda  # noqa: E402
'''

# The torch of a nightly whose SDK is split (from a20260727): at import it loads the SDK's code-object manager.
TORCH_INIT_SDK = '''\
"""Stand-in for torch %(version)s (primus.trainenv test world): not the real package."""
__version__ = "%(version)s"
from . import _rocm_init  # noqa: E402,F401  (the ROCm SDK's libraries, first)
from . import version  # noqa: E402
from . import cuda  # noqa: E402
'''

TORCH_ROCM_INIT = '''\
"""How torch loads the ROCm SDK (test world stand-in): the runtime's libamd_comgr.so.3 of rocm-sdk-core, then the
one of the devel tree (ROCM_PATH, which the JIT and the profiler load). Two separate files of it in one process
register LLVM's options twice and the library aborts the process (AMD-AGI/Primus Dockerfile.primus-v26.5.1, fd1eeabb:
the core copy becomes a link to the devel copy); through a link the loader maps one file once."""
import ctypes
import os

_SITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for _package in ("_rocm_sdk_core", "_rocm_sdk_devel"):
    _library = os.path.join(_SITE, _package, "lib", "libamd_comgr.so.3")
    if os.path.exists(_library):
        ctypes.CDLL(_library)
'''

TORCH_VERSION = '''\
__version__ = "%(version)s"
git_version = "%(git)s"
hip = %(hip)r
cuda = %(cuda)r
'''

TORCH_CUDA = '''\
"""torch.cuda stand-in: this world has no GPU, so nothing is available (informational only)."""
import importlib.metadata as _md


def is_available():
    return False


def device_count():
    return 0


def get_arch_list():
    """GPU archs of the installed amd-torch-device-<arch> wheels."""
    archs = set()
    for dist in _md.distributions():
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        if name.startswith("amd-torch-device-"):
            archs.add(name[len("amd-torch-device-"):])
    return sorted(archs)
'''

# --- triton --------------------------------------------------------------------------------------

TRITON_UPSTREAM = '''\
"""Stand-in for upstream triton %(version)s (primus.trainenv test world).

The real wheel bundles a statically linked LLVM; on a ROCm host whose HIP runtime has already
loaded libLLVM.so.23 from the pip SDK, importing it segfaults in LLVM's static initialisers
(Primus setup.sh stage_turbo, df90fdd5). The stand-in crashes the process the same way on every import.
"""
import os
import signal
import sys

__version__ = "%(version)s"
sys.stderr.write("triton %(version)s: bundled LLVM collides with the ROCm runtime's libLLVM.so.23\\n")
sys.stderr.flush()
os.kill(os.getpid(), signal.SIGSEGV)
'''

TRITON_ROCM = '''\
"""Stand-in for ROCm's triton %(version)s (primus.trainenv test world): imports cleanly."""
__version__ = "%(version)s"
backend = "hip"
'''

# --- flydsl / nvidia-cutlass-dsl / quack (nanobind and ThrCopy traps) ---------------------------

NANOBIND = '''\
"""MLIR Python bindings of %(owner)s (stand-in). nanobind keeps one process-wide type registry:
whichever of flydsl / nvidia-cutlass-dsl loads second aborts the process (AMD-AGI/Primus#955)."""
import os
import sys

if %(other)r in sys.modules:
    sys.stderr.write('Critical nanobind error: refusing to add duplicate key "ERROR" to '
                     'enumeration "mlir._mlir_libs._mlir.ir.DiagnosticSeverity"!\\n')
    sys.stderr.flush()
    os.abort()
'''

FLYDSL_INIT = '''\
"""Stand-in for flydsl %(version)s (primus.trainenv test world): not the real package."""
__version__ = "%(version)s"
from . import _mlir  # noqa: E402,F401
'''

FLYDSL_VECTOR = '''\
"""flydsl.expr.vector: present up to 0.2.4, removed in 0.3.0 (aiter needs it)."""


def splat(value, lanes):
    return [value] * lanes
'''

CUTLASS_INIT = '''\
"""Stand-in for nvidia-cutlass-dsl %(version)s (primus.trainenv test world): not the real package."""
__version__ = "%(version)s"
from . import _mlir  # noqa: E402,F401
from . import cute  # noqa: E402,F401
'''

CUTLASS_CUTE_INIT = "from . import core  # noqa: F401\n"

CUTLASS_CORE_OLD = '''\
"""cutlass.cute.core of 4.5.x: still has ThrCopy (quack-kernels 0.3.1 imports it)."""


class ThrCopy(object):
    pass


class TiledCopy(object):
    pass
'''

CUTLASS_CORE_NEW = '''\
"""cutlass.cute.core of 4.6.x: restructured, ThrCopy is gone."""


class TiledCopy(object):
    pass
'''

QUACK_INIT = '''\
"""Stand-in for quack-kernels %(version)s (primus.trainenv test world): not the real package.

Like the real one (quack.rmsnorm, quack.softmax, ... which its __init__ imports), importing quack
imports cutlass, so it loads nvidia-cutlass-dsl's MLIR bindings (and aborts a process that already
loaded FlyDSL's: AMD-AGI/Primus#955), and 0.3.1 needs cute.core.ThrCopy, which cutlass-dsl 4.6 removed.
"""
import cutlass  # noqa: F401
import cutlass.cute as cute

__version__ = "%(version)s"
ThrCopy = cute.core.ThrCopy
'''

# --- mlflow / mlflow-skinny / mlflow-tracing (one `mlflow` package, three distributions) ---------
#
# The real wheels split one package: mlflow-tracing's files are a subset of mlflow-skinny's, which
# are a subset of mlflow's, and every file two of them ship has the same bytes in both (3.11.1:
# mlflow/__init__.py has one sha256 in all three RECORDs). Which of them is installed is read at
# import time from the installed distributions (mlflow/version.py). The stand-ins below keep that:
# the shared files depend on the version only, never on the distribution.

MLFLOW_INIT = '''\
"""Stand-in for mlflow %(version)s (primus.trainenv test world): not the real package.

mlflow, mlflow-skinny and mlflow-tracing %(version)s all ship this file, with the same bytes."""
from mlflow.version import IS_TRACING_SDK_ONLY, VERSION

__version__ = VERSION

from mlflow import tracing  # noqa: E402,F401

if not IS_TRACING_SDK_ONLY:
    from mlflow import pyfunc  # noqa: F401
'''

MLFLOW_VERSION = '''\
"""mlflow.version (stand-in): which of mlflow, mlflow-skinny, mlflow-tracing is installed."""
import importlib.metadata

VERSION = "%(version)s"


def _is_package_installed(package_name):
    try:
        importlib.metadata.version(package_name)
        return True
    except importlib.metadata.PackageNotFoundError:
        return False


IS_TRACING_SDK_ONLY = not any(_is_package_installed(pkg) for pkg in ["mlflow", "mlflow-skinny"])
IS_MLFLOW_SKINNY = _is_package_installed("mlflow-skinny") and not _is_package_installed("mlflow")
IS_FULL_MLFLOW = _is_package_installed("mlflow")
'''

MLFLOW_SERVER_UI = "<!doctype html><title>MLflow</title><!-- stand-in: the UI only mlflow ships -->\n"

# --- small helpers other tools import -----------------------------------------------------------

TYPING_EXTENSIONS = '''\
"""Stand-in for typing_extensions %(version)s: re-exports typing so importers keep working."""
import typing as _typing
from typing import *  # noqa: F401,F403

__version__ = "%(version)s"


def __getattr__(name):
    return getattr(_typing, name)
'''

IMPORTLIB_METADATA = '''\
"""Stand-in for importlib-metadata %(version)s: re-exports the standard library's module."""
import importlib.metadata as _md
from importlib.metadata import *  # noqa: F401,F403

__version__ = "%(version)s"


def __getattr__(name):
    return getattr(_md, name)
'''

ZIPP = '''\
"""Stand-in for zipp %(version)s."""
from zipfile import Path  # noqa: F401

__version__ = "%(version)s"
'''

PLATFORMDIRS = '''\
\"\"\"Stand-in for platformdirs %(version)s: its Unix (XDG) API, which real callers import - setuptools'
pkg_resources (`from platformdirs import user_cache_dir`), pip, virtualenv, black ... - with the same answers.\"\"\"
import os
from pathlib import Path

__version__ = "%(version)s"
__version_info__ = tuple(int(part) for part in __version__.split(".")[:3] if part.isdigit())


def _env(name, default):
    value = os.environ.get(name, "").strip()
    return value or os.path.expanduser(default)


class PlatformDirs(object):
    \"\"\"The directories of an application on Unix, as the XDG base directory specification places them.\"\"\"

    def __init__(self, appname=None, appauthor=None, version=None, roaming=False, multipath=False, opinion=True,
                 ensure_exists=False):
        self.appname = appname
        self.appauthor = appauthor
        self.version = version
        self.roaming = roaming
        self.multipath = multipath
        self.opinion = opinion
        self.ensure_exists = ensure_exists

    def _append(self, base):
        parts = [base]
        if self.appname:
            parts.append(self.appname)
            if self.version:
                parts.append(self.version)
        path = os.path.join(*parts)
        if self.ensure_exists:
            os.makedirs(path, exist_ok=True)
        return path

    def _first_or_all(self, value):
        paths = [self._append(p) for p in value.split(os.pathsep) if p]
        return os.pathsep.join(paths) if self.multipath else paths[0]

    @property
    def user_data_dir(self):
        return self._append(_env("XDG_DATA_HOME", "~/.local/share"))

    @property
    def user_config_dir(self):
        return self._append(_env("XDG_CONFIG_HOME", "~/.config"))

    @property
    def user_cache_dir(self):
        return self._append(_env("XDG_CACHE_HOME", "~/.cache"))

    @property
    def user_state_dir(self):
        return self._append(_env("XDG_STATE_HOME", "~/.local/state"))

    @property
    def user_log_dir(self):
        path = self.user_state_dir
        if self.opinion:
            path = os.path.join(path, "log")
            if self.ensure_exists:
                os.makedirs(path, exist_ok=True)
        return path

    @property
    def user_runtime_dir(self):
        return self._append(_env("XDG_RUNTIME_DIR", "/run/user/%%d" %% os.getuid()))

    @property
    def site_data_dir(self):
        return self._first_or_all(_env("XDG_DATA_DIRS", "/usr/local/share" + os.pathsep + "/usr/share"))

    @property
    def site_config_dir(self):
        return self._first_or_all(_env("XDG_CONFIG_DIRS", "/etc/xdg"))

    @property
    def site_cache_dir(self):
        return self._append("/var/cache")

    def __getattr__(self, name):
        # user_cache_path, site_data_path ...: the same directory as a pathlib.Path.
        if name.endswith("_path"):
            return Path(getattr(self, name[:-len("_path")] + "_dir"))
        raise AttributeError(name)


AppDirs = PlatformDirs
Unix = PlatformDirs


def _function(kind):
    def directory(appname=None, appauthor=None, version=None, roaming=False, multipath=False, opinion=True,
                  ensure_exists=False):
        return getattr(PlatformDirs(appname, appauthor, version, roaming, multipath, opinion, ensure_exists), kind)
    directory.__name__ = kind
    return directory


for _kind in ("user_data", "user_config", "user_cache", "user_state", "user_log", "user_runtime", "site_data",
              "site_config", "site_cache"):
    globals()[_kind + "_dir"] = _function(_kind + "_dir")
    globals()[_kind + "_path"] = _function(_kind + "_path")
'''

TYPEGUARD = '''\
"""Stand-in for typeguard %(version)s: checks nothing."""
__version__ = "%(version)s"


def typechecked(func=None, **_kwargs):
    return func if func is not None else (lambda f: f)


def check_type(value, _expected, **_kwargs):
    return value
'''

CLI_MODULE = '''\
"""Console scripts of the %(name)s stand-in."""
import sys

%(functions)s
'''

NLTK_DOWNLOADER = '''\
"""nltk.downloader stand-in: the data server is on the internet, so downloads fail like offline.

Like the real command, a failed download is reported and the exit status stays 0.
"""
import sys


def main(argv=None):
    args = [a for a in (sys.argv[1:] if argv is None else argv) if not a.startswith("-")]
    for package in args:
        print("[nltk_data] Error loading %s: <urlopen error [Errno -3] Temporary failure in "
              "name resolution>" % package)
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''

UV_CLI = '''\
"""`uv` stand-in (primus.trainenv test world) for `uv --version` and `uv python find|install`.

`uv python install 3.12` cannot download here; when PRIMUS_WORLD_UV_PYTHON names a real 3.12
interpreter, its prefix is linked into UV_PYTHON_INSTALL_DIR as a managed install (cpython-3.12.1-...).
"""
import glob
import os
import sys

VERSION = "%(version)s"
_NAME = "cpython-3.12.1-linux-x86_64-gnu"


def _install_dir():
    default = os.path.join(os.path.expanduser("~"), ".local", "share", "uv", "python")
    return os.environ.get("UV_PYTHON_INSTALL_DIR") or default


def _found(request):
    pattern = os.path.join(_install_dir(), "cpython-%%s*" %% request, "bin", "python" + request)
    hits = sorted(p for p in glob.glob(pattern) if os.access(p, os.X_OK))
    return hits[0] if hits else None


def main(argv=None):
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] in (["--version"], ["-V"], ["version"]):
        print("uv " + VERSION)
        return 0
    if args[:2] == ["python", "find"] and len(args) > 2:
        hit = _found(args[2])
        if hit:
            print(hit)
            return 0
        sys.stderr.write("error: No interpreter found for Python %%s in managed installations\\n" %% args[2])
        return 2
    if args[:2] == ["python", "install"] and len(args) > 2:
        if _found(args[2]):
            return 0
        source = os.environ.get("PRIMUS_WORLD_UV_PYTHON")
        if not source:
            sys.stderr.write(
                "error: Failed to install %%s\\n  Caused by: Request failed after 3 retries\\n"
                "  Caused by: error sending request for url (https://github.com/astral-sh/"
                "python-build-standalone/releases/download/20240107/%%s.tar.gz)\\n"
                "  Caused by: dns error: failed to lookup address information\\n" %% (_NAME, _NAME))
            return 2
        # A managed install is a whole prefix (bin/, lib/python3.12/): link the real one in.
        prefix = os.path.dirname(os.path.dirname(os.path.realpath(source)))
        os.makedirs(_install_dir(), exist_ok=True)
        managed = os.path.join(_install_dir(), _NAME)
        if not os.path.lexists(managed):
            os.symlink(prefix, managed)
        bindir = os.path.join(managed, "bin")
        sys.stderr.write("Installed Python 3.12.1 in %%s\\n" %% os.path.dirname(bindir))
        return 0
    sys.stderr.write("uv stand-in: unsupported command: %%s\\n" %% " ".join(args))
    return 2
'''
