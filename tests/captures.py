"""Reading the real Slurm outputs captured under tests/data/slurm (see its README)."""

from __future__ import annotations

from dataclasses import dataclass

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
