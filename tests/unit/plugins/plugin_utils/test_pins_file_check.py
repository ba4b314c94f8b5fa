# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The release and its pins file, checked before Ansible reads it (plugin_utils/release_pins.py)."""
import os

import pytest
import yaml

from ansible_collections.primus.trainenv.plugins.plugin_utils import preflight_checks, release_pins

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
RELEASES = os.path.join(ROOT, 'roles', 'primus', 'vars', 'releases')
SHIPPED = os.path.join(RELEASES, 'v26.5.yml')


def test_the_shipped_release_passes():
    assert release_pins.problem('', 'v26.5', RELEASES) == ''
    assert release_pins.problem(SHIPPED, 'ignored', RELEASES) == ''


@pytest.mark.parametrize('release', ['../../etc/passwd', '..', 'v26.5/../x', '', '-v', 'a b', 'x' * 65])
def test_a_release_that_is_not_a_name_is_refused(release):
    found = release_pins.problem('', release, RELEASES)
    assert found.startswith('primus_release ') and 'is not a release name' in found


def test_an_unknown_release_lists_the_shipped_ones():
    found = release_pins.problem('', 'v99.1', RELEASES)
    assert found.endswith('Fix: set primus_release to a release this collection ships (v26.5).')


def write_pins(tmp_path, change):
    with open(SHIPPED) as handle:
        data = yaml.safe_load(handle)
    change(data['primus_pins'])
    path = tmp_path / 'pins.yml'
    path.write_text(yaml.safe_dump(data))
    return str(path)


@pytest.mark.parametrize('change, words', [
    (lambda p: p.update(release='../../../../tmp/x'), "primus_pins.release '../../../../tmp/x' is not a release name"),
    (lambda p: p.pop('te'), 'has no primus_pins.te.'),
    (lambda p: p['torch'].pop('packages'), 'has no primus_pins.torch.packages.'),
    (lambda p: p.update(sources=['a']), 'primus_pins.sources is a list, not a mapping'),
    (lambda p: p['sources'].update({'../x': {}}), "the entry '../x', which is not a component name"),
])
def test_a_wrong_shaped_pins_file_names_the_key(tmp_path, change, words):
    path = write_pins(tmp_path, change)
    found = release_pins.problem(path, 'v26.5', RELEASES)
    assert found.startswith("primus_release_file '%s' " % path) and words in found, found


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
