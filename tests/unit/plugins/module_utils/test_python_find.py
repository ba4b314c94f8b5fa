from ansible_collections.primus.trainenv.plugins.module_utils.python_find import (
    choose, major_minor, parse_probe, uv_glob_sort_key,
)


def cand(path, version, venv_ok=True, source="path", problem=""):
    return {"path": path, "source": source, "version": version, "venv_ok": venv_ok, "problem": problem}


def test_parse_probe_reads_version_and_venv_support():
    assert parse_probe(0, "3.12.1\nyes\n") == ("3.12.1", True, "")
    version, ok, problem = parse_probe(0, "3.12.3\nno: No module named 'ensurepip'\n")
    assert (version, ok) == ("3.12.3", False)
    assert "No module named 'ensurepip'" in problem


def test_parse_probe_rejects_broken_interpreters():
    assert parse_probe(127, "")[0] is None
    assert parse_probe(0, "pyenv: python3.12: command not found\n")[0] is None


def test_major_minor():
    assert major_minor("3.12.1") == "3.12"
    assert major_minor("3.10.13") == "3.10"
    assert major_minor(None) is None


def test_choose_takes_the_first_qualifying_candidate_in_order():
    chosen, rejected = choose([cand("/usr/bin/python3.12", "3.12.3", venv_ok=False, problem="has no venv/ensurepip"),
                               cand("/b/cpython-3.12.1/bin/python3.12", "3.12.1", source="uv"),
                               cand("/b/cpython-3.12.9/bin/python3.12", "3.12.9", source="uv")], "3.12")
    assert chosen["path"] == "/b/cpython-3.12.1/bin/python3.12"
    assert rejected == ["/usr/bin/python3.12 (path): has no venv/ensurepip"]


def test_choose_names_the_version_it_found():
    chosen, rejected = choose([cand("/opt/py/bin/python3", "3.11.7", source="given")], "3.12")
    assert chosen is None
    assert rejected == ["/opt/py/bin/python3 (given): is Python 3.11, not 3.12"]


def test_uv_dirs_prefer_the_newest_patch_release():
    paths = ["/p/cpython-3.12.1-linux-x86_64-gnu/bin/python3.12", "/p/cpython-3.12.10-linux-x86_64-gnu/bin/python3.12",
             "/p/cpython-3.12.9-linux-x86_64-gnu/bin/python3.12"]
    assert sorted(paths, key=uv_glob_sort_key)[0] == "/p/cpython-3.12.10-linux-x86_64-gnu/bin/python3.12"
