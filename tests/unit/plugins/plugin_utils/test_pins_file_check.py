# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The release and its pins file, checked before Ansible reads it (plugin_utils/release_pins.py)."""
import os

import pytest
import yaml

import stage_registry

from ansible_collections.primus.trainenv.plugins.plugin_utils import preflight_checks, release_pins

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
RELEASES = os.path.join(ROOT, 'roles', 'primus', 'vars', 'releases')
SHIPPED = os.path.join(RELEASES, 'v26.5.yml')


STAGES = stage_registry.views()['order']


@pytest.mark.parametrize('name', release_pins.shipped_releases(RELEASES))
def test_every_shipped_release_passes_the_schema(name):
    assert release_pins.problem('', name, RELEASES, STAGES) == ''
    assert release_pins.problem(os.path.join(RELEASES, name + '.yml'), 'ignored', RELEASES, STAGES) == ''


def test_both_releases_are_shipped():
    assert {'v26.5', 'v26.5.1'} <= set(release_pins.shipped_releases(RELEASES))


@pytest.mark.parametrize('release', ['../../etc/passwd', '..', 'v26.5/../x', '', '-v', 'a b', 'x' * 65])
def test_a_release_that_is_not_a_name_is_refused(release):
    found = release_pins.problem('', release, RELEASES)
    assert found.startswith('primus_release ') and 'is not a release name' in found


def test_an_unknown_release_lists_the_shipped_ones():
    found = release_pins.problem('', 'v99.1', RELEASES)
    assert found.endswith('Fix: set primus_release to a release this collection ships (v26.5, v26.5.1).')


def write_pins(tmp_path, change, source=SHIPPED):
    with open(source) as handle:
        data = yaml.safe_load(handle)
    change(data['primus_pins'])
    path = tmp_path / 'pins.yml'
    path.write_text(yaml.safe_dump(data))
    return str(path)


def _set(path, value):
    """A change that sets the key at the dotted path (list indexes as numbers)."""
    def change(pins):
        *parents, last = path.split('.')
        node = pins
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        node[int(last) if isinstance(node, list) else last] = value
    return change


def _pop(path):
    def change(pins):
        *parents, last = path.split('.')
        node = pins
        for key in parents:
            node = node[key]
        node.pop(last)
    return change


# Each malformed release file: the change, then the key path and words its message must name (what was found and what
# is expected). Wrong types at several depths, unknown keys, missing keys, bad versions, a source without a ref.
MALFORMED = [
    (_set('torch.packages', 'torch==2.12.0+rocm7.15.0a20260720'),
     "primus_pins.torch.packages is the string 'torch==2.12.0+rocm7.15.0a20260720', expected a list of requirements"),
    (_set('release', '../../../../tmp/x'), "primus_pins.release is the string '../../../../tmp/x': not a release name"),
    (_pop('te'), 'primus_pins.te is missing: expected a mapping'),
    (_pop('torch.packages'), 'primus_pins.torch.packages is missing: expected a list of requirements'),
    (_set('sources', ['a']), 'primus_pins.sources is a list, expected a mapping of component names'),
    (lambda p: p['sources'].update({'../x': {}}), "primus_pins.sources has the key '../x', which is not component names"),
    (_set('torhc', {}), 'primus_pins.torhc is not a key the schema knows'),
    (_set('torch.pakages', []), 'primus_pins.torch.pakages is not a key the schema knows (the keys of primus_pins.torch: '),
    (_set('versions.torch', '2.12.0+rocm 7.15'), "primus_pins.versions.torch is the string '2.12.0+rocm 7.15': not a PEP "
                                                 "440 version; expected a version"),
    (_set('versions.apex', 1.12), 'primus_pins.versions.apex is the number 1.12, expected a version'),
    (_pop('sources.te.ref'), 'primus_pins.sources.te.ref is missing: expected a commit or branch'),
    (_set('sources.te.ref', 'a07e607'), "primus_pins.sources.te.ref is the string 'a07e607': not a full 40-hex commit "
                                        "(ref_kind commit)"),
    (_set('sources.te.ref_kind', 'tag'), "primus_pins.sources.te.ref_kind is the string 'tag', expected one of commit, "
                                         "branch, short_commit"),
    (_set('sources.aiter.build.isolation', 'yes'), "primus_pins.sources.aiter.build.isolation is the string 'yes', "
                                                   "expected true or false"),
    (_set('sources.flash_attn.build.arch_env.GPU_ARCHS', 'semicolon'),
     "primus_pins.sources.flash_attn.build.arch_env.GPU_ARCHS is the string 'semicolon', expected one of list, csv"),
    (_set('sources.torchao.patches.0', {'file': 'x.py', 'before': 'a'}), 'primus_pins.sources.torchao.patches[0].after '
                                                                         'is missing'),
    (_set('sources.turbo.repo', '--upload-pack=touch /tmp/x'),
     "primus_pins.sources.turbo.repo is the string '--upload-pack=touch /tmp/x': not a git repository URL"),
    (_set('turbo.rocshmem_placeholder', '../../outside/x'), "primus_pins.turbo.rocshmem_placeholder is the string "
                                                            "'../../outside/x': not a relative path that stays inside"),
    (_set('turbo.rocshmem_placeholder', '/opt/rocshmem'), 'primus_pins.turbo.rocshmem_placeholder is the string '
                                                          "'/opt/rocshmem': not a relative path"),
    (_set('torch.device_packages.0', 'amd-torch-device==2.12.0'), 'primus_pins.torch.device_packages[0] is the string '
                                                                  "'amd-torch-device==2.12.0': not a per-arch requirement"),
    (_set('torch.pre_packages.1', '--index-url=http://evil/simple'), 'primus_pins.torch.pre_packages[1] is the string '
                                                                     "'--index-url=http://evil/simple': an option, not "
                                                                     'a requirement'),
    (_set('te.wheel', 'transformer_engine_rocm_torch>=2'), "primus_pins.te.wheel is the string "
                                                           "'transformer_engine_rocm_torch>=2': not an exact pin"),
    (_set('indexes.torch', 'https://user:s3cret@mirror/simple?x=1'), "primus_pins.indexes.torch is the string "
                                                                     "'https://user:****@mirror/simple?x=1': not an http"),
    (_set('torch.default_archs', ['gfx1100']), "primus_pins.torch.default_archs[0] is the string 'gfx1100', which is not "
                                               "in device_archs"),
    (_set('python_version', 3.12), 'primus_pins.python_version is the number 3.12, expected a major.minor version'),
    (_set('installed_fixes', [{'name': 'x', 'stage': 'torch', 'path': '../etc/passwd', 'link_to': 'a'}]),
     "primus_pins.installed_fixes[0].path is the string '../etc/passwd': not a relative path"),
    (_set('installed_fixes', [{'name': 'x', 'stage': 'torch', 'path': 'a/b', 'before': 'x'}]),
     'primus_pins.installed_fixes[0] must have all of before, after together'),
    (_set('installed_fixes', [{'name': 'x', 'stage': 'torch', 'path': 'a/b', 'link_to': 'c', 'before': 'x',
                               'after': 'y'}]), 'primus_pins.installed_fixes[0] must have exactly one of link_to or '
                                                'before+after'),
    (_set('installed_fixes', [{'name': 'x', 'stage': 'tourch', 'path': 'a/b', 'link_to': 'c'}]),
     "primus_pins.installed_fixes[0].stage is the string 'tourch': not a stage"),
    (_set('pydeps.build_from_sdist', ['tensorstore==0.1.46']), "primus_pins.pydeps.build_from_sdist[0] is the string "
                                                               "'tensorstore==0.1.46', which is not in pydeps.packages"),
]


