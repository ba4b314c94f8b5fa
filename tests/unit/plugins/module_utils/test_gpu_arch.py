# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""rocminfo and KFD parsing, arch decoding and validation (module_utils.gpu_arch)."""

import os
import re
import subprocess

import pytest

from ansible_collections.primus.trainenv.plugins.module_utils import gpu_arch
from ansible_collections.primus.trainenv.plugins.module_utils.gpu_arch import (
    ArchError,
    arch_forms,
    can_open_rw,
    decode_gfx_target_version,
    gpus_from_kfd,
    gpus_from_rocminfo,
    normalize_arch_list,
    parse_kfd_properties,
    parse_rocminfo,
    read_kfd_nodes,
    sort_archs,
    split_arch_list,
)

HOSTS = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'world', 'hosts')

# host -> (archs, GPU count, marketing names from rocminfo)
EXPECTED = {
    'mi300x': (['gfx942'], 8, ['AMD Instinct MI300X']),
    'mi355x': (['gfx950'], 8, ['AMD Instinct MI355X']),
    'mixed': (['gfx942', 'gfx950'], 4, ['AMD Instinct MI300X', 'AMD Instinct MI355X']),
    'radeon-gfx1100': (['gfx1100'], 1, ['AMD Radeon RX 7900 XTX']),
    'radeon-gfx1100-igpu': (['gfx1036', 'gfx1100'], 2, ['AMD Radeon Graphics', 'AMD Radeon RX 7900 XTX']),
    'cpu-only': ([], 0, []),
}
CPU_AGENTS = {'mi300x': 2, 'mi355x': 2, 'mixed': 2, 'radeon-gfx1100': 1, 'radeon-gfx1100-igpu': 1, 'cpu-only': 1}


def rocminfo_text(host):
    with open(os.path.join(HOSTS, host, 'rocminfo.txt')) as handle:
        return handle.read()


def kfd_path(host):
    return os.path.join(HOSTS, host, 'sys', 'class', 'kfd', 'kfd', 'topology', 'nodes')


# --- gfx_target_version ---------------------------------------------------------------------

@pytest.mark.parametrize('value, arch', [
    (90402, 'gfx942'), ('90500', 'gfx950'), (90010, 'gfx90a'), (90008, 'gfx908'), (90006, 'gfx906'),
    (110000, 'gfx1100'), (110501, 'gfx1151'), (100306, 'gfx1036'), (120001, 'gfx1201'), (90012, 'gfx90c'),
    ('90402\n', 'gfx942'), (' 90402 ', 'gfx942'), ('090402', 'gfx942'), (999991515, 'gfx99999ff'),
])
def test_decode_gfx_target_version(value, arch):
    assert decode_gfx_target_version(value) == arch


def test_decode_zero_is_a_cpu_node():
    assert decode_gfx_target_version(0) is None
    assert decode_gfx_target_version('0') is None


@pytest.mark.parametrize('value', ['', 'abc', '-1', '9.4.2', 'gfx942', '91600', '90016', '42', '1234567890',
                                   '90402 1'])
def test_decode_rejects_values_that_are_not_targets(value):
    with pytest.raises(ArchError) as err:
        decode_gfx_target_version(value)
    assert repr(value.strip())[1:-1] in str(err.value) or value.strip() in str(err.value)


# --- arch lists -----------------------------------------------------------------------------

@pytest.mark.parametrize('value, archs', [
    ('gfx942;gfx950', ['gfx942', 'gfx950']),
    ('gfx950,gfx942', ['gfx942', 'gfx950']),
    (' gfx942 ; gfx942; ', ['gfx942']),
    ('gfx942 gfx950', ['gfx942', 'gfx950']),
    (['gfx950', 'gfx942;gfx90a'], ['gfx90a', 'gfx942', 'gfx950']),
    ('GFX942', ['gfx942']),
    ('gfx1100;gfx942', ['gfx942', 'gfx1100']),
    ('', []),
    (None, []),
])
def test_normalize_arch_list(value, archs):
    assert normalize_arch_list(value) == archs


