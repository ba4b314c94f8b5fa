"""The fleet's wheel store: who builds a build key's wheel, who installs it, and the store's checksum files."""
import pytest

from ansible_collections.primus.trainenv.plugins.plugin_utils import wheel_store

HOSTS = ["n1", "n2", "n3", "n4"]
A = "controller:/s/flash_attn/aaaa"
B = "controller:/s/flash_attn/bbbb"
SUM = "/s/flash_attn/aaaa/flash_attn-2.8.3-cp312-cp312-linux_x86_64.whl.sha256"
HEX = "0123456789abcdef" * 4


def test_the_first_node_of_each_key_in_play_order_builds_and_the_others_wait():
    wants = [B, A, A, B]
    assert wheel_store.plan(HOSTS, wants, "n2", []) == {
        "id": A, "members": ["n2", "n3"], "builder": "n2", "role": "build", "sum_path": ""}
    assert wheel_store.plan(HOSTS, wants, "n3", [])["role"] == "wait"
    assert wheel_store.plan(HOSTS, wants, "n3", [])["builder"] == "n2"
    assert wheel_store.plan(HOSTS, wants, "n4", [])["builder"] == "n1"


def test_nodes_that_need_no_entry_now_are_not_in_the_group():
    # n1 has the wheel in its own cache (no entry); n3 needs another store's entry of the same key.
    wants = ["", A, "shared:/s/flash_attn/aaaa", A]
    plan = wheel_store.plan(HOSTS, wants, "n4", [])
    assert plan["members"] == ["n2", "n4"] and plan["builder"] == "n2" and plan["role"] == "wait"


def test_a_stored_wheel_is_taken_by_every_member_and_nobody_builds():
    for me in ("n1", "n2"):
        plan = wheel_store.plan(["n1", "n2"], [A, A], me, [SUM])
        assert plan["role"] == "take" and plan["builder"] == "" and plan["sum_path"] == SUM


def test_an_entry_with_two_wheels_names_the_directory_and_the_fix():
    with pytest.raises(wheel_store.WheelStoreError, match=r"/s/flash_attn/aaaa holds 2 wheels .*rm -rf '/s/flash_attn/aaaa'"):
        wheel_store.plan(["n1"], [A], "n1", [SUM, SUM.replace("2.8.3", "2.8.4")])


def test_a_node_outside_the_play_or_without_an_entry_is_an_error():
    with pytest.raises(wheel_store.WheelStoreError, match="not among the play hosts"):
        wheel_store.plan(["n1"], [A], "n9", [])
    with pytest.raises(wheel_store.WheelStoreError, match="needs no entry"):
        wheel_store.plan(["n1"], [""], "n1", [])
    with pytest.raises(wheel_store.WheelStoreError, match="2 hosts but 1 entries"):
        wheel_store.plan(["n1", "n2"], [A], "n1", [])


def test_the_checksum_file_is_sha256sum_s_format_both_ways():
    wheel = "/c/wheels/te/k/transformer_engine-2.4.0+rocm.abc1234-cp312-cp312-linux_x86_64.whl"
    text = wheel_store.line(HEX, wheel)
    assert text == HEX + "  transformer_engine-2.4.0+rocm.abc1234-cp312-cp312-linux_x86_64.whl\n"
    assert wheel_store.record(text) == {"sha256": HEX, "file": "transformer_engine-2.4.0+rocm.abc1234-cp312-cp312-linux_x86_64.whl"}
    # sha256sum's binary-mode marker.
    assert wheel_store.record(HEX + " *x-1.0-py3-none-any.whl")["file"] == "x-1.0-py3-none-any.whl"


@pytest.mark.parametrize("text", [
    "", HEX.upper() + "  x-1.0-py3-none-any.whl", HEX[:-1] + "  x-1.0-py3-none-any.whl",
    HEX + "  ../x-1.0-py3-none-any.whl", HEX + "  x-1.0.tar.gz", HEX + "  x y.whl", HEX + "  $(id).whl"])
def test_a_checksum_file_that_is_not_one_names_itself_and_the_fix(text):
    with pytest.raises(wheel_store.WheelStoreError, match=r"checksum file /s/e/k/x.whl.sha256 does not hold .*rm -rf '/s/e/k'"):
        wheel_store.record(text, "/s/e/k/x.whl.sha256")


@pytest.mark.parametrize("sha256, wheel", [(HEX.upper(), "/c/x-1.0-py3-none-any.whl"), ("", "/c/x-1.0-py3-none-any.whl"),
                                           (HEX, "/c/x-1.0.tar.gz"), (HEX, "/c/")])
def test_a_checksum_line_is_written_only_for_a_sha256_and_a_wheel(sha256, wheel):
    with pytest.raises(wheel_store.WheelStoreError):
        wheel_store.line(sha256, wheel)
