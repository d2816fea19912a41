"""validate.quick: `validate ENV --from DIR --fabric-only` answered from the declared-fabric cache.

The fast answer must be the full command's answer: the same bytes when the fabric is clean, and no answer
(None: the full command runs) whenever the full validator would report anything. The cache is keyed by
every inventory byte, ignored when corrupt, and rebuilt by the next full run.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clusterforge.api import load_checked
from clusterforge.cli.main import app
from clusterforge.inventory.load import environment_files
from clusterforge.parse import ParseError, ibnetdiscover
from clusterforge.sim.ibnetdiscover import SimFabric, from_index, render
from clusterforge.validate import quick
from clusterforge.validate.declared import declared_fabric
from clusterforge.validate.fabric import diff_fabric

ROOT = Path(__file__).resolve().parents[3]
REAL_CODE_STAMP = quick.code_stamp


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    where = tmp_path / "state"
    monkeypatch.setenv(quick.STATE_DIR_ENV, str(where))
    monkeypatch.delenv(quick.NO_CACHE_ENV, raising=False)
    # the stamp of clusterforge's files is tested on its own below: fixed here, so that an edit of the
    # source tree while a test runs does not make a test's two runs disagree
    monkeypatch.setattr(quick, "code_stamp", lambda: "fixed-stamp")
    return where


def test_code_stamp_follows_every_file_of_the_package(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub" / "__pycache__").mkdir(parents=True)
    (pkg / "a.py").write_text("x = 1\n", encoding="utf-8")
    (pkg / "sub" / "data.yaml").write_text("k: v\n", encoding="utf-8")
    real = REAL_CODE_STAMP
    first = real(pkg)
    (pkg / "sub" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"compiled")
    assert real(pkg) == first  # compiled files are not the code
    (pkg / "sub" / "data.yaml").write_text("k: w\n", encoding="utf-8")
    assert real(pkg) != first
    assert real() == real() != first  # the installed package's own stamp is stable between calls


@pytest.fixture
def env(tmp_path: Path) -> Path:
    dst = tmp_path / "prod"
    shutil.copytree(ROOT / "inventories" / "prod", dst)
    return dst


def _saved(tmp_path: Path, text: str, name: str = "saved") -> Path:
    d = tmp_path / name / "fabric"
    d.mkdir(parents=True)
    (d / "ibnetdiscover.txt").write_text(text, encoding="utf-8")
    return d.parent


def _sim(env: Path) -> tuple[SimFabric, str]:
    index = load_checked(env).index
    fab = from_index(index)
    return fab, render(index, fab)


def _full(env: Path, saved: Path, *extra: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["validate", str(env), "--from", str(saved), "--fabric-only", *extra])
    return result.exit_code, result.stdout


def _fast(env: Path, saved: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int | None, str]:
    capsys.readouterr()
    code = quick.fast_validate(["validate", str(env), "--from", str(saved), "--fabric-only", *extra])
    return code, capsys.readouterr().out


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_fast_answer_is_the_full_answer_byte_for_byte(env: Path, tmp_path: Path, fmt: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    saved = _saved(tmp_path, _sim(env)[1])
    assert quick.fast_validate(["validate", str(env), "--from", str(saved), "--fabric-only"]) is None  # no cache
    code, full = _full(env, saved, "--format", fmt)  # the full run writes the cache
    assert code == 0 and quick.cache_path(env).is_file()
    fast_code, fast = _fast(env, saved, capsys, "--format", fmt)
    assert fast_code == 0
    assert fast == full
    if fmt == "json":
        assert json.loads(fast)["ok"] is True


def test_console_script_answers_without_typer_or_the_models(env: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(quick, "code_stamp", REAL_CODE_STAMP)  # the child process computes the real one
    saved = _saved(tmp_path, _sim(env)[1])
    assert _full(env, saved)[0] == 0
    probe = ("import sys\nfrom clusterforge.cli.entry import main\n"
             f"sys.argv = ['clusterforge', 'validate', {str(env)!r}, '--from', {str(saved)!r}, '--fabric-only', "
             "'--format', 'json']\n"
             "try:\n    main()\nexcept SystemExit as e:\n    code = e.code\n"
             "heavy = sorted(m for m in ('pydantic', 'typer', 'yaml', 'clusterforge.model', 'clusterforge.check') "
             "if m in sys.modules)\nprint('PROBE', code, heavy, file=sys.stderr)\n")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False)
    assert "PROBE 0 []" in proc.stderr, proc.stderr[-2000:]
    assert json.loads(proc.stdout)["ok"] is True


def test_any_inventory_byte_invalidates_the_cache(env: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    saved = _saved(tmp_path, _sim(env)[1])
    assert _full(env, saved)[0] == 0
    assert _fast(env, saved, capsys)[0] == 0
    site = env / "site.yaml"
    site.write_text(site.read_text(encoding="utf-8") + "# one more byte\n", encoding="utf-8")
    assert _fast(env, saved, capsys)[0] is None
    assert _full(env, saved)[0] == 0  # rebuilt
    assert _fast(env, saved, capsys)[0] == 0
    (env / "extra.yaml").write_text("{}\n", encoding="utf-8")  # a new file counts too
    assert _fast(env, saved, capsys)[0] is None


@pytest.mark.parametrize("garbage", [b"", b"\x00\xff not json", b'{"format": 2', b"[1, 2]",
                                     b'{"format": 2, "key": "KEY", "fast": true, "links": "x"}',
                                     b'{"format": 2, "key": "KEY", "fast": "yes", "switches": [], "hcas": [], '
                                     b'"locks": [], "links": {}}'])
@pytest.mark.parametrize("digest", ["none", "valid"])
def test_a_corrupt_cache_is_ignored_and_rebuilt(env: Path, tmp_path: Path, garbage: bytes, digest: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Damaged bytes fail the digest line; a document of the wrong shape behind a valid digest is refused too."""
    saved = _saved(tmp_path, _sim(env)[1])
    assert _full(env, saved)[0] == 0
    path = quick.cache_path(env)
    body = garbage.replace(b"KEY", quick.inventory_key(env).encode())
    path.write_bytes(hashlib.sha256(body).hexdigest().encode() + b"\n" + body if digest == "valid" else body)
    assert _fast(env, saved, capsys)[0] is None
    code, out = _full(env, saved, "--format", "json")
    assert code == 0 and json.loads(out)["ok"] is True
    assert quick.read_cache(env, quick.inventory_key(env)) is not None  # written again
    assert _fast(env, saved, capsys)[0] == 0