@pytest.mark.parametrize('value, bad', [
    ('gfx942;gfx94x', 'gfx94x'),
    ('gfx942:sramecc+:xnack-', 'gfx942:sramecc+:xnack-'),
    ('gfx9-4-generic', 'gfx9-4-generic'),
    ('sm_90', 'sm_90'),
    ('942', '942'),
    ('gfx942,gfx999', 'gfx999'),
    ('gfx', 'gfx'),
])
def test_normalize_arch_list_names_the_bad_entry(value, bad):
    with pytest.raises(ArchError) as err:
        normalize_arch_list(value)
    assert "'%s'" % bad in str(err.value)


def test_unknown_arch_passes_when_no_known_list_is_given():
    assert normalize_arch_list('gfx999', known=None) == ['gfx999']


def test_split_and_forms():
    assert split_arch_list('gfx942;;gfx950,') == ['gfx942', 'gfx950']
    assert arch_forms(['gfx950', 'gfx942', 'gfx950']) == ('gfx942;gfx950', 'gfx942,gfx950')
    assert arch_forms([]) == ('', '')
    assert sort_archs(['gfx1100', 'gfx950', 'gfx90a', 'gfx942']) == ['gfx90a', 'gfx942', 'gfx950', 'gfx1100']


# --- rocminfo: the recorded hosts -----------------------------------------------------------

@pytest.mark.parametrize('host', sorted(EXPECTED))
def test_rocminfo_of_recorded_hosts(host):
    archs, count, names = gpus_from_rocminfo(rocminfo_text(host))
    assert (archs, count, names) == EXPECTED[host]


@pytest.mark.parametrize('host', sorted(EXPECTED))
def test_rocminfo_agents_are_typed(host):
    agents = parse_rocminfo(rocminfo_text(host))
    cpus = [a for a in agents if a['device_type'] == 'CPU']
    gpus = [a for a in agents if a['is_gpu']]
    assert len(cpus) == CPU_AGENTS[host]
    assert len(gpus) == EXPECTED[host][1]
    assert all(a['arch'] is None and not a['is_gpu'] for a in cpus)
    assert len(agents) == CPU_AGENTS[host] + EXPECTED[host][1]   # nothing else is taken for an agent
    assert all(a['name'] and a['uuid'] and a['node'] for a in agents)


def test_rocminfo_isa_names_are_kept_apart_from_the_agent_name():
    agent = [a for a in parse_rocminfo(rocminfo_text('mi355x')) if a['is_gpu']][0]
    assert agent['name'] == 'gfx950'
    assert agent['isas'] == ['amdgcn-amd-amdhsa--gfx950:sramecc+:xnack-',
                             'amdgcn-amd-amdhsa--gfx9-4-generic:sramecc+:xnack-']
    assert agent['marketing_name'] == 'AMD Instinct MI355X'
    assert agent['node'] == '2'


# --- rocminfo: every form the parser must tolerate -------------------------------------------

