"""The world's git remotes, as data: one stand-in per source component of the seed.

Each component has a "pinned" commit (what the release overlay pins) and, where upstream pins a
commit, a later commit on the default branch, so a clone that forgets to check out the pin
builds something else. Floating branches (grouped_gemm `rocm`, mamba
`enable-primus-hybrid-models`) differ from the default branch. Files the seed patches carry the
exact upstream text (Primus setup.sh stage_torchtune, stage_torchao), Megatron's datasets Makefile falls into the
python3-config trap (§8), Primus-Turbo pins upstream triton and flydsl>=0.2.0 (§2.13).
"""
from . import buildsys, modules
from .gitrepo import Commit, Repo

# sources.<component> of the release file -> world repository name (URL path /git/<name>.git)
COMPONENTS = {
    "flash_attn": "flash-attention",
    "te": "TransformerEngine",
    "torchtune": "torchtune",
    "torchao": "ao",
    "grouped_gemm": "grouped_gemm",
    "causal_conv1d": "causal-conv1d",
    "mamba": "mamba",
    "primus": "Primus",
    "aiter": "aiter",
    "turbo": "Primus-Turbo",
}

# The commit each release pins, by world repository, where it is not the "pinned" commit (v26.5's).
RELEASE_COMMITS = {
    "v26.5.1": {"TransformerEngine": "v26.5.1", "Primus": "v26.5.1"},
}


def release_commit_label(release, repo_name):
    """The label of the commit of repo_name that release pins ("pinned" unless RELEASE_COMMITS says otherwise)."""
    return RELEASE_COMMITS.get(release, {}).get(repo_name, "pinned")


# requirement URLs of the release file / Primus requirements -> world repository
GIT_REQUIREMENTS = {
    "https://github.com/mlperf/logging.git": "mlperf-logging",
    "https://github.com/mlcommons/logging.git": "mlcommons-logging",
}

README = "# %s (primus.trainenv test world)\n\nA tiny stand-in for the upstream repository; see tests/world/README.md.\n"


def _pkg_init(name, version, body=""):
    return modules.plain(name, version) + body


def _component(upstream, world, init_body="", extra="", more_files=None):
    """Files of a setup.py-built stand-in: setup.py, the package, the extension source."""
    files = {"README.md": README % upstream,
             "setup.py": buildsys.setup_py(upstream, world, extra)}
    pkg_dir = world["packages"][0].replace(".", "/")
    files[pkg_dir + "/__init__.py"] = _pkg_init(world["name"], world["version"], init_body)
    for package in world["packages"][1:]:
        files.setdefault(package.replace(".", "/") + "/__init__.py", "")
    if world.get("ext"):
        files[world["sources"][0]] = buildsys.ext_cpp(world["ext"])
    files.update(more_files or {})
    return files


def _bump(files, path, old, new):
    out = dict(files)
    assert old in out[path], (path, old)
    out[path] = out[path].replace(old, new)
    return out


# --- submodule-only repositories ----------------------------------------------------------------

def _leaf(name, files):
    files = dict(files)
    files["README.md"] = README % name
    return Repo(name, "main", [Commit("pinned", "main", "Initial import", files=files)])


CK = _leaf("composable_kernel", {"include/ck/ck.hpp": "#pragma once\n#define CK_VERSION_MAJOR 1\n"})
HIPIFY = _leaf("hipify_torch", {"hipify_torch/__init__.py": '__version__ = "1.0"\n'})
CUTLASS = _leaf("cutlass", {"include/cutlass/cutlass.h": "#pragma once\n#define CUTLASS_MAJOR 3\n"})
AUTOMODEL = _leaf("Automodel", {"nemo_automodel/__init__.py": '__version__ = "0.1.0"\n'})
# AI-Hypercomputer/maxtext, a submodule of Primus (third_party/maxtext) that Primus v26.5.1 moves.
MAXTEXT = Repo("maxtext", "main", [
    Commit("v26.5", "main", "Initial import",
           files={"README.md": README % "AI-Hypercomputer/maxtext", "src/MaxText/__init__.py": '__version__ = "0.1.0"\n'}),
    Commit("v26.5.1", "main", "Update MaxText for Primus v26.5.1", parent="v26.5",
           files={"src/MaxText/__init__.py": '__version__ = "0.1.1"\n'}),
])

