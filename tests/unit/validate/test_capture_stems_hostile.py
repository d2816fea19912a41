"""`validate ENV --from DIR` under hostile input, per capture surface (#33): a port's `mlxlink@<hca>.<port>`
(inventory collect.link_health) and a pinned switch's `flint-q@<switch>` (fabric/, docs/firmware.md). Whatever sits
where one of them belongs, validate prints no traceback and exits with its documented code:

- binary bytes, NUL bytes, UTF-16 text, 100k-deep JSON, 5,000-digit numbers in a real capture's rows, an empty
  file: exit 4 with a finding that names that file (PARSE, file:line and the field) or that switch (FW-NO-DATA,
  an empty answer being a switch that did not answer): never read as a healthy port or a switch at its pin;
- a FIFO, a symbolic link loop, a link out of DIR (to /etc/passwd), a directory: exit 2, one line naming the
  file, never blocking, and nothing of what the link leads to quoted.

The clean baseline (the real captures in place) has none of those findings, so each case can fail."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from clusterforge.api import load_checked
from clusterforge.cli.main import app
from clusterforge.collect.plan import mlxlink_stem
from clusterforge.sim import ibnetdiscover as sim
from clusterforge.validate.switch_firmware import STEM

ROOT = Path(__file__).resolve().parents[3]
FIX = ROOT / "tests" / "fixtures"
MLXLINK = next((FIX / "mlxlink").glob("bf3-mft4.30-m-c-*.txt")).read_text(encoding="utf-8")  # -m -c, clean
FLINT = (FIX / "flint-query" / "mlxsw-doc-mstflint-spectrum-switch-asic-fw-issu.txt").read_text(encoding="utf-8")
FLINT_FW = "13.2010.3146"
HOST, HCA, PORT = "gpu01", "mlx5_0", 1
SWITCH = "leaf-su01-r0"
PASSWD = Path("/etc/passwd")


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The lab inventory with collect.link_health on (each cabled HCA port's mlxlink is required) and its
    switches' model pinned at the real query's version (each switch's flint query is read)."""
    env = tmp_path_factory.mktemp("inv") / "lab"
    shutil.copytree(ROOT / "inventories" / "lab", env)
    site = env / "site.yaml"
    doc = yaml.safe_load(site.read_text())
    doc["collect"] = {"link_health": True}
    site.write_text(yaml.safe_dump(doc, sort_keys=False))
    (env / "firmware.yaml").write_text(f"firmware:\n  switches:\n    - {{model: QM8700, version: {FLINT_FW}}}\n")
    index = load_checked(env).index
    assert index.inv.collect.link_health and SWITCH in {sw.name for sw in index.inv.switches}
    return env


def _capture(tmp: Path, env: Path) -> Path:
    """DIR with the fabric's discovery (a clusterforge.sim render: simulated), every switch's real flint query and
    gpu01's two ports' real mlxlink output; the other hosts' outputs are missing (HOST-NO-DATA, exit 4)."""
    index = load_checked(env).index
    d = tmp / "cap"
    (d / "fabric").mkdir(parents=True)
    (d / "hosts" / HOST).mkdir(parents=True)
    (d / "fabric" / "ibnetdiscover.txt").write_text(sim.render(index, sim.from_index(index)))
    for sw in index.inv.switches:
        (d / "fabric" / f"{STEM}{sw.name}.txt").write_text(FLINT)
    for hca in index.hardware[HOST].hcas:
        (d / "hosts" / HOST / f"{mlxlink_stem(hca.name, 1)}.txt").write_text(MLXLINK)
    return d


SURFACES: dict[str, tuple[Callable[[Path], Path], str]] = {
    "mlxlink": (lambda d: d / "hosts" / HOST / f"{mlxlink_stem(HCA, PORT)}.txt", MLXLINK),
    "flint-q": (lambda d: d / "fabric" / f"{STEM}{SWITCH}.txt", FLINT),
}


def _row(text: str, label: str, value: str) -> str:
    """CONSTRUCTED from the real capture: one row's value replaced, its label kept."""
    lines = text.split("\n")
    i = next(k for k, ln in enumerate(lines) if ln.startswith(label + " ") or ln.startswith(label + ":"))
    lines[i] = lines[i].split(":", 1)[0] + ": " + value
    return "\n".join(lines)


HUGE = "9" * 5000
CONTENTS: dict[str, dict[str, bytes]] = {
    surface: {
        "binary": bytes(range(256)) * 16,
        "nul": b"\x00" * 4096,
        "utf16": real.encode("utf-16"),
        "deep-json": b"[" * 100_000 + b"]" * 100_000,
        "empty": b"",
    } for surface, (_, real) in SURFACES.items()
}
HUGE_ROWS = {  # surface -> the rows given a 5,000-digit number, one case each (the field the finding names)
    "mlxlink": ["Link Down Counter", "Effective Physical Errors", "Temperature [C]", "Raw Physical BER",
                "Raw Physical Errors Per Lane", "Rx Power Current [dBm]", "Time Since Last Clear [Min]"],
    "flint-q": ["FW Version", "Base GUID"],
}
for surface, rows in HUGE_ROWS.items():
    real = SURFACES[surface][1]
    for label in rows:
        value = f"0002c903002ef8c0        {HUGE}" if label == "Base GUID" else HUGE
        CONTENTS[surface][f"huge:{label}"] = _row(real, label, value).encode()
