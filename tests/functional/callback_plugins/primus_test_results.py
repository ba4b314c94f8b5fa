"""Test-only callback: append every task result as one JSON line to $PRIMUS_TEST_RESULTS.

ansible-core ships no JSON stdout callback any more; the functional tests enable this one with
ANSIBLE_CALLBACK_PLUGINS=tests/functional/callback_plugins and
ANSIBLE_CALLBACKS_ENABLED=primus_test_results.
"""
import json
import os
import time

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "notification"
    CALLBACK_NAME = "primus_test_results"
    CALLBACK_NEEDS_ENABLED = True

    def _write(self, result, status):
        record = {"host": result._host.get_name(), "task": result._task.get_name(), "status": status,
                  "result": result._result, "time": time.time()}
        with open(os.environ["PRIMUS_TEST_RESULTS"], "a") as handle:
            handle.write(json.dumps(record, default=str) + "\n")

    def v2_runner_on_ok(self, result, **kwargs):
        self._write(result, "ok")

    def v2_runner_on_failed(self, result, ignore_errors=False, **kwargs):
        self._write(result, "failed")

    def v2_runner_on_skipped(self, result, **kwargs):
        self._write(result, "skipped")

    def v2_runner_on_unreachable(self, result):
        self._write(result, "unreachable")