# --- Megatron-LM (Primus submodule) -------------------------------------------------------------

MEGATRON_MAKEFILE = """\
CXXFLAGS += -O3 -Wall -shared -std=c++17 -fPIC -fdiagnostics-color
CPPFLAGS += $(shell python3 -m pybind11 --includes)

LIBNAME = helpers_cpp
LIBEXT = $(shell python3-config --extension-suffix)

OUT = $(LIBNAME)$(LIBEXT)
SRC = helpers.cpp

default: $(OUT)

$(OUT): $(SRC)
\t$(CXX) $(CXXFLAGS) $(CPPFLAGS) $< -o $@

clean:
\trm -rf $(OUT)
"""

MEGATRON_HELPERS = """\
/* Stand-in for Megatron-LM's megatron/core/datasets/helpers.cpp (primus.trainenv test world):
   a small pybind11 module under the real name; the real one builds the dataset sample indexes. */
#include <pybind11/pybind11.h>

namespace py = pybind11;

py::list build_exhaustive_blending_indices(py::list sizes) {
    py::list out;
    for (size_t i = 0; i < sizes.size(); ++i)
        for (long j = 0; j < sizes[i].cast<long>(); ++j)
            out.append(static_cast<long>(i));
    return out;
}

PYBIND11_MODULE(helpers_cpp, m) {
    m.def("build_exhaustive_blending_indices", &build_exhaustive_blending_indices);
}
"""

MEGATRON_UTILS = '''\
"""Megatron datasets utilities (stand-in): the runtime fallback that builds helpers_cpp."""
import os
import subprocess
import sys


def compile_helpers():
    """Compile C++ helper functions at runtime. Make sure this is invoked on a single process."""
    command = ["make", "-C", os.path.abspath(os.path.dirname(__file__))]
    if subprocess.run(command).returncode != 0:
        sys.stderr.write("Failed to compile the C++ dataset helper functions\\n")
        sys.exit(1)
'''

MEGATRON_FILES = {
    "README.md": README % "NVIDIA/Megatron-LM",
    "megatron/__init__.py": "",
    "megatron/core/__init__.py": '__version__ = "0.14.0"\n',
    "megatron/core/datasets/__init__.py": "",
    "megatron/core/datasets/Makefile": MEGATRON_MAKEFILE,
    "megatron/core/datasets/helpers.cpp": MEGATRON_HELPERS,
    "megatron/core/datasets/utils.py": MEGATRON_UTILS,
}

MEGATRON = Repo("Megatron-LM", "main", [
    Commit("pinned", "main", "Megatron-LM at the commit Primus pins", files=MEGATRON_FILES),
    Commit("later", "main", "Bump version on main", parent="pinned",
           files={"megatron/core/__init__.py": '__version__ = "0.15.0rc0"\n'}),
])

# --- Primus -------------------------------------------------------------------------------------


def primus_requirements(url_of):
    """Primus requirements.txt at b511d1b, with the world's logging URL."""
    return "\n".join([
        "loguru", "wandb", "expecttest", "pre-commit", "nltk", "matplotlib", "markdown2", "weasyprint",
        "tyro", "torchao", "blobfile", "torchdata>=0.8.0", "datasets>=3.6.0", "pyrsmi", "plotext",
        "hip-python", "mlflow==3.11.1", "megatron-energon==7.3.2", "webdataset==1.0.2", "tqdm==4.67.3",
        "pyarrow==21.0.0", "git+%s@6.0.0-rc5" % url_of("mlcommons-logging"), ""])


