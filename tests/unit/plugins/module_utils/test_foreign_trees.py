# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A tree a run builds in or runs a tool from (safe_paths.foreign_tree_problem, own_group): what "owned by the user
running the stage" means for each path component, on stand-in and real file systems."""
import collections
import os
import stat

import pytest

from ansible_collections.primus.trainenv.plugins.module_utils import megatron_helpers as mh
from ansible_collections.primus.trainenv.plugins.module_utils import safe_paths

ME, OTHER = 1000, 1001
NAMES = {0: 'root', ME: 'me', OTHER: 'bob'}
Group = collections.namedtuple('Group', 'gr_name gr_mem')
User = collections.namedtuple('User', 'pw_name')


class St:
    def __init__(self, mode, uid, gid):
        self.st_mode, self.st_uid, self.st_gid = mode, uid, gid


def fake_lstat(tree):
    """tree: {path: (kind, uid, mode[, gid])}."""
    def lstat(path):
        if path not in tree:
            raise OSError(2, 'No such file or directory')
        kind, uid, mode = tree[path][:3]
        gid = tree[path][3] if len(tree[path]) > 3 else uid
        return St({'dir': stat.S_IFDIR, 'link': stat.S_IFLNK, 'file': stat.S_IFREG}[kind] | mode, uid, gid)
    return lstat


CHECKOUT = '/home/me/Primus'
DATASETS = CHECKOUT + '/third_party/Megatron-LM/megatron/core/datasets'


def good_tree():
    tree = {'/': ('dir', 0, 0o755), '/home': ('dir', 0, 0o755), '/home/me': ('dir', ME, 0o750)}
    path = CHECKOUT
    tree[path] = ('dir', ME, 0o755)
    for part in mh.DATASETS.split('/'):
        path += '/' + part
        tree[path] = ('dir', ME, 0o755)
    tree[DATASETS + '/Makefile'] = ('file', ME, 0o644)
    tree[DATASETS + '/helpers.cpp'] = ('file', ME, 0o644)
    return tree


def problem(tree, root=CHECKOUT, uid=ME, own=(ME,)):
    return safe_paths.foreign_tree_problem(root, mh.TRUSTED, uid, fake_lstat(tree), NAMES.get, lambda gid: gid in own)


def test_the_user_s_own_checkout_may_be_built_in():
    assert problem(good_tree()) == ('', None)
    # root builds in root's checkout; a checkout under a sticky directory every user can write (/tmp) is fine too
    tree = good_tree()
    as_root = dict((path, (entry[0], 0 if entry[1] == ME else entry[1]) + tuple(entry[2:])) for path, entry in tree.items())
    assert problem(as_root, uid=0) == ("", None)
    tree['/home'] = ('dir', 0, 0o1777)
    assert problem(tree) == ('', None)


@pytest.mark.parametrize('change, expected, owner', [
    # the checkout's own directories and the files make reads
    ({CHECKOUT: ('dir', OTHER, 0o755)}, '/home/me/Primus is owned by bob (uid 1001), not by you', OTHER),
    ({CHECKOUT: ('dir', 0, 0o755)}, '/home/me/Primus is owned by root (uid 0), not by you', 0),
    ({DATASETS: ('dir', OTHER, 0o755)}, DATASETS + ' is owned by bob (uid 1001), not by you', OTHER),
    ({DATASETS + '/Makefile': ('file', OTHER, 0o644)}, DATASETS + '/Makefile is owned by bob (uid 1001), not by you',
     OTHER),
    ({DATASETS + '/helpers.cpp': ('file', 0, 0o644)}, DATASETS + '/helpers.cpp is owned by root (uid 0), not by you', 0),
    ({DATASETS + '/GNUmakefile': ('file', OTHER, 0o644)}, DATASETS + '/GNUmakefile is owned by bob', OTHER),
    ({DATASETS + '/makefile': ('file', ME, 0o666)}, DATASETS + '/makefile is writable by every user (mode 0666)', None),
    # writable by another user is as bad as owned by one: every user, or a group that holds others
    ({CHECKOUT + '/third_party': ('dir', ME, 0o777)}, CHECKOUT + '/third_party is writable by every user (mode 0777)',
     None),
    ({DATASETS: ('dir', ME, 0o775, 50)}, DATASETS + ' is writable by its group, gid 50, which holds other users '
     '(mode 0775)', None),
    ({DATASETS + '/Makefile': ('file', ME, 0o664, 50)}, DATASETS + '/Makefile is writable by its group, gid 50', None),
    # symlinks inside the checkout: a link can point into anybody's files
    ({CHECKOUT + '/third_party/Megatron-LM': ('link', ME, 0o777)}, CHECKOUT + '/third_party/Megatron-LM is a symbolic '
     'link (made by me): a link inside the tree can point into anybody\'s files', None),
    ({DATASETS + '/Makefile': ('link', OTHER, 0o777)}, DATASETS + '/Makefile is a symbolic link (made by bob)', OTHER),
    # the directories above it: another user's, or open to every user without the sticky bit
    ({'/home/me': ('dir', OTHER, 0o755)}, '/home/me/Primus is inside /home/me, a directory of user bob (uid 1001), who '
     'can put another tree in its place', OTHER),
    ({'/home': ('dir', 0, 0o777)}, '/home/me/Primus is inside /home, which every user can write (mode 0777, not '
     'sticky), so anyone can put another tree in its place', None),
])
def test_each_way_another_user_can_change_what_runs_is_refused_naming_the_path(change, expected, owner):
    tree = good_tree()
    tree.update(change)
    found, who = problem(tree)
    assert found.startswith(expected), found
    assert who == owner


