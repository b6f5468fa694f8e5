"""The README's quick starts, run as written on the real cluster (the administrator's, then the user's).

They write the site layout (/var/lib/slurm-advisor, /var/cache/slurm-advisor,
/etc/slurm/advisor-limits.json): whatever was not there before is removed again.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.paths import REPO

pytestmark = pytest.mark.usefixtures("slurm_cluster")

SITE_PATHS = (Path("/var/lib/slurm-advisor"), Path("/var/cache/slurm-advisor"),
              Path("/etc/slurm/advisor-limits.json"))  # fmt: skip


def quick_start(heading: str) -> str:
    """The bash block under a README heading."""
    text = (REPO / "README.md").read_text()
    match = re.search(re.escape(heading) + r".*?\n```bash\n(.*?)```", text, re.DOTALL)
    assert match, f"README.md has no bash block under {heading!r}"
    return match.group(1)


ADMIN = quick_start("### Quick start for an administrator")
USER = quick_start("### Quick start for a user")


def _run(script: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "HOME": str(home),
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
    }
    env.pop("ADVISOR_DB", None)
    return subprocess.run(["bash", "-e", "-c", script], capture_output=True, text=True, env=env,
                          cwd=home, timeout=300, check=False)  # fmt: skip


@pytest.fixture
def clean_site(tmp_path: Path) -> Iterator[Path]:
    before = {path: path.exists() for path in SITE_PATHS}
    saved = SITE_PATHS[2].read_bytes() if before[SITE_PATHS[2]] else None
    try:
        yield tmp_path
    finally:
        subprocess.run(["scancel", "--name", "hello"], check=False)
        for path, existed in before.items():
            if not existed:
                if path.is_dir():
                    shutil.rmtree(path)
                else:
                    path.unlink(missing_ok=True)
        if saved is not None:
            SITE_PATHS[2].write_bytes(saved)


def test_each_quick_start_is_at_most_ten_lines() -> None:
    for block in (ADMIN, USER):
        assert 0 < len(block.strip().splitlines()) <= 10


def test_the_quick_starts_run_as_written(clean_site: Path) -> None:
    admin = _run(ADMIN, clean_site)
    assert admin.returncode == 0, admin.stderr
    assert "all checks ok" in admin.stdout, admin.stdout  # advisor doctor, the last line
    user = _run(USER, clean_site)
    assert user.returncode == 0, user.stderr
    assert "submitting your arguments unchanged" not in user.stderr  # the advisor did not fail
    decision = re.search(r"task 'hello'; (\w+)", user.stderr)
    assert decision, user.stderr  # the explanation of the dry run
    dry = re.search(r"^sbatch .*$", user.stdout, re.MULTILINE)
    assert dry, user.stdout
    job = re.search(r"Submitted batch job (\d+)", user.stdout)
    assert job, user.stdout
    limit = re.search(rf"^{job.group(1)} hello (\S+)$", user.stdout, re.MULTILINE)
    assert limit, user.stdout  # squeue shows the job and its limit
    if decision.group(1) == "set":  # root's earlier 'hello' jobs (5 or more) in accounting
        given = re.search(r"--time=(\d+):(\d\d):(\d\d)", dry.group(0))
        assert given, dry.group(0)
        h, m, sec = (int(part) for part in given.groups())
        assert limit.group(1) == (f"{h}:{m:02d}:{sec:02d}" if h else f"{m}:{sec:02d}")
    else:  # no history yet: the job goes as written, with the partition's default limit
        assert decision.group(1) == "none" and "--time" not in dry.group(0)