def primus(url_of):
    files = {
        "README.md": README % "AMD-AGI/Primus",
        "requirements.txt": primus_requirements(url_of),
        "primus/__init__.py": '"""Primus stand-in (primus.trainenv test world)."""\n__version__ = "26.5.0"\n',
    }
    return Repo("Primus", "main", [
        Commit("base", "main", "Primus before the v26.5 release", files=files,
               submodules={"third_party/Megatron-LM": ("Megatron-LM", "pinned"),
                           "third_party/maxtext": ("maxtext", "v26.5")}),
        Commit("pinned", "release/v26.5", "[CP][v25.5 Docker Release] Update configs to enable DeepEP (#911)",
               parent="base", files={"primus/configs.py": "DEEPEP = True\n"}),
        # main moves on: Megatron bumped and a submodule the pinned commit does not have
        Commit("later", "main", "Add Automodel submodule, bump Megatron-LM", parent="base",
               submodules={"third_party/Automodel": ("Automodel", "pinned"),
                           "third_party/Megatron-LM": ("Megatron-LM", "later")}),
        # v26.5.1's pin: requirements.txt and the Megatron-LM commit as at v26.5; only third_party/maxtext moves
        Commit("v26.5.1", "release/v26.5.1", "Bump third_party/maxtext for the v26.5.1 release", parent="pinned",
               submodules={"third_party/maxtext": ("maxtext", "v26.5.1")}),
    ])

# --- the built components -----------------------------------------------------------------------


FA = {"name": "flash_attn", "version": "2.8.3", "packages": ["flash_attn"], "ext": "flash_attn_2_cuda",
      "sources": ["csrc/flash_api.cpp"], "needs_torch": True, "arch_env": ["GPU_ARCHS"],
      "needs_files": ["csrc/composable_kernel/include/ck/ck.hpp"], "requires": ["torch", "einops"]}

TE_SRC = {"name": "transformer_engine", "version": "2.15.0.dev0", "git_label": "",
          "packages": ["transformer_engine"], "ext": "transformer_engine_torch",
          "sources": ["csrc/transformer_engine_torch.cpp"], "needs_torch": True, "needs_modules": ["psutil"],
          "arch_env": ["NVTE_ROCM_ARCH", "GPU_ARCHS"],
          "needs_files": ["3rdparty/hipify_torch/hipify_torch/__init__.py"],
          "package_data": {"transformer_engine": ["lib/ck_jit/*.sh"]},
          "requires": ["pydantic", "importlib-metadata>=1.0", "packaging", "torch", "einops", "onnx",
                       "onnxscript", "nvdlfw-inspect"]}

TORCHTUNE = {"name": "torchtune", "version": "0.7.0.dev0", "packages": ["torchtune", "torchtune.modules",
             "torchtune.modules.moe"], "watch": ["torchtune/modules/moe/utils.py"],
             "requires": ["datasets", "huggingface_hub", "safetensors", "sentencepiece", "tiktoken", "numpy",
                          "tqdm", "omegaconf", "psutil", "Pillow"]}

TORCHTUNE_MOE = '''\
"""MoE utilities (torchtune stand-in); the seed patches the flag below (Primus setup.sh stage_torchtune)."""

# Grouped GEMM kernels for the experts; torch's grouped_mm is not usable on this ROCm build.
use_grouped_mm = True


def grouped_mm_enabled():
    use_grouped_mm = True
    return use_grouped_mm
'''

TORCHAO = {"name": "torchao", "version": "0.14.0.dev0", "git_label": "git",
           "packages": ["torchao", "torchao.float8"], "ext": "torchao._C",
           "sources": ["torchao/csrc/rocm/ao_ext.cpp", "torchao/csrc/rocm/swizzle/swizzle.cpp"],
           "needs_torch": True, "arch_env": ["PYTORCH_ROCM_ARCH"],
           "watch": ["torchao/float8/config.py", "torchao/csrc/rocm/swizzle/swizzle.cpp"], "requires": []}

TORCHAO_CONFIG = '''\
"""Float8 configuration (torchao stand-in); the seed patches pad_inner_dim (Primus setup.sh stage_torchao)."""
from dataclasses import dataclass


@dataclass(frozen=True)
class Float8LinearConfig:
    enable_fsdp_float8_all_gather: bool = False
    pad_inner_dim: bool = False
    emulate: bool = False
'''

TORCHAO_SWIZZLE = """\
// Swizzle kernels (torchao stand-in); the seed turns the guard below into `#if false`.
#if defined(HIPBLASLT_VEC_EXT)
int torchao_swizzle_vec_ext(void) { return 1; }
#else
int torchao_swizzle_vec_ext(void) { return 0; }
#endif
"""

