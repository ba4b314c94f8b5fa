"""pip failures classified from pip's real output (pip 26.3 console and its --log debug lines)."""
import pytest

from ansible_collections.primus.trainenv.plugins.module_utils._pip.failure import advice, classify, compiler_error, host_of

NOT_FOUND = ("ERROR: Could not find a version that satisfies the requirement einops (from versions: none)\n"
             "ERROR: No matching distribution found for einops\n")


def debug(reason, url="http://user:****@127.0.0.1:38771/simple/einops/"):
    """A line of pip's --log file as pip 26.3 writes it for an index page it could not read."""
    return ("2026-12-02T17:33:52,326 Fetching project page and analyzing links: %s\n"
            "2026-12-02T17:33:52,330 Could not fetch URL %s: %s - skipping\n" % (url, url, reason))


# Each: console, debug log, class, host, status, transient. All captured from real pip 26.3 runs
# against a fault-injecting loopback server (tests/functional/test_pip_faults.py runs the same live).
CASES = [
    ("refused", NOT_FOUND, debug("connection error: [Errno 111] Connection refused", "http://user:****@127.0.0.1:9/simple/einops/"),
     "refused", "127.0.0.1:9", None, False),
    ("dns", NOT_FOUND, debug("connection error: Failed to resolve IP address for 'nonexistent.invalid' ([Errno -2] Name "
                             "or service not known)", "https://user:****@nonexistent.invalid/simple/einops/"),
     "dns", "nonexistent.invalid", None, False),
    ("503", NOT_FOUND, debug("HTTPConnectionPool(host='127.0.0.1', port=38771): Max retries exceeded with url: "
                             "/simple/einops/ (Caused by ResponseError('too many 503 error responses'))"),
     "http", "127.0.0.1:38771", 503, True),
    ("404 is not found", NOT_FOUND, debug("404 Client Error: Not Found for url: http://127.0.0.1:38771/simple/einops/"),
     "not_found", "127.0.0.1:38771", 404, False),
    ("tls", NOT_FOUND, debug("There was a problem confirming the ssl certificate: [SSL: WRONG_VERSION_NUMBER] wrong "
                             "version number (_ssl.c:1000)", "https://127.0.0.1:38771/simple/einops/"),
     "tls", "127.0.0.1:38771", None, False),
    ("reset with pip's own retries", "WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, "
     "status=None)) after connection broken by 'ConnectionResetError(104, 'Connection reset by peer')': "
     "/simple/einops/\n" + NOT_FOUND, "", "reset", "pypi.example", None, True),
    ("read timeout", "WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) after "
     "connection broken by 'ReadTimeoutError(\"HTTPConnectionPool(host='127.0.0.1', port=38771): Read timed out. "
     "(read timeout=2.0)\")': /simple/einops/\n" + NOT_FOUND, "", "timeout", "127.0.0.1:38771", None, True),
    ("file download 503", "Collecting einops==0.8.1\nERROR: Could not install packages due to an OSError: "
     "HTTPConnectionPool(host='127.0.0.1', port=38771): Max retries exceeded with url: "
     "/files/einops-0.8.1-py3-none-any.whl (Caused by ResponseError('too many 503 error responses'))\n", "",
     "http", "127.0.0.1:38771", 503, True),
    ("file download refused", "Collecting einops==0.8.0\nerror: connection-failed\n\n\u00d7 Failed to connect to "
     "127.0.0.1 while fetching http://127.0.0.1:9/files/einops-0.8.0-py3-none-any.whl\n\u2570\u2500> [Errno 111] "
     "Connection refused\n\nhint: Are you connected to the Internet?\n", "", "refused", "127.0.0.1:9", None, False),
    ("file download reset", "error: connection-failed\n\n\u00d7 Failed to connect to 127.0.0.1 while fetching "
     "http://127.0.0.1:38771/files/einops-0.8.1-py3-none-any.whl\n\u2570\u2500> the connection was closed without a "
     "reply from the server.\n", "", "reset", "127.0.0.1:38771", None, True),
    ("urllib3 2 NameResolutionError", "WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None, "
     "status=None)) after connection broken by 'NameResolutionError(\"<pip._vendor.urllib3.connection.HTTPSConnection "
     "object at 0x7f>: Failed to resolve 'pypi.org' ([Errno -3] Temporary failure in name resolution)\")': "
     "/simple/einops/\n" + NOT_FOUND, "", "dns", "pypi.org", None, False),
    ("http error while getting", "HTTP error 503 while getting https://files.example/x-1.0.whl\n", "",
     "http", "files.example", 503, True),
    ("plain not found", NOT_FOUND, "", "not_found", "pypi.example", None, False),
]


