"""Put pip into a venv that was made with --without-pip: for a Python without ensurepip, as
Debian's and Ubuntu's are without their python3.X-venv package (no root to add it).

    python3 tests/bootstrap_pip.py VENV_PYTHON pip==26.3 https://pypi.org/simple

Standard library only. pip's wheel is found on the index (PEP 691 JSON or PEP 503 HTML), checked
against the sha256 the index gives for it, and run from the wheel to install itself into the venv
(ensurepip does the same with the wheel it bundles). Proxies: the http_proxy/https_proxy/no_proxy
variables apply, as they do for pip. Used by `make controller`.
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import urllib.request

# The clone as ansible_collections/primus/trainenv (the committed .collections symlink), so that
# wheel_fetch and common load with the standard library alone.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".collections"))
from ansible_collections.primus.trainenv.plugins.module_utils import wheel_fetch  # noqa: E402
from ansible_collections.primus.trainenv.plugins.module_utils.common import redact_url  # noqa: E402


def fetch(url, accept=None):
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.read(), response.headers.get("Content-Type", "").split(";")[0].strip(), response.geturl()


def main(argv):
    if len(argv) != 4:
        sys.stderr.write(__doc__)
        return 2
    venv_python, requirement, index = argv[1:]
    name, version = wheel_fetch.parse_pin(requirement)
    page = wheel_fetch.project_url(index, name)
    try:
        body, content_type, final = fetch(page, wheel_fetch.ACCEPT)
        if content_type == wheel_fetch.JSON_TYPE:
            files = wheel_fetch.parse_simple_json(json.loads(body.decode("utf-8")), final)
        else:
            files = wheel_fetch.parse_simple_html(body.decode("utf-8", "replace"), final)
        entry, _tag = wheel_fetch.choose_wheel(files, name, version, ["any"], wheel_fetch.python_tags(*sys.version_info[:2]))
        if not entry["sha256"]:
            raise wheel_fetch.FetchError("the index gives no sha256 for %s" % entry["filename"])
        data = fetch(entry["url"])[0]
    except (OSError, ValueError, wheel_fetch.FetchError) as exc:
        reason = getattr(exc, "message", None) or exc
        sys.stderr.write("bootstrap_pip: %s from %s: %s\n" % (requirement, redact_url(index), reason))
        return 1
    if hashlib.sha256(data).hexdigest() != entry["sha256"]:
        sys.stderr.write("bootstrap_pip: sha256 mismatch for %s; nothing installed\n" % entry["filename"])
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        wheel = os.path.join(tmp, entry["filename"])
        with open(wheel, "wb") as handle:
            handle.write(data)
        return subprocess.call([venv_python, os.path.join(wheel, "pip"), "install", "--quiet", "--no-index",
                                "--no-deps", "--disable-pip-version-check", wheel])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
