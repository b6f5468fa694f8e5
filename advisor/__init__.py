"""slurm-advisor: runtime predictions per node class, time limits and workflow plans for Slurm."""

from __future__ import annotations

from advisor.lite import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any


def __getattr__(name: str) -> Any:
    # importlib.metadata costs ~20 ms; the sbatch wrapper's submit path never asks for it.
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("slurm-advisor")
        except PackageNotFoundError:  # a source tree that was never installed
            return "0+unknown"
    raise AttributeError(name)
