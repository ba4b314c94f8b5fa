"""primus.trainenv.pip_constrained with run_command mocked: which commands run, and what is reported."""
import json
import os
import stat
import sys

import pip
import pytest

from ansible.module_utils import basic
from ansible_collections.primus.trainenv.plugins.module_utils._pip.probe import PROBE_MARKER
from ansible_collections.primus.trainenv.plugins.modules import pip_constrained

try:
    from ansible.module_utils.testing import patch_module_args
except ImportError:  # ansible-core < 2.19
    import contextlib

    from ansible.module_utils.common.text.converters import to_bytes

    @contextlib.contextmanager
    def patch_module_args(args):
        saved = basic._ANSIBLE_ARGS
        basic._ANSIBLE_ARGS = to_bytes(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
        try:
            yield
        finally:
            basic._ANSIBLE_ARGS = saved

PIP_SITE = os.path.dirname(os.path.dirname(os.path.abspath(pip.__file__)))
ROCM = "2.12.0+rocm7.15.0a20260720"
MARKERS = {"implementation_name": "cpython", "implementation_version": "3.12.1", "os_name": "posix",
           "platform_machine": "x86_64", "platform_release": "6", "platform_system": "Linux", "platform_version": "#1",
           "python_full_version": "3.12.1", "platform_python_implementation": "CPython", "python_version": "3.12",
           "sys_platform": "linux"}
CONFLICT_OUT = """Collecting needs-new-torch
The conflict is caused by:
    needs-new-torch 1.0 depends on torch>=2.13
    The user requested (constraint) torch==%s

To fix this you could try to:
""" % ROCM
CONFLICT_ERR = """ERROR: Cannot install needs-new-torch==1.0 because these package versions have conflicting dependencies.
ERROR: ResolutionImpossible: for help visit https://pip.pypa.io/en/latest/topics/dependency-resolution/
"""


class Exit(Exception):
    def __init__(self, kwargs):
        super(Exit, self).__init__(kwargs)
        self.result = kwargs


class Failed(Exit):
    pass


class FakeVenv(object):
    """A venv whose python answers the probe from `dists` and whose pip follows the test's script."""

    def __init__(self, root, dists=None):
        self.root = root
        self.python = os.path.join(root, "bin", "python")
        os.makedirs(os.path.dirname(self.python))
        open(self.python, "w").close()
        with open(os.path.join(root, "pyvenv.cfg"), "w") as handle:
            handle.write("home = /usr/bin\n")
        self.dists = dict(dists or {})  # key -> [name, version, requires, provides_extra, stamp]
        self.calls = []
        self.environs = []
        self.dry_run = (0, "", "", None)  # (rc, out, err, report dict)
        self.install = None   # callable(args) -> (rc, out, err), may change self.dists
        self.site = "/nonexistent-site"
        self.debug = ""       # what pip writes to its --log file (a list: one per pip run)

    def add(self, name, version, requires=(), extras=(), direct_url=None):
        self.dists[name.lower()] = [name, version, list(requires), list(extras), 1,
                                    json.dumps(direct_url) if direct_url else None]

    def probe_output(self):
        rows = [[d[0], d[1], d[2], d[5], "/site/%s.dist-info" % d[0], d[4], d[3]] for d in self.dists.values()]
        data = {"executable": self.python, "version": [3, 12, 1], "purelib": self.site, "platlib": self.site,
                "markers": MARKERS, "dists": rows}
        return "%s\n%s\n" % (PROBE_MARKER, json.dumps(data))

    def run_command(self, args, **kwargs):
        assert isinstance(args, list), "run_command must get an argument list"
        assert kwargs.get("expand_user_and_vars") is False
        self.calls.append(list(args))
        self.environs.append(dict(os.environ))
        logs = [a.split("=", 1)[1] for a in args if a.startswith("--log=")]
        if logs and self.debug:
            with open(logs[0], "w") as handle:
                handle.write(self.debug.pop(0) if isinstance(self.debug, list) else self.debug)
        if args[:2] == [self.python, "-I"]:
            return 0, self.probe_output(), ""
        assert args[:3] == [self.python, "-m", "pip"], args
        if "--dry-run" in args:
            rc, out, err, report = self.dry_run
            if report is not None:
                path = [a for a in args if a.startswith("--report=")][0].split("=", 1)[1]
                with open(path, "w") as handle:
                    json.dump(report, handle)
            return rc, out, err
        if args[3] == "uninstall":
            for name in args[args.index("--") + 1:]:
                self.dists.pop(name.lower(), None)
            return 0, "Successfully uninstalled", ""
        return self.install(args)

    def pip_calls(self):
        return [c for c in self.calls if c[1] == "-m"]


def report(*items):
    out = []
    for name, version, requested, requires in items:
        out.append({"download_info": {"url": "http://i/%s-%s.whl" % (name, version), "archive_info": {}},
                    "is_direct": False, "requested": requested,
                    "metadata": {"name": name, "version": version, "requires_dist": list(requires)}})
    return {"version": "1", "pip_version": "23.2.1", "install": out}


@pytest.fixture
def venv(tmp_path):
    return FakeVenv(str(tmp_path / "venv"))


def run_module(monkeypatch, venv, tmp_path, check_mode=False, diff=False, **args):
    args = dict(args, venv=venv.root, _ansible_check_mode=check_mode, _ansible_diff=diff,
                _ansible_remote_tmp=str(tmp_path / "remote_tmp"), _ansible_keep_remote_files=False)

    def exit_json(self, **kwargs):
        kwargs["warnings"] = list(getattr(self, "_warnings", []) or [])
        raise Exit(kwargs)

    def fail_json(self, msg, **kwargs):
        kwargs["msg"] = msg
        raise Failed(kwargs)

    monkeypatch.setattr(basic.AnsibleModule, "exit_json", exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", fail_json)
    monkeypatch.setattr(basic.AnsibleModule, "run_command", lambda self, a, **kw: venv.run_command(a, **kw))

    def stream(argv, env, cwd=None, on_output=None):
        """pip runs through command.stream (its output to the log as it comes): the fake sees pip's environment."""
        saved = dict(os.environ)
        os.environ.clear()
        os.environ.update(env)
        try:
            rc, out, err = venv.run_command(argv, expand_user_and_vars=False, cwd=cwd)
        finally:
            os.environ.clear()
            os.environ.update(saved)
        if on_output is not None:
            on_output(out + err)
        return rc, out, err
    monkeypatch.setattr(pip_constrained, "stream", stream)
    monkeypatch.setattr(basic.AnsibleModule, "warn", lambda self, w: self.__dict__.setdefault("_warnings", []).append(w))
    with patch_module_args(args):
        with pytest.raises(Exit) as info:
            pip_constrained.main()
    return info.value.result, isinstance(info.value, Failed)


def installer(venv, changes, rc=0, out="Successfully installed", err=""):
    def install(args):
        for name, version in changes.items():
            if version is None:
                venv.dists.pop(name, None)
            else:
                venv.add(name, version)
        return rc, out, err
    return install


def test_converged_venv_runs_no_pip(monkeypatch, venv, tmp_path):
    venv.add("torch", ROCM)
    result, failed = run_module(monkeypatch, venv, tmp_path, name=["torch==%s" % ROCM], index_url="http://x/simple")
    assert not failed and result["changed"] is False and result["satisfied"] is True
    assert venv.pip_calls() == [] and len(venv.calls) == 1 and venv.calls[0][1] == "-I"
    assert result["commands"] == [] and result["packaging_source"] == "module"


def test_cpu_torch_is_replaced_by_the_rocm_pin(monkeypatch, venv, tmp_path):
    venv.add("torch", "2.12.0+cpu")
    venv.add("pip", "23.2.1")
    venv.install = installer(venv, {"torch": ROCM})
    result, failed = run_module(monkeypatch, venv, tmp_path, diff=True, name=["torch==%s" % ROCM], pre=True,
                                index_url="http://x/simple")
    assert not failed and result["changed"] is True
    assert result["replaced"] == [{"name": "torch", "before": "2.12.0+cpu", "after": ROCM}]
    assert result["reasons"] == ["installed torch 2.12.0+cpu does not satisfy torch==%s" % ROCM]
    assert result["diff"] == {"before": "torch==2.12.0+cpu\n", "after": "torch==%s\n" % ROCM}
    install = venv.pip_calls()[-1]
    assert install[:4] == [venv.python, "-m", "pip", "install"] and "--dry-run" not in install
    assert install[-4:] == ["--index-url=http://x/simple", "--pre", "--", "torch==%s" % ROCM]
    assert len(venv.pip_calls()) == 1  # no forbid, not check mode: no dry-run
    assert result["pip_version"] == "23.2.1"


def test_changed_is_the_real_difference_not_pips_wording(monkeypatch, venv, tmp_path):
    venv.add("app", "1.0", requires=["helper"])
    venv.install = installer(venv, {}, out="Successfully installed app-1.0 helper-1.0")  # claims, changes nothing
    result, failed = run_module(monkeypatch, venv, tmp_path, name=["app"])
    assert not failed and result["reasons"] == ["helper (required by app 1.0) is not installed"]
    assert result["changed"] is False and result["added"] == []


def test_pip_runs_isolated_from_user_config_unless_asked(monkeypatch, venv, tmp_path):
    for key in [k for k in os.environ if k.startswith("PIP_")]:
        monkeypatch.delenv(key)   # this machine's own pip variables
    monkeypatch.setenv("PIP_FIND_LINKS", "/opt/wheels")
    monkeypatch.setenv("PIP_CONSTRAINT", "/etc/xdg/pip/constraints.txt")
    monkeypatch.setenv("PIP_CONFIG_FILE", "/home/user/.config/pip/pip.conf")
    venv.install = installer(venv, {"x": "1"})
    run_module(monkeypatch, venv, tmp_path, name=["x"], environment={"MAX_JOBS": 4, "PIP_NO_CACHE_DIR": "1"})
    env = venv.environs[1]
    assert "PIP_FIND_LINKS" not in env and "PIP_CONSTRAINT" not in env
    assert env["PIP_CONFIG_FILE"] == os.devnull and env["MAX_JOBS"] == "4" and env["PIP_NO_CACHE_DIR"] == "1"
    assert os.environ["PIP_FIND_LINKS"] == "/opt/wheels"  # the module's own environment is restored
    monkeypatch.delenv("PIP_FIND_LINKS")
    monkeypatch.delenv("PIP_CONSTRAINT")
    monkeypatch.setenv("PIP_PROXY", "http://proxy.example:3128")
    venv.dists.clear()
    venv.calls, venv.environs = [], []
    run_module(monkeypatch, venv, tmp_path, name=["x"], use_pip_config=True)
    assert venv.environs[1]["PIP_PROXY"] == "http://proxy.example:3128"
    assert venv.environs[1]["PIP_CONFIG_FILE"] == "/home/user/.config/pip/pip.conf"


@pytest.mark.parametrize("variable, value, inherited, why", [
    ("PIP_TARGET", "/tmp/elsewhere", False, "installs outside the venv"),
    ("PIP_PREFIX", "/usr/local", False, "installs outside the venv"),
    ("PIP_USER", "1", False, "installs outside the venv"),
    ("PIP_ROOT", "/", False, "installs outside the venv"),
    ("PIP_INDEX_URL", "https://evil.example/simple", False, "use the option index_url"),
    ("PIP_EXTRA_INDEX_URL", "https://evil.example/simple", False, "use the option extra_index_urls"),
    ("PIP_FIND_LINKS", "/opt/wheels", False, "use the option find_links"),
    ("PIP_CONSTRAINT", "/etc/c.txt", False, "use the option constraints"),
    ("PIP_CONFIG_FILE", "/home/user/pip.conf", False, "use_pip_config: true"),
    ("PIP_TARGET", "/tmp/elsewhere", True, "installs outside the venv"),
    ("PIP_INDEX_URL", "https://evil.example/simple", True, "use the option index_url"),
    ("PIP_NO_DEPS", "1", True, "use the option no_deps"),
])
def test_pip_variables_that_redirect_the_install_are_refused(monkeypatch, venv, tmp_path, variable, value,
                                                             inherited, why):
    for key in [k for k in os.environ if k.startswith("PIP_")]:
        monkeypatch.delenv(key)   # this machine's own pip variables
    venv.add("x", "1")
    if inherited:
        monkeypatch.setenv(variable, value)
        result, failed = run_module(monkeypatch, venv, tmp_path, name=["x"], use_pip_config=True)
    else:
        result, failed = run_module(monkeypatch, venv, tmp_path, name=["x"], environment={variable: value})
    assert failed and result["failure"] == "bad_request" and venv.calls == []
    assert variable in result["msg"] and value in result["msg"] and why in result["msg"]
    assert ("unset it" if inherited else "remove it from the task's environment") in result["msg"]


def test_check_mode_fresh_venv_returns_the_plan_and_installs_nothing(monkeypatch, venv, tmp_path):
    venv.add("pip", "23.2.1")
    venv.dry_run = (0, "Would install cuda-app-1.0 torch-%s" % ROCM, "",
                    report(("cuda-app", "1.0", True, ["torch"]), ("torch", ROCM, False, [])))
    result, failed = run_module(monkeypatch, venv, tmp_path, check_mode=True, diff=True, name=["cuda-app"])
    assert not failed and result["changed"] is True
    assert [(p["name"], p["action"]) for p in result["plan"]] == [("cuda-app", "install"), ("torch", "install")]
    assert result["added"] == [{"name": "cuda-app", "version": "1.0"}, {"name": "torch", "version": ROCM}]
    assert result["diff"] == {"before": "", "after": "cuda-app==1.0\ntorch==%s\n" % ROCM}
    assert [("--dry-run" in c) for c in venv.pip_calls()] == [True]


def test_check_mode_converged_runs_nothing(monkeypatch, venv, tmp_path):
    venv.add("cuda-app", "1.0", requires=["torch"])
    venv.add("torch", ROCM)
    result = run_module(monkeypatch, venv, tmp_path, check_mode=True, name=["cuda-app"], forbid=["nvidia-*"])[0]
    assert result["changed"] is False and venv.pip_calls() == []


def test_forbid_fails_before_installing(monkeypatch, venv, tmp_path):
    venv.dry_run = (0, "", "", report(("cuda-app", "1.0", True, ["torch"]), ("torch", "2.13.0", False, ["nvidia-cublas-cu12"]),
                                      ("nvidia-cublas-cu12", "12.1", False, [])))
    venv.install = lambda args: pytest.fail("pip install must not run")
    result, failed = run_module(monkeypatch, venv, tmp_path, name=["cuda-app"], forbid=["nvidia-*"])
    assert failed and result["failure"] == "forbidden"
    assert "nvidia-cublas-cu12 12.1 (forbidden by nvidia-*): required by torch 2.13.0, required by cuda-app 1.0" in result["msg"]
    assert "Nothing was installed" in result["msg"]
    assert result["forbidden"][0]["required_by"] == ["torch 2.13.0"]
    assert len(venv.pip_calls()) == 1


def test_forbidden_distribution_already_installed_fails_even_when_converged(monkeypatch, venv, tmp_path):
    venv.add("x", "1")
    venv.add("nvidia-nccl-cu12", "2.21")
    result, failed = run_module(monkeypatch, venv, tmp_path, name=["x"], forbid=["nvidia-*"])
    assert failed and "already installed in the venv" in result["msg"] and venv.pip_calls() == []


def test_conflict_fails_with_pips_reason_and_the_pinned_torch(monkeypatch, venv, tmp_path):
    cfile = tmp_path / "pip-constraints.txt"
    cfile.write_text("torch==%s\n" % ROCM)
    venv.add("torch", ROCM)
    venv.install = lambda args: (1, CONFLICT_OUT, CONFLICT_ERR)
    result, failed = run_module(monkeypatch, venv, tmp_path, name=["needs-new-torch"], constraints=[str(cfile)])
    assert failed and result["failure"] == "conflict" and result["rc"] == 1
    assert "needs-new-torch 1.0 depends on torch>=2.13" in result["msg"]
    assert ("would replace the pinned ROCm torch (torch==%s from %s)" % (ROCM, cfile)) in result["msg"]
    assert result["msg"].endswith("The venv is unchanged.")
    assert result["changed"] is False
    assert "--constraint=%s" % cfile in result["cmd"]
    assert "ResolutionImpossible" in result["stderr"]
    assert [c[1] for c in venv.calls] == ["-I", "-m", "-I"]  # probe, pip, probe again to prove nothing moved


def test_failed_install_that_changed_something_says_so(monkeypatch, venv, tmp_path):
    venv.install = installer(venv, {"half": "1.0"}, rc=1, out="", err="ERROR: boom\n")
    result, failed = run_module(monkeypatch, venv, tmp_path, name=["half", "other"])
    assert failed and result["changed"] is True and "The venv changed anyway: 1 added." in result["msg"]
    assert result["failure"] == "pip_error" and "ERROR: boom" in result["msg"]


def test_build_failure_shows_the_builds_output(monkeypatch, venv, tmp_path):
    err = "  \u2570\u2500> [2 lines of output]\n      running build\n      hipcc: not found\n      [end of output]\n" \
          "error: subprocess-exited-with-error\n"
    venv.install = lambda args: (1, "", err)
    result, failed = run_module(monkeypatch, venv, tmp_path, name=["x"])
    assert failed and result["failure"] == "build_failed" and "running build | hipcc: not found" in result["msg"]


def test_log_path_gets_the_full_output_but_not_in_check_mode(monkeypatch, venv, tmp_path):
    log = tmp_path / "logs" / "torch.log"
    venv.install = installer(venv, {"x": "1"}, out="line1\nline2\n")
    run_module(monkeypatch, venv, tmp_path, name=["x"], log_path=str(log))
    text = log.read_text()
    assert "pip_constrained: %s -m pip install" % venv.python in text and "line1\nline2\n### rc=0" in text
    venv.dists.clear()
    venv.dry_run = (0, "dry\n", "", report(("x", "1", True, [])))
    run_module(monkeypatch, venv, tmp_path, check_mode=True, name=["x"], log_path=str(log))
    assert log.read_text() == text


def test_resolver_warning_becomes_a_module_warning(monkeypatch, venv, tmp_path):
    out = ("Successfully installed torch-2.13.0\nERROR: pip's dependency resolver does not currently take into account "
           "all the packages that are installed. This behaviour is the source of the following dependency conflicts.\n"
           "old-app 1.0 requires torch<2.13, but you have torch 2.13.0 which is incompatible.\n")
    venv.install = installer(venv, {"torch": "2.13.0"}, out=out)
    result, failed = run_module(monkeypatch, venv, tmp_path, name=["torch==2.13.0"])
    assert not failed and any("old-app 1.0 requires torch<2.13" in w for w in result["warnings"])


def test_an_expected_conflict_is_returned_and_logged_not_warned(monkeypatch, venv, tmp_path):
    out = ("ERROR: pip's dependency resolver does not currently take into account all the packages that are installed. "
           "This behaviour is the source of the following dependency conflicts.\n"
           "amd-aiter 0.1.7 requires flydsl==0.1.7, but you have flydsl 0.2.4 which is incompatible.\n"
           "Successfully installed flydsl-0.2.4\n")
    log = tmp_path / "logs" / "turbo.log"
    venv.install = installer(venv, {"flydsl": "0.2.4"}, out=out)
    result, failed = run_module(monkeypatch, venv, tmp_path, name=["flydsl==0.2.4"], log_path=str(log),
                                expected_conflicts=["amd-aiter"])
    line = "amd-aiter 0.1.7 requires flydsl==0.1.7, but you have flydsl 0.2.4 which is incompatible."
    assert not failed and not [w for w in result.get("warnings", []) if "flydsl" in w], result.get("warnings")
    assert result["expected_conflicts"] == [line]
    assert line + "\n" in log.read_text() and "expected conflicts (expected_conflicts): " + line in log.read_text()


@pytest.mark.parametrize("name", ["amd aiter", "-r", "aiter==1", ""])
def test_expected_conflicts_takes_distribution_names_only(monkeypatch, venv, tmp_path, name):
    venv.add("x", "1")
    result, failed = run_module(monkeypatch, venv, tmp_path, name=["x"], expected_conflicts=["ok", name])
    assert failed and result["failure"] == "bad_request" and venv.calls == []
    assert result["msg"].startswith("expected_conflicts[1]: %r is not a distribution name" % name), result["msg"]


def test_absent_with_patterns(monkeypatch, venv, tmp_path):
    for name in ("quack-kernels", "nvidia-cutlass-dsl", "nvidia-cutlass-dsl-libs-base", "torch"):
        venv.add(name, "1.0")
    result = run_module(monkeypatch, venv, tmp_path, check_mode=True, diff=True, state="absent",
                        name=["quack-kernels*", "nvidia-cutlass-dsl*", "tilelang"])[0]
    assert result["changed"] is True and venv.pip_calls() == []
    assert [r["name"] for r in result["removed"]] == ["nvidia-cutlass-dsl", "nvidia-cutlass-dsl-libs-base", "quack-kernels"]
    assert result["diff"]["after"] == ""
    result = run_module(monkeypatch, venv, tmp_path, state="absent", name=["quack-kernels*", "nvidia-cutlass-dsl*"])[0]
    assert result["changed"] is True
    assert venv.pip_calls()[-1][-3:] == ["nvidia-cutlass-dsl", "nvidia-cutlass-dsl-libs-base", "quack-kernels"]
    assert sorted(venv.dists) == ["torch"]
    calls = len(venv.calls)
    result = run_module(monkeypatch, venv, tmp_path, state="absent", name=["quack-kernels*", "nvidia-cutlass-dsl*"])[0]
    assert result["changed"] is False and len(venv.calls) == calls + 1  # only the probe


def test_forcereinstall_reports_reinstalled_distributions(monkeypatch, venv, tmp_path):
    venv.add("x", "1.0")

    def reinstall(args):
        venv.dists["x"][4] = 2  # a new .dist-info directory
        return 0, "Successfully installed x-1.0", ""
    venv.install = reinstall
    result, failed = run_module(monkeypatch, venv, tmp_path, name=["x==1.0"], state="forcereinstall")
    assert not failed and result["changed"] is True and result["reinstalled"] == ["x"]
    assert "--force-reinstall" in result["cmd"]


def test_src_with_explicit_identity_is_idempotent(monkeypatch, venv, tmp_path):
    src = tmp_path / "Primus-Turbo"
    src.mkdir()
    (src / "setup.py").write_text("raise SystemExit('must not run')\n")
    from_src = {"url": "file://%s" % src, "dir_info": {}}
    venv.add("primus-turbo", "0.2.0+edc8d2c", direct_url=from_src)
    result, failed = run_module(monkeypatch, venv, tmp_path, src=str(src), name=["primus_turbo==0.2.0+edc8d2c"],
                                no_deps=True, no_build_isolation=True)
    assert not failed and result["changed"] is False and venv.pip_calls() == []
    assert result["src_project"] == {"name": "primus-turbo", "version": "0.2.0+edc8d2c", "source": "name"}
    venv.add("primus-turbo", "0.2.0+0ld")
    venv.install = installer(venv, {"primus-turbo": "0.2.0+edc8d2c"})
    result, failed = run_module(monkeypatch, venv, tmp_path, src=str(src), name=["primus_turbo==0.2.0+edc8d2c"],
                                no_deps=True, no_build_isolation=True)
    assert result["changed"] is True and venv.pip_calls()[-1][-1] == str(src)
    assert "primus_turbo==0.2.0+edc8d2c" not in venv.pip_calls()[-1]  # name describes src; not passed to pip


def test_src_dynamic_metadata_asks_pip_offline_once(monkeypatch, venv, tmp_path):
    src = tmp_path / "proj"
    src.mkdir()
    (src / "setup.py").write_text("")
    venv.add("proj", "1.0+abc", direct_url={"url": "file://%s" % src, "dir_info": {}})
    venv.dry_run = (0, "", "", report(("proj", "1.0+abc", True, [])))
    result, failed = run_module(monkeypatch, venv, tmp_path, src=str(src), no_build_isolation=True,
                                index_url="http://x/simple")
    assert not failed and result["changed"] is False
    assert result["src_project"] == {"name": "proj", "version": "1.0+abc", "source": "pip-metadata"}
    (call,) = venv.pip_calls()
    assert "--no-index" in call and "--no-deps" in call and "--index-url" not in call and call[-1] == str(src)


def test_packaging_from_the_venvs_pip_when_the_module_python_lacks_it(monkeypatch, venv, tmp_path):
    for name in [n for n in sys.modules if n == "packaging" or n.startswith("packaging.")]:
        monkeypatch.delitem(sys.modules, name)
    for name in ("packaging", "packaging.version", "packaging.specifiers", "packaging.requirements",
                 "packaging.markers", "packaging.utils"):
        monkeypatch.setitem(sys.modules, name, None)
    venv.site = PIP_SITE
    venv.add("torch", "2.12.0+cpu")
    venv.install = installer(venv, {"torch": ROCM})
    result, failed = run_module(monkeypatch, venv, tmp_path, name=["torch==%s" % ROCM])
    assert not failed and result["packaging_source"].endswith(os.path.join("pip", "_vendor", "packaging"))
    assert result["changed"] is True and result["replaced"][0]["after"] == ROCM


def test_missing_venv(monkeypatch, tmp_path):
    venv = FakeVenv(str(tmp_path / "v"))
    os.remove(venv.python)
    result, failed = run_module(monkeypatch, venv, tmp_path, name=["x"])
    assert failed and "create the venv first" in result["msg"]
    result, failed = run_module(monkeypatch, venv, tmp_path, check_mode=True, name=["x"])
    assert not failed and result["changed"] is True and "does not exist" in result["warnings"][0]
    result, failed = run_module(monkeypatch, venv, tmp_path, state="absent", name=["x"])
    assert not failed and result["changed"] is False


def test_bad_requirement_is_a_clean_failure(monkeypatch, venv, tmp_path):
    result, failed = run_module(monkeypatch, venv, tmp_path, name=["torch["])
    assert failed and result["failure"] == "bad_request" and "name[0]: invalid requirement" in result["msg"]


def test_old_pip_cannot_plan_and_says_how_to_fix(monkeypatch, venv, tmp_path):
    venv.add("pip", "22.0.2")  # what an Ubuntu 22.04 python3.10 venv starts with
    result, failed = run_module(monkeypatch, venv, tmp_path, name=["x"], forbid=["nvidia-*"])
    assert failed and result["failure"] == "pip_too_old" and "pip>=22.2" in result["msg"]
    assert venv.pip_calls() == []
    venv.install = installer(venv, {"pip": "23.2.1"})
    result, failed = run_module(monkeypatch, venv, tmp_path, name=["pip>=22.2"])
    assert not failed and result["upgraded"] == [{"name": "pip", "before": "22.0.2", "after": "23.2.1"}]


def test_relative_paths_follow_chdir(monkeypatch, venv, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / "requirements.txt").write_text("einops\n")
    (work / "c.txt").write_text("torch==%s\n" % ROCM)
    venv.install = installer(venv, {"einops": "0.8.1"})
    result, failed = run_module(monkeypatch, venv, tmp_path, requirements="requirements.txt", constraints=["c.txt"],
                                chdir=str(work))
    assert not failed and result["added"] == [{"name": "einops", "version": "0.8.1"}]
    cmd = venv.pip_calls()[-1]
    assert "--requirement=%s" % (work / "requirements.txt") in cmd and "--constraint=%s" % (work / "c.txt") in cmd


NOT_FOUND = ("ERROR: Could not find a version that satisfies the requirement einops (from versions: none)\n"
             "ERROR: No matching distribution found for einops\n")


def fetch_failure(reason, host="idx.example"):
    return ("2026-12-02T17:33:52,330 Could not fetch URL https://ci:****@%s/simple/einops/: %s - skipping\n"
            % (host, reason))


def test_a_directory_that_is_not_a_venv_is_refused_before_anything_runs(monkeypatch, venv, tmp_path):
    os.remove(os.path.join(venv.root, "pyvenv.cfg"))
    for state in ("present", "absent"):
        result, failed = run_module(monkeypatch, venv, tmp_path, name=["einops"], state=state)
        assert failed and result["failure"] == "not_a_venv" and "has no pyvenv.cfg" in result["msg"]
    assert venv.calls == []


@pytest.mark.parametrize("args", [{"name": ["--target=/tmp/x"]}, {"name": ["-r/etc/passwd"]},
                                  {"name": ["einops"], "extra_args": ["--prefix=/usr"]},
                                  {"name": ["*"], "state": "absent"}, {"name": ["pip"], "state": "absent"},
                                  {"name": ["einops"], "index_url": "--target=/x"}])
def test_injection_and_absent_guards_never_start_pip(monkeypatch, venv, tmp_path, args):
    venv.add("pip", "26.3")
    result, failed = run_module(monkeypatch, venv, tmp_path, **args)
    assert failed and result["failure"] == "bad_request"
    assert venv.pip_calls() == [] and result["commands"] == []


def test_transient_failures_are_retried_with_backoff_and_logged(monkeypatch, venv, tmp_path):
    log = tmp_path / "logs" / "pydeps.log"
    attempts = []

    def install(args):
        attempts.append(args)
        if len(attempts) < 3:
            return 1, NOT_FOUND, ""
        venv.add("einops", "0.8.1")
        return 0, "Successfully installed einops-0.8.1", ""
    venv.install = install
    venv.debug = [fetch_failure("HTTPConnectionPool(host='idx.example', port=443): Max retries exceeded with url: "
                                "/simple/einops/ (Caused by ResponseError('too many 503 error responses'))")] * 2 + [""]
    sleeps = []
    monkeypatch.setattr(pip_constrained.time, "sleep", sleeps.append)
    result, failed = run_module(monkeypatch, venv, tmp_path, name=["einops"], retry_delay=2.5, log_path=str(log))
    assert not failed and result["added"] == [{"name": "einops", "version": "0.8.1"}]
    assert sleeps == [2.5, 5.0] and [r["status"] for r in result["retried"]] == [503, 503]
    assert all("--retries" in a and a[a.index("--retries") + 1] == "0" for a in attempts)
    text = log.read_text()
    assert "attempt 1 of 4 failed [http 503] idx.example; retrying in 2.5 s" in text
    assert "pip debug: 2026-12-02T17:33:52,330 Could not fetch URL" in text


def test_a_dns_failure_is_not_retried_and_names_host_and_fix(monkeypatch, venv, tmp_path):
    venv.install = lambda args: (1, NOT_FOUND, "")
    venv.debug = fetch_failure("connection error: Failed to resolve IP address for 'idx.example' ([Errno -2] Name or "
                               "service not known)")
    monkeypatch.setattr(pip_constrained.time, "sleep", lambda s: pytest.fail("no retry for dns"))
    result, failed = run_module(monkeypatch, venv, tmp_path, name=["einops"], index_url="https://ci:tok@idx.example/s")
    assert failed and result["failure"] == "dns" and result["failure_detail"]["host"] == "idx.example"
    first = result["msg"].splitlines()[0]
    assert first.startswith("pip install failed: [dns] idx.example") and "primus_pip_use_config: true" in first


def test_credentials_are_redacted_everywhere(monkeypatch, venv, tmp_path):
    log = tmp_path / "pip.log"
    token = "s3cr3t-t0ken-value"
    venv.install = lambda args: (1, "Looking in indexes: https://ci:****@idx.example/simple\n" + NOT_FOUND,
                                 "echo https://ci:%s@idx.example/simple\n" % token)
    venv.debug = fetch_failure("404 Client Error: Not Found for url: https://idx.example/simple/einops/")
    result, failed = run_module(monkeypatch, venv, tmp_path, name=["einops"], log_path=str(log),
                                index_url="https://ci:%s@idx.example/simple" % token,
                                environment={"PIP_PROXY": "https://x:%s-2@proxy.example:3128" % token})
    assert failed and result["failure"] == "not_found"
    blob = json.dumps(result) + log.read_text()
    assert token not in blob and "https://ci:****@idx.example/simple" in " ".join(result["cmd"])
    assert stat.S_IMODE(os.stat(str(log)).st_mode) == 0o640


def test_an_existing_log_loses_permissions_for_others(monkeypatch, venv, tmp_path):
    log = tmp_path / "old.log"
    log.write_text("old\n")
    os.chmod(str(log), 0o666)
    venv.install = installer(venv, {"x": "1"})
    run_module(monkeypatch, venv, tmp_path, name=["x"], log_path=str(log))
    assert stat.S_IMODE(os.stat(str(log)).st_mode) == 0o640 and log.read_text().startswith("old\n")


def test_check_mode_without_the_venv_and_without_plan_python_is_an_inexact_plan(monkeypatch, tmp_path):
    missing = FakeVenv(str(tmp_path / "v"))
    os.remove(missing.python)
    os.remove(os.path.join(missing.root, "pyvenv.cfg"))
    os.rmdir(os.path.dirname(missing.python))
    os.rmdir(missing.root)
    result, failed = run_module(monkeypatch, missing, tmp_path, check_mode=True, diff=True,
                                name=["torch==%s" % ROCM, "einops"])
    assert not failed and result["changed"] is True and result["plan_exact"] is False
    assert [(p["name"], p["version"]) for p in result["plan"]] == [("einops", None), ("torch", ROCM)]
    assert result["diff"]["after"] == "einops  # version decided when the task runs\ntorch==%s\n" % ROCM
    assert any("no plan_python is given" in w for w in result["warnings"]) and missing.calls == []


def test_prior_changes_turn_an_unresolvable_dry_run_into_an_inexact_plan(monkeypatch, venv, tmp_path):
    venv.add("pip", "26.3")
    venv.dry_run = (1, NOT_FOUND.replace("einops", "cxxfilt"), "", None)
    result, failed = run_module(monkeypatch, venv, tmp_path, check_mode=True, name=["apex"], prior_changes=True)
    assert not failed and result["plan_exact"] is False and result["plan"][0]["requirement"] == "apex"
    (warning,) = [w for w in result["warnings"] if "check mode" in w]
    assert "earlier tasks of this run would change it first" in warning
    assert "No matching distribution found for cxxfilt" in warning
    result, failed = run_module(monkeypatch, venv, tmp_path, check_mode=True, name=["apex"])
    assert failed and result["failure"] == "not_found"


def test_requirements_file_variables_come_from_the_tasks_environment(monkeypatch, venv, tmp_path):
    monkeypatch.setenv("ALPHA_VERSION", "9.9")   # the module's own environment: pip never sees it
    (tmp_path / "r.txt").write_text("alpha==${ALPHA_VERSION}\n")
    venv.add("alpha", "1.1")
    result, failed = run_module(monkeypatch, venv, tmp_path, requirements=str(tmp_path / "r.txt"),
                                environment={"ALPHA_VERSION": "1.1"})
    assert not failed and result["satisfied"] is True and venv.pip_calls() == []


# ---- wheel_dir -----------------------------------------------------------------------------------

@pytest.mark.parametrize("args, words", [
    ({"state": "absent"}, "wheel_dir cannot be used with state=absent"),
    ({"state": "forcereinstall"}, "wheel_dir cannot be used with state=forcereinstall"),
    ({"src": None, "name": ["x==1", "y==2"]}, "wheel_dir needs src, or name with exactly one pinned requirement"),
    ({"src": None}, "wheel_dir needs src, or name with exactly one pinned requirement (got 0 entries)"),
    ({"requirements": "r.txt"}, "requirements would be ignored"),
])
def test_wheel_dir_refusals_run_nothing(monkeypatch, venv, tmp_path, args, words):
    full = dict({"src": str(tmp_path), "wheel_dir": str(tmp_path / "wheels")}, **args)
    result, failed = run_module(monkeypatch, venv, tmp_path, **full)
    assert failed and result["failure"] == "bad_request" and words in result["msg"]
    assert venv.calls == [] and not (tmp_path / "wheels").exists()


def wheel_builder(venv, files, rc=0, change=None):
    """pip wheel writing `files` into its --wheel-dir (and, with change, installing into the venv)."""
    def build(args):
        assert args[3] == "wheel"
        scratch = [a for a in args if a.startswith("--wheel-dir=")][0].split("=", 1)[1]
        venv.scratch = scratch
        for name in files:
            open(os.path.join(scratch, name), "w").close()
        if change:
            venv.add(*change)
        return rc, "Successfully built x\n" if rc == 0 else "", "" if rc == 0 else "ERROR: boom\n"
    return build


def test_wheel_dir_moves_the_wheel_out_of_a_private_scratch_dir(monkeypatch, venv, tmp_path):
    wheel_dir = tmp_path / "base" / "wheels"
    (wheel_dir.parent).mkdir()
    (tmp_path / "src").mkdir()
    venv.install = wheel_builder(venv, ["x-1.0-py3-none-any.whl"])
    result, failed = run_module(monkeypatch, venv, tmp_path, src=str(tmp_path / "src"), wheel_dir=str(wheel_dir),
                                environment={"GPU_ARCHS": "gfx942"})
    assert not failed, result.get("msg")
    assert result["changed"] is True and result["wheels"] == [str(wheel_dir / "x-1.0-py3-none-any.whl")]
    assert os.listdir(str(wheel_dir)) == ["x-1.0-py3-none-any.whl"]
    assert os.path.dirname(venv.scratch) == str(wheel_dir) and os.path.basename(venv.scratch).startswith(".")
    assert stat.S_IMODE(os.stat(str(wheel_dir)).st_mode) == 0o755
    (pip_call,) = venv.pip_calls()
    assert venv.environs[venv.calls.index(pip_call)]["GPU_ARCHS"] == "gfx942"
    assert [c[1] for c in venv.calls] == ["-I", "-m", "-I"]   # probe, pip wheel, probe: the venv did not move


def test_wheel_dir_fails_and_keeps_no_wheel_when_the_build_installed_something(monkeypatch, venv, tmp_path):
    (tmp_path / "src").mkdir()
    venv.install = wheel_builder(venv, ["x-1.0-py3-none-any.whl"], change=("sneaky", "1.0"))
    result, failed = run_module(monkeypatch, venv, tmp_path, src=str(tmp_path / "src"),
                                wheel_dir=str(tmp_path / "wheels"))
    assert failed and result["failure"] == "build_failed" and result["changed"] is True
    assert "changed the venv" in result["msg"] and "1 added" in result["msg"]
    assert os.listdir(str(tmp_path / "wheels")) == []


def test_wheel_dir_with_a_missing_src_is_refused_before_pip(monkeypatch, venv, tmp_path):
    result, failed = run_module(monkeypatch, venv, tmp_path, src=str(tmp_path / "nope"),
                                wheel_dir=str(tmp_path / "wheels"))
    assert failed and "is not a directory" in result["msg"] and venv.pip_calls() == []


# ---- wheel_dir with name: a wheel of one pinned requirement (an sdist-only pin) --------------------

def test_wheel_dir_builds_one_pinned_requirement_after_the_double_dash(monkeypatch, venv, tmp_path):
    wheel_dir = tmp_path / "cache" / "wheels" / "tensorstore" / "k1"
    venv.install = wheel_builder(venv, ["tensorstore-0.1.45-cp312-cp312-linux_x86_64.whl"])
    result, failed = run_module(monkeypatch, venv, tmp_path, name=["tensorstore==0.1.45"], wheel_dir=str(wheel_dir),
                                index_url="http://127.0.0.1:9/simple")
    assert not failed, result.get("msg")
    assert result["wheels"] == [str(wheel_dir / "tensorstore-0.1.45-cp312-cp312-linux_x86_64.whl")]
    (pip_call,) = venv.pip_calls()
    assert pip_call[3] == "wheel" and "--no-deps" in pip_call and "--index-url=http://127.0.0.1:9/simple" in pip_call
    assert pip_call[-2:] == ["--", "tensorstore==0.1.45"]
    assert [c[1] for c in venv.calls] == ["-I", "-m", "-I"]   # the venv was read before and after, nothing installed


@pytest.mark.parametrize("name", ["tensorstore", "tensorstore>=0.1.45", "tensorstore==0.1.*",
                                  "tensorstore==0.1.45,!=0.1.46", "tensorstore==0.1.45; python_version > '3'"])
def test_wheel_dir_refuses_a_requirement_that_is_not_one_pin_before_pip(monkeypatch, venv, tmp_path, name):
    result, failed = run_module(monkeypatch, venv, tmp_path, name=[name], wheel_dir=str(tmp_path / "wheels"))
    assert failed and result["failure"] == "bad_request" and "name[0]" in result["msg"]
    assert venv.pip_calls() == [] and not (tmp_path / "wheels").exists()


def test_wheel_dir_refuses_an_option_as_the_requirement(monkeypatch, venv, tmp_path):
    result, failed = run_module(monkeypatch, venv, tmp_path, name=["--index-url=http://evil/simple"],
                                wheel_dir=str(tmp_path / "wheels"))
    assert failed and result["failure"] == "bad_request" and 'starts with "-"' in result["msg"]
    assert venv.pip_calls() == []


def test_wheel_dir_keeps_no_wheel_of_another_distribution_or_version(monkeypatch, venv, tmp_path):
    venv.install = wheel_builder(venv, ["tensorstore-0.1.78-cp312-cp312-linux_x86_64.whl"])
    result, failed = run_module(monkeypatch, venv, tmp_path, name=["tensorstore==0.1.45"],
                                wheel_dir=str(tmp_path / "wheels"))
    assert failed and "tensorstore-0.1.78" in result["msg"] and "not tensorstore 0.1.45" in result["msg"]
    assert os.listdir(str(tmp_path / "wheels")) == []


def test_wheel_dir_check_mode_plans_the_requirement_and_runs_no_pip(monkeypatch, venv, tmp_path):
    result, failed = run_module(monkeypatch, venv, tmp_path, check_mode=True, name=["Tensorstore==0.1.45"],
                                wheel_dir=str(tmp_path / "wheels"))
    assert not failed and result["changed"] is True and result["wheels"] == []
    (entry,) = result["plan"]
    assert (entry["name"], entry["version"], entry["action"], entry["src"]) == ("tensorstore", "0.1.45", "build", None)
    assert "Tensorstore==0.1.45" in result["reasons"][0]
    assert venv.pip_calls() == [] and not (tmp_path / "wheels").exists()


def test_after_a_dry_run_pip_installs_exactly_the_planned_files_without_a_second_resolve(monkeypatch, venv, tmp_path):
    venv.add("pip", "23.2.1")
    venv.dry_run = (0, "", "", report(("app", "1.0", True, ["helper"]), ("helper", "2.0", False, [])))
    seen = {}

    def install(args):
        page = [a for a in args if a.startswith("--find-links=")][0].split("=", 1)[1]
        with open(page) as handle:
            seen["page"] = handle.read()
        seen["mode"] = stat.S_IMODE(os.stat(page).st_mode)
        venv.add("app", "1.0")
        venv.add("helper", "2.0")
        return 0, "Successfully installed app-1.0 helper-2.0", ""
    venv.install = install
    result, failed = run_module(monkeypatch, venv, tmp_path, name=["app"], forbid=["nvidia-*"],
                                index_url="http://u:secret@i/simple")
    assert not failed and result["changed"] is True and result["install_mode"] == "plan"
    dry, inst = venv.pip_calls()
    assert "--dry-run" in dry and "--dry-run" not in inst
    assert "--no-index" in inst and "--no-deps" in inst and not any(a.startswith("--index-url") for a in inst)
    assert inst[inst.index("--") + 1:] == ["app==1.0", "helper==2.0"]
    assert 'href="http://u:secret@i/app-1.0.whl"' in seen["page"] and seen["mode"] == 0o600
    assert "secret" not in json.dumps(result)


def test_with_pip_configuration_the_install_resolves_again(monkeypatch, venv, tmp_path):
    for key in [k for k in os.environ if k.startswith("PIP_")]:
        monkeypatch.delenv(key)
    venv.add("pip", "23.2.1")
    venv.dry_run = (0, "", "", report(("app", "1.0", True, [])))
    venv.install = installer(venv, {"app": "1.0"})
    result, failed = run_module(monkeypatch, venv, tmp_path, name=["app"], forbid=["nvidia-*"], use_pip_config=True,
                                index_url="http://i/simple")
    assert not failed and result["install_mode"] == "resolve"
    assert venv.pip_calls()[-1][-2:] == ["--", "app"] and "--index-url=http://i/simple" in venv.pip_calls()[-1]


def test_a_dry_run_that_plans_nothing_runs_no_install(monkeypatch, venv, tmp_path):
    venv.add("pip", "23.2.1")
    venv.add("app", "1.0", requires=["helper"])   # helper missing offline; pip finds nothing to do
    venv.dry_run = (0, "", "", report())
    venv.install = lambda args: pytest.fail("pip install must not run")
    result, failed = run_module(monkeypatch, venv, tmp_path, name=["app"], forbid=["nvidia-*"])
    assert not failed and result["changed"] is False and len(venv.pip_calls()) == 1


@pytest.mark.parametrize("option", ["-r", "-c"])
def test_a_file_the_requirements_include_is_never_quoted(monkeypatch, venv, tmp_path, option):
    """-r/-c of a file the task does not name (here the user's own, so it is read; /etc/shadow for root): the refusal
    names the file, the line and what is wrong; no line of it reaches the result or the log, and pip never runs."""
    secret = tmp_path / "secret.txt"
    secret.write_text("root:$6$SECRETSALT42$hash:19000:0:99999:7:::\n")
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("einops\n%s %s\n" % (option, secret))
    log = tmp_path / "logs" / "primus.log"
    result, failed = run_module(monkeypatch, venv, tmp_path, requirements=str(requirements), log_path=str(log))
    assert failed and result["failure"] == "bad_request" and result["commands"] == [], result
    assert result["msg"].startswith("%s:1: not a valid requirement" % secret), result["msg"]
    everything = json.dumps(result) + (log.read_text() if log.exists() else "")
    assert "SECRETSALT42" not in everything and "root:" not in everything
    assert venv.pip_calls() == []


def test_a_file_of_another_user_is_not_included(monkeypatch, venv, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("a file of another user is made by root only")
    theirs = tmp_path / "theirs.txt"
    theirs.write_text("hunter2-secret-name\n")   # a valid requirement name: read, pip would print it
    os.chown(str(theirs), 65534, 65534)
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("-r %s\n" % theirs)
    result, failed = run_module(monkeypatch, venv, tmp_path, requirements=str(requirements))
    assert failed and result["failure"] == "bad_request", result
    assert "%s:1: the file it includes, %s, is owned by " % (requirements, theirs) in result["msg"]
    assert "hunter2" not in json.dumps(result) and venv.pip_calls() == []
