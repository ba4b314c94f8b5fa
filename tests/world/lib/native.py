"""Tiny real ELF shared objects for stand-ins, compiled with the host C compiler at build time.

- The TransformerEngine core library needs GLIBC_2.38 and GLIBCXX_3.4.32 exactly like the real
  wheel built on Ubuntu 24.04: it is linked against stub libc/libstdc++ that define those symbol
  versions, so on this host (glibc 2.36) the real dynamic loader refuses it with its own message
  ("version `GLIBC_2.38' not found (required by .../libtransformer_engine.so)"), and on a host
  with glibc >= 2.38 and a new enough libstdc++ it loads.
- A plain library (e.g. libz3.so) that loads anywhere.
- The ROCm SDK's code-object manager libamd_comgr.so.3 (rocm-sdk-core and rocm-sdk-devel each ship a
  copy from nightly a20260727 on): its constructor stands for LLVM's static option registration,
  which the real library runs once per copy loaded into a process. The dynamic loader itself decides
  what a copy is: dlopen of a second path to the same file (a symlink, a hard link: one device and
  inode) returns the object already loaded and runs no constructor; a second, separate file is a
  second object, whose constructor finds two copies in the process's link map (dl_iterate_phdr),
  writes LLVM's message and aborts (SIGABRT).

Compiled without build ids, stripped, from sources named relative to the work dir, so the bytes
are the same on every build with the same compiler.
"""
import os
import shutil
import subprocess
import tempfile

_STUB_LIBC = "void strlcpy(void) {}\n"
_STUB_LIBC_MAP = "GLIBC_2.2.5 { };\nGLIBC_2.38 { global: strlcpy; } GLIBC_2.2.5;\n"
_STUB_CXX = "void _ZSt21ios_base_library_initv(void) {}\n"
_STUB_CXX_MAP = "GLIBCXX_3.4 { };\nGLIBCXX_3.4.32 { global: _ZSt21ios_base_library_initv; } GLIBCXX_3.4;\n"

_TE_CORE = """\
/* Stand-in for libtransformer_engine.so: references strlcpy@GLIBC_2.38 and
 * std::ios_base_library_init@GLIBCXX_3.4.32 like a build made on Ubuntu 24.04. */
extern unsigned long strlcpy(char *dst, const char *src, unsigned long size);
extern void _ZSt21ios_base_library_initv(void);
int nvte_get_version(void) { return 2150; }
unsigned long nvte_copy_name(char *dst, const char *src, unsigned long size) {
    _ZSt21ios_base_library_initv();
    return strlcpy(dst, src, size);
}
"""

_PLAIN = """\
/* Stand-in shared library %(name)s (primus.trainenv test world). */
int %(symbol)s(void) { return 1; }
"""


_COMGR = r"""
/* Stand-in for libamd_comgr.so.3 (primus.trainenv test world). Its constructor stands for LLVM's static
 * registration of command-line options (spirv-expand-step among them), which the real library runs for
 * every copy loaded: a second, separate copy in one process registers them twice and LLVM aborts. */
#define _GNU_SOURCE
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int count_copies(struct dl_phdr_info *info, size_t size, void *data) {
    const char *name = info->dlpi_name, *base = strrchr(name, '/');
    (void)size;
    if (strcmp(base ? base + 1 : name, "libamd_comgr.so.3") == 0)
        ++*(int *)data;
    return 0;
}

__attribute__((constructor)) static void register_options(void) {
    static const char msg[] = ": CommandLine Error: Option 'spirv-expand-step' registered more than once!\n"
                              "LLVM ERROR: inconsistency in registered CommandLine options\n";
    int copies = 0;
    dl_iterate_phdr(count_copies, &copies);
    if (copies > 1) {
        if (write(2, msg, sizeof msg - 1) < 0) {
        }
        abort();
    }
}

int amd_comgr_get_version(unsigned long *major, unsigned long *minor) {
    *major = 3;
    *minor = 0;
    return 0;
}
"""


def _cc():
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return shutil.which(name)
    raise RuntimeError("no C compiler found (need cc/gcc to build the test world)")


def _run(args, cwd):
    proc = subprocess.run(args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError("%s failed:\n%s" % (" ".join(args), proc.stdout))


def _write(path, text):
    with open(path, "w") as handle:
        handle.write(text)


def te_core_library():
    """Bytes of a libtransformer_engine.so that needs GLIBC_2.38 and GLIBCXX_3.4.32."""
    cc = _cc()
    work = tempfile.mkdtemp(prefix="world-native-")
    try:
        os.mkdir(os.path.join(work, "stub"))
        _write(os.path.join(work, "libc.c"), _STUB_LIBC)
        _write(os.path.join(work, "libc.map"), _STUB_LIBC_MAP)
        _write(os.path.join(work, "cxx.c"), _STUB_CXX)
        _write(os.path.join(work, "cxx.map"), _STUB_CXX_MAP)
        _write(os.path.join(work, "te.c"), _TE_CORE)
        common = [cc, "-shared", "-fPIC", "-nostdlib", "-O2", "-Wl,--build-id=none", "-s"]
        _run(common + ["-Wl,--version-script=libc.map", "-Wl,-soname,libc.so.6",
                       "-o", "stub/libc.so.6", "libc.c"], work)
        _run(common + ["-Wl,--version-script=cxx.map", "-Wl,-soname,libstdc++.so.6",
                       "-o", "stub/libstdc++.so.6", "cxx.c"], work)
        _run(common + ["-Wl,-soname,libtransformer_engine.so", "-o", "libtransformer_engine.so",
                       "te.c", "stub/libc.so.6", "stub/libstdc++.so.6"], work)
        with open(os.path.join(work, "libtransformer_engine.so"), "rb") as handle:
            return handle.read()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def plain_library(soname, symbol):
    """Bytes of a trivial shared library that loads on any glibc."""
    cc = _cc()
    work = tempfile.mkdtemp(prefix="world-native-")
    try:
        _write(os.path.join(work, "lib.c"), _PLAIN % {"name": soname, "symbol": symbol})
        _run([cc, "-shared", "-fPIC", "-O2", "-Wl,--build-id=none", "-s",
              "-Wl,-soname," + soname, "-o", soname, "lib.c"], work)
        with open(os.path.join(work, soname), "rb") as handle:
            return handle.read()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def comgr_library():
    """Bytes of a libamd_comgr.so.3 that aborts a process which loads a second, separate copy of it."""
    cc = _cc()
    work = tempfile.mkdtemp(prefix="world-native-")
    try:
        _write(os.path.join(work, "comgr.c"), _COMGR)
        _run([cc, "-shared", "-fPIC", "-O2", "-Wl,--build-id=none", "-s", "-Wl,-soname,libamd_comgr.so.3",
              "-o", "libamd_comgr.so.3", "comgr.c"], work)
        with open(os.path.join(work, "libamd_comgr.so.3"), "rb") as handle:
            return handle.read()
    finally:
        shutil.rmtree(work, ignore_errors=True)
