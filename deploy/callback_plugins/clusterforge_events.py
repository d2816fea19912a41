"""Ansible callback: every task result and the final per-host stats as JSON lines (clusterforge reads them).

`clusterforge deploy --engine ansible` enables it (ANSIBLE_CALLBACKS_ENABLED=clusterforge_events) and
names the file in $CLUSTERFORGE_ANSIBLE_EVENTS; the usual screen output is left as it is. One object per
line: {"event": "ok"|"failed"|"unreachable"|"skipped", "host", "task", "role", "component", "changed",
"msg"} per
task result (loops: the task's aggregate result), then {"event": "stats", "hosts": {host: counts}}.
"""

from __future__ import annotations

import json
import os
from typing import Any

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
    name: clusterforge_events
    type: aggregate
    short_description: task results and play stats as JSON lines, for clusterforge
    description:
      - Writes one JSON object per task result and the final stats to the file named by
        the environment variable CLUSTERFORGE_ANSIBLE_EVENTS (nothing when it is unset).
    requirements:
      - enable in configuration (ANSIBLE_CALLBACKS_ENABLED=clusterforge_events)
"""

ENV = "CLUSTERFORGE_ANSIBLE_EVENTS"
STATS = ("ok", "changed", "dark", "failures", "skipped", "rescued", "ignored")


class CallbackModule(CallbackBase):  # type: ignore[misc]
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "clusterforge_events"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        path = os.environ.get(ENV, "")
        self._out = open(path, "a", encoding="utf-8") if path else None  # noqa: SIM115 (open for the run)

    def _write(self, obj: dict[str, Any]) -> None:
        if self._out is not None:
            self._out.write(json.dumps(obj, default=str) + "\n")
            self._out.flush()

    def _result(self, event: str, result: Any, ignored: bool = False) -> None:
        res = result.result
        task = result.task
        role = task._role.get_name() if getattr(task, "_role", None) is not None else ""
        try:  # the component the shared cf_common tasks are run for (its include_role's vars)
            component = str(task.get_vars().get("cf_common_component", ""))
        except Exception:  # noqa: BLE001 (an unusual parent chain: no component to name)
            component = ""
        msg = res.get("msg", "") if isinstance(res, dict) else ""
        if not msg and event == "failed" and isinstance(res, dict):
            msg = res.get("stderr", "") or res.get("module_stderr", "")
        self._write({"event": event, "host": result.host.get_name(), "task": task.name or task.action, "role": role,
                     "component": component,
                     "action": task.action, "changed": bool(res.get("changed", False)) if isinstance(res, dict)
                     else False, "ignored": ignored, "msg": str(msg)[:2000]})

    def v2_runner_on_ok(self, result: Any) -> None:
        self._result("ok", result)

    def v2_runner_on_failed(self, result: Any, ignore_errors: bool = False) -> None:
        self._result("failed", result, ignored=ignore_errors)

    def v2_runner_on_unreachable(self, result: Any) -> None:
        self._result("unreachable", result)

    def v2_runner_on_skipped(self, result: Any) -> None:
        self._result("skipped", result)

    def v2_playbook_on_stats(self, stats: Any) -> None:
        hosts = sorted(set().union(*(getattr(stats, k) for k in STATS)))
        self._write({"event": "stats", "hosts": {h: stats.summarize(h) for h in hosts}})
        if self._out is not None:
            self._out.close()
            self._out = None
