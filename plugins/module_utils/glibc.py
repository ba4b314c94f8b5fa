# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""glibc and libstdc++ facts: pure helpers (Python 3.8+, no third-party imports).

* glibc version: ``os.confstr('CS_GNU_LIBC_VERSION')`` ("glibc 2.36") when the interpreter is
  linked against glibc, else the trailing ``N.N`` of the first line of ``ldd --version``
  (``ldd (Ubuntu GLIBC 2.35-0ubuntu3.8) 2.35`` -> 2.35; musl prints no such line -> unknown).
* GLIBCXX versions: the ``GLIBCXX_3.4.N`` version names are plain strings in libstdc++'s
  dynamic string table, so reading the file's bytes finds them without binutils.
* The libstdc++ to read is the one the dynamic linker would load: the ``ldconfig -p`` cache
  entry for ``libstdc++.so.6`` matching this machine's ELF class and machine, else the first
  match in the usual library directories.
* ``gather``: all of the above on the node itself, through an AnsibleModule (glibc_facts, node_info).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import re
import struct
import sys
import sysconfig

LIBSTDCXX_SONAME = 'libstdc++.so.6'

LIBRARY_DIRS = (
    '/lib/{multiarch}', '/usr/lib/{multiarch}',
    '/lib64', '/usr/lib64', '/lib', '/usr/lib',
)

_LDD_VERSION_RE = re.compile(r'(\d+\.\d+(?:\.\d+)?)\s*$')
_CONFSTR_RE = re.compile(r'^glibc\s+(\d+\.\d+(?:\.\d+)?)')
_GLIBCXX_RE = re.compile(br'GLIBCXX_(\d+(?:\.\d+)+)')
_LDCONFIG_LINE_RE = re.compile(r'^\s*(\S+)\s+\(([^)]*)\)\s+=>\s+(\S+)\s*$')


def version_tuple(version):
    """'3.4.30' -> (3, 4, 30); components that are not integers stop the tuple."""
    parts = []
    for part in str(version).split('.'):
        if not part.isdigit():
            break
        parts.append(int(part))
    return tuple(parts)


def version_ge(have, need):
    """True when dotted version ``have`` >= ``need`` (like ``sort -V`` for plain numbers)."""
    return version_tuple(have) >= version_tuple(need)


def glibc_from_confstr(value):
    """'glibc 2.36' -> '2.36'; anything else (None, 'musl ...') -> None."""
    if not value:
        return None
    match = _CONFSTR_RE.match(value.strip())
    return match.group(1) if match else None


def glibc_from_ldd(output):
    """(version or None, first line) from ``ldd --version`` output.

    glibc's ldd ends its first line with the version; musl's ldd prints a usage text or
    ``musl libc`` and yields None.
    """
    lines = (output or '').strip().splitlines()
    first = lines[0].strip() if lines else ''
    if 'musl' in first.lower():
        return None, first
    match = _LDD_VERSION_RE.search(first)
    return (match.group(1) if match else None), first


def glibcxx_versions_from_bytes(data):
    """Sorted unique GLIBCXX version names found in libstdc++'s bytes, e.g. ['3.4', ..., '3.4.30']."""
    found = set(m.group(1).decode('ascii') for m in _GLIBCXX_RE.finditer(data))
    return sorted(found, key=version_tuple)


def glibcxx_versions_from_file(path):
    """GLIBCXX version names of a libstdc++ file (read in full; it is a few MB)."""
    with open(path, 'rb') as handle:
        return glibcxx_versions_from_bytes(handle.read())


def elf_identity(path):
    """(EI_CLASS, e_machine) of an ELF file, or None if it is not a readable ELF file."""
    try:
        with open(path, 'rb') as handle:
            header = handle.read(20)
    except (IOError, OSError):
        return None
    if len(header) < 20 or header[:4] != b'\x7fELF':
        return None
    ei_class = bytearray(header[4:5])[0]
    endian = '<' if bytearray(header[5:6])[0] == 1 else '>'
    machine = struct.unpack(endian + 'H', header[18:20])[0]
    return ei_class, machine


def parse_ldconfig_cache(output, soname=LIBSTDCXX_SONAME):
    """Paths that ``ldconfig -p`` lists for ``soname``, in its order."""
    paths = []
    for line in (output or '').splitlines():
        match = _LDCONFIG_LINE_RE.match(line)
        if match and match.group(1) == soname:
            paths.append(match.group(3))
    return paths


def candidate_dirs(multiarch):
    """The usual library directories, the multiarch ones first when ``multiarch`` is known."""
    dirs = []
    for template in LIBRARY_DIRS:
        if '{multiarch}' in template:
            if not multiarch:
                continue
            template = template.format(multiarch=multiarch)
        if template not in dirs:
            dirs.append(template)
    return dirs


def pick_libstdcxx(cache_paths, multiarch, want_identity, exists=os.path.exists, identity=elf_identity):
    """The libstdc++ the loader would use: the first ldconfig entry (then directory match)
    that exists and, when ``want_identity`` is known, has the same ELF class and machine."""
    candidates = list(cache_paths) + [os.path.join(d, LIBSTDCXX_SONAME) for d in candidate_dirs(multiarch)]
    for path in candidates:
        if not exists(path):
            continue
        if want_identity is not None and identity(path) != want_identity:
            continue
        return path
    return None


def gather(module, libstdcxx_path=None, ldd='ldd'):
    """The glibc and libstdc++ facts of the node running ``module`` (an AnsibleModule: its ``run_command`` and
    ``get_bin_path`` run ``ldd --version`` and ``ldconfig -p``), as the glibc_facts module and node_info report them:
    {version, source, ldd_line, libstdcxx_path, glibcxx_max, glibcxx_versions}. Raises ValueError when a given
    ``libstdcxx_path`` or the libstdc++ found cannot be read."""
    try:
        version = glibc_from_confstr(os.confstr('CS_GNU_LIBC_VERSION'))
    except (AttributeError, ValueError, OSError):
        version = None
    source = 'confstr' if version else 'none'
    ldd_version, ldd_line = None, ''
    ldd_path = ldd if os.path.sep in ldd else module.get_bin_path(ldd)
    if ldd_path and os.path.exists(ldd_path):
        _rc, out, err = module.run_command([ldd_path, '--version'])
        # glibc's ldd exits 0; musl's prints its banner on stderr and exits 1.
        ldd_version, ldd_line = glibc_from_ldd(out if out.strip() else err)
    if not version and ldd_version:
        version, source = ldd_version, 'ldd'

    if libstdcxx_path:
        if not os.path.isfile(libstdcxx_path):
            raise ValueError('libstdcxx_path %s is not a readable file' % libstdcxx_path)
    else:
        cache = []
        ldconfig = module.get_bin_path('ldconfig', opt_dirs=['/sbin', '/usr/sbin'])
        if ldconfig:
            rc, out, _err = module.run_command([ldconfig, '-p'])
            cache = parse_ldconfig_cache(out) if rc == 0 else []
        libstdcxx_path = pick_libstdcxx(cache, sysconfig.get_config_var('MULTIARCH') or '', elf_identity(sys.executable))
    versions = []
    if libstdcxx_path:
        libstdcxx_path = os.path.realpath(libstdcxx_path)
        try:
            versions = glibcxx_versions_from_file(libstdcxx_path)
        except (IOError, OSError) as exc:
            raise ValueError('cannot read %s: %s' % (libstdcxx_path, exc))
    return dict(version=version or '', source=source, ldd_line=ldd_line, libstdcxx_path=libstdcxx_path or '',
                glibcxx_max=versions[-1] if versions else '', glibcxx_versions=versions)
