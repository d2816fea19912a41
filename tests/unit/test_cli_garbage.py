"""Every command, given garbage (paths of the wrong kind, binary, empty, hostile YAML), exits with a
documented code (docs/commands.md) and a message, never a traceback."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from clusterforge.cli.main import app
from clusterforge.parse import PARSERS
from clusterforge.util.errors import ExitCode

ROOT = Path(__file__).resolve().parents[1]
BASE = ROOT / "errors" / "_base"
LAB = ROOT.parent / "inventories" / "lab"
DOCUMENTED = {int(c) for c in ExitCode} - {int(ExitCode.OK)}
BINARY = bytes(range(256)) * 4 + b"\xff\xfe\x00garbage\x80\n" * 50


def _bomb() -> str:
    lines = ["l0: &a0 [" + ",".join(["lol"] * 10) + "]"]
    lines += [f"l{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 10)]
    return "\n".join(lines) + "\n"


def _env_dir(files: dict[str, bytes | str | None]) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        env = tmp / "env"
        env.mkdir()
        for name, data in files.items():
            if data is None:
                (env / name).mkdir()
            elif isinstance(data, bytes):
                (env / name).write_bytes(data)
            else:
                (env / name).write_text(data)
        return env

    return make


def _binary_file(tmp: Path) -> Path:
    f = tmp / "env.yaml"
    f.write_bytes(BINARY)
    return f


GARBAGE_ENVS: dict[str, Callable[[Path], Path]] = {
    "dev-null": lambda tmp: Path("/dev/null"),
    "missing": lambda tmp: tmp / "no-such-env",
    "empty-dir": _env_dir({}),
    "binary-file": _binary_file,
    "binary-yaml": _env_dir({"a.yaml": BINARY}),
    "empty-yaml": _env_dir({"a.yaml": ""}),
    "list-yaml": _env_dir({"a.yaml": "- 1\n- 2\n"}),
    "yaml-is-a-dir": _env_dir({"a.yaml": None}),
    "deep-nesting": _env_dir({"a.yaml": "site: " + "[" * 5000 + "]" * 5000 + "\n"}),
    "alias-bomb": _env_dir({"a.yaml": _bomb()}),
    "wrong-types": _env_dir({"a.yaml": "site: 5\nnodes: {a: 1}\ncables: nope\n"}),
    "inf-nan": _env_dir({"a.yaml": "site: {name: x, routing_allowance_m: .inf}\n"}),
    "bad-utf8-mid-file": _env_dir({"a.yaml": b"site:\n  name: ok\n  location: \xc3\x28\n"}),
}


def _env_commands(env: Path, tmp: Path) -> list[list[str]]:
    empty = tmp / "saved"
    empty.mkdir(exist_ok=True)
    source = tmp / "ibnetdiscover.txt"
    source.write_bytes(BINARY)
    return [
        ["check", str(env)],
        ["check", str(env), "--format", "json"],
        ["render", str(env), "--output", str(tmp / "out")],
        ["ansible-inventory", str(env)],
        ["plan", "show", str(env)],
        ["plan", "bom", str(env)],
        ["validate", str(env), "--from", str(empty)],
        ["learn", str(env), "--from", str(source)],
        ["diff", str(env), str(env)],
        ["deploy", str(env), "--dry-run"],
        ["export", "netbox", str(env), "--output", str(tmp / "netbox")],
    ]


def _assert_clean(result: Result, args: list[str], allowed: set[int] | None = None) -> None:
    shown = " ".join(args)
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"{shown}: {type(result.exception).__name__}: {result.exception}"
    )
    assert "Traceback" not in result.output, shown
    assert result.exit_code in (allowed or DOCUMENTED), f"{shown}: exit {result.exit_code}\n{result.output}"
    assert result.output.strip(), f"{shown}: exit {result.exit_code} without a message"


@pytest.mark.parametrize("kind", sorted(GARBAGE_ENVS))
def test_commands_on_a_garbage_environment(kind: str, tmp_path: Path) -> None:
    env = GARBAGE_ENVS[kind](tmp_path)
    for args in _env_commands(env, tmp_path):
        result = CliRunner().invoke(app, args)
        # a broken environment is exit 3; learn refuses an ENV that is not a directory with 2
        _assert_clean(result, args, {2, 3})


def _garbage_files(tmp: Path) -> dict[str, Path]:
    (tmp / "empty.txt").write_text("")
    (tmp / "binary.txt").write_bytes(BINARY)
    (tmp / "nul.txt").write_bytes(b"\0" * 4096)
    (tmp / "one-line.txt").write_text("hello\n")
    (tmp / "folder").mkdir()
    return {
        "empty": tmp / "empty.txt",
        "binary": tmp / "binary.txt",
        "nul": tmp / "nul.txt",
        "one-line": tmp / "one-line.txt",
        "folder": tmp / "folder",
        "dev-null": Path("/dev/null"),
        "missing": tmp / "missing.txt",
    }


@pytest.mark.parametrize("tool", sorted(PARSERS))
def test_parse_garbage_files(tool: str, tmp_path: Path) -> None:
    for name, path in _garbage_files(tmp_path).items():
        args = ["parse", tool, str(path)]
        result = CliRunner().invoke(app, args)
        # some tools print nothing for nothing (dpkg-query, nvlink --status without NVLink) and nccl-tests
        # skips lines it does not know (status "no result"): those parse; the rest is a ParseError (2)
        readable = name not in ("folder", "missing")
        _assert_clean(result, args, {0, 2} if readable else {2})


def test_plan_bom_garbage_price_tables(tmp_path: Path) -> None:
    for path in _garbage_files(tmp_path).values():
        args = ["plan", "bom", str(LAB), "--prices", str(path)]
        _assert_clean(CliRunner().invoke(app, args), args, {2})


def test_apply_garbage_plan_files(tmp_path: Path) -> None:
    for path in _garbage_files(tmp_path).values():
        args = ["apply", str(path), "--dry-run"]
        _assert_clean(CliRunner().invoke(app, args), args)


def test_learn_garbage_sources(tmp_path: Path) -> None:
    env = tmp_path / "lab"
    shutil.copytree(LAB, env)
    files = tmp_path / "files"
    files.mkdir()
    for path in _garbage_files(files).values():
        args = ["learn", str(env), "--from", str(path)]
        _assert_clean(CliRunner().invoke(app, args), args, {2})
    assert not (env / "guids.generated.yaml").exists() or (LAB / "guids.generated.yaml").exists()


def _saved(tmp: Path, layout: dict[str, bytes | None]) -> Path:
    root = tmp / "saved"
    for rel, data in layout.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if data is None:
            path.mkdir()
        else:
            path.write_bytes(data)
    return root


SAVED_LAYOUTS: dict[str, dict[str, bytes | None]] = {
    "binary-fabric": {"fabric/ibnetdiscover.txt": BINARY},
    "fabric-output-is-a-dir": {"fabric/ibnetdiscover.txt": None},
    "host-output-is-a-dir": {"hosts/gpu01/ibstat.txt": None},
    "hosts-is-a-file": {"hosts": b"x"},
    "binary-host-outputs": {f"hosts/gpu01/{s}.txt": BINARY for s in ("ibstat", "nvidia-smi-topo", "dpkg-query")},
    "unknown-host": {"hosts/not-a-node/ibstat.txt": b""},
}


@pytest.mark.parametrize("layout", sorted(SAVED_LAYOUTS))
def test_validate_garbage_saved_outputs(layout: str, tmp_path: Path) -> None:
    root = _saved(tmp_path, SAVED_LAYOUTS[layout])
    args = ["validate", str(LAB), "--from", str(root)]
    result = CliRunner().invoke(app, args)
    _assert_clean(result, args, {2, 4})


@pytest.mark.parametrize(
    "args",
    [
        ["validate", str(LAB), "--from", "/dev/null"],
        ["validate", str(LAB), "--from", "{tmp}", "--junit", "{tmp}"],
        ["validate", str(LAB), "--from", "{tmp}", "--junit", "/dev/null"],
        ["plan", "show", str(LAB), "--export", "/dev/null"],
        ["plan", "show", str(LAB), "--export", "{file}"],
        ["diff", str(LAB), str(LAB), "--output", "{tmp}"],
        ["diff", str(LAB), str(LAB), "--output", "{file}/plan.json"],
        ["schema", "--output", "{tmp}"],
    ],
    ids=lambda a: "-".join(x for x in a if x.startswith("-") and x != "--from") or a[0],
)
def test_output_paths_of_the_wrong_kind(args: list[str], tmp_path: Path) -> None:
    file = tmp_path / "a-file"
    file.write_text("x")
    real = [a.replace("{tmp}", str(tmp_path)).replace("{file}", str(file)) for a in args]
    result = CliRunner().invoke(app, real)
    _assert_clean(result, real, {2})
    assert file.read_text() == "x"


def test_garbage_never_leaves_output_behind(tmp_path: Path) -> None:
    before = set(os.listdir(tmp_path))
    CliRunner().invoke(app, ["render", "/dev/null", "--output", str(tmp_path / "out")])
    assert set(os.listdir(tmp_path)) == before
