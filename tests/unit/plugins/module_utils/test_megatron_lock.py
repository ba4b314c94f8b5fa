"""megatron_helpers.lock_directories: two runs of one user that build helpers_cpp in the same checkout take turns."""
import fcntl
import os

from ansible_collections.primus.trainenv.plugins.module_utils import megatron_helpers as mh


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def hold(directory):
    """Another run's lock: flock is per open file description, so a second open in this process conflicts."""
    fd = os.open(directory, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def test_free_directories_are_locked_and_missing_ones_skipped(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    held, busy = mh.lock_directories([str(b), str(a), str(tmp_path / "missing"), str(a)], 5)
    try:
        assert busy is None and len(held) == 2
        # a third party cannot take them now
        clock = Clock()
        again, busy = mh.lock_directories([str(a)], 1, clock=clock, sleep=clock.sleep)
        assert again == [] and busy == str(a)
    finally:
        for fd in held:
            os.close(fd)
    # released with the descriptors (or the process)
    held, busy = mh.lock_directories([str(a)], 0)
    assert busy is None and len(held) == 1
    os.close(held[0])


def test_a_held_directory_is_waited_for_then_reported_after_the_timeout(tmp_path):
    directory = tmp_path / "datasets"
    directory.mkdir()
    other = hold(str(directory))
    clock, waits = Clock(), []
    try:
        held, busy = mh.lock_directories([str(directory)], 3, on_wait=waits.append, clock=clock, sleep=clock.sleep)
    finally:
        os.close(other)
    assert held == [] and busy == str(directory)
    assert waits == [str(directory)]   # one note when the wait starts, not one per poll
    assert 3 <= clock.now < 3.5


def test_the_wait_ends_when_the_other_run_releases(tmp_path):
    directory = tmp_path / "datasets"
    directory.mkdir()
    other = hold(str(directory))
    clock = Clock()

    def sleep(seconds):
        clock.sleep(seconds)
        if clock.now >= 1:
            os.close(other)   # the other run's module exits

    held, busy = mh.lock_directories([str(directory)], 60, clock=clock, sleep=sleep)
    assert busy is None and len(held) == 1 and 1 <= clock.now < 2
    os.close(held[0])
