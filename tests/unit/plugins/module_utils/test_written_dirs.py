# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The directories a run writes (safe_paths.written_dir_problem, base_entries_problem), stamp files
(stage_state.stamp_file_problem) and a copied venv (venv_state.moved), on real and stand-in file systems."""
import os
import stat

from ansible_collections.primus.trainenv.plugins.module_utils import safe_paths, stage_state, venv_state

UID = os.geteuid()


class St:
    def __init__(self, mode, uid):
        self.st_mode = mode
        self.st_uid = uid


def fake_lstat(tree):
    """tree: {path: (kind, uid, perm)}; a path under a link resolves through the link's entry 'to'."""
    def lstat(path):
        if path.endswith('/.'):
            path = tree[path[:-2]][3]
        if path not in tree:
            raise OSError(2, 'No such file or directory')
        kind, uid, perm = tree[path][:3]
        return St({'dir': stat.S_IFDIR, 'link': stat.S_IFLNK, 'file': stat.S_IFREG}[kind] | perm, uid)
    return lstat


ROOT = {'/': ('dir', 0, 0o755)}


def test_a_user_made_link_anywhere_on_the_path_is_refused():
    tree = dict(ROOT, **{'/home': ('dir', 0, 0o755), '/home/me': ('dir', 1000, 0o755),
                         '/home/me/envs': ('link', 1000, 0o777, '/etc'), '/etc': ('dir', 0, 0o755)})
    found = safe_paths.written_dir_problem('/home/me/envs/base', 1000, fake_lstat(tree), readlink=lambda p: '/etc')
    assert found.startswith("/home/me/envs is a symbolic link (to '/etc') made by 1000")
    # the same link owned by root but in a directory others can write (/tmp) is no better
    tree = dict(ROOT, **{'/tmp': ('dir', 0, 0o1777), '/tmp/x': ('link', 0, 0o777, '/etc'), '/etc': ('dir', 0, 0o755)})
    assert 'is a symbolic link' in safe_paths.written_dir_problem('/tmp/x', 1000, fake_lstat(tree))


def test_a_system_link_is_followed_and_the_directory_must_be_the_user_s():
    tree = dict(ROOT, **{'/home': ('link', 0, 0o777, '/users'), '/users': ('dir', 0, 0o755),
                         '/home/me': ('dir', 1000, 0o755), '/home/me/base': ('dir', 1000, 0o755)})
    assert safe_paths.written_dir_problem('/home/me/base', 1000, fake_lstat(tree)) == ''
    assert safe_paths.written_dir_problem('/home/me/base/new/deeper', 1000, fake_lstat(tree)) == ''
    assert safe_paths.written_dir_problem('/home/me/base', 1001, fake_lstat(tree)) == \
        'is owned by 1000 (uid 1000), not by you'
    # created inside another user's own directory (which it could only be because that user left it open)
    assert safe_paths.written_dir_problem('/home/me/new', 1001, fake_lstat(tree)) == \
        'does not exist and would be created in /home/me, a directory of user 1000 (uid 1000)'
    tree['/home/me/base'] = ('dir', 1000, 0o777)
    assert safe_paths.written_dir_problem('/home/me/base', 1000, fake_lstat(tree)).startswith('is writable by every user')


def test_written_dir_problem_on_the_real_file_system(tmp_path):
    real = tmp_path / 'real'
    real.mkdir()
    (tmp_path / 'link').symlink_to(real)
    assert safe_paths.written_dir_problem(str(real), UID, os.lstat) == ''
    # below the user's home no link is followed, whoever made it (root's own links are a user's there)
    assert 'is a symbolic link' in safe_paths.written_dir_problem(str(tmp_path / 'link' / 'state'), UID, os.lstat,
                                                                  home=str(tmp_path))
    (tmp_path / 'file').write_text('x')
    assert safe_paths.written_dir_problem(str(tmp_path / 'file' / 'x'), UID, os.lstat).endswith('is not a directory')


def test_an_existing_base_must_be_empty_or_one_of_ours():
    def has(names):
        return lambda rel: rel in names
    assert safe_paths.base_entries_problem([], has([])) == ''
    assert safe_paths.base_entries_problem(['logs', 'python', '.primus.lock.x.tmp'], has([])) == ''
    assert safe_paths.base_entries_problem(['state', 'notes.txt'], has(['state'])) == ''
    assert safe_paths.base_entries_problem(['venv', 'Documents'], has(['venv/primus-trainenv.cfg'])) == ''
    found = safe_paths.base_entries_problem(['passwd', 'shadow', 'logs'], has([]))
    assert found.startswith("is not empty and is not a base of primus.trainenv") and "'passwd', 'shadow'" in found


def test_a_non_utf8_byte_is_named_and_never_passed_on():
    value = '/tmp/x' + b'\xff'.decode('utf-8', 'surrogateescape')
    found = safe_paths.check_dir(value, 'PRIMUS_BASE')
    assert "PRIMUS_BASE '/tmp/x\\xff' contains the byte 0xff, which is not UTF-8" in found['problem']
    found['path'].encode('utf-8')   # what later tasks get can be encoded


def test_a_stamp_must_be_a_regular_file_of_the_user(tmp_path):
    state = tmp_path / 'state'
    state.mkdir()
    outside = tmp_path / 'outside.json'
    outside.write_text('{}')
    (state / 'torch.json').symlink_to(outside)
    os.mkfifo(str(state / 'te.json'))
    stamps = stage_state.read_stamps(str(state), UID)   # a FIFO would block an open(): it is never opened
    assert stamps['torch'] == {'problem': 'it is a symbolic link, not a stamp a run wrote'}
    assert stamps['te'] == {'problem': 'it is not a regular file'}
    (state / 'venv.json').write_text('{"a": ')
    assert stage_state.read_stamps(str(state), UID)['venv']['problem'].startswith('it cannot be read as JSON')
    assert stage_state.stamp_file_problem(str(state / 'venv.json'), UID + 1) == 'it is owned by uid %d, not by you' % UID


def test_a_copied_venv_is_told_from_the_original(tmp_path):
    venv = tmp_path / 'copy' / 'venv'
    venv.mkdir(parents=True)
    (venv / 'pyvenv.cfg').write_text('home = /usr/bin\ncommand = /usr/bin/python3.12 -m venv /old/base/venv\n')
    assert venv_state.made_at(str(venv)) == '/old/base/venv'
    obs = {'path': str(venv), 'made_at': '/old/base/venv'}
    assert venv_state.moved(obs)
    assert not venv_state.moved(dict(obs, made_at=str(venv)))
    assert not venv_state.moved(dict(obs, made_at=''))   # an older Python writes no command line: not judged


def test_a_venv_marker_or_pyvenv_cfg_that_is_a_fifo_is_never_opened(tmp_path):
    venv = tmp_path / 'venv'
    venv.mkdir()
    os.mkfifo(str(venv / venv_state.MARKER))
    os.mkfifo(str(venv / 'pyvenv.cfg'))
    assert venv_state.read_marker(str(venv)) == ('invalid', 'cannot be read (not a regular file)')
    assert venv_state.made_at(str(venv)) == ''
