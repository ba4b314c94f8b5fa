"""git's failures classified from git's real output (git 2.39, LC_ALL=C): the texts below were captured from real
clones and fetches (a local directory that is no repository, a dumb-HTTP server answering 404, 401, 403 and 503, an
unknown commit over dumb HTTP and over file://, ssh to a closed port and an unknown host), and the live tests run git
itself on the local ones."""
import os
import subprocess

import pytest

from ansible_collections.primus.trainenv.plugins.module_utils import git_failure

HINT = "\nPlease make sure you have the correct access rights\nand the repository exists.\n"
SHA = "0123456789abcdef0123456789abcdef01234567"

CASES = [
    # (case, git's stderr, class, git's cause as kept)
    ("file:///etc", "Cloning into 'd1'...\nfatal: '/etc' does not appear to be a git repository\n"
     "fatal: Could not read from remote repository.\n" + HINT, "not_a_repository",
     "fatal: '/etc' does not appear to be a git repository; fatal: Could not read from remote repository"),
    ("a local path that is not there", "Cloning into 'd2'...\nfatal: '/nonexistent/x.git' does not appear to be a git "
     "repository\nfatal: Could not read from remote repository.\n" + HINT, "not_a_repository",
     "fatal: '/nonexistent/x.git' does not appear to be a git repository; fatal: Could not read from remote repository"),
    ("dumb HTTP 404", "Cloning into 'dd'...\nfatal: repository 'http://127.0.0.1:38699/nope.git/' not found\n",
     "not_a_repository", "fatal: repository 'http://127.0.0.1:38699/nope.git/' not found"),
    ("GitHub, a repository that is not there", "Cloning into 'x'...\nremote: Repository not found.\n"
     "fatal: repository 'https://github.com/AMD-AGI/nope.git/' not found\n", "not_a_repository",
     "remote: Repository not found; fatal: repository 'https://github.com/AMD-AGI/nope.git/' not found"),
    ("local repository path that does not exist", "fatal: repository '/etc/x' does not exist\n", "not_a_repository",
     "fatal: repository '/etc/x' does not exist"),
    ("401 without credentials", "Cloning into 'dd'...\nfatal: could not read Username for 'http://127.0.0.1:38699': "
     "terminal prompts disabled\n", "authentication",
     "fatal: could not read Username for 'http://127.0.0.1:38699': terminal prompts disabled"),
    ("401 with credentials", "Cloning into 'dd'...\nfatal: Authentication failed for "
     "'http://127.0.0.1:38699/auth/r.git/'\n", "authentication",
     "fatal: Authentication failed for 'http://127.0.0.1:38699/auth/r.git/'"),
    ("403", "Cloning into 'dd'...\nfatal: unable to access 'http://127.0.0.1:38699/forbidden/r.git/': The requested URL "
     "returned error: 403\n", "authentication",
     "fatal: unable to access 'http://127.0.0.1:38699/forbidden/r.git/': The requested URL returned error: 403"),
    ("ssh key refused", "git@github.com: Permission denied (publickey).\nfatal: Could not read from remote "
     "repository.\n" + HINT, "authentication",
     "git@github.com: Permission denied (publickey); fatal: Could not read from remote repository"),
    ("503", "Cloning into 'dd'...\nfatal: unable to access 'http://127.0.0.1:38699/down/r.git/': The requested URL "
     "returned error: 503\n", "network",
     "fatal: unable to access 'http://127.0.0.1:38699/down/r.git/': The requested URL returned error: 503"),
    ("connection refused", "Cloning into 'd3'...\nfatal: unable to access 'http://127.0.0.1:9/git/x.git/': Failed to "
     "connect to 127.0.0.1 port 9 after 0 ms: Couldn't connect to server\n", "network",
     "fatal: unable to access 'http://127.0.0.1:9/git/x.git/': Failed to connect to 127.0.0.1 port 9 after 0 ms: "
     "Couldn't connect to server"),
    ("dns", "Cloning into 'd4'...\nfatal: unable to access 'https://nonexistent.invalid/x.git/': Could not resolve "
     "host: nonexistent.invalid\n", "network",
     "fatal: unable to access 'https://nonexistent.invalid/x.git/': Could not resolve host: nonexistent.invalid"),
    ("ssh to a closed port", "ssh: connect to host 127.0.0.1 port 9: Connection refused\nfatal: Could not read from "
     "remote repository.\n" + HINT, "network",
     "ssh: connect to host 127.0.0.1 port 9: Connection refused; fatal: Could not read from remote repository"),
    ("ssh to an unknown host", "ssh: Could not resolve hostname nonexistent.invalid: Name or service not known\n"
     "fatal: Could not read from remote repository.\n" + HINT, "network",
     "ssh: Could not resolve hostname nonexistent.invalid: Name or service not known; fatal: Could not read from "
     "remote repository"),
    ("unknown commit over dumb HTTP", "error: Unable to find %s under http://127.0.0.1:38699/r.git\nCannot obtain "
     "needed object %s\nerror: fetch failed.\n" % (SHA, SHA), "unknown_commit",
     "error: Unable to find %s under http://127.0.0.1:38699/r.git; Cannot obtain needed object %s; error: fetch failed"
     % (SHA, SHA)),
    ("unknown commit over file://", "fatal: git upload-pack: not our ref %s\nfatal: remote error: upload-pack: not our "
     "ref %s\n" % (SHA, SHA), "unknown_commit",
     "fatal: git upload-pack: not our ref %s; fatal: remote error: upload-pack: not our ref %s" % (SHA, SHA)),
    ("unknown commit on GitHub", "error: Server does not allow request for unadvertised object %s\n" % SHA,
     "unknown_commit", "error: Server does not allow request for unadvertised object %s" % SHA),
    ("checkout of a commit the clone lacks", "fatal: reference is not a tree: %s\n" % SHA, "unknown_commit",
     "fatal: reference is not a tree: %s" % SHA),
    ("another user's checkout", "fatal: detected dubious ownership in repository at '/tmp/gt/dd'\nTo add an exception "
     "for this directory, call:\n\n\tgit config --global --add safe.directory /tmp/gt/dd\n", "ownership",
     "fatal: detected dubious ownership in repository at '/tmp/gt/dd'"),
    ("a full disk", "error: unable to write file objects/pack/tmp_pack_x: No space left on device\n", "other",
     "error: unable to write file objects/pack/tmp_pack_x: No space left on device"),
]


