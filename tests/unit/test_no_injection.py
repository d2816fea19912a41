"""No injection (#33): text that reaches a scheduler argv, a drain hook or a remote command stays one argument,
literally, with every shell metacharacter and with newlines: in hook templates, reasons and the `{hosts}` a
day-2 wave fills in. Each path is run for real (the rendered cf-nodecheck, a local shell for the SSH command
line) with a marker file that a substitution would create."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clusterforge.api import load_checked
from clusterforge.collect.ssh import SshConfig
from clusterforge.model.hooks import hook_argv, hook_calls
from clusterforge.render import render_environment

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures"
NVLINK = FIX / "nvidia-smi-nvlink-status" / "nvutil-1xh100-80gb-590.48.01-18links.txt"
QUERY = FIX / "nvidia-smi-query-gpu" / "nvutil-1xh100-80gb-590.48.01-allfields-idle.txt"

HOSTILE = ["$(touch {m})", "`touch {m}`", "; touch {m}", "| touch {m}", "&& touch {m}", "> {m}", "' ; touch {m} '",
           '" ; touch {m} "', "\\$(touch {m})", "*", "~root", "${{IFS}}touch${{IFS}}{m}", "a\ntouch {m}",
           "{{hosts}}", "{{reason}}", "-rf /", "--help"]


def _hostile(marker: Path) -> list[str]:
    return [h.format(m=marker) for h in HOSTILE]


@pytest.mark.parametrize("i", range(len(HOSTILE)))
def test_hook_templates_and_reasons_stay_one_argument(i: int, tmp_path: Path) -> None:
    text = _hostile(tmp_path / "owned")[i]
    words = [] if "{" in text else [text]  # a template's own {hosts}/{reason} are its placeholders, by design
    template = ["scontrol", "update", "nodename={hosts}", "reason={reason}", *words]
    ((hosts, argv),) = hook_calls(template, ["gpu0001", "gpu0002", "gpu0005"], reason=text)
    assert hosts == ("gpu0001", "gpu0002", "gpu0005")
    assert argv == ("scontrol", "update", "nodename=gpu[0001-0002,0005]", f"reason={text}", *words)
    # one pass: a reason holding a placeholder is not substituted again
    assert hook_argv(["drain", "{host}", "{reason}"], "gpu01", reason="{host}") == ["drain", "gpu01", "{host}"]


def test_the_ssh_command_line_is_one_quoted_word_per_argument(tmp_path: Path) -> None:
    """The remote shell gets shlex.join(argv): running that line in a shell prints each argument literally."""
    marker = tmp_path / "owned"
    args = _hostile(marker)
    line = SshConfig(user="root", port=22, known_hosts=tmp_path / "kh").argv("192.0.2.1", ("printf", "%s\\0",
                                                                                        *args))[-1]
    out = subprocess.run(["sh", "-c", line], capture_output=True, text=True, timeout=10, check=True).stdout
    assert out.split("\0")[:-1] == args
    assert not marker.exists()


@pytest.fixture(scope="module")
def nodecheck(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("render")
    files = render_environment(load_checked(ROOT / "inventories" / "lab").index, "lab")
    script = out / "cf-nodecheck"
    script.write_text(files["slurm/nodes/usr/local/lib/clusterforge/cf-nodecheck"])
    return script


def test_cf_nodecheck_drains_with_hostile_hook_text_literally(nodecheck: Path, tmp_path: Path) -> None:
    """The rendered check, run as slurmd runs it, with a missing GPU: its drain hook (hostile words in the
    template) reaches the scheduler as exactly those words, each one argument; nothing runs."""
    marker = tmp_path / "owned"
    hostile = [h for h in _hostile(marker) if "{" not in h]  # (a template's own placeholders are filled, by design)
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    calls_dir = tmp_path / "calls"
    calls_dir.mkdir()
    show = (FIX / "scontrol-show-node" / "jp-blog-slurm22.05-6xh100pcie-idle-drain-kill-task-failed.txt").read_text()
    show = show.replace("State=IDLE+DRAIN ", "State=IDLE ")
    (tmp_path / "show.txt").write_text("\n".join(ln for ln in show.splitlines() if "Reason=" not in ln) + "\n")
    tools = {
        "scontrol": f'if [ "$1" = show ]; then cat {tmp_path / "show.txt"}; '
                    f'else f=$(mktemp {calls_dir}/call.XXXXXX); printf "%s\\0" "$@" > "$f"; fi\n',
        "nvidia-smi": f'if [ "$1" = nvlink ]; then cat {NVLINK}; else cat {QUERY}; fi\n',
        "ibstat": f"cat {FIX / 'ibstat' / 'gpud-a100-hdr-200g.txt'}\n",
    }
    for name, body in tools.items():
        (bin_ / name).write_text("#!/bin/sh\n" + body)
        (bin_ / name).chmod(0o755)
    drain = ["scontrol", "update", "nodename=gpu07", "state=drain", "reason={reason}", *hostile]
    cfg = {"node": "gpu07", "reason_prefix": "cf-health", "tool_timeout_s": 10, "checks": ["gpus"], "gpus": 4,
           "nvidia_driver": "590.48.01", "nvlink": True, "mounts": ["/"], "hca_ports": [],
           "drain": drain, "resume": ["scontrol", "update", "nodename=gpu07", "state=resume", *hostile]}
    (tmp_path / "nodecheck.json").write_text(json.dumps(cfg))
    env = {**os.environ, "PATH": f"{bin_}:/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, str(nodecheck), "--config", str(tmp_path / "nodecheck.json"),
                           "--node", "gpu07"], capture_output=True, text=True, env=env, timeout=60, check=False)
    calls = [f.read_text().split("\0")[:-1] for f in sorted(calls_dir.iterdir())]
    assert calls, proc.stdout + proc.stderr
    (argv,) = calls
    assert argv[:4] == ["update", "nodename=gpu07", "state=drain", argv[3]] and argv[3].startswith("reason=cf-health")
    assert argv[4:] == hostile
    assert not marker.exists()
