# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The small helpers every module shares (module_utils.common): distribution names, file hashes, URL credentials."""
import hashlib

import pytest
from packaging.utils import canonicalize_name

from ansible_collections.primus.trainenv.plugins.module_utils.common import (
    Redactor, file_sha256, normalize_name, redact_url, secrets_in, wheel_name)

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


@pytest.mark.parametrize("text, redacted", [
    ("https://user:s3cret@host/simple", "https://user:****@host/simple"),
    # A user without a password is where a token goes: pip replaces the user.
    ("https://TOKEN0123456789@host/simple", "https://****@host/simple"),
    # A raw '@' in the user name: the netloc's last '@' ends the user info, as pip splits it.
    ("https://me@corp.com:t0ken@host:8443/simple", "https://me@corp.com:****@host:8443/simple"),
    ("https://build%40corp:t0k%3Aen@mirror/simple", "https://build%40corp:****@mirror/simple"),
    ("already https://user:****@host and https://****@host", "already https://user:****@host and https://****@host"),
    ("git+ssh://git@github.com/org/repo@v1.0", "git+ssh://****@github.com/org/repo@v1.0"),
    ("https://host/path@rev and https://pypi.org/simple", "https://host/path@rev and https://pypi.org/simple"),
    ("--index-url=https://a:b@one/s,https://c:d@two/s", "--index-url=https://a:****@one/s,https://c:****@two/s"),
])
def test_redact_url_as_pip_does(text, redacted):
    assert redact_url(text) == redacted
    assert redact_url(redacted) == redacted


def test_the_secrets_of_urls_are_redacted_wherever_they_appear():
    redact = Redactor()
    redact.add_from(["https://me@corp.com:t0ken@host/simple", {"x": ["https://TOKEN0123456789@host"]},
                     "ssh://git@github.com/x"])
    assert redact.secrets == {"t0ken", "TOKEN0123456789"}
    assert secrets_in("https://git@github.com/x") == set()
    assert redact("echo t0ken TOKEN0123456789") == "echo **** ****"
