"""Each role's README lists every option of its argument_specs and is the generated text (no drift)."""

from __future__ import annotations

from pathlib import Path

import yaml

from clusterforge.deploy.desired import COMPONENTS
from clusterforge.deploy.role_docs import role_readmes

ROLES = Path(__file__).resolve().parents[3] / "roles"


def test_readmes_are_generated_from_the_specs() -> None:
    expected = role_readmes(ROLES)
    stale = [str(p.relative_to(ROLES)) for p, text in expected.items()
             if not p.exists() or p.read_text(encoding="utf-8") != text]
    assert not stale, f"regenerate with `python -m clusterforge.deploy.role_docs`: {stale}"


def test_every_option_of_every_entry_point_is_listed() -> None:
    roles = [p for p in ROLES.iterdir() if (p / "meta" / "argument_specs.yml").exists()]
    assert len(roles) == len(COMPONENTS) + 3  # one per component, and cf_common, cf_os, cf_retire
    for role in roles:
        specs = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
        readme = (role / "README.md").read_text()
        for entry in specs.values():
            for option in entry["options"]:
                assert f"| `{option}` |" in readme, (role.name, option)
        # and the defaults file declares no option the specs leave out
        defaults = yaml.safe_load((role / "defaults" / "main.yml").read_text()) or {}
        assert set(defaults) <= set(specs["main"]["options"]), role.name
