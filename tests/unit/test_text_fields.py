"""Inventory text is data: every string field has a pattern, control characters are rejected
everywhere, paths are absolute and normalized, the package mirror is a URL."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from clusterforge.model import Inventory
from clusterforge.model.base import (
    ABS_PATH_PATTERN,
    DNS_DOMAIN_PATTERN,
    MIRROR_PATTERN,
    MOUNT_OPTIONS_PATTERN,
    PATTERN_HELP,
    TEXT_PATTERN,
    pattern_error,
)
from clusterforge.model.inventory import DeploySettings
from clusterforge.model.services import LustreFs
from clusterforge.model.site import Site

ROOT = Path(__file__).resolve().parents[2]
CONTROL = ["\n", "\r", "\t", "\x00", "\x1b", "\x7f", "\x85", "\u2028", "\u2029"]


def _unconstrained_strings(node: Any, path: str = "") -> list[str]:
    out: list[str] = []
    if isinstance(node, dict):
        if node.get("type") == "string" and not any(k in node for k in ("pattern", "enum", "const", "format")):
            out.append(path)
        for key, value in node.items():
            out += _unconstrained_strings(value, f"{path}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out += _unconstrained_strings(value, f"{path}[{i}]")
    return out


def test_every_string_field_of_the_model_has_a_pattern() -> None:
    schema = Inventory.model_json_schema()
    assert _unconstrained_strings(schema) == []
    # and the committed schema says so too
    committed = json.loads((ROOT / "schemas" / "inventory.schema.json").read_text())
    assert _unconstrained_strings(committed) == []


def test_every_pattern_excludes_control_characters() -> None:
    patterns = set(re.findall(r'"pattern": "((?:[^"\\]|\\.)*)"', json.dumps(Inventory.model_json_schema())))
    assert len(patterns) > 15
    for pattern in patterns:
        compiled = re.compile(json.loads(f'"{pattern}"'))
        for ch in CONTROL:
            for value in (f"a{ch}b", f"lfs{ch}", f"/lustre/a{ch}"):
                assert not compiled.fullmatch(value), (pattern, value)


@pytest.mark.parametrize("ch", CONTROL)
def test_free_text_rejects_control_characters(ch: str) -> None:
    with pytest.raises(ValidationError, match=r"string_pattern_mismatch|should match pattern"):
        Site(name="s", location=f"hall 1{ch}row 2")
    assert Site(name="s", location="hall 1, row 2 {{ 7*7 }} ünïcode").location is not None


@pytest.mark.parametrize("mount", [
    "/lustre/../../etc", "/lustre/./x", "//lustre", "/lustre/", "/lustre//x", "lustre", "/", "/lustre/..",
    "/a b", "/lustre/{{ 7*7 }}", "/lustre/%h",
])
def test_mount_is_an_absolute_normalized_path(mount: str) -> None:
    with pytest.raises(ValidationError):
        LustreFs(name="lfs", mgs_nids=["10.0.0.1@o2ib0"], mount=mount)


@pytest.mark.parametrize("mount", ["/lustre/lfs01", "/mnt/.snap", "/a/b_c-d.e"])
def test_plain_mounts_pass(mount: str) -> None:
    assert LustreFs(name="lfs", mgs_nids=["10.0.0.1@o2ib0"], mount=mount).mount == mount


@pytest.mark.parametrize("options", [
    "defaults\n[Service]\nExecStartPre=/bin/touch /tmp/x", "{{ lookup('pipe', 'touch /tmp/x') }}",
    "defaults, noauto", "a,,b", "%h", "defaults;reboot",
])
def test_mount_options_are_an_option_list(options: str) -> None:
    with pytest.raises(ValidationError):
        LustreFs(name="lfs", mgs_nids=["10.0.0.1@o2ib0"], mount="/lustre/x", options=options)


@pytest.mark.parametrize("mirror", [
    "[trusted=yes] http://mirror.example/ubuntu jammy main", "http://mirror.example/ [trusted=yes]",
    "ftp://mirror.example/", "http://mirror.example/\njammy", "http://user:pw@mirror.example/",
    "http://mirror.example/  jammy", "deb http://mirror.example/ jammy", "http://-bad.example/",
])
def test_package_mirror_is_a_url(mirror: str) -> None:
    with pytest.raises(ValidationError):
        DeploySettings(package_mirror=mirror)


@pytest.mark.parametrize("mirror", [
    "http://10.0.0.1:8080/repo/ jammy main", "https://repo.example/x jammy main contrib", "file:///srv/repo",
])
def test_plain_mirrors_pass(mirror: str) -> None:
    assert DeploySettings(package_mirror=mirror).package_mirror == mirror


@pytest.mark.parametrize(("pattern", "good", "bad"), [
    (DNS_DOMAIN_PATTERN, "cluster.example.org", "cluster.local\n6.6.6.6 gpu01"),
    (DNS_DOMAIN_PATTERN, "lab", "a..b"),
    (MOUNT_OPTIONS_PATTERN, "defaults,_netdev,flock,x-systemd.requires=lnet.service", "defaults _netdev"),
    (ABS_PATH_PATTERN, "/lustre/lfs01", "/lustre/lfs01/"),
    (MIRROR_PATTERN, "http://h", "http://h jammy\tmain"),
])
def test_patterns(pattern: str, good: str, bad: str) -> None:
    assert re.fullmatch(pattern, good)
    assert not re.fullmatch(pattern, bad)


def test_pattern_errors_name_the_problem() -> None:
    assert pattern_error(DNS_DOMAIN_PATTERN, "a\nb") == f"'a\\nb': {PATTERN_HELP[TEXT_PATTERN]}"
    assert "normalized absolute path" in str(pattern_error(ABS_PATH_PATTERN, "/a/../b"))
    assert pattern_error(r"^x$", "y") is None
