"""Hostile or careless inventory input ends in a located error, never a traceback or a blow-up."""

from __future__ import annotations

import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel
from typer.testing import CliRunner

import clusterforge.model as model_pkg
from clusterforge.cli.loading import MAX_SHOWN_ERRORS
from clusterforge.cli.main import app
from clusterforge.inventory.load import ALIAS_BUDGET, load_inventory, read_text
from clusterforge.inventory.load_text import ALIAS_BYTES_BUDGET
from clusterforge.model.base import FiniteFloat, Model
from clusterforge.util.errors import InventoryInvalid

BASE = Path(__file__).resolve().parents[1] / "errors" / "_base"


def _env(tmp_path: Path) -> Path:
    env = tmp_path / "env"
    shutil.copytree(BASE, env)
    return env


def _issues(env: Path) -> list[str]:
    with pytest.raises(InventoryInvalid) as exc:
        load_inventory(env)
    return [str(i) for i in exc.value.issues]


def test_non_utf8_byte_is_located_by_line_column_and_offset(tmp_path: Path) -> None:
    env = _env(tmp_path)
    (env / "extra.yaml").write_bytes(b"nodes:\n  - {name: gpu03, rack: r\xff1, u: 10}\n")
    (issue,) = _issues(env)
    assert issue.startswith(f"{env / 'extra.yaml'}:2:26: not valid UTF-8: byte(s) ff at byte offset 32")


def test_non_utf8_in_a_multibyte_line_counts_characters_for_the_column(tmp_path: Path) -> None:
    env = _env(tmp_path)
    (env / "extra.yaml").write_bytes("# é\n".encode() + b"# \xc3\n")
    (issue,) = _issues(env)
    assert ":2:3: not valid UTF-8: byte(s) c3 at byte offset 7" in issue


def test_unreadable_file_is_an_issue_not_a_traceback(tmp_path: Path) -> None:
    folder = tmp_path / "a.yaml"
    folder.mkdir()
    got = read_text(folder)
    assert not isinstance(got, str) and "cannot read the file" in got.message


@pytest.mark.parametrize("env", ["/dev/null", "missing"])
def test_environment_that_is_not_a_directory(tmp_path: Path, env: str) -> None:
    path = Path(env) if env.startswith("/") else tmp_path / env
    result = CliRunner().invoke(app, ["check", str(path)])
    assert result.exit_code == 3
    assert "Traceback" not in result.output
    assert f"{path}: " in result.output
    assert ("no such environment" if env == "missing" else "not a directory of YAML files") in result.output


