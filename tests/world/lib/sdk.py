"""Contents of the ROCm SDK stand-in (rocm-sdk-devel): the `rocm-sdk` command and the devel tree.

`rocm-sdk init` copies the payload shipped inside the wheel to <site-packages>/_rocm_sdk_devel,
an importable package whose directory is ROCM_PATH, with the layout env.sh relies on
(as Primus env.sh reads it): bin/hipcc, bin/rocminfo, llvm/bin, lib, lib64, include,
lib/llvm/amdgcn/bitcode, lib/pkgconfig, lib/host-math/lib, lib/rocm_sysdeps/lib.

From nightly a20260727 on (split=True) the SDK is several packages, as AMD-AGI/Primus
Dockerfile.primus-v26.5.1 (fd1eeabb) installs it: rocm-sdk-core ships the runtime's
lib/libamd_comgr.so.3 in <site-packages>/_rocm_sdk_core, and the devel tree that `rocm-sdk init`
lays out has a second, separate copy in _rocm_sdk_devel/lib, plus bin/rocprofv3 with the line
`update_env("ROCPROFILER_LIBRARY_CTOR", True)` that the Dockerfile's sed turns to False.
"""

CLI = '''\
"""`rocm-sdk` command of the ROCm SDK stand-in (primus.trainenv test world)."""
import os
import shutil
import sys

VERSION = "%(version)s"
_HERE = os.path.dirname(os.path.abspath(__file__))
_PAYLOAD = os.path.join(_HERE, "_devel_payload")
_EXECUTABLES = %(executables)s


def devel_root():
    return os.path.join(os.path.dirname(_HERE), "_rocm_sdk_devel")


def _marker(root):
    return os.path.join(root, ".rocm-sdk-initialized")


def init():
    root = devel_root()
    marker = _marker(root)
    if os.path.isfile(marker):
        with open(marker) as handle:
            if handle.read().strip() == VERSION:
                print("Devel contents already expanded to %%s" %% root)
                return 0
    staging = root + ".tmp-%%d" %% os.getpid()
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(_PAYLOAD, staging)
    for rel in _EXECUTABLES:
        os.chmod(os.path.join(staging, rel), 0o755)
    with open(_marker(staging), "w") as handle:
        handle.write(VERSION + "\\n")
    shutil.rmtree(root, ignore_errors=True)
    os.rename(staging, root)
    print("Devel contents expanded to %%s" %% root)
    return 0


def main(argv=None):
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print("usage: rocm-sdk {init,path,version}")
        return 0 if args else 2
    if args[0] == "init":
        return init()
    if args[0] == "version":
        print(VERSION)
        return 0
    if args[0] == "path":
        root = devel_root()
        if "--bin" in args:
            root = os.path.join(root, "bin")
        print(root)
        return 0
    sys.stderr.write("rocm-sdk: error: unknown command %%r\\n" %% args[0])
    return 2


if __name__ == "__main__":
    sys.exit(main())
'''

HIPCC = r'''#!/usr/bin/env bash
# hipcc stand-in (primus.trainenv test world): HIP-only options are dropped and the rest is
# handed to the host C++ compiler, so stand-in "kernels" really compile. --offload-arch=native
# needs a GPU, as with the real clang: without one it fails like amdgpu-arch does.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rocm=$(dirname "$here")
host=${PRIMUS_WORLD_HOST_CXX:-}
if [ -z "$host" ]; then
  for c in c++ g++ clang++; do
    if p=$(command -v "$c"); then host=$p; break; fi
  done
fi
[ -n "$host" ] || { echo "hipcc: no host C++ compiler found" >&2; exit 1; }
args=()
native=0
while [ $# -gt 0 ]; do
  case "$1" in
    --version)
      echo "HIP version: @HIP_VERSION@ (primus.trainenv test world stand-in)"
      "$host" --version | head -n 1
      exit 0 ;;
    --offload-arch=native|--amdgpu-target=native) native=1 ;;
    --offload-arch=*|--amdgpu-target=*|--rocm-path=*|-fgpu-rdc|-fno-gpu-rdc|--hip-link|-fno-gpu-rdc) ;;
    -mllvm) shift ;;
    -x)
      shift
      case "$1" in hip|cu|cuda) args+=(-x c++) ;; *) args+=(-x "$1") ;; esac ;;
    *.hip|*.cu) args+=(-x c++ "$1" -x none) ;;
    *) args+=("$1") ;;
  esac
  shift
done
if [ "$native" = 1 ] && ! "$rocm/llvm/bin/amdgpu-arch" >/dev/null 2>&1; then
  echo "clang: error: cannot determine amdgcn architecture: $rocm/llvm/bin/amdgpu-arch: exit code 1; consider passing it via '--offload-arch'" >&2
  exit 1
fi
exec "$host" -D__HIP_PLATFORM_AMD__=1 -I"$rocm/include" "${args[@]}"
'''

ROCMINFO = r'''#!/bin/sh
# rocminfo stand-in (primus.trainenv test world): prints the file named by PRIMUS_WORLD_ROCMINFO
# (a captured rocminfo output of a simulated host); without it, fails like a host with no GPU.
if [ -n "${PRIMUS_WORLD_ROCMINFO:-}" ]; then
  exec cat "$PRIMUS_WORLD_ROCMINFO"
fi
echo "ROCk module is NOT loaded, possibly no GPU devices"
exit 1
'''

