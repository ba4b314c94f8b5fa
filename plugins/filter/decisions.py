# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The per-host decisions of primus.trainenv as pure Jinja2 filters.

Each filter is documented in a YAML file of the same name next to this one
(``ansible-doc -t filter primus.trainenv.te_mode``). The Python functions are importable
and unit-tested on their own.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.primus.trainenv.plugins.module_utils.glibc import version_ge, version_tuple
from ansible_collections.primus.trainenv.plugins.module_utils.gpu_arch import (
    ArchError,
    KNOWN_ARCHS,
    normalize_arch_list,
)
from ansible_collections.primus.trainenv.plugins.plugin_utils.preflight_checks import GIB, TE_MODES

# Peak resident memory budgeted per parallel compile job, per GPU arch being compiled for.
# The heavy builds (flash-attention's and TransformerEngine's CK kernels, aiter, Primus-Turbo)
# compile each translation unit's device code once per --offload-arch, and aiter and TE build
# several extensions at once under one MAX_JOBS, so the effective peak per "job" grows with
# the arch count. The seed's fixed MAX_JOBS=128 exhausted ~2 TB hosts building for two archs,
# i.e. more than 16 GiB per job was seen; 12 GiB per arch (24 GiB per job for gfx942;gfx950)
# gives such a host about 80 jobs and a 512 GiB host about 21.
JOB_GIB_PER_ARCH = 12

# Used when the node's memory is unknown: a conservative cap, not a measurement.
JOBS_WITHOUT_MEMORY_FACT = 8


def _as_list(value):
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return list(value)


def _arch_list(value, known=True):
    """Arch list in any form (``gfx942;gfx950``, ``gfx942,gfx950``, a list) -> sorted unique list.

    Entries must be gfx + digits/hex letters (and, with known=True, an arch LLVM knows);
    a bad entry raises an error naming it.
    """
    try:
        return normalize_arch_list(value, KNOWN_ARCHS if known else None)
    except ArchError as exc:
        raise AnsibleFilterError(str(exc))


def te_mode(glibc_version, requested='auto', min_glibc='2.38', glibcxx_max=None, min_glibcxx=None):
    """Decide how TransformerEngine is installed: {'mode': wheel|source, 'reason': str, 'warning': str}.

    requested: auto (default; empty means auto), wheel or source, case-sensitive like the seed.
    auto -> wheel when glibc is known and >= min_glibc (and, when both GLIBCXX figures are
    known, libstdc++ provides min_glibcxx); an unknown glibc -> source.
    A forced wheel on a host whose glibc is too old is kept, with a warning.
    """
    requested = '' if requested is None else str(requested)
    if requested == '':
        requested = 'auto'
    if requested not in TE_MODES:
        raise AnsibleFilterError("PRIMUS_TE_MODE must be one of auto, wheel, source (got '%s')" % requested)
    glibc = str(glibc_version or '').strip()
    glibcxx = str(glibcxx_max or '').strip()
    need_cxx = str(min_glibcxx or '').strip()
    glibc_ok = bool(glibc and version_tuple(glibc) and version_ge(glibc, min_glibc))
    cxx_known = bool(glibcxx and need_cxx)
    cxx_ok = not cxx_known or version_ge(glibcxx, need_cxx)

    if requested == 'source':
        return {'mode': 'source', 'reason': 'PRIMUS_TE_MODE=source (forced)', 'warning': ''}
    if requested == 'wheel':
        warning = ''
        if not glibc:
            warning = ('glibc version unknown: the TE wheel needs glibc >= %s and may fail at import; '
                       'PRIMUS_TE_MODE=source builds it against this host' % min_glibc)
        elif not glibc_ok:
            warning = ("glibc %s < %s: the TE wheel will install but fail at import (GLIBC_%s not found); "
                       "use PRIMUS_TE_MODE=source or auto" % (glibc, min_glibc, min_glibc))
        elif not cxx_ok:
            warning = ("libstdc++ provides GLIBCXX up to %s < %s: the TE wheel will fail at import; "
                       "use PRIMUS_TE_MODE=source or auto" % (glibcxx, need_cxx))
        return {'mode': 'wheel', 'reason': 'PRIMUS_TE_MODE=wheel (forced)', 'warning': warning}

    if not glibc:
        return {'mode': 'source', 'warning': '',
                'reason': 'auto: glibc version unknown, so TE is built from source'}
    if not glibc_ok:
        return {'mode': 'source', 'warning': '',
                'reason': 'auto: glibc %s < %s, so the prebuilt TE wheels cannot load here; '
                          'TE is built from source' % (glibc, min_glibc)}
    if not cxx_ok:
        return {'mode': 'source', 'warning': '',
                'reason': 'auto: glibc %s >= %s but libstdc++ provides GLIBCXX up to %s < %s, which the '
                          'TE wheels need; TE is built from source' % (glibc, min_glibc, glibcxx, need_cxx)}
    reason = 'auto: glibc %s >= %s' % (glibc, min_glibc)
    if cxx_known:
        reason += ' and GLIBCXX %s >= %s' % (glibcxx, need_cxx)
    return {'mode': 'wheel', 'warning': '', 'reason': reason + ', so the prebuilt TE wheel is used'}


