# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""glibc / GLIBCXX helpers (module_utils.glibc)."""

import struct

import pytest

from ansible_collections.primus.trainenv.plugins.module_utils.glibc import (
    candidate_dirs,
    elf_identity,
    glibc_from_confstr,
    glibc_from_ldd,
    glibcxx_versions_from_bytes,
    glibcxx_versions_from_file,
    parse_ldconfig_cache,
    pick_libstdcxx,
    version_ge,
    version_tuple,
)


@pytest.mark.parametrize('output, version, first', [
    ('ldd (Ubuntu GLIBC 2.35-0ubuntu3.8) 2.35\nCopyright (C) 2022 Free Software Foundation, Inc.\n',
     '2.35', 'ldd (Ubuntu GLIBC 2.35-0ubuntu3.8) 2.35'),
    ('ldd (Ubuntu GLIBC 2.39-0ubuntu8.4) 2.39\n', '2.39', 'ldd (Ubuntu GLIBC 2.39-0ubuntu8.4) 2.39'),
    ('ldd (Debian GLIBC 2.36-9+deb12u14) 2.36\nCopyright\n', '2.36', 'ldd (Debian GLIBC 2.36-9+deb12u14) 2.36'),
    ('ldd (GNU libc) 2.34\n', '2.34', 'ldd (GNU libc) 2.34'),
    ('ldd (GNU libc) 2.28.9000\n', '2.28.9000', 'ldd (GNU libc) 2.28.9000'),
    ('musl libc (x86_64)\nVersion 1.2.4\nDynamic Program Loader\n', None, 'musl libc (x86_64)'),
    ('', None, ''),
    ('ldd: unrecognized option\n', None, 'ldd: unrecognized option'),
])
def test_glibc_from_ldd(output, version, first):
    assert glibc_from_ldd(output) == (version, first)


@pytest.mark.parametrize('value, version', [
    ('glibc 2.36', '2.36'), ('glibc 2.39', '2.39'), ('glibc 2.17', '2.17'),
    (None, None), ('', None), ('musl 1.2', None),
])
def test_glibc_from_confstr(value, version):
    assert glibc_from_confstr(value) == version


def test_glibcxx_versions_are_sorted_as_versions_not_text():
    data = (b'\x00CXXABI_1.3.13\x00GLIBCXX_3.4.30\x00GLIBCXX_3.4\x00GLIBCXX_3.4.9\x00GLIBCXX_TUNABLES\x00'
            b'GLIBCXX_3.4.29\x00GLIBC_2.34\x00GLIBCXX_3.4.9\x00libstdc++.so.6\x00')
    assert glibcxx_versions_from_bytes(data) == ['3.4', '3.4.9', '3.4.29', '3.4.30']


def test_glibcxx_versions_from_file(tmpdir):
    lib = tmpdir.join('libstdc++.so.6')
    lib.write_binary(b'\x7fELF' + b'\x00' * 100 + b'GLIBCXX_3.4.32\x00GLIBCXX_3.4.31\x00GLIBCXX_3.4.4\x00')
    assert glibcxx_versions_from_file(str(lib))[-1] == '3.4.32'


def test_no_glibcxx():
    assert glibcxx_versions_from_bytes(b'\x7fELF nothing here') == []


@pytest.mark.parametrize('have, need, result', [
    ('2.36', '2.38', False), ('2.38', '2.38', True), ('2.39', '2.38', True), ('2.4', '2.38', False),
    ('2.100', '2.38', True), ('3.4.30', '3.4.32', False), ('3.4.32', '3.4.32', True), ('3.4', '3.4.1', False),
])
def test_version_ge(have, need, result):
    assert version_ge(have, need) is result


def test_version_tuple_stops_at_text():
    assert version_tuple('2.28.9000') == (2, 28, 9000)
    assert version_tuple('2.35-0ubuntu3') == (2,)
    assert version_tuple('') == ()


LDCONFIG = """1492 libs found in cache `/etc/ld.so.cache'
\tlibstdc++.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libstdc++.so.6
\tlibstdc++.so.6 (libc6) => /lib/i386-linux-gnu/libstdc++.so.6
\tlibstdc++fs.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libstdc++fs.so.6
\tlibc.so.6 (libc6,x86-64, OS ABI: Linux 3.2.0) => /lib/x86_64-linux-gnu/libc.so.6
"""


def test_parse_ldconfig_cache():
    assert parse_ldconfig_cache(LDCONFIG) == ['/lib/x86_64-linux-gnu/libstdc++.so.6', '/lib/i386-linux-gnu/libstdc++.so.6']
    assert parse_ldconfig_cache(LDCONFIG, 'libc.so.6') == ['/lib/x86_64-linux-gnu/libc.so.6']
    assert parse_ldconfig_cache('') == []


def test_pick_libstdcxx_prefers_the_cache_entry_of_this_machine():
    identities = {'/lib/i386-linux-gnu/libstdc++.so.6': (1, 3),
                  '/lib/x86_64-linux-gnu/libstdc++.so.6': (2, 62),
                  '/usr/lib/x86_64-linux-gnu/libstdc++.so.6': (2, 62)}
    cache = ['/lib/i386-linux-gnu/libstdc++.so.6', '/lib/x86_64-linux-gnu/libstdc++.so.6']
    pick = pick_libstdcxx(cache, 'x86_64-linux-gnu', (2, 62), exists=identities.__contains__, identity=identities.get)
    assert pick == '/lib/x86_64-linux-gnu/libstdc++.so.6'


def test_pick_libstdcxx_falls_back_to_library_dirs():
    present = {'/usr/lib64/libstdc++.so.6': (2, 62)}
    assert pick_libstdcxx([], '', (2, 62), exists=present.__contains__, identity=present.get) == '/usr/lib64/libstdc++.so.6'
    assert pick_libstdcxx([], '', (2, 62), exists=lambda p: False, identity=present.get) is None
    # unknown identity of this interpreter: the first existing file wins
    assert pick_libstdcxx(['/x/libstdc++.so.6'], '', None, exists=lambda p: True, identity=lambda p: None) == '/x/libstdc++.so.6'


def test_candidate_dirs():
    assert candidate_dirs('aarch64-linux-gnu')[:2] == ['/lib/aarch64-linux-gnu', '/usr/lib/aarch64-linux-gnu']
    assert '/usr/lib64' in candidate_dirs('')
    assert not any('{' in d for d in candidate_dirs(''))


def test_elf_identity(tmpdir):
    elf = tmpdir.join('lib.so')
    elf.write_binary(b'\x7fELF' + bytes(bytearray([2, 1, 1])) + b'\x00' * 11 + struct.pack('<H', 183) + b'\x00' * 8)
    assert elf_identity(str(elf)) == (2, 183)
    big = tmpdir.join('big.so')
    big.write_binary(b'\x7fELF' + bytes(bytearray([1, 2, 1])) + b'\x00' * 11 + struct.pack('>H', 8) + b'\x00' * 8)
    assert elf_identity(str(big)) == (1, 8)
    text = tmpdir.join('text')
    text.write('#!/bin/sh\n' + 'x' * 40)
    assert elf_identity(str(text)) is None
    assert elf_identity(str(tmpdir.join('missing'))) is None
