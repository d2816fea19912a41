"""No leak (#33): the archive tier's S3 keys never appear in an inventory error, a rendered world-readable
file, the deploy's plan or a day-2 plan; the copytool's configuration is rendered and deployed 0600."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from _storage_util import data
from typer.testing import CliRunner

from clusterforge.cli.main import app

ROOT = Path(__file__).resolve().parents[3]
KEY_ID = "AKIAIOSFODNN7EXAMPLE"  # AWS's documented example key id: CONSTRUCTED, no real key
SECRET = "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY"  # AWS's documented example secret


@pytest.mark.parametrize(("field", "value"), [
    ("bucket", KEY_ID), ("bucket", SECRET), ("region", KEY_ID), ("endpoint", f"https://{KEY_ID}:{SECRET}@s3"),
    ("endpoint", f"https://s3.example/?X-Amz-Credential={KEY_ID}"), ("credentials", SECRET),
    ("credentials", {"file": "/etc/lustre/hsm-s3.cred", "secret_key": SECRET}),
    ("credentials", {"env": KEY_ID}), ("credentials", {"file": f"/etc/{SECRET}"}),
])
def test_a_key_in_any_archive_field_is_refused_and_never_echoed(field: str, value: object, tmp_path: Path) -> None:
    d = data()
    d["lustre"][0]["hsm"][field] = value
    for fmt in ("text", "json"):
        result = _check(d, tmp_path, fmt)
        assert result.exit_code == 3, result.output  # refused
        assert KEY_ID not in result.output and SECRET not in result.output, result.output


def _check(d: dict[str, object], tmp_path: Path, fmt: str) -> object:
    env = tmp_path / "env"
    env.mkdir(exist_ok=True)
    (env / "inventory.yaml").write_text(yaml.safe_dump(d, sort_keys=False))
    return CliRunner().invoke(app, ["check", str(env), "--format", fmt])


def test_an_access_key_id_is_never_echoed_whatever_field(tmp_path: Path) -> None:
    d = data()
    d["nodes"][0]["rack"] = KEY_ID  # not a declared rack: refused, and the key not quoted
    result = _check(d, tmp_path, "json")
    assert result.exit_code == 3 and KEY_ID not in result.output, result.output


def test_the_copytools_files_are_rendered_and_deployed_0600(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["render", str(ROOT / "inventories" / "prod"), "--output", str(out)])
    assert result.exit_code == 0, result.output
    lhsmd = sorted(out.glob("hosts/*/etc/lhsmd/*"))
    assert lhsmd and all(p.stat().st_mode & 0o777 == 0o600 for p in lhsmd), [oct(p.stat().st_mode) for p in lhsmd]
    from clusterforge.api import load_checked
    from clusterforge.deploy.desired import host_plans
    from clusterforge.deploy.options import DeployOptions

    plans = host_plans(load_checked(ROOT / "inventories" / "prod").index, DeployOptions("prod"))
    files = [f for p in plans.values() for c in p.components for f in c.files if f.dest.startswith("/etc/lhsmd/")]
    assert files and all(f.mode == 0o600 for f in files)


def test_no_rendered_file_names_a_key(tmp_path: Path) -> None:
    """The rendered tree carries the credentials' reference (a file path, a variable name), never keys."""
    env = tmp_path / "prod"
    shutil.copytree(ROOT / "inventories" / "prod", env)
    out = tmp_path / "out"
    assert CliRunner().invoke(app, ["render", str(env), "--output", str(out)]).exit_code == 0
    for p in out.rglob("*"):
        if p.is_file():
            text = p.read_text(errors="replace").lower()
            assert "aws_secret_access_key" not in text and "aws_access_key_id" not in text, p
