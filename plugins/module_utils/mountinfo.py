# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The filesystem a path lives on, from /proc/self/mountinfo (proc(5)), and whether it is a network
filesystem shared between nodes. Pure functions; standard library only.

A mountinfo line::

    36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
    (1)(2)(3)   (4)   (5)      (6)      (7)   (8)  (9)    (10)         (11)

(5) is the mount point, with space, tab, newline and backslash written as octal escapes (\\040 ...);
(7) is zero or more optional fields ended by a single ``-``; (9) is the filesystem type, (10) the source.
The mount of a path is the entry whose mount point is the longest prefix of the path (whole components);
when several mounts share that point, the last one listed is the one on top.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

# Filesystem types whose data lives on another machine and is shared by every node that mounts it.
NETWORK_TYPES = frozenset([
    'nfs', 'nfs4', 'cifs', 'smb3', 'smbfs', 'ncpfs', 'afs', 'ceph', 'glusterfs', 'lustre', 'gpfs', 'beegfs',
    'panfs', 'wekafs', 'orangefs', 'pvfs2', '9p', 'davfs', 'virtiofs',
])
# FUSE types (fuse.<name>) that are network filesystems.
NETWORK_FUSE = frozenset([
    'sshfs', 'glusterfs', 'ceph', 'cephfs', 's3fs', 'juicefs', 'gcsfuse', 'rclone', 'davfs2', 'lizardfs',
    'moosefs', 'mfs', 'beegfs', 'weka', 'goofys', 'blobfuse', 'blobfuse2',
])

_ESCAPE = re.compile(r'\\([0-7]{3})')


def unescape(field):
    """A mountinfo path field with its octal escapes (\\040 for a space ...) decoded."""
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), field)


def parse(text):
    """[{mount_point, fstype, source, root}] of mountinfo text, in order; lines that are not entries are skipped."""
    mounts = []
    for line in text.splitlines():
        fields = line.split(' ')
        if '-' not in fields:
            continue
        sep = fields.index('-')
        if sep < 6 or len(fields) < sep + 3:
            continue
        mounts.append(dict(root=unescape(fields[3]), mount_point=unescape(fields[4]),
                           fstype=fields[sep + 1], source=unescape(fields[sep + 2])))
    return mounts


def is_network(fstype):
    """Whether a filesystem type is a network filesystem (nfs, nfs4, lustre, fuse.sshfs ...)."""
    fstype = (fstype or '').lower()
    if fstype in NETWORK_TYPES:
        return True
    if fstype.startswith('fuse.'):
        return fstype[5:] in NETWORK_FUSE
    return False


def _under(path, mount_point):
    if mount_point == '/':
        return path.startswith('/')
    return path == mount_point or path.startswith(mount_point.rstrip('/') + '/')


def mount_of(path, mounts):
    """{mount_point, fstype, source, network} of the mount holding the absolute, resolved path, or None."""
    best = None
    for entry in mounts:
        if _under(path, entry['mount_point']):
            if best is None or len(entry['mount_point']) >= len(best['mount_point']):
                best = entry
    if best is None:
        return None
    return dict(mount_point=best['mount_point'], fstype=best['fstype'], source=best['source'],
                network=is_network(best['fstype']))
