"""Reading the real Slurm outputs captured under tests/data/slurm (see its README)."""

from __future__ import annotations

import shlex
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from tests.conftest import TEST_DATA


@dataclass(frozen=True)
class Capture:
    """A captured output: the '# key: value' header lines and the raw text below them."""

    header: dict[str, str]
    body: str

    @property
    def exit_code(self) -> int:
        return int(self.header.get("exit code", "0").split()[0])


def capture(name: str) -> Capture:
    header: dict[str, str] = {}
    body: list[str] = []
    path = TEST_DATA / "slurm" / name
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
