"""Ansible's strategy in the environment ansible-playbook runs with: linear/free are Ansible's own, mitogen_* are
mitogen's plugins (the scale bench measures them, docs/scale.md)."""

from __future__ import annotations

from pathlib import Path

from clusterforge.deploy.ansible import ansible_env, mitogen_strategies


def test_builtin_strategy_sets_no_plugin_path() -> None:
    env = ansible_env(strategy="free")
    assert env["ANSIBLE_STRATEGY"] == "free"
    assert "ANSIBLE_STRATEGY_PLUGINS" not in env or env["ANSIBLE_STRATEGY_PLUGINS"] != str(mitogen_strategies())


def test_mitogen_strategy_points_at_mitogens_plugins() -> None:
    env = ansible_env(strategy="mitogen_free")
    assert env["ANSIBLE_STRATEGY"] == "mitogen_free"
    folder = Path(env["ANSIBLE_STRATEGY_PLUGINS"])
    assert (folder / "mitogen_free.py").is_file()
    assert (folder / "mitogen_linear.py").is_file()
