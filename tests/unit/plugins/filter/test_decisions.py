# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The decision filters (plugins/filter/decisions.py)."""

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.primus.trainenv.plugins.filter import decisions
from ansible_collections.primus.trainenv.plugins.filter.decisions import (
    FilterModule,
    _arch_list,
    ck_atomic_fp32,
    decision_constants,
    device_packages,
    max_jobs,
    te_mode,
)

GIB = 1024 ** 3
TEMPLATES = ['amd-torch-device-{arch}==2.12.0+rocm7.15.0a20260720', 'rocm-sdk-device-{arch}==7.15.0a20260720',
             'amd-torchvision-device-{arch}==0.27.0+rocm7.15.0a20260720']


def test_filter_names():
    assert sorted(FilterModule().filters()) == sorted(['te_mode', 'ck_atomic_fp32', 'device_packages', 'max_jobs', 'decision_constants'])


def test_arch_list_names_a_bad_entry():
    assert _arch_list('gfx950,gfx942') == ['gfx942', 'gfx950']
    with pytest.raises(AnsibleFilterError) as err:
        _arch_list('gfx942;gfx42z')
    assert "'gfx42z'" in str(err.value)
    assert _arch_list('gfx999', known=False) == ['gfx999']


# --- TE mode ----------------------------------------------------------------------------------

@pytest.mark.parametrize('glibc, requested, mode', [
    ('2.36', 'auto', 'source'),
    ('2.35', 'auto', 'source'),
    ('2.38', 'auto', 'wheel'),
    ('2.39', 'auto', 'wheel'),
    ('2.100', 'auto', 'wheel'),
    ('', 'auto', 'source'),
    (None, 'auto', 'source'),
    ('garbage', 'auto', 'source'),
    ('2.36', '', 'source'),
    ('2.39', None, 'wheel'),
    ('2.36', 'wheel', 'wheel'),
    ('2.39', 'source', 'source'),
    ('', 'wheel', 'wheel'),
])
def test_te_mode(glibc, requested, mode):
    assert te_mode(glibc, requested, '2.38')['mode'] == mode


def test_te_mode_reasons():
    assert te_mode('2.36', 'auto', '2.38')['reason'].startswith('auto: glibc 2.36 < 2.38')
    assert 'unknown' in te_mode('', 'auto', '2.38')['reason']
    assert te_mode('2.39', 'auto', '2.38')['reason'].startswith('auto: glibc 2.39 >= 2.38')
    assert te_mode('2.39', 'source', '2.38') == {'mode': 'source', 'reason': 'PRIMUS_TE_MODE=source (forced)', 'warning': ''}


def test_forced_wheel_on_an_old_glibc_warns():
    result = te_mode('2.36', 'wheel', '2.38')
    assert result['reason'] == 'PRIMUS_TE_MODE=wheel (forced)'
    assert 'GLIBC_2.38 not found' in result['warning']
    assert te_mode('2.39', 'wheel', '2.38')['warning'] == ''


def test_glibcxx_floor():
    result = te_mode('2.39', 'auto', '2.38', '3.4.30', '3.4.32')
    assert result['mode'] == 'source'
    assert 'GLIBCXX up to 3.4.30 < 3.4.32' in result['reason']
    assert te_mode('2.39', 'auto', '2.38', '3.4.33', '3.4.32')['mode'] == 'wheel'
    # libstdc++ not found: the glibc rule decides alone
    assert te_mode('2.39', 'auto', '2.38', '', '3.4.32')['mode'] == 'wheel'
    assert 'GLIBCXX' in te_mode('2.39', 'wheel', '2.38', '3.4.30', '3.4.32')['warning']


@pytest.mark.parametrize('bad', ['fast', 'Wheel', 'AUTO', 'sources', ' wheel'])
def test_te_mode_rejects_other_values_with_the_seed_text(bad):
    with pytest.raises(AnsibleFilterError) as err:
        te_mode('2.39', bad, '2.38')
    assert str(err.value) == "PRIMUS_TE_MODE must be one of auto, wheel, source (got '%s')" % bad