GROUPED_GEMM = {"name": "grouped_gemm", "version": "0.1.6", "packages": ["grouped_gemm"],
                "ext": "grouped_gemm_backend", "sources": ["csrc/grouped_gemm.cpp"], "needs_torch": True,
                "arch_env": ["PYTORCH_ROCM_ARCH"], "needs_files": ["third_party/cutlass/include/cutlass/cutlass.h"],
                "requires": []}

FORCE_BUILD = '''
# Upstream first tries to download a prebuilt wheel from GitHub releases unless forced to build.
if os.environ.get("%(var)s", "FALSE").upper() != "TRUE":
    print("Guessing wheel URL: https://github.com/%(project)s/releases/download/... "
          "(no network) - precompiled wheel not found, building from source")
    record["prebuilt_attempted"] = True
else:
    record["prebuilt_attempted"] = False
'''

# ROCm/flash-attention setup.py: its bdist_wheel (CachedWheelsCommand) first downloads a prebuilt
# wheel from the GitHub release of the version unless FLASH_ATTENTION_FORCE_BUILD=TRUE, and builds
# from source when that fails. Here the release URL is the world's (GITHUB_RELEASES below), which
# serves no wheel: the request answers 404 and shows in the server's log (server.log).
FA_PREBUILT = '''
import platform
import urllib.error
import urllib.request

try:
    from setuptools.command.bdist_wheel import bdist_wheel as _bdist_wheel
except ImportError:  # setuptools < 70.1
    from wheel.bdist_wheel import bdist_wheel as _bdist_wheel

BASE_WHEEL_URL = "%(releases)s/Dao-AILab/flash-attention/releases/download/{tag_name}/{wheel_name}"
FORCE_BUILD = os.getenv("FLASH_ATTENTION_FORCE_BUILD", "FALSE") == "TRUE"
record["prebuilt_attempted"] = False


def get_wheel_url():
    torch_version = ".".join(torch.__version__.split("+")[0].split(".")[:2])
    hip_version = "".join(torch.version.hip.split(".")[:2])
    python_version = "cp%%d%%d" %% sys.version_info[:2]
    cxx11_abi = str(getattr(getattr(torch, "_C", None), "_GLIBCXX_USE_CXX11_ABI", True)).upper()
    wheel_filename = "flash_attn-%%s+rocm%%storch%%scxx11abi%%s-%%s-%%s-linux_%%s.whl" %% (
        version(), hip_version, torch_version, cxx11_abi, python_version, python_version, platform.uname().machine)
    return BASE_WHEEL_URL.format(tag_name="v" + version(), wheel_name=wheel_filename), wheel_filename


class CachedWheelsCommand(_bdist_wheel):
    def run(self):
        if FORCE_BUILD:
            return super().run()
        wheel_url, wheel_filename = get_wheel_url()
        print("Guessing wheel URL: ", wheel_url)
        record["prebuilt_attempted"] = True
        try:
            urllib.request.urlretrieve(wheel_url, wheel_filename)
            os.makedirs(self.dist_dir, exist_ok=True)
            impl_tag, abi_tag, plat_tag = self.get_tag()
            os.rename(wheel_filename, os.path.join(self.dist_dir, "%%s-%%s-%%s-%%s.whl" %% (
                self.wheel_dist_name, impl_tag, abi_tag, plat_tag)))
        except (urllib.error.HTTPError, urllib.error.URLError) as exc:
            print("Precompiled wheel not found. Building from source...")
            record["prebuilt_error"] = str(exc)
            write_record()  # before build_py copies it into the wheel
            super().run()


cmdclass["bdist_wheel"] = CachedWheelsCommand
'''

# Where the world serves its stand-in of github.com/<owner>/<repo>/releases/download/ (nothing:
# every request answers 404).
GITHUB_RELEASES = "/github"

CAUSAL_CONV1D = {"name": "causal_conv1d", "version": "1.5.2", "packages": ["causal_conv1d"],
                 "ext": "causal_conv1d_cuda", "sources": ["csrc/causal_conv1d.cpp"], "needs_torch": True,
                 "arch_env": ["HIP_ARCHITECTURES"], "requires": ["torch", "packaging", "ninja"]}

