"""The lab's host backends, one provider each: `podman` and `containers` (one container per host, systemd as
PID 1 when asked, on an internal network), `netns` and `hostns` (the fallback: one network namespace and
sshd per host where podman cannot run), `scale` and `scale_plan` (the scale lab's N SSH targets, sized
against the machine's memory before anything starts: docs/scale.md). Each gives the lab SSH-reachable hosts
at lab addresses; none knows an inventory."""
