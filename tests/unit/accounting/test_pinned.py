"""``advisor update`` of real logs and recordings gives the cache it gave before it was made fast.

tests/data/pinned/update.json holds, per case, a digest of every table's rows (without the
``*_at`` times) and the figures of each update, written with ``python -m
tests.unit.accounting.test_pinned --write`` by the per-record path before the bulk path of
issue #15: first by commit b09c208, then again by main at 3834a00 (whose hostile-user rules
changed what is stored: recorded advice for the site budget, no model taught by a job without
a user, the censored rule, the 'paper' models), run from a copy of that tree (and the empty
guard_heartbeat table of migration 6 added by hand: no update writes it; and by hand again for
migration 7, the empty qos_limits, associations, default_accounts and site_limits tables and the
partition row's new qos column, NULL: the digest of the rows without it was the pinned one), and
once more for issue 29's log-scale models (migration 8): compared with the file before, only the
model tables (task_models, user_task_models, the new class_effects and site_model) and the count
of censored updates differ (4 on the excerpts as before, 120 -> 147 on the whole logs); for
the offsets' loads (ten numbers where three were): only user_task_models differs; and for
issue 30's kill budget (migration 9): history_budget and history_cells instead of history_site,
name-family keys, no at-risk cap, every other table's digest unchanged, and the reported cluster
of a dump the one its rows name.  Issue 31's migration 10 (advice indexed by job id and by time)
adds indexes only, and the file path stores what it stored (retention prunes in services/update,
not here): no digest changed on that merge, and the file was not rewritten.  The cases go through everything an update does: jobs,
observations, history key states, score cells and kill budgets, the task models (COMPLETED runs
online, TIMEOUTs censored) and per-user models,
on the SWF excerpts, the public projects' recordings, the test cluster's recordings, and a
site dump built from the real KTH SP2 and CEA Curie jobs (runtimes, limits, states, users,
times) with job names, nodes and advisor tags; the ``full`` case uses the whole logs
(tests/data/traces/pwa).
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from advisor.accounting.ingest import Ingested
from advisor.accounting.mapping import swf_epoch, swf_record
from advisor.accounting.sacct_file import dump_format, format_sacct_row
from advisor.accounting.saved import update_from_file
from advisor.accounting.swf import read_swf, swf_header
from advisor.advice.tag import Tag, with_tag
from advisor.imports.lotaru import read_lotaru_csv
from advisor.services.learn import learn
from advisor.slurm.parsers import SACCT_FIELDS
from advisor.slurm.records import JobRecord, Node, Partition
from advisor.store import Store
from advisor.store.cluster import save_cluster
from advisor.store.node_classes import save_node_classes
from advisor.store.observations import add_observations
from tests.helpers.caches import cache_content
from tests.helpers.captures import capture
from tests.helpers.paths import TEST_DATA, unpack_pwa_logs
from tests.helpers.public_recordings import PUBLIC, RECORDINGS

PINNED = TEST_DATA / "pinned" / "update.json"
TRACES = TEST_DATA / "traces"
EXCERPTS = (TRACES / "kth-sp2-excerpt.swf", TRACES / "cea-curie-excerpt.swf")
FULL_LOGS = ("kth", "curie")  # keys of the pwa_logs fixture, in this order
#: The test cluster's recordings (tests/data/slurm), read as saved dumps (with --fields for the
#: --noheader ones).
CLUSTER_RECORDINGS: dict[str, dict[str, Any]] = {
    "sacct_allocations.txt": {"fields": ",".join(SACCT_FIELDS)},
    "sacct_workflow_jobs.txt": {},
    "sacct_steps.txt": {"fields": ",".join(SACCT_FIELDS)},
    "sacct_replay_jobs.txt": {},
    # its "# +T s" lines between the rows do not join back: read as before only when trusted
    "sacct_inflight_sequence.txt": {"fields": ",".join(SACCT_FIELDS), "trust_names": True},
    "forms/sacct_done_when.txt": {},
    "forms/sacct_tab.txt": {},
    "forms/sacct_epoch.txt": {},
    "forms/sacct_array_cancelled.txt": {},
    "forms/sacct_separators.txt": {"trust_names": True},  # Comment last
    "forms/sacct_separators.json": {},
}
#: Job names of the site dump: the two modelled tasks, plain names, a Nextflow process.
NAMES = ("fastqc", "bwa", "assemble", "postproc", "nf-NFCORE_EAGER_FASTQC_(s{n})", "sim{n}")
NODES = (("c1",), ("c2",), ("c1", "c2"), ("n7",))


def site_cache(path: Path) -> Store:
    """A cache as a site that uses the advisor has one: task models, nodes with classes."""
    store = Store.open(path)
    runs = read_lotaru_csv(TEST_DATA / "imports" / "lotaru_local_eager_excerpt.csv")
    add_observations(store, [run.observation for run in runs])
    learn(store)
    save_cluster(
        store,
        [Partition("cpu", ("c1", "c2"), 86400 * 7, 1800, True, "UP")],
        [Node(name, 2, 4000, ("cpu",), ("cpu",), "IDLE") for name in ("c1", "c2")],
    )
    save_node_classes(store, {"c1": "local", "c2": "local"})
    return store


def site_jobs(logs: tuple[Path, ...]) -> Iterator[JobRecord]:
    """The logs' jobs as a site's sacct records: names, nodes, tags chosen by the job's number."""
    for log in logs:
        epoch = swf_epoch(swf_header(log))
        for job in read_swf(log):
            if job.run_s is None:
                continue
            record = swf_record(job, log=log.stem, epoch=epoch)
            number = job.job_id
            name = NAMES[number % len(NAMES)].format(n=number % 13)
            comment = ""
            if (
                number % 7 == 0
            ):  # a Snakemake job: the run's UUID as its name, the rule in the comment
                name = "feab4cdc-1349-44cc-b4b7-64d93701a213"
                comment = f"rule_align_wildcards_s{number % 5}"
            limit_min = (record.timelimit_s or 3600) // 60 + 1
            if number % 3 != 1:  # advised: the tag's limit is the job's
                task = "fastqc" if number % 11 == 0 else None
                size = 10**9 * (number % 5 + 1) if number % 2 else None
                comment = with_tag(comment, Tag("wrapper", "set", limit_min, 0.95, task, size))
            yield record._replace(
                cluster="site",
                partition=("cpu", "long", "fat")[number % 3],
                user=f"{log.stem[:3].lower()}{job.user}",
                name=name,
                nodes=NODES[number % len(NODES)],
                cpus=job.procs or 1,
                timelimit_s=limit_min * 60 if number % 3 != 1 else record.timelimit_s,
                # a TIMEOUT at the advised limit is a kill of the advice
                elapsed_s=limit_min * 60 if record.state == "TIMEOUT" else record.elapsed_s,
                end=(record.start + timedelta(seconds=limit_min * 60))
                if record.state == "TIMEOUT" and record.start is not None
                else record.end,
                comment=comment,
            )


