"""tools/release_lock.py: the git requirements of a lock record go into the lock's vcs section, once per commit."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import release_lock as tool  # noqa: E402


def test_git_requirements_are_locked_by_commit_and_other_direct_items_skipped():
    git = {"name": "mlperf-logging", "version": "6.0.0rc5", "url": "http://h/git/logging.git", "sha256": "",
           "kind": "direct", "vcs": "git", "commit": "e" * 40, "repo": "http://h/git/logging.git"}
    items = [git, dict(git), dict(git, commit="f" * 40),
             {"name": "proj", "version": "1", "url": "file:///src/proj", "sha256": "", "kind": "direct"},
             {"name": "own", "version": "1", "url": "file:///w/own-1-py3-none-any.whl", "sha256": "", "kind": "file"}]
    lock, skipped, problems = tool.make_lock({"indexes": {}, "release": "v26.5"}, items)
    assert problems == [] and lock["files"] == []
    assert lock["vcs"] == [dict(name="mlperf-logging", version="6.0.0rc5", vcs="git", url="http://h/git/logging.git",
                                commit=c) for c in ("e" * 40, "f" * 40)]
    assert "proj==1 (direct)" in skipped and "own==1 (file)" in skipped
