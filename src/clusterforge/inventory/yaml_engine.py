"""The YAML parser behind the inventory: yaml-rs, with PyYAML's C loader as the mature fallback.

yaml-rs (Rust, YAML 1.2) reads a 2,048-node environment (4.4 MB) in 0.15 s; PyYAML's C loader
takes 4.6 s and ruamel.yaml's safe loader 22 s on the same files (docs/architecture.md, "The
YAML loader"). yaml-rs is young (0.1.x, one author), so it is pinned exactly in pyproject.toml,
fed only text that the guards in load_text have passed (printable characters, a bounded
expanded size), fuzzed in tests/property/test_yaml_engine.py, and backed by PyYAML:

- `CLUSTERFORGE_YAML=pyyaml` selects the fallback outright;
- yaml-rs missing (no wheel for the platform) selects it too;
- a panic inside yaml-rs (pyo3's PanicException, a BaseException) is retried on it once.

The fallback resolves plain scalars by the YAML 1.2 core schema (not PyYAML's 1.1 rules:
`yes`/`on` stay strings, `0o17` is 15, `017` is 17); where yaml-rs goes past the core schema
(underscores in numbers, `0b101`, `0X1F`, dates, `12:30:00`) the two differ, and
tests/unit/test_yaml_engine.py holds that list.
"""

from __future__ import annotations

import os
import re
from types import ModuleType
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.resolver import BaseResolver

ENGINE_ENV = "CLUSTERFORGE_YAML"
"""Set to `pyyaml` to parse with the fallback; anything else (or unset) means yaml-rs."""

_yaml_rs: ModuleType | None
try:
    import yaml_rs as _yaml_rs
except ImportError:  # pragma: no cover - the wheel is a dependency; this is the fallback's reason to be
    _yaml_rs = None

_CParser: Any = getattr(getattr(yaml, "cyaml", None), "CParser", None)  # None: PyYAML built without libyaml


class YamlSyntaxError(Exception):
    """The text is not YAML; `original` is the parser's own exception (its message and marks)."""

    def __init__(self, original: BaseException) -> None:
        super().__init__(str(original))
        self.original = original


class _Core12Resolver(BaseResolver):
    """Plain scalars resolved by the YAML 1.2 core schema (no timestamps, no merge keys, no 1.1 booleans)."""


_Core12Resolver.add_implicit_resolver(
    "tag:yaml.org,2002:null", re.compile(r"^(?:~|null|Null|NULL|)$"), ["~", "n", "N", ""]
)
_Core12Resolver.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)
_Core12Resolver.add_implicit_resolver(
    "tag:yaml.org,2002:int", re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"), list("-+0123456789")
)
_Core12Resolver.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    list("-+.0123456789"),
)


class _Core12Constructor(SafeConstructor):
    def construct_core_int(self, node: yaml.ScalarNode) -> int:
        text = str(self.construct_scalar(node))
        if text.startswith("0o"):
            return int(text[2:], 8)
        if text.startswith("0x"):
            return int(text[2:], 16)
        return int(text, 10)

    def construct_unique_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
            except TypeError:
                raise yaml.constructor.ConstructorError(
                    None, None, "a mapping key that is not a scalar", key_node.start_mark
                ) from None
            if duplicate:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate mapping key: {key!r}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


_Core12Constructor.add_constructor(  # type: ignore[type-var]
    "tag:yaml.org,2002:int", _Core12Constructor.construct_core_int
)
_Core12Constructor.add_constructor(  # type: ignore[type-var]
    "tag:yaml.org,2002:map", _Core12Constructor.construct_unique_mapping
)


if _CParser is not None:

    class Core12Loader(_CParser, _Core12Constructor, _Core12Resolver):  # type: ignore[misc]
        """PyYAML's C parser with the YAML 1.2 core schema and duplicate keys refused."""

        def __init__(self, stream: str) -> None:
            _CParser.__init__(self, stream)
            _Core12Constructor.__init__(self)
            _Core12Resolver.__init__(self)

else:  # pragma: no cover - PyYAML built without libyaml

    class Core12Loader(  # type: ignore[no-redef]
        yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser, yaml.composer.Composer,
        _Core12Constructor, _Core12Resolver,
    ):
        """PyYAML's Python parser with the YAML 1.2 core schema and duplicate keys refused."""

        def __init__(self, stream: str) -> None:
            yaml.reader.Reader.__init__(self, stream)
            yaml.scanner.Scanner.__init__(self)
            yaml.parser.Parser.__init__(self)
            yaml.composer.Composer.__init__(self)
            _Core12Constructor.__init__(self)
            _Core12Resolver.__init__(self)


def engine() -> str:
    """`yaml-rs` or `pyyaml`: the parser `loads` starts with."""
    if os.environ.get(ENGINE_ENV, "").strip().lower() == "pyyaml" or _yaml_rs is None:
        return "pyyaml"
    return "yaml-rs"


def loads_pyyaml(text: str) -> Any:
    """The fallback parser; YamlSyntaxError for text that is not YAML."""
    try:
        loader = Core12Loader(text)
        try:
            return loader.get_single_data()
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        raise YamlSyntaxError(exc) from None


def loads(text: str) -> Any:
    """One YAML document as plain data (dict, list, str, int, float, bool, None, date).

    YamlSyntaxError for text that is not YAML; RecursionError for nesting too deep.
    """
    if engine() == "pyyaml":
        return loads_pyyaml(text)
    assert _yaml_rs is not None
    try:
        return _yaml_rs.loads(text)
    except _yaml_rs.YAMLDecodeError as exc:
        raise YamlSyntaxError(exc) from None
    except (KeyboardInterrupt, SystemExit, RecursionError, MemoryError):
        raise
    except BaseException:  # a Rust panic surfaces as pyo3's PanicException: the mature parser decides
        return loads_pyyaml(text)