MAMBA = {"name": "mamba_ssm", "version": "2.2.5", "packages": ["mamba_ssm", "mamba_ssm.modules", "mamba_ssm.ops",
         "mamba_ssm.ops.cute", "mamba_ssm.ops.cute.mamba3"], "ext": "selective_scan_cuda",
         "sources": ["csrc/selective_scan.cpp"], "needs_torch": True, "arch_env": ["PYTORCH_ROCM_ARCH"],
         "requires": ["torch", "triton", "ninja", "einops", "transformers", "packaging", "setuptools>=61.0.0",
                      "quack-kernels==0.3.1", "tilelang"]}

# Mamba-3's CuTe DSL decode step is optional, as in state-spaces/mamba: modules/mamba3.py imports
# ops/cute/mamba3/mamba3_step_fn.py under `except ImportError`, and that module imports cutlass and
# then quack at import time. Without nvidia-cutlass-dsl or quack-kernels, `import mamba_ssm` works;
# with them it loads cutlass's MLIR bindings (which abort a process that loaded FlyDSL's,
# AMD-AGI/Primus#955), and quack 0.3.1's AttributeError under cutlass-dsl >= 4.6 (no
# cute.core.ThrCopy) is no ImportError: it propagates.
MAMBA_FILES = {
    "mamba_ssm/modules/__init__.py": "",
    "mamba_ssm/modules/mamba3.py": (
        '"""Mamba-3 (stand-in): the CuTe DSL decode step is optional (CUDA-only kernels)."""\n'
        "try:\n    from ..ops.cute.mamba3.mamba3_step_fn import mamba3_step_fn\n"
        "except ImportError:\n    mamba3_step_fn = None\n"),
    "mamba_ssm/ops/__init__.py": "",
    "mamba_ssm/ops/cute/__init__.py": "",
    "mamba_ssm/ops/cute/mamba3/__init__.py": "",
    "mamba_ssm/ops/cute/mamba3/mamba3_step_fn.py": (
        '"""Mamba-3 decode step in CuTe DSL (stand-in): imports cutlass, then quack, like upstream."""\n'
        "import cutlass  # noqa: F401\n"
        "import cutlass.cute as cute  # noqa: F401\n"
        "import quack  # noqa: F401  (quack-kernels 0.3.1 needs cute.core.ThrCopy)\n\n\n"
        "def mamba3_step_fn(*_args, **_kwargs):\n"
        '    raise RuntimeError("the CuTe DSL kernels need an NVIDIA GPU")\n'),
}

AITER = {"name": "amd-aiter", "version": "0.14.0.post1", "packages": ["aiter"], "ext": "aiter.jit_stub",
         "sources": ["csrc/aiter_stub.cpp"], "arch_env": ["GPU_ARCHS"],
         "needs_files": ["3rdparty/composable_kernel/include/ck/ck.hpp"],
         "requires": ["flydsl==0.1.7", "pandas", "einops", "psutil", "packaging"]}

AITER_INIT = '''
import sys as _sys
try:
    from flydsl.expr import vector as _vector  # noqa: F401
    JIT_AVAILABLE = True
except ImportError as _exc:
    JIT_AVAILABLE = False
    _sys.stderr.write("[aiter] ROCm/HIP JIT runtime not available (%s). CK and HIP ops are disabled. "
                      "Triton ops remain available.\\n" % _exc)
'''

AITER_PYPROJECT = """\
[build-system]
requires = ["setuptools>=61", "wheel", "packaging"]
build-backend = "setuptools.build_meta"
"""

TURBO = {"name": "primus_turbo", "version": "0.2.0", "packages": ["primus_turbo"], "ext": "primus_turbo._C",
         "sources": ["csrc/primus_turbo.cpp"], "needs_torch": True, "arch_env": ["GPU_ARCHS"],
         "needs_files": ["3rdparty/composable_kernel/include/ck/ck.hpp"],
         "requires": ["triton==3.7.0", "flydsl>=0.2.0", "scipy", "numpy"]}

