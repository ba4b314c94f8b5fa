# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The three GPU arch detections agree: gpu_arch_facts (the playbook's decision, through node_info), env.sh's bash
block and the modulefile's Tcl block (what a job sees when it sources or loads the environment).

Each is run as it really runs: the module as a module process, env.sh's detection block with
bash (and this machine's awk, sort, cut, paste), the modulefile's block loaded by the real
`modulecmd`. The blocks are taken from the templates between their `>>> GPU arch detection`
and `<<< GPU arch detection` lines; they hold no Jinja, so this is the text that gets written.
Every case also has its expected result, so three implementations agreeing on a wrong answer
fail too. Cases: every recorded host of tests/world/hosts (as a node sees it, rocminfo only and
KFD only) and the samples below (cut or pasted rocminfo, odd KFD trees).
"""

import os
import re
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), 'plugins', 'modules'))
from module_runner import ROOT, run_module  # noqa: E402  (module_runner lives beside the module tests)

HOSTS = os.path.join(ROOT, 'tests', 'world', 'hosts')
TEMPLATES = os.path.join(ROOT, 'roles', 'primus', 'templates')
BEGIN, END = '>>> GPU arch detection', '<<< GPU arch detection'

# host -> (archs rocminfo finds, archs the KFD topology has). A node uses rocminfo, else KFD.
RECORDED = {
    'cpu-only': ('', ''),
    'mi250x': ('gfx90a', 'gfx90a'),
    'mi300x': ('gfx942', 'gfx942'),
    'mi355x': ('gfx950', 'gfx950'),
    'mi355x-no-access': ('', 'gfx950'),        # rocminfo fails (no render group); sysfs is readable
    'mixed': ('gfx942;gfx950', 'gfx942;gfx950'),
    'mixed-pasted': ('gfx942;gfx950', 'gfx942;gfx950'),   # CRLF, tabs, no banners, cut at both ends
    'radeon-gfx1100': ('gfx1100', 'gfx1100'),
    'radeon-gfx1100-igpu': ('gfx1036;gfx1100', 'gfx1036;gfx1100'),
    'strix-halo': ('gfx1151', 'gfx1151'),
}

GPU = """  Name:                    {name}
  Uuid:                    GPU-{uuid}
  Marketing Name:          AMD Instinct MI300X
  Node:                    {uuid}
{device}  Pool Info:
    Pool 1
      Segment:                 GLOBAL; FLAGS: COARSE GRAINED
  ISA Info:
    ISA 1
      Name:                    {isa}
      Machine Models:          HSA_MACHINE_MODEL_LARGE
"""


def gpu(name, isa='', device='GPU', uuid=1):
    return GPU.format(name=name, isa=isa, uuid=uuid,
                      device='  Device Type:             %s\n' % device if device else '')


def recorded(host):
    with open(os.path.join(HOSTS, host, 'rocminfo.txt'), newline='') as handle:
        return handle.read()


# name -> (rocminfo output, expected archs)
ROCMINFO_SAMPLES = {
    'agent-name-with-target-features': (gpu('gfx90a:sramecc+:xnack-', 'amdgcn-amd-amdhsa--gfx90a'), 'gfx90a'),
    'upper-case': (gpu('GFX942', 'AMDGCN-AMD-AMDHSA--GFX942:SRAMECC+:XNACK-'), 'gfx942'),
    'isa-when-the-name-is-not-an-arch': (
        gpu('AMD Instinct MI300X', 'amdgcn-amd-amdhsa--gfx9-4-generic:sramecc+:xnack-').replace(
            '      Machine Models:', '      Name:                    amdgcn-amd-amdhsa--gfx942:xnack-\n'
            '      Machine Models:'), 'gfx942'),
    'only-a-generic-isa': (gpu('AMD Instinct MI300X', 'amdgcn-amd-amdhsa--gfx9-4-generic:sramecc+:xnack-'), ''),
    'old-rocminfo-without-device-type': (
        gpu('AMD EPYC 7742 64-Core Processor', device='') + gpu('gfx908', device='', uuid=2), 'gfx908'),
    'dsp-agent': (gpu('aie2', device='DSP'), ''),
    'cpu-named-radeon': (gpu('AMD Ryzen 7 PRO 5850U with Radeon Graphics', device='CPU'), ''),
    'first-device-type-counts': (gpu('gfx942').replace('  Pool Info:', '  Device Type:             CPU\n  Pool Info:'),
                                 'gfx942'),
    'starts-inside-an-isa-list': ('      Name:                    amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-\n'
                                  '      Machine Models:          HSA_MACHINE_MODEL_LARGE\n'
                                  + gpu('gfx950', uuid=2), 'gfx942;gfx950'),
    'starts-mid-agent-cpu-fragment': ('  Node:                    0\n  Device Type:             CPU\n'
                                      '  Pool Info:\n' + gpu('gfx950'), 'gfx950'),
    'ends-after-a-name': (gpu('gfx942') + '  Name:                    gfx1100\n', 'gfx942;gfx1100'),
    'sorted-by-length-then-name': (gpu('gfx1100') + gpu('gfx942', uuid=2) + gpu('gfx90a', uuid=3), 'gfx90a;gfx942;gfx1100'),
    'lone-cr-line-ends': (recorded('mixed').replace('\n', '\r'), 'gfx942;gfx950'),
    'concatenated-twice': (recorded('mi355x') * 2, 'gfx950'),
    'an-empty-name': ('  Name:\n  Device Type:             GPU\n', ''),
    'no-colon': ('  Name                     gfx942\n', ''),
    'not-loaded': ('ROCk module is NOT loaded, possibly no GPU devices\n', ''),
}

# name -> ({node: properties text, or None for a node directory without a properties file,
#           or a dict for a properties *directory*}, expected archs)
KFD_SAMPLES = {
    'decoding': ({'0': 'gfx_target_version 0\n', '1': 'gfx_target_version 90010\n', '2': 'gfx_target_version 110000\n',
                  '3': 'gfx_target_version 110501\n', '4': 'gfx_target_version 100306\n',
                  '5': 'gfx_target_version 90500\n', '6': 'gfx_target_version 90402\n'},
                 'gfx90a;gfx942;gfx950;gfx1036;gfx1100;gfx1151'),
    'cpu-nodes-only': ({'0': 'cpu_cores_count 64\ngfx_target_version 0\n', '1': 'gfx_target_version 0\n'}, ''),
    'leading-zero': ({'0': 'gfx_target_version 090402\n'}, 'gfx942'),
    'crlf': ({'0': 'cpu_cores_count 0\r\ngfx_target_version 110501\r\n'}, 'gfx1151'),
    'first-line-counts': ({'0': 'gfx_target_version 90402\ngfx_target_version 90500\n'}, 'gfx942'),
    'bad-values-are-skipped': ({'0': 'gfx_target_version 91600\n', '1': 'gfx_target_version 90402 1\n',
                                '2': 'gfx_target_version banana\n', '3': 'gfx_target_version 1234567890\n',
                                '4': 'gfx_target_version 42\n', '5': 'simd_count 0\n', '6': 'gfx_target_version\n',
                                '7': 'gfx_target_version 90500\n'}, 'gfx950'),
    'unreadable-nodes-are-skipped': ({'0': None, '1': {}, '2': 'gfx_target_version 90010\n'}, 'gfx90a'),
}


# --- the three runners ---------------------------------------------------------------------------

def block(template):
    with open(os.path.join(TEMPLATES, template)) as handle:
        text = handle.read()
    start, end = text.index(BEGIN), text.index(END)
    body = text[text.rindex('\n', 0, start) + 1:text.index('\n', end) + 1]
    assert not re.search(r'\{\{|\{%|\{#', body), '%s: the detection block must hold no Jinja' % template
    return body


def tool_path(tmpdir):
    """A PATH with just the tools the blocks use (no rocminfo unless the case adds one)."""
    bindir = tmpdir.join('tools')
    if not bindir.check():
        bindir.ensure(dir=True)
        for tool in ('awk', 'tr', 'sort', 'cut', 'paste', 'cat', 'dirname', 'bash', 'modulecmd'):
            found = shutil.which(tool)
            assert found, '%s is needed by this test (make test installs it: environment-modules for modulecmd)' % tool
            os.symlink(found, str(bindir.join(tool)))
    return str(bindir)


def env_for(tmpdir, rocminfo_dir, kfd):
    path = tool_path(tmpdir)
    if rocminfo_dir:
        path = rocminfo_dir + ':' + path
    return {'PATH': path, 'PRIMUS_KFD_NODES': kfd, 'LC_ALL': 'C.UTF-8', 'HOME': str(tmpdir)}


def bash_detect(env):
    script = block('env.sh.j2') + 'printf "archs=%s\\n" "$_primus_node_arch"\nset | grep -E "^_primus_(kfd|archs)=" || true\n'
    proc = subprocess.run(['bash', '-c', script], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[1:] == [], 'env.sh leaves its temporaries set: %s' % lines[1:]
    return lines[0][len('archs='):]


def tcl_detect(env, tmpdir):
    modulefile = tmpdir.join('detect-modulefile')
    modulefile.write('#%Module1.0\n' + block('modulefile.tcl.j2') + 'setenv PRIMUS_TEST_ARCHS "archs=[join $node_archs ";"]"\n')
    proc = subprocess.run(['bash', '-c', 'eval "$(modulecmd bash load "$1")" && printf "%s\\n" "$PRIMUS_TEST_ARCHS"',
                           'load', str(modulefile)], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0 and proc.stdout.startswith('archs='), proc.stdout + proc.stderr
    return proc.stdout.strip()[len('archs='):]


def module_detect(env, tmpdir, rocminfo, kfd):
    args = {'kfd_nodes_path': kfd, 'kfd_device': str(tmpdir.join('no-kfd'))}
    if rocminfo:
        args['rocminfo'] = rocminfo
    result = run_module('gpu_arch_facts', args, tmpdir, env={'PATH': env['PATH']})
    assert result['_rc'] == 0, result
    gpu = result['ansible_facts']['primus_gpu']
    assert gpu['source'] in ('rocminfo', 'kfd', 'none') and gpu['archs'] == gpu['detected_archs']
    return gpu['pytorch_rocm_arch']


def all_three(tmpdir, rocminfo, kfd):
    """{'gpu_arch_facts': archs, 'env.sh': archs, 'modulefile': archs}; rocminfo is a program path or None."""
    env = env_for(tmpdir, os.path.dirname(rocminfo) if rocminfo else None, kfd)
    return {'gpu_arch_facts': module_detect(env, tmpdir, rocminfo, kfd),
            'env.sh': bash_detect(env),
            'modulefile': tcl_detect(env, tmpdir)}


def agree(results, expected):
    assert results == dict.fromkeys(results, expected)


def host_kfd(host):
    return os.path.join(HOSTS, host, 'sys', 'class', 'kfd', 'kfd', 'topology', 'nodes')


# --- the recorded hosts ------------------------------------------------------------------------

def test_every_recorded_host_is_covered():
    hosts = sorted(name for name in os.listdir(HOSTS) if os.path.isdir(os.path.join(HOSTS, name)))
    assert hosts == sorted(RECORDED)


@pytest.mark.parametrize('host', sorted(RECORDED))
def test_a_node_rocminfo_then_kfd(host, tmpdir):
    by_rocminfo, by_kfd = RECORDED[host]
    agree(all_three(tmpdir, os.path.join(HOSTS, host, 'bin', 'rocminfo'), host_kfd(host)), by_rocminfo or by_kfd)


@pytest.mark.parametrize('host', sorted(RECORDED))
def test_rocminfo_alone(host, tmpdir):
    agree(all_three(tmpdir, os.path.join(HOSTS, host, 'bin', 'rocminfo'), str(tmpdir.join('no-kfd'))), RECORDED[host][0])


@pytest.mark.parametrize('host', sorted(RECORDED))
def test_kfd_alone(host, tmpdir):
    agree(all_three(tmpdir, None, host_kfd(host)), RECORDED[host][1])


# --- samples -------------------------------------------------------------------------------------

@pytest.mark.parametrize('name', sorted(ROCMINFO_SAMPLES))
def test_rocminfo_samples(name, tmpdir):
    text, expected = ROCMINFO_SAMPLES[name]
    bindir = tmpdir.join('bin').ensure(dir=True)
    with open(str(tmpdir.join('rocminfo.txt')), 'w', newline='') as handle:
        handle.write(text)
    program = bindir.join('rocminfo')
    program.write('#!/bin/sh\nexec cat "%s"\n' % tmpdir.join('rocminfo.txt'))
    program.chmod(0o755)
    agree(all_three(tmpdir, str(program), str(tmpdir.join('no-kfd'))), expected)


@pytest.mark.parametrize('name', sorted(KFD_SAMPLES))
def test_kfd_samples(name, tmpdir):
    nodes, expected = KFD_SAMPLES[name]
    root = tmpdir.join('nodes').ensure(dir=True)
    for node, properties in nodes.items():
        node_dir = root.join(node).ensure(dir=True)
        if isinstance(properties, dict):
            node_dir.join('properties').ensure(dir=True)
        elif properties is not None:
            with open(str(node_dir.join('properties')), 'w', newline='') as handle:
                handle.write(properties)
    agree(all_three(tmpdir, None, str(root)), expected)


def test_a_failing_rocminfo_with_gpu_lines_is_still_read(tmpdir):
    """rocminfo that prints agents and then exits 1 (a later HSA call failed): all three use what it printed."""
    program = tmpdir.join('bin').ensure(dir=True).join('rocminfo')
    program.write('#!/bin/sh\ncat <<EOF\n%sEOF\necho "hsa api call failure at: rocminfo.cc:1306" >&2\nexit 1\n' % gpu('gfx942'))
    program.chmod(0o755)
    agree(all_three(tmpdir, str(program), str(tmpdir.join('no-kfd'))), 'gfx942')