AMDGPU_ARCH = r'''#!/bin/sh
# amdgpu-arch stand-in: the gfx names of the simulated host's GPU agents, one per line.
here=$(cd "$(dirname "$0")" && pwd)
out=$("$here/../../bin/rocminfo" 2>/dev/null) || { echo "error: No AMD GPU found" >&2; exit 1; }
archs=$(printf '%s\n' "$out" | sed -n 's/^[[:space:]]*Name:[[:space:]]*\(gfx[0-9a-z]*\).*/\1/p')
[ -n "$archs" ] || { echo "error: No AMD GPU found" >&2; exit 1; }
printf '%s\n' "$archs"
'''

HIP_RUNTIME_H = """\
/* hip/hip_runtime.h stand-in (primus.trainenv test world). */
#pragma once
#define HIP_VERSION_MAJOR 7
#define HIP_VERSION_MINOR 15
#define HIP_VERSION_PATCH 0
#define __HIP__ 1
"""

ROCSHMEM_H = """\
/* rocshmem.hpp stand-in: the pip SDK ships rocSHMEM headers and device bitcode but no host
 * librocshmem.a (Primus setup.sh stage_turbo), which is what makes Primus-Turbo's probe go wrong. */
#pragma once
#define ROCSHMEM_VERSION_MAJOR 3
"""


ROCPROFV3 = '''#!/usr/bin/env python3
"""rocprofv3 stand-in (primus.trainenv test world): the launcher of ROCm's profiler, a Python script that sets
the profiler's environment and runs the application. With ROCPROFILER_LIBRARY_CTOR on, the profiler library
initialises itself when loaded and does not find the devel tree's code-object manager (lib/libamd_comgr.so.3):
it fails, as the real one does until the line below says False (AMD-AGI/Primus Dockerfile.primus-v26.5.1)."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def update_env(name, value):
    os.environ[name] = str(value).lower() if isinstance(value, bool) else str(value)


update_env("ROCPROFILER_LIBRARY_CTOR", True)


def main(argv):
    if os.environ["ROCPROFILER_LIBRARY_CTOR"] == "true":
        sys.stderr.write("rocprofv3: librocprofiler-sdk.so: cannot load libamd_comgr.so.3: cannot open shared object "
                         "file: No such file or directory\\n")
        return 1
    if argv[:1] == ["--version"]:
        print("rocprofv3 (stand-in) of %s" % ROOT)
        return 0
    if not argv:
        sys.stderr.write("usage: rocprofv3 [options] -- <application> [args...]\\n")
        return 2
    app = argv[argv.index("--") + 1:] if "--" in argv else argv
    os.execvp(app[0], app)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
'''

BASE_EXECUTABLES = ("bin/hipcc", "bin/rocminfo", "llvm/bin/amdgpu-arch")


def _executables(split):
    return BASE_EXECUTABLES + (("bin/rocprofv3",) if split else ())


def _hip_version(version):
    """hipcc's version line: 7.15.0a20260720 -> 7.15.0-a20260720."""
    public, _sep, date = version.partition("a")
    return "%s-a%s" % (public, date) if date else version


def payload(version, split=False, comgr=None):
    """{relative path: content} of the devel tree that `rocm-sdk init` lays out (split: with the code-object
    manager library `comgr` (bytes) in lib/ and bin/rocprofv3)."""
    keep = "placeholder of the ROCm SDK stand-in\n"
    files = {
        "__init__.py": '"""ROCm SDK devel tree (test world stand-in); its directory is ROCM_PATH."""\n'
                       '__version__ = "%s"\n' % version,
        "bin/hipcc": HIPCC.replace("@HIP_VERSION@", _hip_version(version)),
        "bin/rocminfo": ROCMINFO,
        "llvm/bin/amdgpu-arch": AMDGPU_ARCH,
        "llvm/lib/README": keep,
        "include/hip/hip_runtime.h": HIP_RUNTIME_H,
        "include/rocshmem/rocshmem.hpp": ROCSHMEM_H,
        "lib/README": keep,
        "lib64/README": keep,
        "lib/llvm/amdgcn/bitcode/ocml.bc": "BC stand-in\n",
        "lib/llvm/amdgcn/bitcode/rocshmem_device.bc": "BC stand-in\n",
        "lib/pkgconfig/hip.pc": "prefix=${pcfiledir}/../..\nName: hip\nVersion: %s\n"
                                "Description: HIP stand-in\nCflags: -I${prefix}/include\n" % version,
        "lib/host-math/lib/README": keep,
        "lib/rocm_sysdeps/lib/README": keep,
    }
    if split:
        files["lib/libamd_comgr.so.3"] = comgr
        files["bin/rocprofv3"] = ROCPROFV3
    return files


def wheel_files(version, split=False, comgr=None):
    """Files of the rocm-sdk-devel wheel: the `rocm_sdk` command and the payload it lays out."""
    files = {
        "rocm_sdk/__init__.py": '"""ROCm SDK stand-in (primus.trainenv test world)."""\n'
                                '__version__ = "%s"\n' % version,
        "rocm_sdk/cli.py": CLI % {"version": version,
                                  "executables": "(%s)" % ", ".join('"%s"' % e for e in _executables(split))},
    }
    for rel, content in payload(version, split, comgr).items():
        files["rocm_sdk/_devel_payload/" + rel] = content
    return files


def executables(split=False):
    """The wheel's paths that get mode 0o755."""
    return tuple("rocm_sdk/_devel_payload/" + rel for rel in _executables(split))


EXECUTABLES = executables()


def core_files(version, comgr):
    """Files of the rocm-sdk-core wheel (split nightlies): the runtime's package with its comgr copy."""
    return {"_rocm_sdk_core/__init__.py": '"""ROCm SDK core runtime (test world stand-in)."""\n'
                                          '__version__ = "%s"\n' % version,
            "_rocm_sdk_core/lib/libamd_comgr.so.3": comgr}
