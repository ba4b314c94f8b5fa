# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The installed files against their RECORDs (module_utils/record_check.py)."""
import base64
import hashlib
import os

from ansible_collections.primus.trainenv.plugins.module_utils import record_check


def install(sp, dist, files):
    """files: {relative path: bytes}; writes them and a RECORD (after them, as pip does)."""
    info = sp / ('%s.dist-info' % dist)
    info.mkdir(parents=True, exist_ok=True)
    lines = []
    for rel, data in files.items():
        path = sp / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()
        lines.append('%s,sha256=%s,%d' % (rel, digest, len(data)))
    lines.append('%s.dist-info/RECORD,,' % dist)
    (info / 'RECORD').write_text('\n'.join(lines) + '\n')


def test_intact_files_and_shared_files_with_the_same_bytes_pass(tmp_path):
    sp = tmp_path / 'site-packages'
    install(sp, 'mlflow-3.11.1', {'mlflow/__init__.py': b'A', 'mlflow/server.py': b'S'})
    install(sp, 'mlflow_skinny-3.11.1', {'mlflow/__init__.py': b'A'})
    found = record_check.check([str(sp)])
    assert found['changed'] == [] and found['missing'] == [] and found['distributions'] == 2
    assert found['hashed'] == 1   # only the file two RECORDs claim
    assert record_check.summary(found) == '2 files of 2 distributions match their RECORDs (1 hashed)'


def test_an_edited_file_is_named_with_the_distributions_that_claim_it(tmp_path):
    sp = tmp_path / 'site-packages'
    install(sp, 'torch-2.12.0', {'torch/__init__.py': b'import x\n', 'torch/version.py': b'v = 1\n'})
    record = sp / 'torch-2.12.0.dist-info' / 'RECORD'
    os.utime(str(record), (1, 1000))   # the RECORD written long before the edit below
    (sp / 'torch' / 'version.py').write_bytes(b'v = 2\n')   # same size, other bytes: found by its hash
    (sp / 'torch' / '__init__.py').unlink()
    found = record_check.check([str(sp)])
    assert found['changed'] == [{'path': 'torch/version.py', 'claimed_by': ['torch 2.12.0']}]
    assert found['missing'] == [{'path': 'torch/__init__.py', 'claimed_by': ['torch 2.12.0']}]
    assert 'match none of the RECORDs that claim them: torch/version.py (torch 2.12.0)' in record_check.summary(found)
    assert record_check.check([str(sp)], skip={'torch/version.py', 'torch/__init__.py'})['changed'] == []


def test_a_file_two_records_claim_with_other_bytes_is_named(tmp_path):
    sp = tmp_path / 'site-packages'
    install(sp, 'mlflow-3.11.1', {'mlflow/__init__.py': b'full'})
    install(sp, 'mlflow_skinny-3.11.1', {'mlflow/__init__.py': b'skin'})   # overwrites: its bytes match its RECORD
    assert record_check.check([str(sp)])['changed'] == []
    (sp / 'mlflow' / '__init__.py').write_bytes(b'else')
    found = record_check.check([str(sp)])
    assert found['changed'] == [{'path': 'mlflow/__init__.py', 'claimed_by': ['mlflow 3.11.1', 'mlflow_skinny 3.11.1']}]
