# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The small helpers every module shares (module_utils.common): distribution names and file hashes."""
import hashlib

import pytest
from packaging.utils import canonicalize_name

from ansible_collections.primus.trainenv.plugins.module_utils.common import file_sha256, normalize_name, wheel_name

NAMES = ["uv", "Foo.Bar__baz", "NVIDIA_cudnn-cu12", "zope.interface", "a-_.-b", "Torch", "ruamel.yaml.clib",
         "--x--", "A..B__C--D"]


@pytest.mark.parametrize("name", NAMES)
def test_normalize_name_is_pep_503(name):
    assert normalize_name(name) == canonicalize_name(name)


def test_normalize_name_keeps_glob_characters():
    # decide.canonical_pattern normalises forbid/absent globs with it.
    assert normalize_name("NVIDIA_*") == "nvidia-*"
    assert normalize_name("torch[cuda]") == "torch[cuda]"


def test_wheel_name_is_the_file_and_dist_info_form():
    assert wheel_name("Foo.Bar__baz") == "Foo_Bar_baz"
    assert wheel_name("uv") == "uv"
    assert wheel_name("zope.interface") == "zope_interface"


def test_file_sha256_reads_in_blocks(tmp_path):
    data = b"0123456789abcdef" * ((1 << 20) // 8 + 3)   # a little more than 2 MiB: several blocks
    path = tmp_path / "blob"
    path.write_bytes(data)
    assert file_sha256(str(path)) == hashlib.sha256(data).hexdigest()
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    assert file_sha256(str(empty)) == hashlib.sha256(b"").hexdigest()
