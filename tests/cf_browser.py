"""Debian's Chromium, headless, through selenium and Debian's chromedriver: the floor page's browser tests
(tests/unit/floor/test_floor_browser.py, tests/lab/test_floor_lab.py). scripts/lab-deps.sh installs both."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
LEVEL3 = "rgb(229, 57, 53)"  # floor.css .level3
FILL = "return getComputedStyle(document.querySelector('rect[data-name=\"{}\"]')).fill"


@contextmanager
def chromium(profile: Path) -> Iterator[Any]:
    """A headless Chromium (selenium's driver), its profile under `profile`; quit afterwards."""
    if CHROMIUM is None or DRIVER is None:
        pytest.fail("chromium and chromium-driver missing: run scripts/lab-deps.sh (CI does)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1600,1000",
                f"--user-data-dir={profile}", "--no-first-run"):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=DRIVER), options=opts)
    try:
        yield driver
    finally:
        driver.quit()


def until(what: Callable[[], Any], seconds: float, why: str) -> Any:
    """`what()` once it is truthy (polled every 0.2 s); AssertionError naming `why` after `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        got = what()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"{why} within {seconds:.0f} s")
        time.sleep(0.2)
