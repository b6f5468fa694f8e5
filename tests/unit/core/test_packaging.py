"""Every package under advisor/ ships: a regular install (pip install .) lists packages by name."""

from __future__ import annotations

import tomllib

from tests.helpers.paths import REPO


def test_every_advisor_package_is_listed_in_pyproject() -> None:
    listed = set(
        tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    found = {
        ".".join(init.parent.relative_to(REPO).parts)
        for init in (REPO / "advisor").rglob("__init__.py")
    }
    assert found - listed == set(), "add them to [tool.setuptools] packages in pyproject.toml"