def write_dump(path: Path, jobs: Iterator[JobRecord]) -> Path:
    with path.open("w", encoding="utf-8") as out:
        out.write("|".join(SACCT_FIELDS) + "\n")
        out.writelines(format_sacct_row(job) + "\n" for job in jobs)
    return path


def _summary(result: Ingested) -> dict[str, Any]:
    """What an update says, without the paths it names."""
    keep = ("records", "stored", "already_stored", "model_updates", "censored_updates", "states",
            "skipped", "cluster")  # fmt: skip
    return {key: getattr(result, key) for key in keep} | {"warnings": len(result.warnings)}


#: What issue 33 added (the memory jobs used and what it teaches), which the pin predates: left
#: out, so that the pin still shows that nothing else changed (tests/unit/accounting/
#: test_memory_ingest.py checks what the update stores of memory).
MEMORY = {
    "accounting_jobs": ("max_rss_mb",),
    "observations": ("peak_mem_mb", "mem_censored"),
    "memory_models": ("*",),
    "memory_site": ("*",),
    "memory_budget": ("*",),
    "partition_memory": ("*",),
    "site_settings": ("*",),
    "advice": ("mem_mb", "mem_action"),
}


def digest(path: Path) -> dict[str, list[Any]]:
    """Per table: its row count and a SHA-256 of its rows (sorted, without *_at times)."""
    return {
        table: [len(rows), hashlib.sha256(repr(rows).encode()).hexdigest()]
        for table, rows in cache_content(path, leave_out=MEMORY).items()
    }


def updates(tmp_path: Path, inputs: list[tuple[Path, str, dict[str, Any]]]) -> dict[str, Any]:
    """Every input into one site cache, in order (twice: the second run stores nothing)."""
    path = tmp_path / "cache.db"
    results = []
    with site_cache(path) as store:
        for _ in range(2):
            for file, kind, options in inputs:
                dump = dump_format(cluster="public", **options) if kind == "sacct" else None
                results.append(_summary(update_from_file(store, file, kind=kind, dump=dump)))
    return {"updates": results, "tables": digest(path)}


def recordings(tmp_path: Path) -> list[tuple[Path, str, dict[str, Any]]]:
    """The public projects' recordings that load, and the test cluster's, as saved dumps."""
    inputs = [
        (PUBLIC / name, "sacct", expected.options)
        for name, expected in sorted(RECORDINGS.items())
        if expected.refused is None
    ]
    for name, options in CLUSTER_RECORDINGS.items():
        body = capture(name).body
        saved = tmp_path / name.replace("/", "-")
        with saved.open("w", encoding="utf-8", newline="") as out:
            out.write(body)
        inputs.append((saved, "sacct", options))
    return inputs


def case_excerpts(tmp_path: Path) -> dict[str, Any]:
    dump = write_dump(tmp_path / "site.txt", site_jobs(EXCERPTS))
    inputs = [(log, "swf", {}) for log in EXCERPTS] + [(dump, "sacct", {})]
    return updates(tmp_path, inputs + recordings(tmp_path))


def case_full(tmp_path: Path, pwa_logs: dict[str, Path]) -> dict[str, Any]:
    logs = tuple(pwa_logs[key] for key in FULL_LOGS)
    dump = write_dump(tmp_path / "site.txt", site_jobs(logs))
    return updates(tmp_path, [(log, "swf", {}) for log in logs] + [(dump, "sacct", {})])


def test_excerpts_and_recordings_give_the_pinned_cache(tmp_path: Path) -> None:
    assert case_excerpts(tmp_path) == json.loads(PINNED.read_text())["excerpts"]


def test_the_whole_real_logs_give_the_pinned_cache(
    tmp_path: Path, pwa_logs: dict[str, Path]
) -> None:
    assert case_full(tmp_path, pwa_logs) == json.loads(PINNED.read_text())["full"]


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    import tempfile

    with tempfile.TemporaryDirectory() as first, tempfile.TemporaryDirectory() as second:
        pinned = {
            "excerpts": case_excerpts(Path(first)),
            "full": case_full(Path(second), unpack_pwa_logs(Path(first))),
        }
    PINNED.parent.mkdir(exist_ok=True)
    PINNED.write_text(json.dumps(pinned, indent=1, sort_keys=True) + "\n")
elif __name__ == "__main__":
    pytest.main([__file__, "-q"])
