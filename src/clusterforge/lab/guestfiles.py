"""The files each lab host gets: sshd config and host key, the lab's client key, the IB wrapper
(ibwrap maps umad2sim's single `ibsim0` back to the declared device names), its ib.json."""

from __future__ import annotations

import json
import os
import shutil

from clusterforge.lab.guest import ENTRYPOINT, IBWRAP_SOURCE, sshd_config
from clusterforge.lab.guest.ibwrap import ALL_TOOLS
from clusterforge.lab.ibsim import DEFAULT_REMOTE_PORT
from clusterforge.lab.spec import SM_ROLE, LabSpec
from clusterforge.lab.sshkeys import generate_key, known_hosts_line, write_known_hosts
from clusterforge.lab.state import LabState

GUEST_ETC = "/etc/clusterforge-lab"
GUEST_SBIN = "/usr/local/sbin"
IB_TOOL_TIMEOUT = 60


def write_guest_files(spec: LabSpec, state: LabState) -> None:
    d = state.state_dir
    pub = generate_key(state.ssh_key, f"clusterforge-lab-{spec.name}")
    sbin = d / "guest" / "sbin"
    if sbin.exists():
        shutil.rmtree(sbin)
    sbin.mkdir(parents=True)
    shutil.copyfile(IBWRAP_SOURCE, sbin / "ibwrap")
    os.chmod(sbin / "ibwrap", 0o755)
    for tool in ALL_TOOLS:
        (sbin / tool).symlink_to("ibwrap")
    (sbin / "cf-lab-init").write_text(ENTRYPOINT)
    os.chmod(sbin / "cf-lab-init", 0o755)
    os.chmod(d / "guest", 0o755)
    os.chmod(sbin, 0o755)

    lines = []
    for h in spec.hosts:
        rec = state.hosts[h.name]
        hd = d / "hosts" / h.name
        hd.mkdir(parents=True, exist_ok=True)
        os.chmod(hd.parent, 0o755)
        os.chmod(hd, 0o755)
        host_pub = generate_key(hd / "ssh_host_ed25519_key", f"root@{h.name}")
        lines.append(known_hosts_line([h.name, h.address], host_pub))
        (hd / "authorized_keys").write_text(pub + "\n")
        os.chmod(hd / "authorized_keys", 0o644)
        if state.mode == "podman":
            config = sshd_config(h.address)
        else:  # the host's own file system: point sshd at the state dir
            config = sshd_config(
                h.address, etc_dir=str(hd), pid_file=str(d / "run" / h.name / "sshd.pid"),
                strict_modes=False, set_env={"CLUSTERFORGE_LAB_IB_CONF": str(hd / "ib.json")},
            )
        (hd / "sshd_config").write_text(config)
        ib = {
            "server": spec.ibsim_address,
            "port": DEFAULT_REMOTE_PORT,
            "devices": [{"name": dev, "sim_host": sim, **({} if x.plane is None else {"plane": x.plane})}
                        for (dev, sim), x in zip(rec.hcas, h.hcas, strict=True)],
            "timeout": IB_TOOL_TIMEOUT,
        }
        (hd / "ib.json").write_text(json.dumps(ib, indent=1) + "\n")
        if h.role == SM_ROLE and spec.opensm_config is not None:
            shutil.copyfile(spec.opensm_config, hd / "opensm.conf")
    write_known_hosts(state.known_hosts, lines)