@pytest.mark.parametrize('change, words', MALFORMED, ids=[w.split(' ')[0] + '-' + str(i) for i, (_c, w) in
                                                          enumerate(MALFORMED)])
def test_a_malformed_release_file_names_the_key_path_what_was_found_and_what_is_expected(tmp_path, change, words):
    path = write_pins(tmp_path, change)
    found = release_pins.problem(path, 'v26.5', RELEASES, STAGES)
    assert found.startswith("primus_release_file '%s' does not match the release file format: " % path), found
    assert words in found, found
    assert found.endswith('Fix: correct the file (docs/releases.md, "The release file", lists every key), or leave '
                          'primus_release_file empty to use primus_release.'), found
    assert 's3cret' not in found


def test_every_problem_of_a_file_is_named_up_to_five():
    def change(pins):
        for key in [k for k, v in pins.items() if isinstance(v, dict) and k != 'sources'][:7]:
            pins[key]['extra_key'] = 1
    found = release_pins.shape_problem({'primus_pins': yaml.safe_load(open(SHIPPED))['primus_pins']})
    assert found == ''
    data = yaml.safe_load(open(SHIPPED))
    change(data['primus_pins'])
    found = release_pins.shape_problem(data)
    assert found.count('is not a key the schema knows') == 5 and found.endswith('and 2 more'), found


def test_a_pins_file_holds_only_primus_pins(tmp_path):
    data = yaml.safe_load(open(SHIPPED))
    data['other'] = {'x': 1}
    path = tmp_path / 'pins.yml'
    path.write_text(yaml.safe_dump(data))
    assert 'has top-level keys other than primus_pins' in release_pins.problem(str(path), 'v26.5', RELEASES)


def test_a_file_that_is_not_pins_is_described_never_quoted(tmp_path):
    secret = tmp_path / 'shadow'
    secret.write_text('root:$y$j9T$SECRET:19000:0:99999:7:::\n[unclosed: {\n')
    found = release_pins.problem(str(secret), 'v26.5', RELEASES)
    assert 'is not valid YAML at line' in found and 'SECRET' not in found and 'root:' not in found
    (tmp_path / 'list.yml').write_text('- a\n')
    assert 'has no top-level primus_pins mapping (it holds a list)' in release_pins.problem(
        str(tmp_path / 'list.yml'), 'v26.5', RELEASES)
    os.mkfifo(str(tmp_path / 'fifo'))
    assert 'is not a regular file' in release_pins.problem(str(tmp_path / 'fifo'), 'v26.5', RELEASES)
    assert 'it does not exist' in release_pins.problem(str(tmp_path / 'none.yml'), 'v26.5', RELEASES)
    assert 'must be an absolute path' in release_pins.problem('pins.yml', 'v26.5', RELEASES)


@pytest.mark.parametrize('value, words', [('99999999999999999999', 'is \'9999999999999999999'),
                                          ('5000', "is '5000', more than 4096"), ('16', ''), ('', '')])
def test_max_jobs_is_bounded(value, words):
    found = preflight_checks._max_jobs({'max_jobs': value})   # pylint: disable=protected-access
    assert (words in found and found) if words else found == ''