TURBO_ROCSHMEM = '''
# rocSHMEM for internode DeepEP: an explicit ROCSHMEM_HOME wins; without one the probe falls back
# to ROCM_PATH, which for the pip SDK has rocshmem headers but no host librocshmem, so the link
# fails (Primus setup.sh stage_turbo). A ROCSHMEM_HOME that does not exist disables it cleanly.
rocshmem = os.environ.get("ROCSHMEM_HOME", "")
if not rocshmem and rocm and os.path.isdir(os.path.join(rocm, "include", "rocshmem")):
    rocshmem = rocm
if rocshmem and os.path.isdir(os.path.join(rocshmem, "include", "rocshmem")):
    record["rocshmem"] = rocshmem
    ext_kwargs["include_dirs"].append(os.path.join(rocshmem, "include"))
    ext_kwargs["library_dirs"].append(os.path.join(rocshmem, "lib"))
    ext_kwargs["libraries"].append("rocshmem")
else:
    print("WARNING: rocSHMEM not found%s; internode DeepEP is disabled" % (" at " + rocshmem if rocshmem else ""))
    record["rocshmem"] = None
'''

# AMD-AGI/Primus-Turbo requirements.txt at edc8d2cc (v26.5's and v26.5.1's pin), verbatim: development and build
# tools (setup.py's own requirements are triton==3.7.0, flydsl>=0.2.0, scipy, which the --no-deps build skips).
TURBO_REQUIREMENTS = "".join(line + "\n" for line in (
    "pre-commit==4.5.1", "ruff==0.15.12", "clang-format==20.1.6", "build", "ninja", "expecttest", "pytest",
    "pytest-xdist", "pytest-timeout", "setuptools==69.5.1", "setuptools_scm[toml]>=8", "wheel", "pyyaml", "twine"))


def _logging_repo(name):
    def files(version):
        world = {"name": "mlperf_logging", "version": version, "packages": ["mlperf_logging"], "requires": []}
        return _component(name, world)
    return Repo(name, "master", [
        Commit("rc5", "master", "Release 6.0.0-rc5", files=files("6.0.0rc5")),
        Commit("head", "master", "Post-release fixes", parent="rc5",
               files={"setup.py": files("6.0.0rc6")["setup.py"]}),
    ], tags={"6.0.0-rc5": "rc5"})


def _pinned_then_later(name, default_branch, upstream, world, pinned_msg, sub=None, between=(), **kwargs):
    """The pinned commit, the commits `between` ([(label, message, files)], the pins of later releases, in order)
    and a later commit, all on the default branch."""
    files = _component(upstream, world, **kwargs)
    bumped = world["version"].replace("dev0", "dev1") if "dev0" in world["version"] else world["version"] + ".post1"
    later = dict(world, version=bumped)
    commits = [Commit("pinned", default_branch, pinned_msg, files=files, submodules=sub)]
    for label, message, changed in between:
        commits.append(Commit(label, default_branch, message, parent=commits[-1].label, files=changed))
    commits.append(Commit("later", default_branch, "Development continues on %s" % default_branch,
                          parent=commits[-1].label,
                          files={"setup.py": buildsys.setup_py(upstream, later, kwargs.get("extra", ""))}))
    return Repo(name, default_branch, commits)


