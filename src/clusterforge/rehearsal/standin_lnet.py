#!/usr/bin/python3
"""LAB-ONLY stand-in for what Lustre's lnet.service does (`modprobe lnet`, `lnetctl lnet configure`,
`lnetctl import /etc/lnet.conf`): the lab has no LNet module, so this loads and configures nothing. It reads
/etc/lnet.conf as `lnetctl import` would (YAML block layout: `net:` -> `net type`, `local NI(s)` ->
`interfaces`) and fails, naming the line, when the file is missing or not in that layout; on success it
records the nets it would configure in /run/clusterforge-lab-lnet/nets.

The lustre-client-utils stand-in (standin.py) ships this file as /usr/sbin/lnet-lab-standin and a LAB-ONLY
lnet.service that runs it, so the deploy enables and starts a real unit whose success depends on the
deployed file. Self-contained (runs with the lab image's python3, no PyYAML there): the YAML subset it
reads is block mappings, block sequences and plain or quoted scalars, which is what `lnetctl export` and
templates/lustre/lnet.conf.j2 write.

    lnet-lab-standin start /etc/lnet.conf   # check and record (ExecStart)
    lnet-lab-standin stop                   # forget the record (ExecStop)
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from typing import Any

RECORD_DIR = "/run/clusterforge-lab-lnet"
NET_TYPE = re.compile(r"^(o2ib|tcp|lo)[0-9]*$")
IFACE = re.compile(r"^[A-Za-z0-9_.:@-]{1,15}$")

Node = tuple[int, Any]
"""(line number, value): a value is a str, a dict[str, Node] or a list[Node]."""


class LnetConfError(ValueError):
    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}" if line else message)
        self.line = line


def _lines(text: str) -> list[tuple[int, int, str]]:
    out = []
    for n, raw in enumerate(text.splitlines(), 1):
        body = raw.lstrip(" ")
        if body.startswith("\t"):
            raise LnetConfError(n, "a tab in the indentation (YAML indents with spaces)")
        if not body.strip() or body.startswith("#"):
            continue
        if " #" in body:
            body = body[:body.index(" #")]
        out.append((n, len(raw) - len(body), body.rstrip()))
    return out


def _scalar(n: int, text: str) -> str:
    if text[:1] in "\"'":
        if len(text) < 2 or text[-1] != text[0]:
            raise LnetConfError(n, f"unterminated quoted value {text}")
        return text[1:-1]
    if text[:1] in "[{&*!|>":
        raise LnetConfError(n, f"{text[:1]!r}: only block mappings, block lists and plain values are read here")
    return text


class _Reader:
    def __init__(self, text: str) -> None:
        self.lines = _lines(text)
        self.i = 0

    def node(self, indent: int) -> Any:
        text = self.lines[self.i][2]
        return self.seq(indent) if text == "-" or text.startswith("- ") else self.mapping(indent)

    def seq(self, indent: int) -> list[Node]:
        items: list[Node] = []
        while self.i < len(self.lines):
            n, ind, text = self.lines[self.i]
            if ind < indent or (ind == indent and not (text == "-" or text.startswith("- "))):
                break
            if ind > indent:
                raise LnetConfError(n, "unexpected indentation")
            rest = text[1:].lstrip()
            if not rest:
                self.i += 1
                items.append((n, self.child(n, indent, in_map=False)))
                continue
            col = ind + len(text) - len(rest)
            self.lines[self.i] = (n, col, rest)  # the item's own block starts at its column
            if ": " in rest or rest.endswith(":") or rest == "-" or rest.startswith("- "):
                items.append((n, self.node(col)))
            else:
                self.i += 1
                items.append((n, _scalar(n, rest)))
        return items

    def mapping(self, indent: int) -> dict[str, Node]:
        out: dict[str, Node] = {}
        while self.i < len(self.lines):
            n, ind, text = self.lines[self.i]
            if ind < indent:
                break
            if ind > indent:
                raise LnetConfError(n, "unexpected indentation")
            if text == "-" or text.startswith("- "):
                break  # a list at the same column as its key (`key:` then `- item`) ends here
            key, sep, value = text.partition(":")
            if not sep or (value and not value.startswith(" ")) or not key.strip():
                raise LnetConfError(n, f"expected `key: value`, got {text!r}")
            key = _scalar(n, key.strip())
            if key in out:
                raise LnetConfError(n, f"duplicate key {key!r}")
            self.i += 1
            out[key] = (n, _scalar(n, value.strip()) if value.strip() else self.child(n, indent, in_map=True))
        return out

    def child(self, n: int, indent: int, *, in_map: bool) -> Any:
        if self.i < len(self.lines):
            _, ind, text = self.lines[self.i]
            if ind > indent or (in_map and ind == indent and (text == "-" or text.startswith("- "))):
                return self.node(ind)
        return ""  # an empty value


def read(text: str) -> dict[str, Node]:
    """The document as nested (line, value) nodes; LnetConfError names the line it cannot read."""
    reader = _Reader(text)
    if not reader.lines:
        raise LnetConfError(0, "empty: no `net:` section")
    n, ind, _ = reader.lines[0]
    top = reader.node(ind)
    if reader.i < len(reader.lines):
        raise LnetConfError(reader.lines[reader.i][0], "unexpected indentation or content after the document")
    if not isinstance(top, dict):
        raise LnetConfError(n, "the document is a list: lnetctl import reads a mapping with a `net:` key")
    return top


def nets(text: str) -> list[tuple[str, list[str]]]:
    """The nets an `lnetctl import` of this text would configure: [(net type, interfaces)], in file order."""
    top = read(text)
    if "net" not in top:
        raise LnetConfError(0, "no `net:` section")
    line, value = top["net"]
    if not isinstance(value, list) or not value:
        raise LnetConfError(line, "`net:` must be a list of nets (`- net type: o2ib0`)")
    out = []
    for item_line, item in value:
        if not isinstance(item, dict) or "net type" not in item:
            raise LnetConfError(item_line, "a net without `net type`")
        t_line, net_type = item["net type"]
        if not isinstance(net_type, str) or not NET_TYPE.match(net_type):
            raise LnetConfError(t_line, f"net type {net_type!r} is not o2ibN, tcpN or lo")
        ifaces: list[str] = []
        nis_line, nis = item.get("local NI(s)", (item_line, ""))
        if net_type != "lo" and (not isinstance(nis, list) or not nis):
            raise LnetConfError(nis_line, f"net {net_type} has no `local NI(s)` list")
        for ni_line, ni in nis if isinstance(nis, list) else []:
            if not isinstance(ni, dict):
                raise LnetConfError(ni_line, f"a local NI of {net_type} that is not a mapping")
            if "interfaces" not in ni:
                if net_type == "lo":  # the loopback NI (0@lo) has no interface
                    continue
                raise LnetConfError(ni_line, f"a local NI of {net_type} without `interfaces`")
            i_line, names = ni["interfaces"]
            if not isinstance(names, dict) or not names:
                raise LnetConfError(i_line, f"`interfaces` of {net_type} must map 0: <interface>")
            for idx, (name_line, name) in names.items():
                if not idx.isdigit() or not isinstance(name, str) or not IFACE.match(name):
                    raise LnetConfError(name_line, f"interface {idx}: {name!r} is not `<index>: <name>`")
                ifaces.append(name)
        out.append((net_type, ifaces))
    return out


#: The stand-in unit, after Lustre's own lustre/scripts/systemd/lnet.service.in (a oneshot that stays active; the
#: same name, order and install target), running this script instead of modprobe/lnetctl.
LNET_UNIT = """[Unit]
Description=clusterforge LAB-ONLY stand-in: lnet (reads /etc/lnet.conf as lnetctl import would; no LNet loaded)
Wants=network-online.target
After=network-online.target openibd.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/sbin/lnet-lab-standin start /etc/lnet.conf
ExecStop=/usr/sbin/lnet-lab-standin stop

