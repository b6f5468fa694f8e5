"""Reading the real Slurm outputs captured under tests/data/slurm (see its README).

``tests/data/slurm/<MAJOR.MINOR>/`` holds one recording per Slurm version (22.05, 24.11), made
by slurm/capture-fixtures.sh from the same job mix; a test meant to hold on every version is
parametrised over ``VERSIONS`` and reads ``capture(name, version)``, its job ids from
``submitted(version)``.  The files directly in tests/data/slurm/ are the first 22.05 recording,
which older tests read by its job ids and dates (``capture(name)``).
"""

from __future__ import annotations

import re
import shlex
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from advisor.slurm.parsers import SACCT_FIELDS
from tests.helpers.paths import TEST_DATA

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
    with path.open(encoding="utf-8", newline="") as stream:  # a \r in a job name stays a \r
        text = stream.read()
    for line in text.splitlines(keepends=True):
        if not body and line.startswith("# "):
            key, _, value = line[2:].partition(":")
            header[key.strip()] = value.strip()
        else:
            body.append(line)
    return Capture(header, "".join(body))


def record(name: str, argv: Sequence[str], *, notes: Sequence[str] = ()) -> Capture:
    """Run a Slurm command and keep its stdout under tests/data/slurm in the format above.

    The integration tests that capture fixtures call this only when ADVISOR_RECORD_FIXTURES=1;
    a stderr line or a non-zero exit fails the capture rather than recording it.
    """
    version = subprocess.run(["sinfo", "--version"], capture_output=True, text=True, check=True)
    started, clock = datetime.now(UTC).replace(microsecond=0), time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=120)
    elapsed = time.monotonic() - clock
    assert done.stderr == "", done.stderr
    header = [
        f"slurm version: {version.stdout.strip()} (from sinfo --version)",
        f"command: {shlex.join(argv)}",
        f"date: {started.isoformat()}",
        "exit code: 0",
        f"elapsed: {elapsed:.3f} s",
        *(f"note: {note}" for note in notes),
        "stderr: (empty)",
        "below: stdout, unchanged",
    ]
    text = "".join(f"# {line}\n" for line in header) + done.stdout
    (TEST_DATA / "slurm" / name).write_text(text)
    return capture(name)


def submitted(version: str) -> dict[str, int]:
    """Job id by purpose, from the recording's jobs_submitted.tsv (``timeout`` -> 1234)."""
    lines = (SLURM_DATA / version / "jobs_submitted.tsv").read_text().splitlines()[1:]
    return {purpose: int(job) for job, purpose, _ in (line.split("\t", 2) for line in lines)}


HEADER = "|".join(SACCT_FIELDS) + "\n"


def allocations(tmp_path: Path) -> Path:
    """capture-fixtures.sh's allocations with a header line, without job 47's broken row."""
    body = "".join(
        line
        for line in capture("sacct_allocations.txt").body.splitlines(keepends=True)
        if not line.startswith("47|")
    )
    path = tmp_path / "sacct.txt"
    path.write_text(HEADER + body)
    return path


def captured(name: str) -> tuple[str, int]:
    """A profiling tool's recorded output (tests/data/profiling): the text below the '# ' header
    lines, and the recorded exit code."""
    lines = (TEST_DATA / "profiling" / name).read_text().splitlines(keepends=True)
    header = [line for line in lines if line.startswith("# ")]
    code = next(int(line.split(":")[1]) for line in header if line.startswith("# exit code:"))
    return "".join(lines[len(header) :]), code
