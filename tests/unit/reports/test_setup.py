"""The report tests' cache (tests/helpers/report_cache.py) holds what its docstring says."""

from __future__ import annotations

import json
from pathlib import Path

from advisor.store import Store
from tests.helpers.report_cache import fill_cache


def test_the_cache_holds_the_real_and_the_advised_jobs(tmp_path: Path) -> None:
    with Store.open(fill_cache(tmp_path / "cache.db")) as store:
        ids = {row["job_id"] for row in store.query("SELECT job_id FROM accounting_jobs")}
        assert {"36", "47", "49_1", "49_2", "101", "107"} <= ids
        assert store.query("SELECT COUNT(*) AS n FROM advice")[0]["n"] == 6
        methods = {row["method"] for row in store.query("SELECT method FROM task_models")}
        assert {"lotaru", "online"} <= methods
        argv = json.loads(store.query("SELECT argv FROM advice WHERE job_id = 103")[0]["argv"])
        assert argv[0] == "--time=2:00:00"
