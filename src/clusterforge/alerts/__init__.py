"""Alerts as an operator meets them, beyond rendering the monitoring stack (render/ does that): `view`, the
`alerts` command's view of firing alerts (each located by host, rack, U, cable and switch), and `drain`, the
receiver the alert manager posts to, which drains a node through the inventory's drain hook."""
