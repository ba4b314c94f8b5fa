# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""GPU architecture detection: pure parsers for rocminfo output and KFD topology trees.

Formats (as Primus env.sh and rocminfo/KFD print them):

* rocminfo prints a header (``ROCk module is loaded``, the HSA system attributes) and then one
  block per HSA agent, each opened by three lines ``*******`` / ``Agent N`` / ``*******``.
  An agent's own keys come first (``Name:``, ``Marketing Name:``, ``Device Type:`` ...), followed
  by ``Cache Info:``, ``Pool Info:`` and ``ISA Info:`` sub-sections whose ``Name:`` lines belong
  to the ISAs (``amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-`` or a generic ISA such as
  ``amdgcn-amd-amdhsa--gfx9-4-generic:sramecc+:xnack-``). The arch is the agent's ``Name:``.
  The banners are not relied on (pasted or truncated output loses them): see parse_rocminfo.
* KFD publishes one directory per topology node; its ``properties`` file holds ``key value``
  lines, among them ``gfx_target_version 90402`` (0 on CPU nodes). The value is decimal major,
  then two digits of hex minor, then two digits of hex stepping: 90402 -> gfx942,
  90010 -> gfx90a, 110501 -> gfx1151.

Everything here runs on the target with Python 3.8+ and has no third-party imports. ``gather`` detects on the node
itself through an AnsibleModule (running rocminfo): gpu_arch_facts and node_info report its facts.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import glob
import os
import re

# gfx + digits/hex letters, the form PYTORCH_ROCM_ARCH takes (no target features, no generics).
ARCH_RE = re.compile(r'^gfx[0-9a-f]+$')

# Processors LLVM's AMDGPU backend knows (AMDGPUUsage, "Processors"). An override outside this
# list is almost certainly a typo; the release's device-wheel list is checked separately.
KNOWN_ARCHS = frozenset([
    'gfx600', 'gfx601', 'gfx602',
    'gfx700', 'gfx701', 'gfx702', 'gfx703', 'gfx704', 'gfx705',
    'gfx801', 'gfx802', 'gfx803', 'gfx805', 'gfx810',
    'gfx900', 'gfx902', 'gfx904', 'gfx906', 'gfx908', 'gfx909', 'gfx90a', 'gfx90c',
    'gfx940', 'gfx941', 'gfx942', 'gfx950',
    'gfx1010', 'gfx1011', 'gfx1012', 'gfx1013',
    'gfx1030', 'gfx1031', 'gfx1032', 'gfx1033', 'gfx1034', 'gfx1035', 'gfx1036',
    'gfx1100', 'gfx1101', 'gfx1102', 'gfx1103',
    'gfx1150', 'gfx1151', 'gfx1152', 'gfx1153',
    'gfx1200', 'gfx1201',
    'gfx1250', 'gfx1251',
])

DEFAULT_KFD_NODES_PATH = '/sys/class/kfd/kfd/topology/nodes'

# What newer kernels write to nodes/<n>/name for IP-discovery parts (MI300, RDNA3, ...):
# it names no product, so it is not reported as a marketing name.
KFD_GENERIC_NAMES = frozenset(['', 'ip discovery'])

_KEY_RE = re.compile(r'^([^:]*):(.*)$')
_GFX_RE = re.compile(r'^gfx[0-9a-f]+$')


class ArchError(ValueError):
    """An arch list or a KFD value that cannot be used; the message names the bad entry."""


