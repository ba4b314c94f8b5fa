# -*- coding: utf-8 -*-
# Copyright (c) 2026, primus.trainenv developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The environment table's parser and its three renderers (plugins/plugin_utils/env_table.py).

Quoting is proven by the languages themselves: every string goes through bash and tclsh and must
come back byte for byte, without running anything."""

import os
import shutil
import subprocess

import pytest

from ansible_collections.primus.trainenv.plugins.plugin_utils.env_table import (
    EnvTableError,
    comment_text,
    parse,
    render_dict,
    render_sh,
    render_tcl,
    sh_quote,
    tcl_quote,
)

TCLSH = shutil.which("tclsh")

# Everything that is code, or a separator, in bash or Tcl.
HOSTILE = [
    "$(touch PWNED)", "`touch PWNED`", "a\nb", "it's", 'say "hi"', "[exec touch PWNED]", "a;touch PWNED", "two words",
    "back\\slash", "{", "}", "{unbalanced", "x}y{", "\\", "\\\n", "end\\", "$HOME", "${HOME}", "*", "?", "~", "#x", "!x",
    "a\tb", "\r", "é ü", "日本", "\U0001F600", "'", "''", "'\\''", "%s%n", "-n", "--", "", " ", "\x01\x7f", "$primus_rt(user)",
]


def bash_roundtrip(values, tmp_path):
    script = "".join("printf '%%s\\0' %s\n" % sh_quote(v) for v in values)
    proc = subprocess.run(["bash", "-c", script], cwd=str(tmp_path), capture_output=True, check=True)
    return proc.stdout.decode("utf-8").split("\0")[:-1]


def test_sh_quote_round_trips_through_bash(tmp_path):
    assert bash_roundtrip(HOSTILE, tmp_path) == HOSTILE
    assert not os.path.exists(str(tmp_path / "PWNED"))
    assert sh_quote("it's") == "'it'\\''s'"


@pytest.mark.skipif(TCLSH is None, reason="tclsh is not installed (apt install tcl)")
def test_tcl_quote_round_trips_through_tclsh(tmp_path):
    script = "fconfigure stdout -translation binary\n" + "".join(
        "puts -nonewline [encoding convertto utf-8 %s]; puts -nonewline \\0\n" % tcl_quote(v) for v in HOSTILE)
    proc = subprocess.run([TCLSH], input=script.encode("utf-8"), cwd=str(tmp_path), capture_output=True, check=False)
    assert proc.returncode == 0, proc.stderr
    got = [g.decode("utf-8") for g in proc.stdout.split(b"\0")[:-1]]
    # Tcl 8.6 holds no character beyond U+FFFF (it reads one as U+FFFD); Tcl 8.7/9 read \U exactly.
    astral = [i for i, v in enumerate(HOSTILE) if any(ord(c) > 0xFFFF for c in v)]
    assert [g for i, g in enumerate(got) if i not in astral] == [v for i, v in enumerate(HOSTILE) if i not in astral]
    assert len(got) == len(HOSTILE)
    assert not os.path.exists(str(tmp_path / "PWNED"))


def test_tcl_quote_braces_only_plain_words():
    assert tcl_quote("/home/u/envs/primus-env") == "{/home/u/envs/primus-env}"
    assert tcl_quote("gfx942;gfx950") == "{gfx942;gfx950}"
    assert tcl_quote("") == "{}"
    assert tcl_quote("a b").startswith('"')
    assert tcl_quote("[exec x]") == '"\\[exec x\\]"'


def test_comment_text_stays_on_one_line_without_continuation():
    for value in HOSTILE:
        text = comment_text(value)
        assert "\n" not in text and "\r" not in text
        assert not text.endswith("\\") and "{" not in text and "}" not in text
    assert comment_text("node1.example.com") == "node1.example.com"
    assert comment_text("a\nb\\c{d}") == "a\\x0ab\\x5cc\\x7bd\\x7d"


def test_values_refuse_nul_and_non_strings():
    with pytest.raises(EnvTableError, match="NUL"):
        sh_quote("a\x00b")
    with pytest.raises(EnvTableError, match="must be a string"):
        tcl_quote(None)
    assert sh_quote(7) == "'7'"


# ------------------------------------------------------------------ the table's rules

def table(*entries, **conditions):
    return {"conditions": conditions, "entries": list(entries)}


@pytest.mark.parametrize("bad, message", [
    (table({"name": "X", "how": "sometimes", "value": "1"}), "how must be one of"),
    (table({"name": "X Y", "how": "force", "value": "1"}), "name must be an environment variable name"),
    (table({"name": "X", "how": "force"}), "value is missing"),
    (table({"name": "X", "how": "force", "value": "1", "values": ["a"]}), "unknown keys values"),
    (table({"name": "X", "how": "force", "value": [{"ref": "Y"}]}), "refers to Y, which no earlier entry sets"),
    (table({"name": "X", "how": "force", "value": "1", "when": "c"}), "condition 'c' is not defined"),
    (table({"name": "A", "how": "force", "value": "1", "when": "c"}, {"name": "B", "how": "force", "value": [{"ref": "A"}]},
           c={"dir": "/x"}), "refers to A, which is set only when c holds"),
    (table({"name": "PATH", "how": "prepend", "values": ["/a:/b"]}), "holds the separator ':'"),
    (table({"name": "PATH", "how": "prepend", "values": []}), "values must be a non-empty list"),
    (table({"name": "X", "how": "force", "value": [{"runtime": "User"}]}), "not a lower-case name"),
    (table({"name": "X", "how": "force", "value": [{"ref": "X", "form": "tsv"}]}), "form 'tsv'"),
    (table({"name": "X", "how": "force", "value": [{"env": "HOME"}]}), "a value part must be"),
    (table({"name": "X", "how": "force", "value": "1"}, c={"exists": "/x"}), "condition c must be"),
    (table({"name": "X", "how": "force", "value": "1", "when": "c"}, c={"decided": "maybe"}), "decided must be true or false"),
    (table({"name": "A", "how": "force", "value": "1", "when": "c"}, {"name": "B", "how": "force", "value": [{"ref": "A"}]},
           c={"decided": True}), "refers to A, which is set only when c holds"),
    ({"entries": "x"}, "mapping with a list of entries"),
])
def test_malformed_tables_are_refused_naming_the_entry(bad, message):
    with pytest.raises(EnvTableError, match=message.replace("(", "\\(").replace("[", "\\[")):
        parse(bad)


SAMPLE = table(
    {"name": "BASE", "how": "force", "value": "/b"},
    {"name": "ARCH", "how": "default", "value": [{"runtime": "archs"}]},
    {"name": "TARGETS", "how": "default", "value": [{"ref": "ARCH", "form": "csv"}]},
    {"name": "GPU_ARCHS", "how": "default", "value": "native"},
    {"name": "ROCM", "how": "force", "value": [{"ref": "BASE"}, "/rocm"], "when": "sdk"},
    {"name": "PATH", "how": "prepend", "values": [[{"ref": "ROCM"}, "/bin"], "/b/bin"], "when": "sdk"},
    {"name": "LIST", "how": "append", "separator": " ", "values": [[{"ref": "BASE"}, "/c.txt"]]},
    sdk={"dir": [{"ref": "BASE"}, "/rocm"]},
)


def test_render_dict_is_the_exact_build_environment():
    env = render_dict(SAMPLE, runtime={"archs": "gfx942;gfx950"}, conditions={"sdk": True},
                      inherit={"PATH": "/b/bin:/usr/bin", "LIST": "/other.txt"})
    assert env == {"BASE": "/b", "ARCH": "gfx942;gfx950", "TARGETS": "gfx942,gfx950", "GPU_ARCHS": "native",
                   "ROCM": "/b/rocm", "PATH": "/b/rocm/bin:/b/bin:/usr/bin", "LIST": "/other.txt /b/c.txt"}


def test_render_dict_overrides_flow_into_later_references():
    """A cross-compiling stage: the full arch list for GPU_ARCHS and PYTORCH_ROCM_ARCH, not native."""
    env = render_dict(SAMPLE, runtime={"archs": "gfx942"}, conditions={"sdk": False}, inherit={"LIST": ""},
                      overrides={"ARCH": "gfx942;gfx950", "GPU_ARCHS": "gfx942;gfx950", "NVTE_ROCM_ARCH": "gfx942;gfx950"})
    assert env["TARGETS"] == "gfx942,gfx950" and env["GPU_ARCHS"] == "gfx942;gfx950"
    assert env["NVTE_ROCM_ARCH"] == "gfx942;gfx950"
    assert "ROCM" not in env and "PATH" not in env


def test_render_dict_keeps_the_plan_s_max_jobs_where_the_files_compute_their_node_s():
    """MAX_JOBS as roles/primus/vars/env.yml has it: a build step gets the caller's (the plan's) value; env.sh and
    the modulefile refer to the value their own logic computes where they are used."""
    jobs = table({"name": "MAX_JOBS", "how": "default", "value": [{"runtime": "max_jobs"}]})
    assert render_dict(jobs, runtime={"max_jobs": 13}) == {"MAX_JOBS": "13"}
    assert render_dict(jobs, runtime={"max_jobs": "13"}, overrides={"MAX_JOBS": "2"}) == {"MAX_JOBS": "2"}
    with pytest.raises(EnvTableError, match="runtime value 'max_jobs' was not given"):
        render_dict(jobs, runtime={"archs": "gfx942"})
    assert render_sh(jobs) == '[ -n "${MAX_JOBS:-}" ] || MAX_JOBS="$_primus_max_jobs"; export MAX_JOBS'
    assert render_tcl(jobs) == ('setenv MAX_JOBS [set primus_env(MAX_JOBS) '
                                '[primus_getenv MAX_JOBS "$primus_rt(max_jobs)"]]')


@pytest.mark.parametrize("kwargs, message", [
    ({"conditions": {"sdk": True}, "inherit": {"PATH": "", "LIST": ""}}, "runtime value 'archs' was not given"),
    ({"runtime": {"archs": "x"}, "inherit": {"PATH": "", "LIST": ""}}, "say whether it holds"),
    ({"runtime": {"archs": "x"}, "conditions": {"sdk": True}, "inherit": {"LIST": ""}}, "current PATH is needed"),
    ({"runtime": {"archs": "x"}, "conditions": {"sdk": False}, "inherit": {"LIST": ""}, "overrides": {"A B": "1"}},
     "not an environment variable name"),
])
def test_render_dict_refuses_to_guess(kwargs, message):
    with pytest.raises(EnvTableError, match=message):
        render_dict(SAMPLE, **kwargs)


def decided_table(holds):
    return table(
        {"name": "CACHE", "how": "default", "value": "/tmp/c"},
        {"name": "JIT", "how": "default", "private": True, "value": [{"ref": "CACHE"}, "/jit"], "when": "local"},
        {"name": "AFTER", "how": "force", "value": "1"},
        local={"decided": holds},
    )


@pytest.mark.parametrize("holds", [True, "True", "true", False, "False"])
def test_a_decided_condition_writes_or_leaves_out_its_entries(holds):
    on = holds in (True, "True", "true")
    sh, tcl = render_sh(decided_table(holds)), render_tcl(decided_table(holds))
    assert ('[ -n "${JIT:-}" ] || JIT="$CACHE"\'/jit\'' in sh) is on
    assert ("_primus_private_dir JIT" in sh) is on and ("primus_private_dir JIT" in tcl) is on
    assert "if [" not in sh and "if {" not in tcl, "decided when written: no test where it is used"
    assert "export AFTER='1'" in sh
    env = render_dict(decided_table(holds))
    assert env == (dict(CACHE="/tmp/c", JIT="/tmp/c/jit", AFTER="1") if on else dict(CACHE="/tmp/c", AFTER="1"))
    # The caller may still say otherwise (a build step that must not see it).
    assert "JIT" not in render_dict(decided_table(holds), conditions={"local": False})


def test_render_sh_and_tcl_shapes():
    sh = render_sh(SAMPLE)
    assert "export BASE='/b'" in sh
    assert '[ -n "${TARGETS:-}" ] || TARGETS="${ARCH//;/,}"; export TARGETS' in sh
    assert "if [ -d \"$BASE\"'/rocm' ]; then" in sh
    assert "_primus_add PATH ':' first \"$ROCM\"'/bin' '/b/bin'" in sh
    assert "_primus_add LIST ' ' last \"$BASE\"'/c.txt'" in sh
    tcl = render_tcl(SAMPLE)
    assert "setenv BASE [set primus_env(BASE) {/b}]" in tcl
    assert 'setenv ARCH [set primus_env(ARCH) [primus_getenv ARCH "$primus_rt(archs)"]]' in tcl
    # prepend-path one entry at a time, last first, so the first entry ends up first.
    assert tcl.index("prepend-path PATH {/b/bin}") < tcl.index('prepend-path PATH "$primus_env(ROCM)/bin"')
    assert 'append-path -d " " LIST "$primus_env(BASE)/c.txt"' in tcl
