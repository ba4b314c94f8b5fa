"""The one setup.py that every source-built stand-in (git remotes and sdists) uses.

A stand-in's setup.py is this template plus a WORLD dict of its parameters. It:
- fails like the real project when a submodule was not initialised (needs_files) or when the
  installed ROCm torch is required but not importable (needs_torch: build with
  --no-build-isolation, as upstream does);
- records the environment the build saw into <first package>/world_build.json, which is
  installed with the package, so tests can assert on GPU_ARCHS, MAX_JOBS, NVTE_*...;
- waits while a test holds it (hold(): a file next to its source tree), so a run can be interrupted
  mid-build;
- compiles a tiny real C++ extension: with $ROCM_PATH/bin/hipcc (the pip SDK) and one
  --offload-arch per arch when ROCM_PATH is set, else with the host compiler;
- lets a stand-in's extra code override setup() commands (cmdclass: flash-attention's bdist_wheel,
  which asks for a prebuilt wheel first) and rewrite the record (write_record()).
Setuptools only, no cmake.
"""
import pprint

SETUP_PY = '''\
# Stand-in for %(upstream)s (primus.trainenv test world), not the real project.
# It builds a tiny real extension (with hipcc from the pip ROCm SDK when ROCM_PATH is set, else
# the host C++ compiler) and records the environment the build saw in
# <package>/world_build.json, which is installed with the package.
import hashlib
import json
import os
import pwd
import subprocess
import sys
import time
import uuid

from setuptools import Extension, setup

WORLD = %(world)s

ENV_KEYS = ("GPU_ARCHS", "PYTORCH_ROCM_ARCH", "HIP_ARCHITECTURES", "HCC_AMDGPU_TARGET",
            "ROCM_AMDGPU_TARGETS", "MAX_JOBS", "ROCSHMEM_HOME", "CAUSAL_CONV1D_FORCE_BUILD",
            "MAMBA_FORCE_BUILD", "FLASH_ATTENTION_FORCE_BUILD", "PREBUILD_KERNELS", "ROCM_PATH", "ROCM_HOME")
HERE = os.path.dirname(os.path.abspath(__file__))


def hold():
    """Test hook: the first build of this tree waits while ../.world-hold-<tree> exists, its pid in
    ../.world-holding-<tree>, so a test can interrupt a run in the middle of a build, or make it as long as
    it likes. While it waits it prints a line every 2 seconds, as a long compile does."""
    parent, tree = os.path.split(HERE)
    hold_file = os.path.join(parent, ".world-hold-" + tree)
    holding = os.path.join(parent, ".world-holding-" + tree)
    if not os.path.exists(hold_file) or os.path.exists(holding):
        return
    with open(holding, "w") as handle:
        handle.write("%%d\\n" %% os.getpid())
    start = time.time()
    beat = start
    while os.path.exists(hold_file) and time.time() < start + 900:
        time.sleep(0.2)
        if time.time() - beat >= 2:
            beat = time.time()
            print("world: %%s held for %%d s (a long compile)" %% (WORLD["name"], beat - start), flush=True)


hold()


def git_head():
    if not os.path.exists(os.path.join(HERE, ".git")):
        return None
    try:
        return subprocess.check_output(["git", "rev-parse", "HEAD"], cwd=HERE, universal_newlines=True,
                                       stderr=subprocess.DEVNULL).strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def version():
    head = git_head()
    if WORLD.get("git_label") is not None and head:
        return "%%s+%%s%%s" %% (WORLD["version"], WORLD["git_label"], head[:7])
    return WORLD["version"]


for rel in WORLD.get("needs_files", []):
    if not os.path.exists(os.path.join(HERE, rel)):
        sys.exit("%%s: %%s is missing: the submodule was not initialised "
                 "(run: git submodule update --init --recursive)" %% (WORLD["name"], rel))

record = {
    "component": WORLD["name"],
    "version": version(),
    "python": "%%d.%%d.%%d" %% sys.version_info[:3],
    "git_head": git_head(),
    "env": dict((key, os.environ.get(key)) for key in ENV_KEYS),
    "nvte": dict((k, v) for k, v in sorted(os.environ.items()) if k.startswith("NVTE_")),
    "files": {},
    # Which compile made this package: every run of setup.py gets its own id, and the one that built the wheel is
    # what the wheel carries, so the same id on two nodes means one compile (the fleet's wheel store shared it).
    "build": {"id": uuid.uuid4().hex, "user": pwd.getpwuid(os.getuid()).pw_name},
}
for rel in WORLD.get("watch", []):
    with open(os.path.join(HERE, rel), "rb") as handle:
        record["files"][rel] = hashlib.sha256(handle.read()).hexdigest()
for module in WORLD.get("needs_modules", []):
    __import__(module)
if WORLD.get("needs_torch"):
    import torch  # the installed ROCm torch: this build needs --no-build-isolation
    record["torch"] = torch.__version__
    if not getattr(torch.version, "hip", None):
        sys.exit("%%s needs a ROCm build of torch, found torch %%s" %% (WORLD["name"], torch.__version__))

raw = ""
for key in WORLD.get("arch_env", []):
    raw = os.environ.get(key, "")
    if raw:
        break
archs = [a.strip() for a in (raw or WORLD.get("arch_default", "native")).replace(",", ";").split(";")
         if a.strip()]
compile_args = ["-O1"]
ext_kwargs = {"include_dirs": [], "library_dirs": [], "libraries": [], "define_macros": []}
rocm = os.environ.get("ROCM_PATH", "")
hipcc = os.path.join(rocm, "bin", "hipcc") if rocm else ""
if WORLD.get("hip", True) and hipcc and os.access(hipcc, os.X_OK):
    os.environ["CC"] = os.environ["CXX"] = hipcc
    compile_args += ["--offload-arch=" + arch for arch in archs]
    record["compiler"] = "hipcc"
    record["offload_arch"] = archs
else:
    record["compiler"] = "host"
    record["offload_arch"] = []
cmdclass = {}  # setup() commands a stand-in overrides (flash-attention's bdist_wheel)
%(extra)s
package_dir = os.path.join(HERE, *WORLD["packages"][0].split("."))


def write_record():
    with open(os.path.join(package_dir, "world_build.json"), "w") as handle:
        json.dump(record, handle, indent=1, sort_keys=True)
        handle.write("\\n")


write_record()

package_data = dict(WORLD.get("package_data", {}))
package_data.setdefault(WORLD["packages"][0], []).append("world_build.json")
ext_modules = []
if WORLD.get("ext"):
    ext_modules.append(Extension(WORLD["ext"], WORLD["sources"], extra_compile_args=compile_args,
                                 **ext_kwargs))
setup(
    name=WORLD["name"],
    version=version(),
    description="Stand-in for %%s (primus.trainenv test world)" %% WORLD["name"],
    packages=WORLD["packages"],
    package_data=package_data,
    ext_modules=ext_modules,
    install_requires=WORLD.get("requires", []),
    extras_require=WORLD.get("extras", {}),
    python_requires=WORLD.get("python_requires"),
    cmdclass=cmdclass,
    zip_safe=False,
)
'''