@pytest.mark.parametrize("console, log, category, host, status, transient", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_real_failures_are_classified_with_their_host(console, log, category, host, status, transient):
    failure = classify(console, log, default_host="pypi.example")
    assert (failure.category, failure.host, failure.status, failure.transient) == (category, host, status, transient)
    assert failure.decisive and "2026-12-02T" not in failure.decisive and not failure.decisive.endswith("skipping")


def test_a_network_failure_of_another_project_does_not_hide_not_found():
    # einops is simply not on the index; the extra index being down concerns another project.
    log = debug("connection error: [Errno 111] Connection refused", "http://127.0.0.1:9/simple/torch/") + \
        debug("404 Client Error: Not Found for url: http://127.0.0.1:38771/simple/einops/")
    failure = classify(NOT_FOUND, log)
    assert failure.category == "not_found" and failure.host == "127.0.0.1:38771"


@pytest.mark.parametrize("console, category", [
    ("ERROR: ResolutionImpossible: for help visit https://pip.pypa.io/\n", "conflict"),
    ("  error: subprocess-exited-with-error\nerror: metadata-generation-failed\n", "build_failed"),
    ("ERROR: THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE.\n", "hash_mismatch"),
    ("ERROR: Could not open requirements file: [Errno 2] No such file or directory: 'r.txt'\n", "not_installable"),
    ("/v/bin/python: No module named pip\n", "no_pip"),
    ("ERROR: something new\n", "pip_error"),
])
def test_other_failures(console, category):
    failure = classify(console)
    assert failure.category == category and not failure.transient


def test_host_of_strips_credentials():
    assert host_of("Could not fetch URL https://user:****@idx.example:8443/simple/x/: 503") == "idx.example:8443"
    assert host_of("HTTPConnectionPool(host='10.0.0.1', port=3128): Max retries") == "10.0.0.1:3128"
    assert host_of("nothing here") is None


@pytest.mark.parametrize("category, status, words", [
    ("dns", None, ["[dns] idx.example", "primus_pip_use_config: true", "DNS"]),
    ("refused", None, ["[refused] idx.example", "index down", "primus_pip_use_config: true"]),
    ("reset", None, ["[reset] idx.example", "(4 attempts)"]),
    ("timeout", None, ["[timeout] idx.example", "(4 attempts)"]),
    ("http", 503, ["[http 503] idx.example answered HTTP 503 (4 attempts)", "run again later"]),
    ("http", 401, ["[http 401]", "credentials"]),
    ("tls", None, ["[tls] idx.example", "PIP_CERT"]),
    ("proxy", None, ["[proxy]", "https_proxy"]),
    ("not_found", None, ["[not_found]", "pre=true"]),
])
def test_advice_names_class_host_and_fix(category, status, words):
    from ansible_collections.primus.trainenv.plugins.module_utils._pip.failure import Failure
    text = advice(Failure(category, "pip's line", "idx.example", status), attempts=4)
    assert "\n" not in text
    for word in words:
        assert word in text


GCC_MISSING_HEADER = """running build_ext
gcc -fPIC -I/v/include -c tinymark/_speed.c -o build/temp/tinymark/_speed.o
tinymark/_speed.c:2:10: fatal error: rocshmem_missing.h: No such file or directory
    2 | #include "rocshmem_missing.h"
compilation terminated.
error: command '/usr/bin/gcc' failed with exit code 1
"""


@pytest.mark.parametrize("output, line", [
    (GCC_MISSING_HEADER, "tinymark/_speed.c:2:10: fatal error: rocshmem_missing.h: No such file or directory"),
    # the last compiler error wins; a warning is not an error
    ("a.cpp:1:1: error: first\na.hip:9:3: warning: unused\ncsrc/b.hip:7:5: error: use of undeclared identifier 'x'\n",
     "csrc/b.hip:7:5: error: use of undeclared identifier 'x'"),
    ("kernel.cu(12): error: identifier \"foo\" is undefined\n", "kernel.cu(12): error: identifier \"foo\" is undefined"),
    # a link failure: ld's own line, not collect2's echo of it
    ("/usr/bin/ld: cannot find -lrocshmem: No such file or directory\ncollect2: error: ld returned 1 exit status\n",
     "/usr/bin/ld: cannot find -lrocshmem: No such file or directory"),
    ("ld.lld: error: unable to find library -lrocshmem\n", "ld.lld: error: unable to find library -lrocshmem"),
    # a compiler line beats a later linker line
    ("x.c:3:1: error: expected ';'\n/usr/bin/ld: cannot find -lfoo\n", "x.c:3:1: error: expected ';'"),
    # pip's debug log: timestamps and the build's indentation
    ("2026-12-03T06:13:09,078   tinymark/_speed.c:2:10: fatal error: h.h: No such file or directory\n",
     "tinymark/_speed.c:2:10: fatal error: h.h: No such file or directory"),
    ("/usr/bin/ld: warning: x.o: missing .note.GNU-stack section\nerror: subprocess-exited-with-error\n", None),
    ("error: command '/usr/bin/gcc' failed with exit code 1\n", None),
])
def test_compiler_error_is_the_compilers_last_error_line(output, line):
    assert compiler_error(output) == line


def test_a_build_failure_quotes_the_compiler_line_from_pips_debug_log():
    console = ("  error: subprocess-exited-with-error\n  \u2570\u2500> See above for output.\n"
               "  ERROR: Failed building wheel for tinymark\n")
    log = "".join("2026-12-03T06:13:09,078   %s\n" % line for line in GCC_MISSING_HEADER.splitlines())
    failure = classify(console, log)
    assert failure.category == "build_failed"
    assert failure.decisive == "tinymark/_speed.c:2:10: fatal error: rocshmem_missing.h: No such file or directory"
    assert "rocshmem" not in classify(console).decisive   # without the log there is no compiler line to quote
