"""Collected or saved tool outputs against the declaration: fabric, hosts, GPUs, software and rail planes into
findings with what to do, reports (text, JSON, JUnit), and the declared-fabric cache of the fast path."""