EXT_CPP = '''\
// Stand-in kernel library %(module)s (primus.trainenv test world).
#include <Python.h>
#ifdef __HIP_PLATFORM_AMD__
#include <hip/hip_runtime.h>
#define WORLD_COMPILER "hipcc (HIP " STR(HIP_VERSION_MAJOR) "." STR(HIP_VERSION_MINOR) ")"
#else
#define WORLD_COMPILER "host c++"
#endif
#define STR2(x) #x
#define STR(x) STR2(x)

static PyObject *build_info(PyObject *, PyObject *) {
    return PyUnicode_FromString("%(module)s stand-in, compiled by " WORLD_COMPILER);
}

static PyMethodDef methods[] = {
    {"build_info", build_info, METH_NOARGS, "How this stand-in was compiled."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "%(short)s", NULL, -1, methods};

PyMODINIT_FUNC PyInit_%(short)s(void) { return PyModule_Create(&moduledef); }
'''


def setup_py(upstream, world, extra=""):
    """setup.py text for a stand-in. world: the WORLD dict (see SETUP_PY)."""
    return SETUP_PY % {"upstream": upstream, "world": pprint.pformat(world, width=100),
                       "extra": extra}


def ext_cpp(module):
    return EXT_CPP % {"module": module, "short": module.rsplit(".", 1)[-1]}
