"""modes.hold_point, the test hook of the fault matrix (tests/functional/test_faults.py): off without its variable, a
matching <pattern>.hold holds the writer with the new bytes written but not in place, <pattern>.at names it."""
import os
import threading

from ansible_collections.primus.trainenv.plugins.module_utils import modes


def test_without_the_variable_nothing_is_looked_at(tmp_path, monkeypatch):
    monkeypatch.delenv(modes.FAULT_HOLD_ENV, raising=False)
    (tmp_path / "write:x.json.hold").write_text("")
    modes.write_atomic(str(tmp_path / "out" / "x.json"), b"new", 0o644)
    assert (tmp_path / "out" / "x.json").read_bytes() == b"new"
    assert not (tmp_path / "write:x.json.at").exists()


def test_a_matching_hold_stops_the_write_before_its_rename_until_released(tmp_path, monkeypatch):
    holds = tmp_path / "holds"
    holds.mkdir()
    monkeypatch.setenv(modes.FAULT_HOLD_ENV, str(holds))
    (holds / "write:*.json.hold").write_text("")
    (holds / "write:other.hold").write_text("")
    target = tmp_path / "state" / "venv.json"
    writer = threading.Thread(target=modes.write_atomic, args=(str(target), b"{}", 0o644))
    writer.start()
    at = holds / "write:*.json.at"
    for _attempt in range(2000):
        if at.exists():
            break
        writer.join(0.01)
    assert at.read_text() == "%d write:venv.json\n" % os.getpid()
    # Held: the new bytes are in a temporary file beside the target, the target not there yet.
    assert not target.exists() and [n for n in os.listdir(str(target.parent)) if n.startswith(".venv.json.")]
    assert writer.is_alive()
    (holds / "write:*.json.hold").unlink()
    writer.join(60)
    assert not writer.is_alive() and target.read_bytes() == b"{}"
    assert os.listdir(str(target.parent)) == ["venv.json"]
    assert not (holds / "write:other.at").exists(), "a pattern that does not match holds nothing"
