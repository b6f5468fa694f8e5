"""slurm-advisor: runtime predictions per node class, time limits and workflow plans for Slurm."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("slurm-advisor")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"
