"""Contents of the ROCm SDK stand-in (rocm-sdk-devel): the `rocm-sdk` command and the devel tree.

`rocm-sdk init` copies the payload shipped inside the wheel to <site-packages>/_rocm_sdk_devel,
an importable package whose directory is ROCM_PATH, with the layout env.sh relies on
(as Primus env.sh reads it): bin/hipcc, bin/rocminfo, llvm/bin, lib, lib64, include,
lib/llvm/amdgcn/bitcode, lib/pkgconfig, lib/host-math/lib, lib/rocm_sysdeps/lib.
"""

CLI = '''\
"""`rocm-sdk` command of the ROCm SDK stand-in (primus.trainenv test world)."""
import os
import shutil
import sys

VERSION = "%(version)s"
_HERE = os.path.dirname(os.path.abspath(__file__))
_PAYLOAD = os.path.join(_HERE, "_devel_payload")
_EXECUTABLES = ("bin/hipcc", "bin/rocminfo", "llvm/bin/amdgpu-arch")


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
      echo "HIP version: 7.15.0-a20260720 (primus.trainenv test world stand-in)"
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


def payload(version):
    """{relative path: content} of the devel tree that `rocm-sdk init` lays out."""
    keep = "placeholder of the ROCm SDK stand-in\n"
    return {
        "__init__.py": '"""ROCm SDK devel tree (test world stand-in); its directory is ROCM_PATH."""\n'
                       '__version__ = "%s"\n' % version,
        "bin/hipcc": HIPCC,
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


def wheel_files(version):
    """Files of the rocm-sdk-devel wheel: the `rocm_sdk` command and the payload it lays out."""
    files = {
        "rocm_sdk/__init__.py": '"""ROCm SDK stand-in (primus.trainenv test world)."""\n'
                                '__version__ = "%s"\n' % version,
        "rocm_sdk/cli.py": CLI % {"version": version},
    }
    for rel, content in payload(version).items():
        files["rocm_sdk/_devel_payload/" + rel] = content
    return files


EXECUTABLES = ("rocm_sdk/_devel_payload/bin/hipcc", "rocm_sdk/_devel_payload/bin/rocminfo",
               "rocm_sdk/_devel_payload/llvm/bin/amdgpu-arch")