def test_alias_bomb_is_refused_before_it_is_expanded(tmp_path: Path) -> None:
    env = _env(tmp_path)
    lines = ["l0: &a0 [" + ",".join(["lol"] * 10) + "]"]
    lines += [f"l{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 12)]
    (env / "extra.yaml").write_text("\n".join(lines) + "\n")  # 10^12 scalars if expanded
    (issue,) = _issues(env)
    assert f"aliases expand this file by more than {ALIAS_BUDGET:,} nodes" in issue
    assert issue.startswith(f"{env / 'extra.yaml'}:6:")


def test_recursive_alias_is_refused(tmp_path: Path) -> None:
    env = _env(tmp_path)
    (env / "extra.yaml").write_text("loop: &x [1, *x]\n")
    (issue,) = _issues(env)
    assert issue.endswith(
        "extra.yaml:1:14: YAML: the alias *x refers to a node that contains it (recursive) [INV-YAML]"
    )


def test_small_aliases_still_load(tmp_path: Path) -> None:
    env = _env(tmp_path)
    nodes = (env / "nodes.yaml").read_text()
    assert "profile: gpu-node" in nodes
    (env / "nodes.yaml").write_text("x-defaults: &gpu gpu-node\n" + nodes.replace("profile: gpu-node", "profile: *gpu"))
    (issue,) = _issues(env)  # the alias itself is fine; only the unknown section is reported
    assert "unknown key 'x-defaults'" in issue


def test_error_list_is_capped(tmp_path: Path) -> None:
    env = _env(tmp_path)
    rows = "".join(
        f"  - {{id: X-{i}, a: leaf01/1, b: spine01/1, media: AOC, length_m: bad}}\n" for i in range(450)
    )
    (env / "zz.yaml").write_text("cables:\n" + rows)
    result = CliRunner().invoke(app, ["check", str(env)])
    assert result.exit_code == 3
    lines = result.output.splitlines()
    located = [ln for ln in lines if "length_m" in ln]
    assert len(located) == MAX_SHOWN_ERRORS
    assert f"... and {450 - MAX_SHOWN_ERRORS} more errors" in result.output
    assert lines[-1] == "450 error(s) in the inventory"


def _models() -> list[type[BaseModel]]:
    seen: list[type[BaseModel]] = []
    todo: list[type[BaseModel]] = [Model]
    while todo:
        cls = todo.pop()
        seen.append(cls)
        todo.extend(cls.__subclasses__())
    return seen


def test_every_float_field_is_finite() -> None:
    assert model_pkg.Inventory in _models()
    floats = 0
    for cls in _models():
        assert cls.model_config.get("allow_inf_nan") is False, cls
        for name, info in cls.model_fields.items():
            if "float" in repr(info.annotation):
                floats += 1
                assert info.annotation == FiniteFloat or "allow_inf_nan=False" in repr(info), (cls, name)
    assert floats >= 10


@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan", ".NaN"])
def test_inf_and_nan_are_rejected(tmp_path: Path, value: str) -> None:
    env = _env(tmp_path)
    site = env / "site.yaml"
    site.write_text(site.read_text().replace("{name: r01, row: row-a, position: 0,",
                                             f"{{name: r01, row: row-a, position: 0, floor_area_m2: {value},"))
    (issue,) = _issues(env)
    assert "racks[0].floor_area_m2:" in issue and "finite number" in issue


class _Panic(BaseException):
    """Stands in for pyo3's PanicException (a BaseException, not an Exception)."""


def test_a_parser_panic_falls_back_to_pyyaml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import clusterforge.inventory.yaml_engine as engine_mod

    def panic(text: str) -> object:
        raise _Panic("capacity overflow")

    env = _env(tmp_path)
    (env / "site.yaml").write_text((env / "site.yaml").read_text().replace("position: 1,", "position: -1,", 1))
    expected = _issues(env)
    assert expected and "position: -1" in expected[0]
    monkeypatch.setattr(engine_mod._yaml_rs, "loads", panic)
    assert _issues(env) == expected  # the same inventory, read whole by the fallback


def test_both_parsers_failing_is_an_issue_not_a_crash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import clusterforge.inventory.yaml_engine as engine_mod

    def panic(text: str) -> object:
        raise _Panic("capacity overflow")

    monkeypatch.setattr(engine_mod._yaml_rs, "loads", panic)
    monkeypatch.setattr(engine_mod, "loads_pyyaml", panic)
    env = _env(tmp_path)
    issues = _issues(env)
    assert len(issues) == len(list(env.glob("*.yaml")))
    assert all("YAML: the parser gave up on this file (_Panic: capacity overflow)" in i for i in issues)


def _bytes_bomb(levels: int = 5, copies: int = 9, size: int = 100_000) -> str:
    lines = [f'zz_a0: &a0 "{"x" * size}"']
    lines += [f"zz_a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * copies) + "]" for i in range(1, levels)]
    lines.append("zz_top: [" + ", ".join([f"*a{levels - 1}"] * copies) + "]")
    return "\n".join(lines) + "\n"


def test_aliases_of_a_large_string_are_refused_by_their_bytes(tmp_path: Path) -> None:
    env = _env(tmp_path)
    (env / "zz.yaml").write_text(_bytes_bomb())  # 9^5 copies of 100 kB: 5.9 GB, but only ~66,000 nodes
    (issue,) = _issues(env)
    assert f"aliases expand this file by more than {ALIAS_BYTES_BUDGET:,} bytes" in issue
    assert issue.startswith(f"{env / 'zz.yaml'}:4:")


def test_the_bytes_bomb_under_a_memory_limit_is_a_clean_error(tmp_path: Path) -> None:
    """The issue's reproduction: `ulimit -v 2097152`; yaml-rs used to abort with a Rust panic (exit 134)."""
    env = _env(tmp_path)
    (env / "zz.yaml").write_text(_bytes_bomb())

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 * 1024**3, 2 * 1024**3))

    cli = Path(sys.executable).with_name("clusterforge")
    proc = subprocess.run([str(cli), "check", str(env)], capture_output=True, text=True, timeout=120,
                          preexec_fn=limit, check=False)
    assert proc.returncode == 3, proc.stderr[-2000:]
    assert f"more than {ALIAS_BYTES_BUDGET:,} bytes" in proc.stdout + proc.stderr
    assert "panic" not in proc.stderr.lower()