# --- NVTE_CK_IS_V3_ATOMIC_FP32, device wheels -------------------------------------------------

@pytest.mark.parametrize('archs, value', [
    (['gfx942'], '1'), (['gfx942', 'gfx950'], '1'), ('gfx950;gfx942', '1'), (['gfx950'], '0'),
    ([], '0'), ('', '0'), (['gfx90a'], '0'), (['gfx1100'], '0'),
])
def test_ck_atomic_fp32(archs, value):
    assert ck_atomic_fp32(archs) == value


def test_device_packages():
    assert device_packages(['gfx950', 'gfx942'], TEMPLATES) == [
        'amd-torch-device-gfx942==2.12.0+rocm7.15.0a20260720',
        'rocm-sdk-device-gfx942==7.15.0a20260720',
        'amd-torchvision-device-gfx942==0.27.0+rocm7.15.0a20260720',
        'amd-torch-device-gfx950==2.12.0+rocm7.15.0a20260720',
        'rocm-sdk-device-gfx950==7.15.0a20260720',
        'amd-torchvision-device-gfx950==0.27.0+rocm7.15.0a20260720',
    ]
    assert device_packages('gfx950', 'x-{arch}') == ['x-gfx950']
    assert device_packages([], TEMPLATES) == []


# --- MAX_JOBS ---------------------------------------------------------------------------------

def test_max_jobs_override_wins():
    assert max_jobs(192, 2000 * GIB, '16', ['gfx942'])['jobs'] == 16
    assert max_jobs(2, 1 * GIB, 64)['jobs'] == 64
    for bad in ['0', '-4', 'many', '1.5']:
        with pytest.raises(AnsibleFilterError) as err:
            max_jobs(8, 64 * GIB, bad)
        assert "got '%s'" % bad in str(err.value)


def test_max_jobs_two_terabyte_host_stays_well_below_the_seed_128():
    # 192 cores, ~1.9 TiB available, two archs: 24 GiB per job.
    result = max_jobs(192, 1945 * GIB, '', ['gfx942', 'gfx950'])
    assert result['jobs'] == 81
    assert '24 GiB per job' in result['reason']


def test_max_jobs_scales_with_arch_count_and_caps_at_cores():
    assert max_jobs(192, 1945 * GIB, None, ['gfx942'])['jobs'] == 162
    assert max_jobs(64, 1945 * GIB, None, ['gfx942'])['jobs'] == 64
    assert max_jobs(192, 512 * GIB, None, 'gfx942;gfx950')['jobs'] == 21


def test_max_jobs_small_hosts_get_one_job_and_a_note():
    result = max_jobs(2, 23 * GIB, '', ['gfx942', 'gfx950'])
    assert result['jobs'] == 1
    assert 'builds may swap' in result['reason']


def test_max_jobs_without_memory_fact():
    result = max_jobs(64, 0, None, ['gfx942'])
    assert result['jobs'] == decisions.JOBS_WITHOUT_MEMORY_FACT
    assert 'unknown' in result['reason']
    assert max_jobs(None, None)['jobs'] == 1


def test_decision_constants_are_the_max_jobs_rule_s():
    constants = decision_constants('max_jobs')
    assert constants == {'gib': GIB, 'gib_per_arch': decisions.JOB_GIB_PER_ARCH,
                         'jobs_without_memory_fact': decisions.JOBS_WITHOUT_MEMORY_FACT}
    # With them, the generated files apply max_jobs' rule: the budget per job is per arch.
    per_job = constants['gib_per_arch'] * 2 * constants['gib']
    assert max_jobs(64, 3 * per_job, None, ['gfx942', 'gfx950'])['jobs'] == 3
    assert max_jobs(64, 3 * per_job - 1, None, ['gfx942', 'gfx950'])['jobs'] == 2
    with pytest.raises(AnsibleFilterError, match="no constants for the decision 'te_mode'"):
        decision_constants('te_mode')
