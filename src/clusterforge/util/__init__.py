"""Helpers every layer may use: text bounds, errors, atomic files, GUID spelling, CSV, union-find, node sets."""