def ck_atomic_fp32(archs):
    """NVTE_CK_IS_V3_ATOMIC_FP32: '1' when gfx942 is among the archs, else '0' (as the seed's env.sh)."""
    return '1' if 'gfx942' in _arch_list(archs, known=False) else '0'


def device_packages(archs, templates):
    """Expand ``{arch}`` in each template for each arch, arch by arch in arch order.

    device_packages(['gfx942'], ['amd-torch-device-{arch}==2.12.0']) -> ['amd-torch-device-gfx942==2.12.0']
    """
    result = []
    for arch in _arch_list(archs, known=False):
        for template in _as_list(templates):
            result.append(str(template).replace('{arch}', arch))
    return result


def max_jobs(cores, mem_available_bytes, override=None, archs=None, gib_per_arch=JOB_GIB_PER_ARCH):
    """Parallel compile jobs: {'jobs': int, 'reason': str}.

    override (MAX_JOBS / primus_max_jobs), when not empty, must be a positive integer and wins.
    Otherwise jobs = min(cores, mem_available // (gib_per_arch GiB x number of archs)), at least 1.
    """
    if override is not None and str(override).strip() != '':
        text = str(override).strip()
        if not text.isdigit() or int(text) < 1:
            raise AnsibleFilterError("MAX_JOBS (primus_max_jobs) must be a positive integer (got '%s')" % text)
        return {'jobs': int(text), 'reason': 'MAX_JOBS=%s (set by you)' % text}
    try:
        cores = int(cores or 0)
    except (TypeError, ValueError):
        cores = 0
    try:
        mem = int(mem_available_bytes or 0)
    except (TypeError, ValueError):
        mem = 0
    narchs = max(1, len(_arch_list(archs, known=False)) if archs else 1)
    per_job_gib = int(gib_per_arch) * narchs
    if cores < 1:
        cores = 1
    if mem <= 0:
        jobs = max(1, min(cores, JOBS_WITHOUT_MEMORY_FACT))
        return {'jobs': jobs, 'reason': 'min(%d CPUs, %d) with available memory unknown' % (cores, JOBS_WITHOUT_MEMORY_FACT)}
    by_memory = mem // (per_job_gib * GIB)
    jobs = max(1, min(cores, by_memory))
    reason = ('min(%d CPUs, %.1f GiB available / %d GiB per job [%d GiB x %d arch%s]) = %d' % (
        cores, mem / float(GIB), per_job_gib, int(gib_per_arch), narchs, '' if narchs == 1 else 's', jobs))
    if by_memory < 1:
        reason += ' (less memory than one job is budgeted; builds may swap or be killed)'
    return {'jobs': jobs, 'reason': reason}


def decision_constants(decision):
    """The constants of a decision's rule, for the generated files that apply the same rule where they are used.

    max_jobs -> {'gib': bytes per GiB, 'gib_per_arch': JOB_GIB_PER_ARCH,
    'jobs_without_memory_fact': JOBS_WITHOUT_MEMORY_FACT}: env.sh and the modulefile compute MAX_JOBS
    for the node that sources or loads them.
    """
    constants = {
        'max_jobs': {'gib': GIB, 'gib_per_arch': JOB_GIB_PER_ARCH,
                     'jobs_without_memory_fact': JOBS_WITHOUT_MEMORY_FACT},
    }
    if decision not in constants:
        raise AnsibleFilterError('no constants for the decision %r (known: %s)'
                                 % (decision, ', '.join(sorted(constants))))
    return dict(constants[decision])


class FilterModule(object):
    """primus.trainenv decision filters."""

    def filters(self):
        return {
            'te_mode': te_mode,
            'ck_atomic_fp32': ck_atomic_fp32,
            'device_packages': device_packages,
            'max_jobs': max_jobs,
            'decision_constants': decision_constants,
        }