def test_a_group_write_bit_of_the_user_s_own_group_is_no_problem():
    tree = good_tree()
    tree[DATASETS] = ('dir', ME, 0o775, ME)
    tree[DATASETS + '/Makefile'] = ('file', ME, 0o664, ME)
    assert problem(tree) == ('', None)
    # group-writable directories above the checkout (a project's directory) are not judged: only who owns them
    tree = good_tree()
    tree['/home'] = ('dir', 0, 0o775, 50)
    assert problem(tree) == ('', None)


def test_what_is_not_there_is_skipped_and_the_root_itself_is_checked():
    tree = good_tree()
    del tree[DATASETS + '/helpers.cpp']
    assert problem(tree) == ('', None)
    assert problem({'/': ('dir', 0, 0o755), '/x': ('dir', OTHER, 0o700)}, root='/x')[0] == \
        '/x is owned by bob (uid 1001), not by you'


def test_own_group_is_a_group_named_like_the_user_with_no_other_member():
    users = {ME: User('me')}
    groups = {ME: Group('me', []), 50: Group('staff', ['me']), 51: Group('me', ['me', 'bob']), 52: Group('me', ['me'])}
    is_own = safe_paths.own_group(ME, users.__getitem__, groups.__getitem__)
    assert [is_own(g) for g in (ME, 50, 51, 52, 99)] == [True, False, False, True, False]
    assert safe_paths.own_group(4242, users.__getitem__, groups.__getitem__)(ME) is False


def test_on_the_real_file_system(tmp_path):
    uid = os.geteuid()
    checkout = tmp_path / 'Primus'
    datasets = checkout / mh.DATASETS
    datasets.mkdir(parents=True)
    (datasets / 'Makefile').write_text('x')
    real = os.path.realpath(str(checkout))
    assert safe_paths.foreign_tree_problem(real, mh.TRUSTED, uid, os.lstat) == ('', None)
    os.chmod(str(datasets), 0o777)
    assert safe_paths.foreign_tree_problem(real, mh.TRUSTED, uid, os.lstat)[0] == \
        '%s/%s is writable by every user (mode 0777)' % (real, mh.DATASETS)
    os.chmod(str(datasets), 0o755)
    assert safe_paths.foreign_tree_problem(real, mh.TRUSTED, uid + 1, os.lstat, lambda u: 'u%d' % u)[0] == \
        '%s is owned by u%d (uid %d), not by you' % (real, uid, uid)


def test_an_extension_file_is_loaded_only_when_it_is_the_user_s_alone():
    assert mh.foreign_file(St(stat.S_IFREG | 0o755, ME, ME), ME) == ''
    assert mh.foreign_file(St(stat.S_IFREG | 0o755, 0, 0), ME, NAMES.get) == 'is owned by root (uid 0), not by you'
    assert mh.foreign_file(St(stat.S_IFLNK | 0o777, ME, ME), ME) == 'is a symbolic link'
    assert mh.foreign_file(St(stat.S_IFREG | 0o777, ME, ME), ME) == 'is writable by every user (mode 0777)'
    assert mh.foreign_file(St(stat.S_IFREG | 0o775, ME, ME), ME, own_group_of=lambda gid: gid == ME) == ''
