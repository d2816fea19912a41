"""`lctl get_param mdt.*.hsm_control mdt.*.hsm.*` over the real capture in tests/fixtures/lctl-get_param-hsm
(with its .source): the coordinator's settings and its registered copytool agents."""

from __future__ import annotations

from _parse_helpers import fixture, raises_at

from clusterforge.parse import lctl_hsm


def test_the_real_capture() -> None:
    (mdt,) = lctl_hsm.parse(fixture("lctl-get_param-hsm/cn-hsm-doc-mdt-hsm-params-agents-multiline"))
    assert (mdt.target, mdt.fsname, mdt.index, mdt.control) == ("fs00-MDT0000", "fs00", 0, None)
    assert mdt.params["default_archive_id"] == "1" and mdt.params["policy"] == "NonBlockingRestore [NoRetryAction]"
    (agent,) = mdt.agents
    assert (agent.uuid, agent.archive_ids, agent.current, agent.ok, agent.errors) == (
        "d19dc2fe-cec4-43a1-8996-c783b3a70e63", (1,), 0, 10, 0)
    assert agent.serves(1) and not agent.serves(2)


def test_control_any_archive_and_two_mdts() -> None:
    # constructed from the capture's lines: hsm_control, an agent for every archive, a second MDT without agents
    text = ("mdt.lfs01-MDT0000.hsm_control=enabled\nmdt.lfs01-MDT0000.hsm.agents=\n"
            "uuid=a archive_id=ANY requests=[current:1 ok:2 errors:3]\n"
            "uuid=b archive_id=1,2 requests=[current:0 ok:0 errors:0]\n"
            "mdt.lfs01-MDT0001.hsm_control=disabled\nmdt.lfs01-MDT0001.hsm.agents=\n")
    a, b = lctl_hsm.parse(text)
    assert a.control == "enabled" and [x.archive_ids for x in a.agents] == [(), (1, 2)] and a.agents[0].serves(7)
    assert (b.index, b.control, b.agents) == (1, "disabled", ())
    assert lctl_hsm.parse("") == ()


def test_garbage_names_the_line() -> None:
    raises_at(lctl_hsm.parse, "uuid=a archive_id=1 requests=[current:0 ok:0 errors:0]\n", 1)  # no hsm.agents
    raises_at(lctl_hsm.parse, "mdt.fs-MDT0000.hsm.agents=\nuuid=a archive_id=x requests=[]\n", 2)
    raises_at(lctl_hsm.parse, "mdt.fs-MDT0000.hsm.max_requests=3\nhello\n", 2)
    raises_at(lctl_hsm.parse, "mdt.fs-MDT0000.hsm.agents=uuid=a\n", 1)
    raises_at(lctl_hsm.parse, "osc.fs-OST0000.hsm.x=1\n", 1)
