"""Move a floating branch of a served world repository between two runs, and put it back.

    python3 tests/world/branch.py move  --root .world grouped_gemm rocm [--message TEXT]
    python3 tests/world/branch.py reset --root .world grouped_gemm rocm
Each prints the branch's new head. From a test: `move(root, "grouped_gemm", "rocm")` pushes a
new commit onto the branch of the bare repository the running server serves (visible to the
next `git ls-remote`/clone at once); `reset(root, "grouped_gemm", "rocm")` points the branch back
at the commit it had when the world was built (world.json) and removes the moved commits' objects. The moved commit changes only
WORLD-MOVES.md (or the files given), so it still builds like the original.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from world.lib import gitrepo  # noqa: E402


def _repo(root, repo):
    path = os.path.join(os.path.abspath(root), "git", repo + ".git")
    if not os.path.isdir(path):
        raise SystemExit("no repository %s in the world at %s (see world.json)" % (repo, root))
    return path


def move(root, repo, branch, message=None, files=None):
    """Push a new commit onto branch of the world repository repo; returns its id."""
    return gitrepo.move_branch(_repo(root, repo), branch, message or "%s: follow-up commit on %s" % (repo, branch),
                               files)


def reset(root, repo, branch):
    """Point branch back at its commit when the world was built, as a force-push does, and collect the commits that
    only the moved branch held (a server's garbage collection after it: by id they cannot be fetched any more, not
    even over the dumb protocol, which reads loose objects by name); returns the branch's id."""
    with open(os.path.join(root, "world.json")) as handle:
        built = json.load(handle)["repos"][repo]["branches"][branch]
    path = _repo(root, repo)
    gitrepo.set_branch(path, branch, built)
    gitrepo.prune(path)
    return built


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("action", choices=("move", "reset"))
    parser.add_argument("--root", default=os.path.join(os.path.dirname(os.path.dirname(HERE)), ".world"))
    parser.add_argument("repo")
    parser.add_argument("branch")
    parser.add_argument("--message", help="commit message of the move (default: a follow-up commit)")
    args = parser.parse_args(argv)
    if args.action == "move":
        print(move(args.root, args.repo, args.branch, args.message))
    else:
        print(reset(args.root, args.repo, args.branch))
    return 0


if __name__ == "__main__":
    sys.exit(main())
