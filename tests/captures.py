"""Reading the real Slurm outputs captured under tests/data/slurm (see its README).

``tests/data/slurm/<MAJOR.MINOR>/`` holds one recording per Slurm version (22.05, 24.11), made
by slurm/capture-fixtures.sh from the same job mix; a test meant to hold on every version is
parametrised over ``VERSIONS`` and reads ``capture(name, version)``, its job ids from
``submitted(version)``.  The files directly in tests/data/slurm/ are the first 22.05 recording,
which older tests read by its job ids and dates (``capture(name)``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tests.conftest import TEST_DATA

SLURM_DATA = TEST_DATA / "slurm"
#: The Slurm versions recorded, oldest first ("22.05", "24.11").
VERSIONS: tuple[str, ...] = tuple(
    sorted(
        (p.name for p in SLURM_DATA.iterdir() if p.is_dir() and re.fullmatch(r"\d+\.\d+", p.name)),
        key=lambda v: tuple(int(part) for part in v.split(".")),
    )
)


@dataclass(frozen=True)
class Capture:
    """A captured output: the '# key: value' header lines and the raw text below them."""

    header: dict[str, str]
    body: str

    @property
    def exit_code(self) -> int:
        return int(self.header.get("exit code", "0").split()[0])

    @property
    def slurm_version(self) -> str:
        """``22.05.8`` from ``# slurm version: slurm-wlm 22.05.8 (from sinfo --version)``."""
        match = re.search(r"(\d+\.\d+\.\d+)", self.header.get("slurm version", ""))
        if not match:
            raise ValueError(f"capture without a '# slurm version' header: {self.header}")
        return match.group(1)


def capture(name: str, version: str | None = None) -> Capture:
    """The capture ``name`` of one version's recording (None: the first 22.05 recording)."""
    header: dict[str, str] = {}
    body: list[str] = []
    path = SLURM_DATA / version / name if version else SLURM_DATA / name
    for line in path.read_text().splitlines(keepends=True):
        if not body and line.startswith("# "):
            key, _, value = line[2:].partition(":")
            header[key.strip()] = value.strip()
        else:
            body.append(line)
    return Capture(header, "".join(body))


def submitted(version: str) -> dict[str, int]:
    """Job id by purpose, from the recording's jobs_submitted.tsv (``timeout`` -> 1234)."""
    lines = (SLURM_DATA / version / "jobs_submitted.tsv").read_text().splitlines()[1:]
    return {purpose: int(job) for job, purpose, _ in (line.split("\t", 2) for line in lines)}
