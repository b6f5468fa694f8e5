"""Fixtures of the unit tests."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.helpers.lua_plugin import INTERPRETERS, missing


@pytest.fixture(params=INTERPRETERS)
def lua(request: pytest.FixtureRequest) -> str:
    """One stand-alone Lua interpreter with lua-cjson, each in turn."""
    path = shutil.which(request.param)
    if path is None:
        missing(f"{request.param} is not installed")
    check = subprocess.run([path, "-e", 'require("cjson")'], capture_output=True, check=False)
    if check.returncode != 0:
        missing(f"lua-cjson is not installed for {request.param}")
    return path
