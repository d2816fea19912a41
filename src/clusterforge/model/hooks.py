"""Drain and resume hooks (`deploy.reboot.drain` / `.resume`): argv templates, never a shell, substituted
here for the deploy's reboots (deploy/reboot.py), the day-2 plan (day2/changeplan.py) and the monitoring
drain hook.

A template names its hosts one of two ways:

* `{host}`: one call per host (`scontrol update nodename={host} state=drain reason=cf`);
* `{hosts}`: one call for a whole group of hosts, written as a Slurm hostlist (`gpu[0001-0256]`,
  util/hostlist.py: only a trailing run of digits is ranged, as Slurm reads it): at 2,048 nodes a wave of
  256 hosts is one `scontrol` call, not 256.

A template with both is refused by the model (a call would not say which hosts it is for). Pure.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..util.hostlist import compress

HOST = "{host}"
HOSTS = "{hosts}"


def takes_many(template: Sequence[str]) -> bool:
    """Whether one call of this template covers many hosts (it names `{hosts}`)."""
    return any(HOSTS in part for part in template)


def hook_argv(template: Sequence[str], host: str) -> list[str]:
    """The template for one host (`{host}` or `{hosts}` is that host)."""
    return [part.replace(HOSTS, host).replace(HOST, host) for part in template]


def hook_calls(template: Sequence[str], hosts: Sequence[str]) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    """Each call the template makes for `hosts`: (the hosts it covers, its argv). None for an empty template
    or no hosts; one for a `{hosts}` template; else one a host, in the order given."""
    if not template or not hosts:
        return []
    if takes_many(template):
        nodes = compress(hosts)
        return [(tuple(hosts), tuple(part.replace(HOSTS, nodes) for part in template))]
    return [((h,), tuple(hook_argv(template, h))) for h in hosts]
