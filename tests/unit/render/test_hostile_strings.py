"""A Jinja expression in ANY string field of the inventory is either rejected by the field's pattern
(with an error at that field) or comes out literally in every rendered file (the render and the
deploy's files: what the pyinfra engine writes and the Ansible engine copies)."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from _render_common import lab_data
from pydantic import ValidationError

from clusterforge.deploy.desired import host_plans
from clusterforge.deploy.options import DeployOptions
from clusterforge.model import Inventory
from clusterforge.model.index import Index
from clusterforge.render import render_environment

PAYLOADS = ["ZQ{{ 7*7 }}ZQ", "ZQ{% raw %}ZQ", "ZQ{{ lookup('pipe', 'touch /tmp/cf-pwned') }}ZQ", "ZQ\n[Service]ZQ"]
RENDERED = ("ZQ49ZQ", "ZQZQ")  # what the first two would turn into, were they templates


def _base() -> dict[str, Any]:
    data = lab_data()
    # free-text fields the lab leaves empty get a value, so that they are mutated too
    data["site"]["location"] = "hall 1"
    data["cables"][0]["label"] = "L-1"
    data["addressing"]["dns_domain"] = "lab.example"
    data["deploy"]["reboot"]["drain"] = ["scontrol", "update"]
    data["deploy"]["package_mirror"] = "http://mirror.example/ubuntu jammy main"
    return data


def _string_leaves(value: Any, path: tuple[str | int, ...] = ()) -> dict[str, tuple[str | int, ...]]:
    """One path per distinct field (list indices collapsed) holding a string."""
    out: dict[str, tuple[str | int, ...]] = {}
    if isinstance(value, str):
        out[re.sub(r"\d+", "#", ".".join(map(str, path)))] = path
    elif isinstance(value, dict):
        for k, v in value.items():
            for key, p in _string_leaves(v, (*path, k)).items():
                out.setdefault(key, p)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            for key, p in _string_leaves(v, (*path, i)).items():
                out.setdefault(key, p)
    return out


def _set(data: dict[str, Any], path: tuple[str | int, ...], value: str) -> None:
    node: Any = data
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value


BASE = _base()
LEAVES = _string_leaves(BASE)


def test_the_walk_covers_the_free_text_fields() -> None:
    assert len(LEAVES) > 40
    for field in ("site.location", "cables.#.label", "addressing.dns_domain", "lustre.#.options", "lustre.#.mount",
                  "deploy.package_mirror", "deploy.reboot.drain.#"):
        assert field in LEAVES, field


@pytest.mark.parametrize("field", sorted(LEAVES))
def test_a_jinja_payload_is_rejected_at_the_field_or_comes_out_literally(field: str) -> None:
    path = LEAVES[field]
    for payload in PAYLOADS:
        data = copy.deepcopy(BASE)
        _set(data, path, payload)
        try:
            inv = Inventory.model_validate(data)
        except ValidationError as exc:
            locs = [tuple(p for p in e["loc"] if not str(p).startswith("function-")) for e in exc.errors()]
            assert any(loc[:len(path)] == path or path[:len(loc)] == loc for loc in locs), (field, locs)
            continue
        assert "\n" not in payload, f"{field} accepts a line break"
        index = Index(inv)
        texts = list(render_environment(index, "lab").values())
        texts += [f.content for p in host_plans(index, DeployOptions("lab")).values() for f in p.files]
        for text in texts:
            assert not any(r in text for r in RENDERED), field
            if "ZQ" in text:
                assert payload in text or payload.replace('"', '""') in text, (field, payload)
