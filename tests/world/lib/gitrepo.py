"""Deterministic bare git repositories, written with `git fast-import` and served over dumb HTTP.

A repository is a list of commits given as data; every commit has fixed author/committer
identity and date, so the same data gives the same commit ids on every build. Submodule
gitlinks point at commits of other world repositories (.gitmodules is generated with their
world URLs), which therefore must be built first.
"""
import os
import subprocess
import tempfile

IDENTITY = "Primus World <world@primus-world.invalid>"
EPOCH = 1780272000  # 2026-06-01T00:00:00Z; commit i of a repository is dated EPOCH + i days


class Commit(object):
    def __init__(self, label, branch, msg, parent=None, files=None, drop=(), submodules=None,
                 executables=()):
        self.label = label            # name of this commit inside the world (e.g. "pinned")
        self.branch = branch          # branch that ends up pointing at it (if it is the last)
        self.msg = msg
        self.parent = parent          # label of the parent commit (None: root commit)
        self.files = dict(files or {})
        self.drop = tuple(drop)
        self.submodules = dict(submodules or {})   # path -> (repo name, commit label) or None
        self.executables = tuple(executables)


class Repo(object):
    def __init__(self, name, default_branch, commits, tags=None):
        self.name = name
        self.default_branch = default_branch
        self.commits = commits
        self.tags = dict(tags or {})  # tag -> commit label

    def deps(self):
        out = set()
        for commit in self.commits:
            for value in commit.submodules.values():
                if value:
                    out.add(value[0])
        return out


def git_env():
    env = dict(os.environ)
    for key in list(env):
        if key.startswith("GIT_"):
            del env[key]
    env.update({"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "LC_ALL": "C",
                "GIT_TERMINAL_PROMPT": "0"})
    return env


def _git(args, cwd, stdin=None):
    proc = subprocess.run(["git"] + args, cwd=cwd, input=stdin, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=git_env(), check=False)
    if proc.returncode != 0:
        raise RuntimeError("git %s failed in %s:\n%s" % (" ".join(args), cwd, proc.stderr.decode()))
    return proc.stdout.decode()


def _data(payload):
    return b"data %d\n" % len(payload) + payload + b"\n"


def build(repo, dest, repo_url, known_commits):
    """Write repo as a bare repository at dest. Returns {label: commit id}.

    repo_url(name) gives the URL of another world repository (for .gitmodules);
    known_commits[name][label] gives commit ids of repositories built before.
    """
    os.makedirs(dest)
    _git(["init", "--quiet", "--bare", "--template=", "--initial-branch=" + repo.default_branch, "."], dest)
    for key, value in (("core.logAllRefUpdates", "false"), ("gc.auto", "0"),
                       ("uploadpack.allowReachableSHA1InWant", "true"),
                       ("uploadpack.allowAnySHA1InWant", "true"),
                       ("http.receivepack", "false"), ("receive.denyNonFastForwards", "true")):
        _git(["config", key, value], dest)
    trees = {}
    marks = {}
    stream = []
    for index, commit in enumerate(repo.commits):
        files = dict(trees[commit.parent][0]) if commit.parent else {}
        subs = dict(trees[commit.parent][1]) if commit.parent else {}
        execs = set(trees[commit.parent][2]) if commit.parent else set()
        files.update(commit.files)
        execs.update(commit.executables)
        for path in commit.drop:
            files.pop(path, None)
        for path, value in commit.submodules.items():
            if value is None:
                subs.pop(path, None)
            else:
                subs[path] = value
        if subs:
            files[".gitmodules"] = "".join(
                '[submodule "%s"]\n\tpath = %s\n\turl = %s\n' % (path, path, repo_url(subs[path][0]))
                for path in sorted(subs))
        else:
            files.pop(".gitmodules", None)
        trees[commit.label] = (files, subs, execs)
        marks[commit.label] = index + 1
        when = EPOCH + index * 86400
        stream.append(b"commit refs/heads/%s\n" % commit.branch.encode())
        stream.append(b"mark :%d\n" % (index + 1))
        stream.append(b"author %s %d +0000\n" % (IDENTITY.encode(), when))
        stream.append(b"committer %s %d +0000\n" % (IDENTITY.encode(), when))
        stream.append(_data(commit.msg.encode()))
        if commit.parent:
            stream.append(b"from :%d\n" % marks[commit.parent])
        stream.append(b"deleteall\n")
        for path in sorted(files):
            content = files[path]
            content = content.encode() if isinstance(content, str) else content
            mode = b"100755" if path in execs else b"100644"
            stream.append(b"M %s inline %s\n" % (mode, path.encode()))
            stream.append(_data(content))
        for path in sorted(subs):
            sub_repo, sub_label = subs[path]
            stream.append(b"M 160000 %s %s\n" % (known_commits[sub_repo][sub_label].encode(), path.encode()))
        stream.append(b"\n")
    for tag in sorted(repo.tags):
        stream.append(b"reset refs/tags/%s\nfrom :%d\n\n" % (tag.encode(), marks[repo.tags[tag]]))
    with tempfile.NamedTemporaryFile(prefix="world-marks-", delete=False) as handle:
        marks_file = handle.name
    try:
        _git(["fast-import", "--quiet", "--export-marks=" + marks_file], dest, stdin=b"".join(stream))
        with open(marks_file) as handle:
            by_mark = dict((int(m.lstrip(":")), sha) for m, sha in (line.split() for line in handle if line.strip()))
    finally:
        os.unlink(marks_file)
    _git(["symbolic-ref", "HEAD", "refs/heads/" + repo.default_branch], dest)
    _git(["update-server-info"], dest)
    return dict((label, by_mark[mark]) for label, mark in marks.items())


