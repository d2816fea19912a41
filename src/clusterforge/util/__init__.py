"""Helpers every layer may use: text bounds, errors, atomic files, GUID spelling, CSV, hostlists, node sets,
union-find."""
