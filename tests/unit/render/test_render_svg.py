"""The fabric diagram: SVG through Graphviz `dot` when installed, the .dot source and a note otherwise."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET

import pytest
from _render_common import lab_index

from clusterforge.render import render
from clusterforge.render import svg as svg_mod


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz dot is not installed (apt-get install graphviz)")
def test_svg_is_drawn() -> None:
    result = render(lab_index(), "lab", svg=True)
    drawing = result.files["fabric/fabric.svg"]
    root = ET.fromstring(drawing.encode())
    assert root.tag.endswith("svg")
    assert "<!-- Managed by clusterforge for environment lab." in drawing
    titles = {t.text for t in root.iter("{http://www.w3.org/2000/svg}title")}
    assert {"spine01", "leaf-su02-r1", "gpu08", "lus02", "spine01--leaf-su01-r0"} <= titles
    assert render(lab_index(), "lab", svg=True).files["fabric/fabric.svg"] == drawing


def test_without_dot_the_source_and_a_note(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(svg_mod.shutil, "which", lambda name: None)
    result = render(lab_index(), "lab", svg=True)
    assert "fabric/fabric.svg" not in result.files
    assert "fabric/fabric.dot" in result.files
    assert any("dot` is not installed" in n for n in result.notes)