def decode_gfx_target_version(value):
    """Decode a KFD gfx_target_version (int or str) to a gfx name; None for 0 (a CPU node).

    Decimal major, hex minor, hex stepping: 90402 -> gfx942, 90010 -> gfx90a, 110000 -> gfx1100.
    Raises ArchError for values that are not a non-negative integer or whose minor or
    stepping do not fit one hex digit.
    """
    text = str(value).strip()
    if not re.match(r'^[0-9]{1,9}$', text):
        raise ArchError("gfx_target_version %r is not a non-negative integer of at most 9 digits" % (text,))
    number = int(text)
    if number == 0:
        return None
    major = number // 10000
    minor = (number // 100) % 100
    stepping = number % 100
    if major == 0 or minor > 15 or stepping > 15:
        raise ArchError("gfx_target_version %s does not decode to a gfx arch "
                        "(major %d, minor %d, stepping %d)" % (text, major, minor, stepping))
    return 'gfx%d%x%x' % (major, minor, stepping)


def split_arch_list(value):
    """Split an arch list given as a string (``;``, ``,`` or blanks) or a list into entries.

    Empty entries (``gfx942;``) are dropped; entries are stripped, not validated.
    """
    if value is None:
        return []
    if isinstance(value, (list, tuple, set, frozenset)):
        items = []
        for item in value:
            items.extend(split_arch_list(item))
        return items
    return [part for part in re.split(r'[;,\s]+', str(value)) if part]


def normalize_arch_list(value, known=KNOWN_ARCHS):
    """Validate an arch list (string or list) and return it sorted and de-duplicated.

    Each entry must be ``gfx`` followed by digits/hex letters and, when ``known`` is given,
    a processor LLVM knows. Raises ArchError naming the first bad entry.
    """
    archs = set()
    for entry in split_arch_list(value):
        arch = entry.lower()
        if not ARCH_RE.match(arch):
            raise ArchError(
                "'%s' is not a GPU arch: expected gfx followed by digits/hex letters, "
                "e.g. gfx942 (target features like :xnack- and generic ISAs are not accepted)" % entry)
        if known is not None and arch not in known:
            raise ArchError("'%s' is not a GPU arch LLVM knows (e.g. gfx942 for MI300X/MI325X, "
                            "gfx950 for MI350X/MI355X)" % entry)
        archs.add(arch)
    return sort_archs(archs)


def _arch_sort_key(arch):
    return (len(arch), arch)


def sort_archs(archs):
    """Sorted unique list; shorter names first so gfx942 < gfx950 < gfx1100 (like sort -u here)."""
    return sorted(set(archs), key=_arch_sort_key)


def _key_value(line):
    """(key, value) of a ``Key: value`` line, split at the first colon; (None, None) without one.

    The key's inner blanks are collapsed (``Marketing Name``); both are stripped of blanks.
    """
    match = _KEY_RE.match(line)
    if not match:
        return None, None
    return re.sub(r'[ \t]+', ' ', match.group(1).strip(' \t')), match.group(2).strip(' \t')


def _processor(name):
    """``gfx942`` of ``gfx942:sramecc+:xnack-`` or of ``amdgcn-amd-amdhsa--gfx942:xnack-``,
    lowercased; a generic ISA (``gfx9-4-generic``) or anything else gives None."""
    name = name.lower()
    if name.startswith('amdgcn-'):
        name = name.rsplit('--', 1)[-1]
    name = name.split(':', 1)[0]
    return name if _GFX_RE.match(name) else None


def parse_rocminfo(text):
    """Parse rocminfo's output into a list of agents (dicts), duplicates removed.

    The parser keys on each agent's own fields, never on the ``*******`` / ``Agent N`` banners,
    so pasted or truncated output that starts or ends in the middle of the agent list works:

    * every line is split at its first colon into a key and a value (both stripped; CR, CRLF,
      tabs and trailing blanks do not matter); lines without a colon are ignored;
    * a ``Name:`` whose value is an ISA (``amdgcn-...``) belongs to the current agent's ISA list;
      any other ``Name:`` starts a new agent;
    * ``Marketing Name:``, ``Device Type:``, ``Uuid:`` and ``Node:`` belong to the current agent
      (the first one of each counts). Fields before the first agent ``Name:`` (output cut in the
      middle of an agent) make an agent without a name.

    Each agent: name, marketing_name, device_type (upper case; '' if not printed), uuid, node,
    isas, arch and is_gpu. The arch is the agent's name when it is a gfx name (target features
    such as ``:xnack-`` dropped), else its first ISA that is not generic, else None. An agent is
    a GPU when its Device Type is GPU or, when none was printed (old rocminfo, cut output), when
    it has an arch. An agent printed twice (same name, Uuid and Node, as when two outputs were
    concatenated) is kept once. env.sh.j2 and modulefile.tcl.j2 implement the same rules.
    """
    agents = []
    current = None
    lines = (text or '').replace('\r', '\n').split('\n')
    for line in lines:
        key, value = _key_value(line)
        if key == 'Name' and not value.lower().startswith('amdgcn-'):
            current = {'name': value, 'marketing_name': '', 'device_type': '', 'uuid': '', 'node': '',
                       'isas': []}
            agents.append(current)
            continue
        if key not in ('Name', 'Marketing Name', 'Device Type', 'Uuid', 'Node'):
            continue
        if current is None:
            current = {'name': '', 'marketing_name': '', 'device_type': '', 'uuid': '', 'node': '', 'isas': []}
            agents.append(current)
        if key == 'Name':
            current['isas'].append(value)
        else:
            field = key.lower().replace(' ', '_')
            if not current[field]:
                current[field] = value.upper() if field == 'device_type' else value

    unique = []
    seen = set()
    for agent in agents:
        identity = (agent['name'], agent['uuid'], agent['node'])
        if agent['uuid'] or agent['node']:
            if identity in seen:
                continue
            seen.add(identity)
        agent['arch'] = _processor(agent['name'])
        if agent['arch'] is None:
            agent['arch'] = next((arch for arch in map(_processor, agent['isas']) if arch), None)
        if agent['device_type']:
            agent['is_gpu'] = agent['device_type'] == 'GPU'
        else:
            agent['is_gpu'] = agent['arch'] is not None
        unique.append(agent)
    return unique


def gpus_from_rocminfo(text):
    """(archs, gpu_count, marketing_names) from rocminfo output; GPU agents only."""
    gpus = [agent for agent in parse_rocminfo(text) if agent['is_gpu'] and agent['arch']]
    names = sorted(set(agent['marketing_name'] for agent in gpus if agent['marketing_name']))
    return sort_archs(agent['arch'] for agent in gpus), len(gpus), names


def parse_kfd_properties(text):
    """Parse a KFD node ``properties`` file (``key value`` lines) into a dict of strings."""
    props = {}
    for line in (text or '').replace('\r', '\n').split('\n'):
        parts = line.split(None, 1)
        if parts and parts[0] not in props:
            # The first line of a key counts (as in env.sh's and the modulefile's detection).
            props[parts[0]] = parts[1].strip() if len(parts) == 2 else ''
    return props


def _node_sort_key(name):
    return (0, int(name), name) if name.isdigit() else (1, 0, name)


def _read_text(path):
    with open(path, 'rb') as handle:
        return handle.read().decode('utf-8', 'replace')


def read_kfd_nodes(nodes_path):
    """Read a KFD topology tree. Returns (nodes, notes).

    nodes: one dict per readable node, in node order: node, gfx_target_version (str), arch
    (None for CPU nodes), name (the node's ``name`` file, '' if absent). notes: strings about
    nodes that were skipped (unreadable, no gfx_target_version, undecodable value).
    """
    notes = []
    nodes = []
    try:
        entries = sorted(os.listdir(nodes_path), key=_node_sort_key)
    except OSError as exc:
        return [], ['KFD topology %s not readable: %s' % (nodes_path, exc.strerror or exc)]
    for entry in entries:
        node_dir = os.path.join(nodes_path, entry)
        if not os.path.isdir(node_dir):
            continue
        try:
            props = parse_kfd_properties(_read_text(os.path.join(node_dir, 'properties')))
        except (IOError, OSError) as exc:
            notes.append('KFD node %s skipped: properties not readable (%s)' % (entry, exc.strerror or exc))
            continue
        version = props.get('gfx_target_version')
        if version is None or version == '':
            notes.append('KFD node %s skipped: no gfx_target_version in properties' % entry)
            continue
        try:
            arch = decode_gfx_target_version(version)
        except ArchError as exc:
            notes.append('KFD node %s skipped: %s' % (entry, exc))
            continue
        name = ''
        try:
            name = _read_text(os.path.join(node_dir, 'name')).strip()
        except (IOError, OSError):
            pass
        nodes.append({'node': entry, 'gfx_target_version': version, 'arch': arch, 'name': name})
    return nodes, notes


def gpus_from_kfd(nodes_path):
    """(archs, gpu_count, names, notes) from a KFD topology tree; CPU nodes are not counted."""
    nodes, notes = read_kfd_nodes(nodes_path)
    gpus = [node for node in nodes if node['arch']]
    names = sorted(set(node['name'] for node in gpus if node['name'].lower() not in KFD_GENERIC_NAMES))
    return sort_archs(node['arch'] for node in gpus), len(gpus), names, notes


def arch_forms(archs):
    """The two list forms of an arch list: (``gfx942;gfx950``, ``gfx942,gfx950``)."""
    archs = sort_archs(archs)
    return ';'.join(archs), ','.join(archs)


def can_open_rw(path):
    """(True, '') if this process can open ``path`` read-write, else (False, the OS's reason)."""
    flags = os.O_RDWR | getattr(os, 'O_CLOEXEC', 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        return False, str(exc.strerror or exc)
    os.close(fd)
    return True, ''


# --- on the node itself, through an AnsibleModule (gpu_arch_facts, node_info) --------------------------------------

class GpuFactsError(ValueError):
    """A setting that cannot be used (a bad override, a rocminfo that is not there); the message names the fix."""


def _tail(text, lines=5):
    return ' / '.join(line.strip() for line in (text or '').strip().splitlines()[-lines:] if line.strip())


def find_rocminfo(module, wanted, venv):
    """(path or None, notes). An explicit ``wanted`` that cannot be found raises GpuFactsError."""
    if wanted:
        if os.path.sep in wanted:
            path = os.path.abspath(wanted)
            if not (os.path.isfile(path) and os.access(path, os.X_OK)):
                raise GpuFactsError('rocminfo %s is not an executable file; fix or unset the rocminfo option '
                                    '(primus_rocminfo) to detect with rocminfo on PATH and KFD' % wanted)
            return path, []
        path = module.get_bin_path(wanted)
        if not path:
            raise GpuFactsError('rocminfo command %r is not on PATH; fix or unset the rocminfo option '
                                '(primus_rocminfo)' % wanted)
        return path, []
    path = module.get_bin_path('rocminfo')
    if path:
        return path, []
    if venv:
        candidates = [os.path.join(venv, 'bin', 'rocminfo')]
        candidates += sorted(glob.glob(os.path.join(venv, 'lib', 'python3*', 'site-packages',
                                                    '_rocm_sdk_devel', 'bin', 'rocminfo')))
        for candidate in candidates:
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return candidate, []
    return None, ['rocminfo not found on PATH%s' % (' nor in the venv %s' % venv if venv else '')]


def detect(module, rocminfo, venv, kfd_nodes_path):
    """(archs, source, gpu_count, marketing_names, rocminfo_path, notes) of the node itself."""
    notes = []
    rocminfo, found_notes = find_rocminfo(module, rocminfo, venv)
    notes.extend(found_notes)
    if rocminfo:
        rc, out, err = module.run_command([rocminfo])
        if rc != 0:
            notes.append('rocminfo exited %d: %s' % (rc, _tail(err or out)))
        archs, count, names = gpus_from_rocminfo(out)
        if archs:
            return archs, 'rocminfo', count, names, rocminfo, notes
        if rc == 0:
            notes.append('rocminfo lists no GPU agent')
    if os.path.isdir(kfd_nodes_path):
        archs, count, names, kfd_notes = gpus_from_kfd(kfd_nodes_path)
        notes.extend(kfd_notes)
        if archs:
            return archs, 'kfd', count, names, rocminfo or '', notes
        notes.append('KFD topology %s has no GPU node' % kfd_nodes_path)
    else:
        notes.append('KFD topology %s does not exist' % kfd_nodes_path)
    return [], 'none', 0, [], rocminfo or '', notes


def gather(module, override='', rocminfo='', venv=None, kfd_nodes_path='/sys/class/kfd/kfd/topology/nodes',
           kfd_device='/dev/kfd', default_archs=None):
    """(facts, warnings): the GPU archs to build for and where they came from, as gpu_arch_facts and node_info report
    them - an override wins, else rocminfo, else the KFD topology, else ``default_archs`` (with a warning). Raises
    GpuFactsError for an override or default that is not an arch list, or a rocminfo option that cannot be run."""
    override = (override or '').strip()
    override_archs = []
    if override:
        try:
            override_archs = normalize_arch_list(override)
        except ArchError as exc:
            raise GpuFactsError('GPU arch override %r: %s. Fix primus_arch_override (or PYTORCH_ROCM_ARCH), '
                                'for example gfx942;gfx950.' % (override, exc))
        if not override_archs:
            raise GpuFactsError('GPU arch override %r names no arch; give e.g. gfx942;gfx950, or leave it empty '
                                'to detect' % override)
    defaults = []
    if default_archs:
        try:
            defaults = normalize_arch_list(default_archs)
        except ArchError as exc:
            raise GpuFactsError('default_archs: %s' % exc)

    warnings = []
    detected, detected_source, count, names, rocminfo_path, notes = detect(module, rocminfo, venv, kfd_nodes_path)
    if override_archs:
        archs, source = override_archs, 'override'
    elif detected:
        archs, source = detected, detected_source
    elif defaults:
        archs, source = defaults, 'default'
        warnings.append('no GPU detected; defaulting PYTORCH_ROCM_ARCH=%s (override with primus_arch_override '
                        'or by exporting PYTORCH_ROCM_ARCH)' % arch_forms(archs)[0])
    else:
        archs, source = [], 'none'
    semicolon, csv = arch_forms(archs)
    kfd_access, kfd_reason = can_open_rw(kfd_device)
    if detected and not kfd_access:
        warnings.append('GPUs found, but this user cannot open %s read-write (%s): building works, but running on the '
                        'GPUs needs membership of the group that owns it (usually render or video)' % (kfd_device, kfd_reason))
    facts = dict(archs=archs, pytorch_rocm_arch=semicolon, arch_csv=csv, source=source, detected_archs=detected,
                 detected_source=detected_source, gpu_count=count, marketing_names=names, rocminfo_path=rocminfo_path,
                 kfd_access=kfd_access, kfd_access_error='' if kfd_access else '%s: %s' % (kfd_device, kfd_reason),
                 notes=notes)
    return facts, warnings
