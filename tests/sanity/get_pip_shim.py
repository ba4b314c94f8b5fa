"""Offline stand-in for ansible-test's get-pip bootstrap script.

ansible-test downloads get-pip-<version>.py from ci-files.testing.ansible.com, which this
network cannot reach. The Makefile copies this file to ~/.ansible/test/cache/get_pip_<version>.py;
ansible-test then runs it inside a fresh venv with get-pip's arguments (pip==<version> and flags).
It bootstraps pip from the interpreter's bundled ensurepip and then installs what was asked for
from PyPI, which is what get-pip does.
"""
import subprocess
import sys

GET_PIP_ONLY_FLAGS = {"--no-setuptools", "--no-wheel"}


def main():
    args = [arg for arg in sys.argv[1:] if arg not in GET_PIP_ONLY_FLAGS]
    subprocess.check_call([sys.executable, "-m", "ensurepip", "--default-pip"])
    subprocess.check_call([sys.executable, "-m", "pip", "install"] + args)


if __name__ == "__main__":
    main()