@pytest.mark.parametrize("text, kind, cause", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_recorded_failure_has_its_class_and_keeps_git_s_own_lines(text, kind, cause):
    assert git_failure.classify(text) == kind
    assert git_failure.cause(text) == cause
    # The generic hint and the safe.directory advice are never the cause.
    assert "the repository exists" not in git_failure.cause(text)
    assert "safe.directory" not in git_failure.cause(text)


def test_each_class_has_its_own_fix():
    repo = "http://127.0.0.1:9/git/x.git"
    fixes = dict((kind, git_failure.fix(kind, repo, SHA, "/home/me/Primus")) for kind in git_failure.KINDS)
    assert len(set(fixes.values())) == len(git_failure.KINDS)
    assert fixes["network"].startswith("check the network (or the proxy) to the repository %s" % repo)
    assert fixes["not_a_repository"].startswith("check the repository URL: %s is not a git repository" % repo)
    assert "has no commit %s" % SHA in fixes["unknown_commit"] and "network" not in fixes["unknown_commit"]
    assert "credential helper" in fixes["authentication"] and "network" not in fixes["authentication"]
    assert fixes["ownership"].startswith("/home/me/Primus belongs to another user")
    assert git_failure.TRANSIENT == ("network",)


def test_a_long_cause_is_cut_and_only_the_first_lines_are_kept():
    text = "".join("fatal: line %d %s\n" % (n, "x" * 300) for n in range(6))
    found = git_failure.cause(text)
    assert len(found) == git_failure.CAUSE_CHARS and found.endswith("...") and "line 0" in found
    assert git_failure.cause("fatal: a\nfatal: b\nfatal: c\nfatal: d\nfatal: e\n") == \
        "fatal: a; fatal: b; fatal: c; fatal: d"
    assert git_failure.cause("") == "" and git_failure.classify("") == "other"


def _git(*args, cwd=None):
    env = dict(os.environ, LC_ALL="C", GIT_TERMINAL_PROMPT="0", GIT_CONFIG_NOSYSTEM="1", HOME="/nonexistent",
               GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
    return subprocess.run(["git"] + list(args), cwd=cwd, env=env, capture_output=True, text=True, check=False)


def test_live_git_failures_are_classified(tmp_path):
    """git itself: a directory that is no repository, one that is not there, a closed port, an unknown commit."""
    repo = tmp_path / "repo"
    assert _git("init", "-q", "-b", "main", str(repo)).returncode == 0
    (repo / "a").write_text("a\n")
    assert _git("add", "a", cwd=str(repo)).returncode == 0
    assert _git("commit", "-q", "-m", "a", cwd=str(repo)).returncode == 0
    clone = tmp_path / "clone"
    assert _git("clone", "-q", "--no-checkout", "file://%s" % repo, str(clone)).returncode == 0
    found = {}
    for name, argv in (("etc", ["clone", "--no-checkout", "--", "file:///etc", str(tmp_path / "a")]),
                       ("missing", ["clone", "--no-checkout", "--", "file://%s/nope.git" % tmp_path, str(tmp_path / "b")]),
                       ("closed", ["clone", "--no-checkout", "--", "http://127.0.0.1:9/x.git", str(tmp_path / "c")]),
                       ("commit", ["-C", str(clone), "fetch", "origin", SHA])):
        proc = _git(*argv)
        assert proc.returncode != 0, name
        found[name] = (git_failure.classify(proc.stderr), git_failure.cause(proc.stderr))
    assert found["etc"] == ("not_a_repository", "fatal: '/etc' does not appear to be a git repository; "
                                                "fatal: Could not read from remote repository")
    assert found["missing"][0] == "not_a_repository" and "nope.git' does not appear to be a git repository" in \
        found["missing"][1]
    assert found["closed"][0] == "network" and "127.0.0.1 port 9" in found["closed"][1]
    assert found["commit"][0] == "unknown_commit" and SHA in found["commit"][1]


def test_credentials_in_git_s_lines_are_redacted():
    text = "fatal: unable to access 'https://me:s3cr3t@host.example/x.git/': Could not resolve host: host.example\n"
    assert git_failure.cause(text) == ("fatal: unable to access 'https://me:****@host.example/x.git/': Could not "
                                       "resolve host: host.example")
