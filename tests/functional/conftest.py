"""Fixtures of the functional scenarios; they live in harness.py so tests can import its helpers.
pytest finds fixtures by name, so the imports below are used although nothing references them."""
# pylint: disable=unused-import
from harness import (  # noqa: F401
    playbook, python310, python310_bare, python310_no_ensurepip, python312, shared_dir, target, trixie_playbook,
    trixie_target, world)
