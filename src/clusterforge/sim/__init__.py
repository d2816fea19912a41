"""Simulated observations (what a tool would print for a declared fabric), for tests and benchmarks."""