def branches(dest):
    """{branch: commit id} of a bare repository."""
    out = _git(["for-each-ref", "--format=%(refname:short) %(objectname)", "refs/heads"], dest)
    return dict(line.split() for line in out.splitlines() if line.strip())


def resolve(dest, rev):
    """The full commit id a revision (a branch, a tag, an abbreviated commit) names in the repository dest, or None
    when it names none or is ambiguous."""
    try:
        return _git(["rev-parse", "--verify", "--quiet", rev + "^{commit}"], dest).strip() or None
    except RuntimeError:
        return None


def move_branch(dest, branch, message, files=None):
    """Push a new commit onto branch of the bare repository dest; returns its id.

    The commit changes files ({path: text}; default: appends the message to WORLD-MOVES.md),
    has the branch head as its parent and a date one day after it, so the same move on the same
    head gives the same commit id. The dumb-HTTP metadata is refreshed: clients see it at once.
    """
    old = _git(["rev-parse", "--verify", "refs/heads/%s^{commit}" % branch], dest).strip()
    if files is None:
        try:
            moves = _git(["show", "%s:WORLD-MOVES.md" % old], dest)
        except RuntimeError:
            moves = ""
        files = {"WORLD-MOVES.md": moves + message + "\n"}
    handle, index = tempfile.mkstemp(prefix="world-index-")
    os.close(handle)
    os.unlink(index)  # git creates it
    env = dict(git_env(), GIT_INDEX_FILE=index)
    try:
        def git(args, stdin=None):
            proc = subprocess.run(["git"] + args, cwd=dest, input=stdin, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=env, check=False)
            if proc.returncode != 0:
                raise RuntimeError("git %s failed in %s:\n%s" % (" ".join(args), dest, proc.stderr.decode()))
            return proc.stdout.decode().strip()
        git(["read-tree", old])
        for path in sorted(files):
            content = files[path].encode() if isinstance(files[path], str) else files[path]
            blob = git(["hash-object", "-w", "--stdin"], stdin=content)
            git(["update-index", "--add", "--cacheinfo", "100644,%s,%s" % (blob, path)])
        tree = git(["write-tree"])
        when = int(git(["log", "-1", "--format=%ct", old])) + 86400
        env.update(GIT_AUTHOR_NAME="Primus World", GIT_AUTHOR_EMAIL="world@primus-world.invalid",
                   GIT_COMMITTER_NAME="Primus World", GIT_COMMITTER_EMAIL="world@primus-world.invalid",
                   GIT_AUTHOR_DATE="%d +0000" % when, GIT_COMMITTER_DATE="%d +0000" % when)
        new = git(["commit-tree", tree, "-p", old], stdin=message.encode())
    finally:
        if os.path.exists(index):
            os.unlink(index)
    set_branch(dest, branch, new, old)
    return new


def set_branch(dest, branch, commit, expected_old=None):
    """Point branch of the bare repository dest at commit (only if it is at expected_old, when given)."""
    _git(["update-ref", "refs/heads/" + branch, commit] + ([expected_old] if expected_old else []), dest)
    _git(["update-server-info"], dest)


def prune(dest):
    """Remove the loose objects no ref of the bare repository dest reaches (packs are left alone: a clone may be
    reading them), then refresh the dumb protocol's info files."""
    _git(["prune", "--expire=now"], dest)
    _git(["update-server-info"], dest)