def test_one_changed_byte_of_the_cache_is_noticed(env: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """A well-formed edit (a link's speed) behind the old digest line: ignored, and rebuilt by the next run."""
    saved = _saved(tmp_path, _sim(env)[1])
    assert _full(env, saved)[0] == 0
    path = quick.cache_path(env)
    data = path.read_bytes()
    assert b" NDR" in data or b" HDR" in data
    path.write_bytes(data.replace(b" NDR", b" EDR", 1) if b" NDR" in data else data.replace(b" HDR", b" EDR", 1))
    assert quick.read_cache(env, quick.inventory_key(env)) is None
    assert _fast(env, saved, capsys)[0] is None
    assert _full(env, saved)[0] == 0
    assert path.read_bytes() == data


def test_a_cache_of_a_fabric_that_is_not_all_links_answers_nothing(env: Path, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    fab, text = _sim(env)
    saved = _saved(tmp_path, text)
    assert _full(env, saved)[0] == 0
    fab.remove(fab.links[0].cable)
    index = load_checked(env).index
    broken = _saved(tmp_path, render(index, fab), "broken")
    assert _fast(env, broken, capsys)[0] is None
    code, out = _full(env, broken, "--format", "json")
    assert code == 4 and json.loads(out)["findings"]


def test_no_cache_env_neither_reads_nor_writes(env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    saved = _saved(tmp_path, _sim(env)[1])
    monkeypatch.setenv(quick.NO_CACHE_ENV, "1")
    assert _full(env, saved)[0] == 0
    assert not quick.cache_path(env).exists()
    monkeypatch.delenv(quick.NO_CACHE_ENV)
    assert _full(env, saved)[0] == 0
    monkeypatch.setenv(quick.NO_CACHE_ENV, "1")
    assert _fast(env, saved, capsys)[0] is None


@pytest.mark.parametrize("extra", [[], ["--limit", "gpu001"], ["--junit", "x.xml"], ["--help"], ["--format", "yaml"],
                                   ["--save", "d"], ["--bogus"]])
def test_options_it_does_not_handle_go_to_the_full_command(env: Path, tmp_path: Path, extra: list[str],
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    saved = _saved(tmp_path, _sim(env)[1])
    assert _full(env, saved)[0] == 0
    argv = ["validate", str(env), "--from", str(saved), *extra]
    if extra:
        argv.append("--fabric-only")
    assert quick.fast_validate(argv) is None  # without --fabric-only, or with an option it leaves alone
    assert quick.fast_validate(["validate", str(env), "--fabric-only", f"--from={saved}", "--no-lab",
                                "--format=json"]) == 0


def test_host_outputs_or_other_fabric_files_go_to_the_full_command(env: Path, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    saved = _saved(tmp_path, _sim(env)[1])
    assert _full(env, saved)[0] == 0
    (saved / "fabric" / "iblinkinfo.txt").write_text("", encoding="utf-8")
    assert _fast(env, saved, capsys)[0] is None
    (saved / "fabric" / "iblinkinfo.txt").unlink()
    (saved / "hosts" / "nobody").mkdir(parents=True)
    assert _fast(env, saved, capsys)[0] is None  # HOST-UNKNOWN for the full command


def test_environment_files_are_the_loaders() -> None:
    for env in (ROOT / "inventories").iterdir():
        assert quick.environment_files(env) == environment_files(env)


def _learned(tmp_path: Path) -> tuple[Path, SimFabric]:
    """The lab with every GUID the simulator uses locked (`learn`), to exercise the lock rules."""
    env = tmp_path / "lab"
    shutil.copytree(ROOT / "inventories" / "lab", env)
    fab, text = _sim(env)
    saved = _saved(tmp_path, text, "learn-from")
    result = CliRunner().invoke(app, ["learn", str(env), "--from", str(saved / "fabric" / "ibnetdiscover.txt")])
    assert result.exit_code == 0, result.output
    assert (env / "guids.generated.yaml").is_file()
    return env, fab


MUTATIONS = ("remove", "swap", "degrade", "slow", "desc", "dup-desc", "guid", "dup-link", "reverse", "none")


def _mutate(fab: SimFabric, rng: random.Random, kind: str) -> None:
    cables = [link.cable for link in fab.links]
    if kind == "remove":
        fab.remove(rng.choice(cables))
    elif kind == "swap":
        a, b = rng.sample(cables, 2)
        fab.swap(a, b)
    elif kind == "degrade":
        fab.degrade(rng.choice(cables), "1x")
    elif kind == "slow":
        fab.by_cable(rng.choice(cables)).speed = "EDR"
    elif kind == "desc":
        fab.desc[rng.choice(sorted(fab.desc, key=str))] = "somebody else"
    elif kind == "dup-desc":
        d1, d2 = rng.sample(sorted(fab.desc, key=str), 2)
        fab.desc[d1] = fab.desc[d2]
    elif kind == "guid":
        fab.replace(*rng.choice(sorted(fab.guid, key=str)), f"0x{rng.getrandbits(64):016x}")
    elif kind == "dup-link":
        link = rng.choice(fab.links)
        fab.links.append(type(link)(link.a, link.b, link.width, link.speed, link.cable + "-again"))
    elif kind == "reverse":  # the same link seen from the other end: still clean
        link = rng.choice(fab.links)
        link.a, link.b = link.b, link.a


@pytest.mark.parametrize("locked", [False, True], ids=["descriptions", "locked-guids"])
def test_fast_clean_never_disagrees_with_the_validator(tmp_path: Path, locked: bool) -> None:
    """Random faults on the simulated fabric: whenever quick claims clean, diff_fabric finds nothing; and it
    does claim clean for the untouched fabric (the proof is not vacuous)."""
    if locked:
        env, _ = _learned(tmp_path)
    else:
        env = tmp_path / "lab"
        shutil.copytree(ROOT / "inventories" / "lab", env)
    index = load_checked(env).index
    doc = declared_fabric(index, "k")
    assert doc["fast"] is True
    assert bool(doc["locks"]) is locked
    declared = quick._checked_shape(json.loads(json.dumps(doc)))
    rng = random.Random(14)
    claimed = {kind: 0 for kind in MUTATIONS}
    for trial in range(160):
        fab = from_index(index)
        kinds = [MUTATIONS[trial % len(MUTATIONS)]] + ([rng.choice(MUTATIONS)] if trial % 3 == 0 else [])
        for kind in kinds:
            _mutate(fab, rng, kind)
        try:
            topo = ibnetdiscover.parse(render(index, fab))
        except ParseError:  # a link listed twice: a PARSE finding, and fast_validate answers None
            continue
        if quick.proven_clean(declared, topo):
            claimed[kinds[0]] += 1
            assert diff_fabric(index, topo) == [], kinds
    assert claimed["none"] > 0 and claimed["reverse"] > 0
    assert claimed["remove"] == claimed["degrade"] == claimed["dup-desc"] == 0


def test_an_unwritable_state_directory_only_costs_speed(env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the state directory would be\n", encoding="utf-8")
    monkeypatch.setenv(quick.STATE_DIR_ENV, str(blocker))
    saved = _saved(tmp_path, _sim(env)[1])
    code, out = _full(env, saved, "--format", "json")
    assert code == 0 and json.loads(out)["ok"] is True
    assert _fast(env, saved, capsys)[0] is None


def test_render_writes_the_cache_so_the_first_validate_is_fast(env: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 21.6: a fresh checkout's first `validate --from DIR --fabric-only` ran the full command (0.7-0.9 s
    for prod, 3.6x ibnetdiscover); render, which loads and checks the inventory anyway, now leaves the cache."""
    saved = _saved(tmp_path, _sim(env)[1])
    assert _fast(env, saved, capsys)[0] is None  # fresh: nothing to answer from
    result = CliRunner().invoke(app, ["render", str(env), "--output", str(tmp_path / "out"), "--no-svg"])
    assert result.exit_code == 0, result.output
    assert quick.cache_path(env).is_file()
    code, fast = _fast(env, saved, capsys, "--format", "json")
    assert code == 0 and json.loads(fast)["ok"] is True
    assert _full(env, saved, "--format", "json") == (0, fast)


def test_render_leaves_no_cache_for_an_environment_edited_while_it_loaded(
    env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import clusterforge.cli.render as render_cli

    real = render_cli.load_or_fail

    def edit_then_load(where: Path, *args: object) -> object:
        checked = real(where, *args)  # type: ignore[arg-type]
        site = where / "site.yaml"
        site.write_text(site.read_text() + "\n# edited while render ran\n")
        return checked

    monkeypatch.setattr(render_cli, "load_or_fail", edit_then_load)
    result = CliRunner().invoke(app, ["render", str(env), "--output", str(tmp_path / "out"), "--no-svg"])
    assert result.exit_code == 0, result.output
    assert not quick.cache_path(env).exists()


@pytest.mark.parametrize("kind", ["dangling", "directory"])
def test_a_broken_entry_added_after_the_cache_was_written_stops_the_fast_answer(
    env: Path, tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = _saved(tmp_path, _sim(env)[1])
    assert _full(env, saved)[0] == 0
    assert _fast(env, saved, capsys)[0] == 0
    if kind == "dangling":
        (env / "racks.yaml").symlink_to(tmp_path / "gone.yaml")
    else:
        (env / "extra.yaml").mkdir()
    assert _fast(env, saved, capsys)[0] is None  # the full command refuses the environment (INV-ENV)
    code, _ = _full(env, saved)
    assert code == 3
