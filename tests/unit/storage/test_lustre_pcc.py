"""The clients' PCC state (issue #23): `lctl get_param llite.*.pcc` parsed (parse/lctl_pcc.py) and checked against
the cache tier the model declares (validate/lustre.check_pcc, rule LUSTRE-PCC).

No real capture of `llite.*.pcc` is in the samples. Every text here is CONSTRUCTED from Lustre's source:
`pcc_super_dump` / `pcc_dataset_dump` (lustre/llite/pcc.c) print "pcc:", then per back-end "  -" and the
`PCC_YAML_*` keys (include/uapi/linux/lustre/lustre_user.h) with `flags` in hex (`%x`; enum pcc_dataset_flags
in lustre/llite/pcc.h: 0x10 PCC-RW, 0x20 PCC-RO, 0x02|0x04|0x08 auto-attach), under lctl's `param=` line."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterforge.api import load_checked
from clusterforge.collect.plan import default_targets
from clusterforge.collect.store import Observations
from clusterforge.parse import ParseError, lctl_pcc
from clusterforge.validate.lustre import check_pcc
from clusterforge.validate.run import validate

ROOT = Path(__file__).resolve().parents[3]


def _text(rwid: int = 1, flags: str = "1e", rule: str = "projid={1000}", path: str = "/mnt/pcc") -> str:
    # CONSTRUCTED (see the module docstring): prod's lfs01 on a GPU node, one RW back-end attached
    return (f"llite.lfs01-ffff8f8c3a3b5000.pcc=\npcc:\n  -\n    pccpath: {path}\n    hsmtool: lhsmtool_posix\n"
            f"    rwid: {rwid}\n    roid: 0\n    flags: {flags}\n    autocache: {rule}\n")


@pytest.fixture(scope="module")
def prod():  # type: ignore[no-untyped-def]
    return load_checked(ROOT / "inventories" / "prod")


def test_the_parser_reads_each_mount_and_its_back_ends() -> None:
    two = _text() + "llite.scratch-ffff8f8c3a3b6000.pcc=\n"
    (lfs01, scratch) = lctl_pcc.parse(two)
    assert (lfs01.fsname, lfs01.instance) == ("lfs01", "lfs01-ffff8f8c3a3b5000")
    (d,) = lfs01.datasets
    assert (d.path, d.rwid, d.roid, d.flags, d.modes, d.autocache) == (
        "/mnt/pcc", 1, 0, 0x1E, ("readwrite",), "projid={1000}")
    assert scratch.fsname == "scratch" and scratch.datasets == ()  # nothing attached: the parameter line alone
    assert lctl_pcc.parse("") == ()


@pytest.mark.parametrize(("text", "line"), [
    ("pcc:\n", 1),  # no parameter line first
    ("llite.lfs01-ffff.pcc=\npcc:\n    pccpath: /mnt/pcc\n", 3),  # a key outside '  -'
    ("llite.lfs01-ffff.pcc=\npcc:\n  -\n    rwid: two\n", 4),
    ("llite.lfs01-ffff.pcc=\npcc:\n  -\n    rwid: 1\n", 3),  # a back-end without its pccpath
    ("llite.lfs01-ffff.pcc=\npcc:\n  -\n    colour: blue\n", 4),
])
def test_garbage_is_a_parse_error_naming_its_line(text: str, line: int) -> None:
    with pytest.raises(ParseError) as info:
        lctl_pcc.parse(text)
    assert info.value.line_no == line


def test_the_declared_back_end_attached_is_quiet(prod) -> None:  # type: ignore[no-untyped-def]
    assert check_pcc(prod.index, "gpu0001", lctl_pcc.parse(_text())) == []


@pytest.mark.parametrize(("text", "words"), [
    ("llite.lfs01-ffff8f8c3a3b5000.pcc=\n", ["no cache back-end at /mnt/pcc is attached to lfs01",
                                            "systemctl enable --now lustre-pcc-lfs01.service"]),
    (_text(path="/scratch/pcc"), ["attached: /scratch/pcc"]),
    (_text(rwid=3), ["rwid 3, declared 1"]),
    (_text(flags="2e"), ["mode readonly, declared readwrite"]),
    (_text(rule="projid={2000}"), ["auto-attach rule 'projid={2000}', declared 'projid={1000}'"]),
])
def test_a_missing_or_other_back_end_is_a_finding(prod, text: str, words: list[str]) -> None:  # type: ignore[no-untyped-def]
    (f,) = check_pcc(prod.index, "gpu0001", lctl_pcc.parse(text))
    assert f.rule == "LUSTRE-PCC" and f.severity == "error" and f.subject == "gpu0001"
    assert all(w in f.message + " " + f.action for w in words), (f.message, f.action)


def test_collected_on_the_cache_clients_only_and_checked_by_validate(prod) -> None:  # type: ignore[no-untyped-def]
    index = prod.index
    hosts, _ = default_targets(index, {n: "192.0.2.1" for n in index.nodes})
    asked = {t.host for t in hosts if "lctl-pcc" in t.commands}
    compute = {n.name for n in index.inv.nodes if n.role == "compute"}
    assert asked == compute and asked
    report = validate(index, Observations(hosts={"gpu0001": {"lctl-pcc": "llite.lfs01-ffff.pcc=\n"}}))
    assert [f.rule for f in report.findings if f.subject == "gpu0001" and f.rule.startswith("LUSTRE")] == [
        "LUSTRE-PCC"]
