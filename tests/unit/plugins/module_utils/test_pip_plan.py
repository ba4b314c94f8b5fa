"""prior_plan entries: what earlier tasks of the run would have installed; the install of a dry-run's exact plan."""
import pytest

from ansible_collections.primus.trainenv.plugins.module_utils._pip.plan import (
    exact_install, exact_install_args, index_credentials, links_page, prior_entries)
from ansible_collections.primus.trainenv.plugins.module_utils._pip.report import Planned


def test_prior_entries_skip_wheel_builds_and_inexact_entries(pk):
    entries = ["einops==0.8.1",
               {"name": "torch", "version": "2.12.0+rocm7.15.0a20260720", "action": "install"},
               {"name": None, "version": None, "action": "build", "src": "/s", "wheel_dir": "/w"},
               {"name": "tinymark", "version": "1.0.0", "action": "build", "src": "/s", "wheel_dir": "/w"},
               {"name": "tqdm", "version": None, "action": "install"}]
    assert prior_entries(pk, entries) == [("einops", "0.8.1"), ("torch", "2.12.0+rocm7.15.0a20260720")]


def test_prior_entries_refuse_an_entry_without_a_name(pk):
    with pytest.raises(ValueError, match=r"prior_plan\[0\].*has no name"):
        prior_entries(pk, [{"name": None, "version": "1.0", "action": "install"}])


# ---- the install after a dry-run: exactly the planned files, no second resolve --------------------

def planned(name, version, url, is_direct=False, **info):
    download = dict({"url": url}, **info)
    return Planned(name, name, version, False, [], [], url, is_direct, download)


SHA = "ab" * 32


def test_index_files_are_pinned_and_listed_with_their_hash_and_the_index_credentials():
    items = [planned("torch", "2.12.0+rocm7.15.0a20260720",
                     "https://idx.example/files/0123/torch-2.12.0%2Brocm7.15.0a20260720-cp312-cp312-linux_x86_64.whl",
                     archive_info={"hash": "sha256=" + SHA, "hashes": {"sha256": SHA}}),
             planned("six", "1.17.0", "https://other.example/six-1.17.0-py2.py3-none-any.whl", archive_info={}),
             planned("mine", "1.0+abc", "file:///base/wheels/mine-1.0%2Babc-py3-none-any.whl", is_direct=True,
                     archive_info={"hashes": {"sha256": SHA}})]
    requirements, links, vcs, why = exact_install(items, True, index_credentials(["https://u:tok@idx.example/simple"]))
    assert why is None and vcs == []
    assert requirements == ["torch==2.12.0+rocm7.15.0a20260720", "six==1.17.0", "/base/wheels/mine-1.0+abc-py3-none-any.whl"]
    assert links == [("https://u:tok@idx.example/files/0123/torch-2.12.0%2Brocm7.15.0a20260720-cp312-cp312-linux_x86_64"
                      ".whl#sha256=" + SHA, "torch-2.12.0%2Brocm7.15.0a20260720-cp312-cp312-linux_x86_64.whl"),
                     ("https://other.example/six-1.17.0-py2.py3-none-any.whl", "six-1.17.0-py2.py3-none-any.whl")]
    page = links_page(links)
    assert page.count("<a href=") == 2 and "u:tok@idx.example" in page


@pytest.mark.parametrize("item, isolation, words", [
    # an editable checkout (dir_info), or one pip gave no commit for
    (planned("p", "1", "file:///src/r", is_direct=True, vcs_info={"vcs": "git", "commit_id": "a" * 40},
             dir_info={"editable": True}), False, "VCS checkout"),
    (planned("p", "1", "https://h/r.git", is_direct=True, vcs_info={"vcs": "git"}), False, "VCS checkout"),
    (planned("p", "1", "file:///src/p", is_direct=True, dir_info={}), False, "project directory"),
    (planned("p", "1", "https://h/p-1-py3-none-any.whl", is_direct=True, archive_info={}), False, "is given as"),
    (planned("p", "1", "https://h/p-1.tar.gz", archive_info={}), True, "build isolation"),
    (planned("p", "1", None), False, "names no file"),
])
def test_what_only_a_second_full_install_can_do_is_handed_back(item, isolation, words):
    requirements, links, vcs, why = exact_install([item], isolation)
    assert requirements is None and links is None and vcs is None and words in why


@pytest.mark.parametrize("isolation", [True, False])
def test_a_vcs_checkout_is_installed_at_the_commit_pip_resolved_beside_the_files(isolation):
    items = [planned("six", "1.17.0", "https://h/six-1.17.0-py2.py3-none-any.whl", archive_info={}),
             planned("MLCommons_Logging", "6.0.0rc5", "https://h/mlcommons/logging.git", is_direct=True,
                     vcs_info={"vcs": "git", "commit_id": "b" * 40, "requested_revision": "6.0.0-rc5"}),
             planned("sub", "2", "https://h/mono.git", is_direct=True, subdirectory="pkgs/sub",
                     vcs_info={"vcs": "git", "commit_id": "c" * 40})]
    requirements, links, vcs, why = exact_install(items, isolation)
    assert why is None and requirements == ["six==1.17.0"] and len(links) == 1
    assert vcs == ["git+https://h/mlcommons/logging.git@" + "b" * 40 + "#egg=mlcommons-logging",
                   "git+https://h/mono.git@" + "c" * 40 + "#egg=sub&subdirectory=pkgs/sub"]


def test_a_git_item_whose_name_would_add_a_fragment_is_handed_back_to_a_full_install():
    item = planned("x&subdirectory=other", "1", "https://h/r.git", is_direct=True,
                   vcs_info={"vcs": "git", "commit_id": "a" * 40})
    requirements, links, vcs, why = exact_install([item], False)
    assert requirements is None and vcs is None and "VCS checkout" in why


def test_an_sdist_without_build_isolation_is_installed_from_the_plan():
    requirements, links, vcs, why = exact_install([planned("p", "1", "https://h/p-1.tar.gz", archive_info={})], False)
    assert why is None and vcs == [] and requirements == ["p==1"] and links == [("https://h/p-1.tar.gz", "p-1.tar.gz")]


def test_the_exact_install_reads_no_index_and_resolves_no_dependencies():
    params = {"index_url": "https://u:tok@idx.example/simple", "extra_index_urls": ["https://x/simple"], "pre": True,
              "constraints": ["/base/pip-constraints.txt"], "state": "forcereinstall", "no_build_isolation": False,
              "requirements": "/r.txt", "extra_args": ["--no-cache-dir"]}
    args = exact_install_args("/v/bin/python", params, ["torch==2.12.0"], "/tmp/plan.html", log_path="/tmp/d.log")
    assert args[:4] == ["/v/bin/python", "-m", "pip", "install"]
    assert "--no-index" in args and "--find-links=/tmp/plan.html" in args and "--no-deps" in args
    assert "--force-reinstall" in args and "--constraint=/base/pip-constraints.txt" in args and "--pre" in args
    assert not any("idx.example" in a or a.startswith(("--index-url", "--extra-index-url", "--requirement"))
                   for a in args)
    assert args[-3:] == ["--no-cache-dir", "--", "torch==2.12.0"]