def tabbed(text):
    """Indentation and label padding with tabs instead of spaces, as some captures have them."""
    out = []
    for line in text.split('\n'):
        indent = len(line) - len(line.lstrip(' '))
        body = re.sub(r'^([^:]*:) +', '\\1\t', line.lstrip(' '))
        out.append('\t' * (indent // 2) + body)
    return '\n'.join(out)


VARIANTS = {
    'tabs': tabbed,
    'crlf': lambda t: t.replace('\n', '\r\n'),
    'no-trailing-blanks': lambda t: '\n'.join(line.rstrip() for line in t.split('\n')),
    'extra-trailing-blanks-and-tabs': lambda t: '\n'.join(line + ' \t ' for line in t.split('\n')),
    'garbage-before': lambda t: ('hsa api call failure at: /src/rocminfo.cc:1306\nWarning: something odd\n'
                                 '*******\n' + t),
    'no-banners': lambda t: '\n'.join(line for line in t.split('\n')
                                      if not re.match(r'^\s*(\*{3,}|Agent \d+)\s*$', line)),
    'lone-cr': lambda t: t.replace('\n', '\r'),
    'duplicated-output': lambda t: t + t,
    'no-rock-header': lambda t: t.split('\n', 1)[1],
}


@pytest.mark.parametrize('variant', sorted(VARIANTS))
@pytest.mark.parametrize('host', ['mi300x', 'mixed', 'radeon-gfx1100-igpu', 'cpu-only'])
def test_rocminfo_variants(host, variant):
    archs, count, names = gpus_from_rocminfo(VARIANTS[variant](rocminfo_text(host)))
    assert (archs, count, names) == EXPECTED[host]


AGENT = """*******
Agent {n}
*******
  Name:                    {name}
  Uuid:                    {uuid}
  Marketing Name:          {marketing}
  Vendor Name:             AMD
  Node:                    {n}
{device_type}  Cache Info:
    L1:                      32(0x20) KB
  Pool Info:
    Pool 1
      Segment:                 GLOBAL; FLAGS: COARSE GRAINED
  ISA Info:
    ISA 1
      Name:                    {isa}
      Machine Models:          HSA_MACHINE_MODEL_LARGE
"""


def agent(n, name, isa, marketing='AMD Instinct MI300X', device_type='GPU', uuid='GPU-XX'):
    return AGENT.format(n=n, name=name, isa=isa, marketing=marketing, uuid=uuid,
                        device_type='  Device Type:             %s\n' % device_type if device_type else '')


def test_colons_inside_values():
    text = agent(1, 'gfx942', 'amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-',
                 marketing='AMD Instinct MI300X: OAM rev: B1')
    assert gpus_from_rocminfo(text) == (['gfx942'], 1, ['AMD Instinct MI300X: OAM rev: B1'])


def test_agent_name_wins_over_isa_names():
    text = agent(1, 'gfx942', 'amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-')
    assert gpus_from_rocminfo(text)[0] == ['gfx942']


def test_agent_name_with_target_features():
    assert gpus_from_rocminfo(agent(1, 'gfx90a:sramecc+:xnack-', 'amdgcn-amd-amdhsa--gfx90a'))[0] == ['gfx90a']


def test_isa_is_used_when_the_agent_name_is_not_an_arch_and_generic_isas_are_not_archs():
    text = agent(1, 'AMD Instinct MI300X', 'amdgcn-amd-amdhsa--gfx9-4-generic:sramecc+:xnack-')
    text = text.replace('      Machine Models:', '      Name:                    '
                        'amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-\n      Machine Models:')
    assert gpus_from_rocminfo(text)[0] == ['gfx942']
    only_generic = agent(1, 'AMD Instinct MI300X', 'amdgcn-amd-amdhsa--gfx9-4-generic:sramecc+:xnack-')
    assert gpus_from_rocminfo(only_generic) == ([], 0, [])


def test_cpu_agents_are_not_gpus_even_with_radeon_in_their_name():
    text = agent(1, 'AMD Ryzen 7 PRO 5850U with Radeon Graphics', '', marketing='AMD Ryzen 7 PRO', device_type='CPU')
    assert gpus_from_rocminfo(text) == ([], 0, [])


def test_other_device_types_are_not_gpus():
    text = agent(1, 'aie2', '', marketing='AMD NPU', device_type='DSP')
    assert gpus_from_rocminfo(text) == ([], 0, [])


def test_old_rocminfo_without_device_type():
    text = agent(1, 'AMD EPYC 7742 64-Core Processor', '', device_type='') + agent(2, 'gfx908', '', device_type='')
    assert gpus_from_rocminfo(text) == (['gfx908'], 1, ['AMD Instinct MI300X'])


def test_same_arch_on_distinct_agents_counts_every_gpu():
    text = ''.join(agent(n, 'gfx942', '', uuid='GPU-%d' % n) for n in range(1, 5))
    assert gpus_from_rocminfo(text)[:2] == (['gfx942'], 4)


def test_a_repeated_agent_block_counts_once():
    one = agent(3, 'gfx950', '', marketing='AMD Instinct MI355X', uuid='GPU-1')
    assert gpus_from_rocminfo(one + one + one)[:2] == (['gfx950'], 1)


@pytest.mark.parametrize('text', [
    '', 'ROCk module is NOT loaded, possibly no GPU devices\n',
    'hsa api call failure at: /long_pathname_so_that_rpms_can_package_the_debug_info/src/rocminfo.cc:1306\n'
    'Call returned HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary resources.\n',
    'Name gfx942\n',                      # no colon: not a field
    '  Names:                   gfx942\n',  # another key
])
def test_no_agents(text):
    assert gpus_from_rocminfo(text) == ([], 0, [])


# --- rocminfo cut or pasted: no banners to rely on -------------------------------------------

def lines_of(host):
    return rocminfo_text(host).split('\n')


def test_output_that_starts_in_the_middle_of_an_agent():
    lines = lines_of('mixed')
    # Cut just after the first MI355X's Name line: its Uuid, Device Type and ISA lines remain.
    first_gfx950 = next(i for i, line in enumerate(lines) if line.strip().endswith('gfx950') and 'Name:' in line)
    agents = parse_rocminfo('\n'.join(lines[first_gfx950 + 1:]))
    assert agents[0]['name'] == '' and agents[0]['device_type'] == 'GPU'
    assert agents[0]['arch'] == 'gfx950'   # from its ISA line
    assert gpus_from_rocminfo('\n'.join(lines[first_gfx950 + 1:]))[:2] == (['gfx950'], 2)


def test_output_that_starts_inside_the_isa_list_and_ends_after_a_name():
    text = ('      Name:                    amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-\n'
            '      Machine Models:          HSA_MACHINE_MODEL_LARGE\n'
            '  Name:                    gfx950\n')
    agents = parse_rocminfo(text)
    assert [(a['name'], a['arch'], a['is_gpu']) for a in agents] == [('', 'gfx942', True), ('gfx950', 'gfx950', True)]


def test_a_fragment_of_a_cpu_agent_is_not_a_gpu():
    text = '  Uuid:                    CPU-XX\n  Device Type:             CPU\n  Pool Info:\n'
    assert parse_rocminfo(text)[0]['is_gpu'] is False
    assert gpus_from_rocminfo(text) == ([], 0, [])


def test_only_the_first_device_type_of_an_agent_counts():
    text = agent(1, 'gfx942', '') .replace('  Cache Info:', '  Device Type:             CPU\n  Cache Info:')
    assert gpus_from_rocminfo(text)[0] == ['gfx942']


def test_upper_case_names_and_isas():
    text = agent(1, 'GFX942', 'AMDGCN-AMD-AMDHSA--GFX942:SRAMECC+:XNACK-')
    assert gpus_from_rocminfo(text)[0] == ['gfx942']


# --- KFD ------------------------------------------------------------------------------------

@pytest.mark.parametrize('host', sorted(EXPECTED))
def test_kfd_of_recorded_hosts(host):
    archs, count, names, notes = gpus_from_kfd(kfd_path(host))
    assert (archs, count) == EXPECTED[host][:2]
    assert names == []   # IP-discovery parts name themselves "ip discovery": no product
    assert notes == []


def test_kfd_properties_parse_as_in_sysfs():
    with open(os.path.join(kfd_path('mi300x'), '2', 'properties')) as handle:
        props = parse_kfd_properties(handle.read())
    assert props['gfx_target_version'] == '90402'
    assert props['simd_count'] == '1216'
    assert props['cpu_cores_count'] == '0'
    with open(os.path.join(kfd_path('mi300x'), '0', 'properties')) as handle:
        assert parse_kfd_properties(handle.read())['gfx_target_version'] == '0'


def write_node(root, node, properties=None, name=None):
    path = root.join(str(node))
    path.ensure(dir=True)
    if properties is not None:
        path.join('properties').write(properties)
    if name is not None:
        path.join('name').write(name)
    return path


def test_kfd_skips_unreadable_and_odd_nodes(tmpdir):
    write_node(tmpdir, 0, 'cpu_cores_count 64\nsimd_count 0\ngfx_target_version 0\n', '\n')
    write_node(tmpdir, 1, 'cpu_cores_count 0\nsimd_count 1216\ngfx_target_version 90402\n', 'ip discovery\n')
    write_node(tmpdir, 2, 'cpu_cores_count 0\nsimd_count 440\ngfx_target_version 90010\n', 'aldebaran\n')
    write_node(tmpdir, 3, 'cpu_cores_count 0\nsimd_count 0\n')                          # no version line
    write_node(tmpdir, 4, 'gfx_target_version banana\n')                                 # not a number
    write_node(tmpdir, 5).join('properties').ensure(dir=True)                             # unreadable
    write_node(tmpdir, 6)                                                                 # no properties
    os.symlink('/nonexistent/properties', str(write_node(tmpdir, 7).join('properties')))  # dangling
    write_node(tmpdir, 10, 'gfx_target_version 110501\r\n')
    tmpdir.join('README').write('not a node')
    nodes, notes = read_kfd_nodes(str(tmpdir))
    assert [n['node'] for n in nodes] == ['0', '1', '2', '10']
    assert [n['arch'] for n in nodes] == [None, 'gfx942', 'gfx90a', 'gfx1151']
    assert len(notes) == 5
    assert all(re.match(r'^KFD node [34567] skipped: ', note) for note in notes)
    archs, count, names, notes = gpus_from_kfd(str(tmpdir))
    assert archs == ['gfx90a', 'gfx942', 'gfx1151']
    assert count == 3
    assert names == ['aldebaran']


def test_kfd_missing_tree(tmpdir):
    archs, count, names, notes = gpus_from_kfd(str(tmpdir.join('nope')))
    assert (archs, count, names) == ([], 0, [])
    assert 'not readable' in notes[0]


# --- /dev/kfd access ------------------------------------------------------------------------

def test_can_open_rw(tmpdir):
    device = tmpdir.join('kfd')
    device.write('')
    assert can_open_rw(str(device)) == (True, '')
    ok, reason = can_open_rw(str(tmpdir.join('missing')))
    assert not ok and 'No such file' in reason
    ok, reason = can_open_rw(str(tmpdir))
    assert not ok and reason


def test_known_archs_cover_the_release_and_the_fixtures():
    for arch in ['gfx942', 'gfx950', 'gfx90a', 'gfx1100', 'gfx1151', 'gfx1036']:
        assert arch in gpu_arch.KNOWN_ARCHS


# --- the hosts recorded for odd outputs ---------------------------------------------------------

@pytest.mark.parametrize('host, rocminfo, kfd', [
    ('mi250x', (['gfx90a'], 4, ['AMD Instinct MI250X']), (['gfx90a'], 4, ['aldebaran'])),
    ('strix-halo', (['gfx1151'], 1, ['AMD Radeon 8060S Graphics']), (['gfx1151'], 1, [])),
    # No banners, CRLF, tabs; the first GPU's Name and the last GPU's Device Type were cut off.
    ('mixed-pasted', (['gfx942', 'gfx950'], 4, ['AMD Instinct MI300X', 'AMD Instinct MI355X']),
     (['gfx942', 'gfx950'], 4, [])),
    ('mi355x-no-access', ([], 0, []), (['gfx950'], 8, [])),
])
def test_hosts_with_odd_outputs(host, rocminfo, kfd):
    assert gpus_from_rocminfo(host_output(host)) == rocminfo
    assert gpus_from_kfd(kfd_path(host))[:3] == kfd


def host_output(host):
    """What the host's rocminfo prints (its bin/rocminfo), undecoded line ends and all."""
    proc = subprocess.run([os.path.join(HOSTS, host, 'bin', 'rocminfo')], capture_output=True, check=False)
    return proc.stdout.decode()


def test_the_pasted_host_really_lost_its_banners():
    text = host_output('mixed-pasted')
    assert text.count('\r\n') == text.count('\n') > 300 and '\t' in text
    assert not re.search(r'^\s*(\*{3,}|Agent \d+)\s*$', text, re.M)
    agents = parse_rocminfo(text)
    assert agents[0]['name'] == '' and agents[0]['arch'] == 'gfx942'
    assert agents[-1]['name'] == 'gfx950' and agents[-1]['device_type'] == ''
