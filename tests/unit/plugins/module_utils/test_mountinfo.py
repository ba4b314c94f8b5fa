"""mountinfo: real /proc/self/mountinfo lines (proc(5)), the longest mount point, network types."""
from ansible_collections.primus.trainenv.plugins.module_utils import mountinfo

# Lines in the kernel's format: an NFS home, a bind mount over it, a path with a space, a Lustre scratch,
# a tmpfs, and optional fields of several kinds (shared:, master:, propagate_from:, none).
MOUNTINFO = r"""22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw,errors=remount-ro
25 22 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:13 - proc proc rw
30 22 0:26 / /tmp rw,nosuid,nodev shared:14 - tmpfs tmpfs rw,size=65536k
61 22 0:52 / /home rw,relatime shared:30 - nfs4 fs01.cluster:/export/home rw,vers=4.2,rsize=1048576
62 61 0:52 /alice/scratch /home/alice/local rw,relatime shared:30 master:4 propagate_from:2 - ext4 /dev/sdb1 rw
70 22 0:60 / /lus rw,relatime - lustre 10.0.0.1@o2ib:/lus rw,flock
71 22 0:61 / /mnt/my\040data rw,relatime shared:40 - fuse.sshfs alice@gw:/data rw,user_id=1000
72 22 0:62 / /mnt/ram rw - fuse.gocryptfs /secret rw
"""


def test_parse_reads_type_source_and_escaped_mount_points():
    mounts = mountinfo.parse(MOUNTINFO + "garbage line\n\n")
    assert len(mounts) == 8
    assert mounts[3] == dict(root='/', mount_point='/home', fstype='nfs4', source='fs01.cluster:/export/home')
    assert mounts[4]['root'] == '/alice/scratch' and mounts[4]['fstype'] == 'ext4', 'optional fields skipped'
    assert mounts[6]['mount_point'] == '/mnt/my data'


def test_mount_of_takes_the_longest_whole_component_prefix():
    mounts = mountinfo.parse(MOUNTINFO)
    home = mountinfo.mount_of('/home/alice/envs/primus-env', mounts)
    assert home == dict(mount_point='/home', fstype='nfs4', source='fs01.cluster:/export/home', network=True)
    local = mountinfo.mount_of('/home/alice/local/primus-env', mounts)
    assert local['mount_point'] == '/home/alice/local' and local['network'] is False
    # /home/alice/localx is not under /home/alice/local.
    assert mountinfo.mount_of('/home/alice/localx', mounts)['mount_point'] == '/home'
    assert mountinfo.mount_of('/tmp/x', mounts)['fstype'] == 'tmpfs'
    assert mountinfo.mount_of('/opt/envs', mounts)['mount_point'] == '/'
    assert mountinfo.mount_of('/lus/proj/env', mounts)['network'] is True
    assert mountinfo.mount_of('/mnt/my data/env', mounts)['fstype'] == 'fuse.sshfs'
    assert mountinfo.mount_of('/x', []) is None


def test_the_last_of_stacked_mounts_is_on_top():
    stacked = MOUNTINFO + "80 61 0:70 / /home rw - ext4 /dev/sdc1 rw\n"
    assert mountinfo.mount_of('/home/bob', mountinfo.parse(stacked))['fstype'] == 'ext4'


def test_network_types():
    for fstype in ('nfs', 'NFS4', 'lustre', 'gpfs', 'beegfs', 'cifs', 'fuse.sshfs', 'fuse.juicefs', 'ceph'):
        assert mountinfo.is_network(fstype), fstype
    for fstype in ('ext4', 'xfs', 'btrfs', 'tmpfs', 'overlay', 'zfs', 'fuse.gocryptfs', 'fuse', '', None):
        assert not mountinfo.is_network(fstype), fstype
