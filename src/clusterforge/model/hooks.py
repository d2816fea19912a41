"""Drain and resume hooks (`deploy.reboot.drain` / `.resume`): argv templates, never a shell, substituted
here for the deploy's reboots (deploy/reboot.py), the day-2 plan (day2/changeplan.py) and the monitoring
drain hook.

A template names its hosts one of two ways:

* `{host}`: one call per host (`scontrol update nodename={host} state=drain reason=cf`);
* `{hosts}`: one call for a whole group of hosts, written as a Slurm hostlist (`gpu[0001-0256]`,
  util/hostlist.py: only a trailing run of digits is ranged, as Slurm reads it): at 2,048 nodes a wave of
  256 hosts is one `scontrol` call, not 256.

A template with both is refused by the model (a call would not say which hosts it is for).

`{reason}` is why (the scheduler's drain reason, so that a person reading `sinfo -R` knows who drained a node
and why, and the health check knows its own drains): each caller says it, starting with its own prefix
(`cf-deploy:`, `cf-day2:`, `cf-alert:`, the health check's `cf-health:`). These hooks are the one path to
the scheduler: deploy reboots, day-2 plans, the monitoring drain hook and cf-nodecheck all run them. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..util.hostlist import compress

HOST = "{host}"
HOSTS = "{hosts}"
REASON = "{reason}"

REBOOT_REASON = "cf-deploy: reboot after the deploy"
DAY2_REASON = "cf-day2: change plan"
ALERT_PREFIX = "cf-alert:"
"""The monitoring drain hook's reasons start so: `cf-alert: level 3 <alert>` (respond/level3.py)."""


def takes_many(template: Sequence[str]) -> bool:
    """Whether one call of this template covers many hosts (it names `{hosts}`)."""
    return any(HOSTS in part for part in template)


_PLACEHOLDER = re.compile("|".join(re.escape(k) for k in (HOSTS, HOST, REASON)))


def _fill(part: str, hosts: str, reason: str | None) -> str:
    # one pass: a host name or a reason holding `{reason}`/`{host}` text is never substituted again
    if "{" not in part:
        return part
    table = {HOSTS: hosts, HOST: hosts, REASON: REASON if reason is None else reason}
    return _PLACEHOLDER.sub(lambda m: table[m.group(0)], part)


def hook_argv(template: Sequence[str], host: str, reason: str | None = None) -> list[str]:
    """The template for one host (`{host}` or `{hosts}` is that host; `{reason}` is `reason`, or left for the
    caller to fill in when None: the health check's reason is known on the node only)."""
    return [_fill(part, host, reason) for part in template]


def hook_calls(template: Sequence[str], hosts: Sequence[str],
               reason: str) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    """Each call the template makes for `hosts`: (the hosts it covers, its argv). None for an empty template
    or no hosts; one for a `{hosts}` template; else one a host, in the order given."""
    if not template or not hosts:
        return []
    if takes_many(template):
        nodes = compress(hosts)
        return [(tuple(hosts), tuple(_fill(part, nodes, reason) for part in template))]
    return [((h,), tuple(hook_argv(template, h, reason))) for h in hosts]
