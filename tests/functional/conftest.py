"""Fixtures of the functional scenarios; they live in harness.py so tests can import its helpers."""
from harness import playbook, python310, python312, target, world  # noqa: F401 - pytest fixtures