CASES = [(s, k) for s, kinds in CONTENTS.items() for k in sorted(kinds)]


def _validate(env: Path, cap: Path) -> tuple[int, str, BaseException | None]:
    result = CliRunner().invoke(app, ["validate", str(env), "--from", str(cap), "--format", "json"])
    exc = result.exception if not isinstance(result.exception, SystemExit) else None
    return result.exit_code, result.output, exc


def _findings(output: str) -> list[dict[str, Any]]:
    doc: dict[str, Any] = json.loads(output[output.index("{"):])
    return list(doc["findings"])


def _about(surface: str, victim: Path, findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The findings that say the victim was not read: a PARSE naming its file, or the switch's FW-NO-DATA."""
    parse = [f for f in findings if f["rule"] == "PARSE" and f["message"].startswith(f"{victim}:")]
    unread = [f for f in findings if f["rule"] == "FW-NO-DATA" and SWITCH in f["message"]]
    return parse + (unread if surface == "flint-q" else [])


@pytest.mark.parametrize("surface", sorted(SURFACES))
def test_the_clean_baseline_reads_both_surfaces(surface: str, env: Path, tmp_path: Path) -> None:
    cap = _capture(tmp_path, env)
    victim = SURFACES[surface][0](cap)
    code, output, exc = _validate(env, cap)
    assert exc is None and code == 4, output  # 4: the other hosts' outputs are missing
    findings = _findings(output)
    assert _about(surface, victim, findings) == []
    assert not [f for f in findings if f["rule"].startswith(("LINK-", "FW-"))], findings  # clean, at its pin


@pytest.mark.parametrize(("surface", "kind"), CASES, ids=[f"{s}-{k}" for s, k in CASES])
def test_hostile_content_is_a_finding_for_that_part_never_a_pass(surface: str, kind: str, env: Path,
                                                                 tmp_path: Path) -> None:
    cap = _capture(tmp_path, env)
    victim = SURFACES[surface][0](cap)
    victim.write_bytes(CONTENTS[surface][kind])
    code, output, exc = _validate(env, cap)
    assert exc is None, repr(exc)
    assert code == 4 and "Traceback" not in output, output
    found = _about(surface, victim, _findings(output))
    if kind == "empty" and surface == "flint-q":  # a switch that did not answer: not read (docs/firmware.md)
        assert [f["rule"] for f in found] == ["FW-NO-DATA"], found
    else:
        (parse,) = [f for f in found if f["rule"] == "PARSE"]
        assert parse["severity"] == "error" and parse["host"] == (HOST if surface == "mlxlink" else None), parse
        assert len(parse["message"]) < 400, parse["message"]  # named, not echoed: no 5,000 digits
        if kind.startswith("huge:"):
            assert kind.removeprefix("huge:") in parse["message"], parse["message"]  # the field
    assert HUGE[:100] not in output  # the digits are never echoed


def _fifo(p: Path) -> None:
    os.mkfifo(p)


def _loop(p: Path) -> None:
    p.symlink_to(p)


def _passwd(p: Path) -> None:
    p.symlink_to(PASSWD)


def _directory(p: Path) -> None:
    p.mkdir()
    (p / "inside.txt").write_text("x\n")


NOT_FILES = {"fifo": (_fifo, "not a regular file"), "symlink-loop": (_loop, "a symbolic link loop"),
             "symlink-to-etc-passwd": (_passwd, "leaves the capture directory"),
             "directory": (_directory, "not a regular file")}


@pytest.mark.parametrize("kind", sorted(NOT_FILES))
@pytest.mark.parametrize("surface", sorted(SURFACES))
def test_a_capture_that_is_no_file_is_refused_in_one_line(surface: str, kind: str, env: Path,
                                                          tmp_path: Path) -> None:
    cap = _capture(tmp_path, env)
    victim = SURFACES[surface][0](cap)
    victim.unlink()
    make, says = NOT_FILES[kind]
    make(victim)
    code, output, exc = _validate(env, cap)
    assert exc is None, repr(exc)
    assert code == 2, output
    assert output.startswith(f"{victim}: ") and says in output and len(output.splitlines()) == 1, output
    assert "Traceback" not in output
    secret = [ln for ln in PASSWD.read_text().splitlines() if ln.strip()]
    assert not any(ln in output for ln in secret) and "root:" not in output