@pytest.mark.parametrize("char", ["\x00", "\x01", "\x1b", "\x7f", "\x9b", "\ufffe"])
def test_a_character_yaml_does_not_allow_refuses_the_file_whole(tmp_path: Path, char: str) -> None:
    env = _env(tmp_path)
    nodes = env / "nodes.yaml"
    lines = nodes.read_text().splitlines(keepends=True)
    lines[2] = lines[2][:5] + char + lines[2][5:]  # mid-file: yaml-rs used to stop at a NUL and keep the rest
    nodes.write_text("".join(lines))
    (issue,) = _issues(env)
    assert issue.startswith(f"{nodes}:3:6: ")
    assert f"(U+{ord(char):04X}) is not allowed in a YAML file: the file is refused whole" in issue
    assert issue.endswith("[INV-ENCODING]")


def test_a_nul_byte_never_lets_check_pass(tmp_path: Path) -> None:
    env = _env(tmp_path)
    nodes = env / "nodes.yaml"
    data = nodes.read_bytes()
    nodes.write_bytes(data[: len(data) // 2] + b"\x00" + data[len(data) // 2 :])
    result = CliRunner().invoke(app, ["check", str(env)])
    assert result.exit_code != 0
    assert "inventory OK" not in result.output
    assert f"{nodes}:" in result.output and "NUL (U+0000)" in result.output


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"])
def test_a_wide_file_without_a_byte_order_mark_is_named_as_such(tmp_path: Path, encoding: str) -> None:
    env = _env(tmp_path)
    site = env / "site.yaml"
    site.write_bytes(site.read_text().encode(encoding))
    (issue,) = _issues(env)
    name = encoding.upper().replace("-LE", "LE").replace("-BE", "BE")
    assert issue == (
        f"{site}:1:1: the file looks like {name} without a byte-order mark (every other byte is NUL): "
        "re-save it as UTF-8 [INV-ENCODING]"
    )


def test_an_oversized_file_is_refused_before_it_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import clusterforge.inventory.load_text as load_mod

    monkeypatch.setattr(load_mod, "MAX_FILE_BYTES", 1024)
    env = _env(tmp_path)
    (env / "zz.yaml").write_text("# " + "x" * 2000 + "\n")
    (issue,) = _issues(env)
    assert issue == f"{env / 'zz.yaml'}: the file is larger than 1024 bytes: not an inventory file [INV-READ]"


def test_a_utf8_byte_order_mark_is_allowed(tmp_path: Path) -> None:
    env = _env(tmp_path)
    site = env / "site.yaml"
    site.write_bytes(b"\xef\xbb\xbf" + site.read_bytes().replace(b"position: 1,", b"position: -1,", 1))
    (issue,) = _issues(env)  # only the planted error, located as usual: the mark is not part of a key
    assert issue.startswith(f"{site}:8:39: racks[1].position: -1:")


def test_a_utf16_file_is_named_as_such(tmp_path: Path) -> None:
    env = _env(tmp_path)
    site = env / "site.yaml"
    site.write_bytes(site.read_text().encode("utf-16"))
    (issue,) = _issues(env)
    assert issue == (
        f"{site}:1:1: the file is UTF-16 (it starts with a UTF-16 byte-order mark): re-save it as UTF-8 [INV-ENCODING]"
    )


STRUCTURAL = """\
nodes:
  - {name: gpu03, rack: r01, u: top, profile: gpu-node}
  - name: gpu04
    rack: r01
    u: 12
    profile: gpu-node
    colour: red
  - {name: gpu05, rack: r01}
  - [not, a, mapping]
cables:
  - {id: C-100, a: leaf01/30, b: spine01/30, media: AOC, length_m: .nan}
  - {id: C-101, a: leaf01/31, b: spine01/31, media: WIRE, length_m: 3}
  - {id: C-102, a: 'leaf01', b: spine01/32, media: AOC, length_m: 3}
"""


def test_large_files_are_located_over_events_exactly_as_over_the_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import clusterforge.inventory.load as load_mod

    env = _env(tmp_path)
    (env / "extra.yaml").write_text(STRUCTURAL)
    tree = _issues(env)
    assert len(tree) >= 7 and all(":" in i.split(" ")[0] for i in tree)
    monkeypatch.setattr(load_mod, "BIG_FILE", 0)  # every file "big": the event walk locates
    assert _issues(env) == tree


def test_errors_beyond_the_located_ones_are_counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import clusterforge.inventory.load as load_mod

    monkeypatch.setattr(load_mod, "MAX_LOCATED", 3)
    env = _env(tmp_path)
    (env / "extra.yaml").write_text(STRUCTURAL)
    with pytest.raises(InventoryInvalid) as exc:
        load_inventory(env)
    assert len(exc.value.issues) == 3 and exc.value.more >= 4
    result = CliRunner().invoke(app, ["check", str(env)])
    total = 3 + exc.value.more
    assert f"... and {total - 3} more errors" in result.output
    assert result.output.splitlines()[-1] == f"{total} error(s) in the inventory"


CORPUS = sorted(p.name for p in BASE.parent.iterdir() if p.is_dir() and not p.name.startswith(("_", ".")))


@pytest.mark.parametrize("case", CORPUS)
def test_every_corpus_case_locates_the_same_over_events(case: str, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import clusterforge.inventory.load as load_mod
    from clusterforge.api import load_checked

    env = _env(tmp_path)
    for src in (BASE.parent / case).glob("*.yaml"):
        shutil.copy(src, env / src.name)

    def issues() -> list[str]:
        with pytest.raises(InventoryInvalid) as exc:
            load_checked(env)
        return [str(i) for i in exc.value.issues]

    tree = issues()
    monkeypatch.setattr(load_mod, "BIG_FILE", 0)
    assert issues() == tree


@pytest.mark.parametrize("big", [False, True])
def test_a_duplicate_section_is_blamed_on_the_file_that_repeats_it(tmp_path: Path, big: bool,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import clusterforge.inventory.load as load_mod

    env = _env(tmp_path)
    site = (env / "site.yaml").read_text()
    (env / "zz-more.yaml").write_text("# a second copy of the site section\n\n" + site)
    if big:  # a file over BIG_FILE is not composed into a tree: located over its events
        monkeypatch.setattr(load_mod, "BIG_FILE", 0)
    (issue,) = _issues(env)
    assert issue.startswith(f"{env / 'zz-more.yaml'}:3:1: site: duplicate section 'site': also defined in site.yaml")


def test_a_duplicate_section_never_moves_to_the_first_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the repeating file cannot be walked (PyYAML cannot compose it), the error stays on that file."""
    import clusterforge.inventory.load as load_mod

    env = _env(tmp_path)
    (env / "zz-more.yaml").write_text((env / "site.yaml").read_text())
    real_tree = load_mod.Source._tree
    monkeypatch.setattr(load_mod.Source, "_tree",
                        lambda self, f: None if f.name == "zz-more.yaml" else real_tree(self, f))
    (issue,) = _issues(env)
    assert issue.startswith(f"{env / 'zz-more.yaml'}:1:1: site: duplicate section 'site'")


@pytest.mark.parametrize("tail", ["---\n", "---\nnodes: []\n", "...\n---\nnodes: []\n"])
def test_a_second_yaml_document_is_named(tmp_path: Path, tail: str) -> None:
    env = _env(tmp_path)
    extra = env / "zz.yaml"
    extra.write_text("# constructed: two documents in one file\nmonitoring_x: 1\n" + tail)
    (issue,) = _issues(env)
    assert issue.startswith(f"{extra}:")
    assert "a second YAML document" in issue and issue.endswith("[INV-YAML]")


def test_an_environment_path_that_leads_nowhere_says_why(tmp_path: Path) -> None:
    loop, other, dangling = tmp_path / "loop", tmp_path / "loop2", tmp_path / "dangling"
    loop.symlink_to(other)
    other.symlink_to(loop)
    dangling.symlink_to(tmp_path / "gone")
    runner = CliRunner()
    out = runner.invoke(app, ["check", str(loop)]).output
    assert f"{loop}: a symbolic link loop, not an environment" in out
    out = runner.invoke(app, ["check", str(dangling)]).output
    assert f"{dangling}: a symbolic link to '{tmp_path / 'gone'}', which does not exist: no such environment" in out
    out = runner.invoke(app, ["check", str(tmp_path / "nothing")]).output
    assert f"{tmp_path / 'nothing'}: no such environment [INV-ENV]" in out
