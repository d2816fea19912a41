"""Firmware flashing: the machine steps a day-2 firmware bump runs (`clusterforge firmware flash|activate`).
`flash`: a host's cards through mlxfwmanager over SSH (query first, never cross-flash, the burn taken only as
mlxfwmanager reports it), their activation (mlxfwreset or a reboot); `switch`: an unmanaged switch in-band from
the SM node through flint; `images`: where a pin's image is staged and how versions compare. What to flash
when is day2's (day2/firmware.py plans the bumps); docs/firmware.md."""