[Install]
WantedBy=multi-user.target
"""


def package_files() -> dict[str, tuple[str, int]]:
    """What the lustre-client-utils stand-in ships for LNet: path in the package -> (content, mode)."""
    with open(__file__, encoding="utf-8") as fh:
        script = fh.read()
    return {"usr/sbin/lnet-lab-standin": (script, 0o755), "lib/systemd/system/lnet.service": (LNET_UNIT, 0o644)}


def main(argv: list[str]) -> int:
    if argv[:1] == ["stop"]:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(RECORD_DIR, "nets"))
        return 0
    if len(argv) != 2 or argv[0] != "start":
        print("usage: lnet-lab-standin start /etc/lnet.conf | stop", file=sys.stderr)
        return 2
    path = argv[1]
    try:
        with open(path, encoding="utf-8") as fh:
            found = nets(fh.read())
    except (OSError, UnicodeDecodeError) as exc:
        print(f"lnet (LAB-ONLY stand-in): cannot read {path}: {exc}", file=sys.stderr)
        return 1
    except LnetConfError as exc:
        print(f"lnet (LAB-ONLY stand-in): {path} {exc}", file=sys.stderr)
        return 1
    os.makedirs(RECORD_DIR, exist_ok=True)
    summary = [f"{net}({','.join(ifaces)})" for net, ifaces in found]
    tmp = os.path.join(RECORD_DIR, "nets.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write("".join(line + "\n" for line in summary))
    os.replace(tmp, os.path.join(RECORD_DIR, "nets"))
    print(f"lnet (LAB-ONLY stand-in): {path} read as lnetctl import would: {' '.join(summary)}; "
          "no LNet module here, nothing configured")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