def all_repos(url_of):
    """Every world repository; url_of(name) is its world URL. Dependencies come first."""
    ck = ("composable_kernel", "pinned")
    repos = [CK, HIPIFY, CUTLASS, AUTOMODEL, MAXTEXT, MEGATRON, primus(url_of),
             _logging_repo("mlcommons-logging"), _logging_repo("mlperf-logging")]
    base_url = url_of("flash-attention").rsplit("/git/", 1)[0]
    repos.append(_pinned_then_later(
        "flash-attention", "main", "ROCm/flash-attention", FA, "flash-attention at the v26.5 pin",
        sub={"csrc/composable_kernel": ck}, extra=FA_PREBUILT % {"releases": base_url + GITHUB_RELEASES},
        init_body="import flash_attn_2_cuda  # noqa: E402,F401  (the compiled extension)\n"))
    te_files = {"transformer_engine/lib/ck_jit/ck_jit_compile.sh": _ck_jit()}
    repos.append(_pinned_then_later(
        "TransformerEngine", "dev", "ROCm/TransformerEngine", TE_SRC, "TransformerEngine a07e607 (v26.5 TE label)",
        sub={"3rdparty/hipify_torch": ("hipify_torch", "pinned")}, more_files=te_files,
        between=[("v26.5.1", "TransformerEngine 2a26bf8 (v26.5.1 TE label)",
                  {"CHANGELOG.md": "The commit of the v26.5.1 wheel label 2.15.0.dev0+rocm7.15.0a20260724.2a26bf8\n"})],
        init_body="import transformer_engine_torch  # noqa: E402,F401  (the compiled extension)\n"))
    repos.append(_pinned_then_later(
        "torchtune", "main", "pytorch/torchtune", TORCHTUNE, "torchtune at the v26.5 pin",
        more_files={"torchtune/modules/moe/utils.py": TORCHTUNE_MOE}))
    repos.append(_pinned_then_later(
        "ao", "main", "pytorch/ao", TORCHAO, "torchao at the v26.5 pin",
        more_files={"torchao/float8/config.py": TORCHAO_CONFIG, "torchao/csrc/rocm/swizzle/swizzle.cpp": TORCHAO_SWIZZLE}))
    gg_files = _component("caaatch22/grouped_gemm", GROUPED_GEMM)
    repos.append(Repo("grouped_gemm", "main", [
        Commit("main", "main", "grouped_gemm for CUDA", files=gg_files,
               submodules={"third_party/cutlass": ("cutlass", "pinned")}),
        Commit("rocm-1", "rocm", "Port to ROCm", parent="main", files={"ROCM.md": "ROCm port\n"}),
        Commit("rocm-2", "rocm", "ROCm: tune tile sizes", parent="rocm-1", files={"ROCM.md": "ROCm port, tuned\n"}),
    ]))
    repos.append(_pinned_then_later(
        "causal-conv1d", "main", "Dao-AILab/causal-conv1d", CAUSAL_CONV1D, "causal-conv1d at the v26.5 pin",
        extra=FORCE_BUILD % {"var": "CAUSAL_CONV1D_FORCE_BUILD", "project": "Dao-AILab/causal-conv1d"}))
    mamba_extra = FORCE_BUILD % {"var": "MAMBA_FORCE_BUILD", "project": "state-spaces/mamba"}
    mamba_files = _component("AndreasKaratzas/mamba", MAMBA, extra=mamba_extra, more_files=MAMBA_FILES,
                             init_body="from .modules import mamba3  # noqa: E402,F401\n")
    repos.append(Repo("mamba", "main", [
        Commit("main", "main", "mamba upstream", files=mamba_files),
        Commit("hybrid", "enable-primus-hybrid-models", "Enable Primus hybrid models on ROCm", parent="main",
               files={"HYBRID.md": "hybrid models\n"}),
    ]))
    repos.append(_pinned_then_later(
        "aiter", "main", "ROCm/aiter", AITER, "aiter v0.14.0.post1", sub={"3rdparty/composable_kernel": ck},
        init_body=AITER_INIT, more_files={"pyproject.toml": AITER_PYPROJECT}))
    repos.append(_pinned_then_later(
        "Primus-Turbo", "main", "AMD-AGI/Primus-Turbo", TURBO, "Primus-Turbo at the v26.5 pin",
        sub={"3rdparty/composable_kernel": ck}, extra=TURBO_ROCSHMEM,
        init_body="import triton  # noqa: E402,F401  (upstream triton crashes here)\n",
        more_files={"requirements.txt": TURBO_REQUIREMENTS}))
    return repos


def component_requirements():
    """{repository: requirements} that the stand-in repositories declare (setup.py install_requires
    and requirements.txt files): what their installs ask the PyPI stand-in for."""
    out = dict((repo, world["requires"]) for repo, world in (
        ("flash-attention", FA), ("TransformerEngine", TE_SRC), ("torchtune", TORCHTUNE), ("ao", TORCHAO),
        ("grouped_gemm", GROUPED_GEMM), ("causal-conv1d", CAUSAL_CONV1D), ("mamba", MAMBA), ("aiter", AITER),
        ("Primus-Turbo", TURBO)))
    out["Primus-Turbo/requirements.txt"] = TURBO_REQUIREMENTS.split()
    out["Primus/requirements.txt"] = primus_requirements(lambda name: "https://invalid/" + name).split()
    return out


def _ck_jit():
    from .packages import CK_JIT
    return CK_JIT
