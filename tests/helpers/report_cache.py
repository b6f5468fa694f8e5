"""A cache for the report tests: the real test cluster's jobs plus advised jobs built from them.

Accounting rows are the real ``sacct`` capture (tests/data/slurm/sacct_allocations_x1f.txt,
Slurm 22.05.8, every job of the capture run) saved through the real parser and store, plus
advised jobs of a task ``align``: copies of the captured job 38 with the fields an advised job
would have (its comment tag, limit, elapsed time, nodes).  ADVISED lists them with the figures
a person derived by hand from the rules in advisor/reports/jobs.py, so the tests can compute
the expected report independently of the report code.  The partitions and nodes are the real
``scontrol`` captures; c1/c2 form class 'small', f1 class 'fat', benchmarked with f1 twice as
fast; the models are learned (advisor learn) from observations of 'align' on both classes.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from advisor.models.features import X_UNIT_BYTES
from advisor.services.learn import learn
from advisor.slurm.parsers import parse_nodes, parse_partitions, parse_sacct
from advisor.slurm.records import JobRecord
from advisor.store import Store
from advisor.store.accounting import save_jobs
from advisor.store.advice import Advice, record_advice
from advisor.store.benchmarks import BenchRun, Measurement, save_bench_run
from advisor.store.cluster import save_cluster
from advisor.store.node_classes import save_node_classes
from advisor.store.observations import Observation, add_observations
from tests.helpers.captures import capture

GB = X_UNIT_BYTES
CLASSES = {"c1": "small", "c2": "small", "f1": "fat"}
DEFAULT_TIME_S = {"cpu": 1800, "long": 4 * 3600, "fat": 3600}  # DefaultTime in the capture


class AdvisedJob(NamedTuple):
    """One synthetic advised job; advisor_s / without_s / applied are derived by hand."""

    job_id: int
    user: str
    partition: str
    node: str
    cpus: int
    elapsed_s: int
    timelimit_s: int
    state: str
    comment: str
    advice: dict[str, object] | None  # fields of the advice row (None: tag only, from Lua)
    advisor_s: int
    without_s: int | None
    applied: bool
    cluster: str = "advisor"


def _tag(action: str, minutes: int, source: str = "wrapper") -> str:
    quantile = ",q=0.95" if source == "wrapper" else ""
    return f"advisor:{source},action={action},limit={minutes}{quantile},task=align"


ADVISED: tuple[AdvisedJob, ...] = (
    # fill, no --time: the advisor set 15 min; without it the partition's DefaultTime.
    AdvisedJob(
        101,
        "alice",
        "cpu",
        "c1",
        2,
        610,
        900,
        "COMPLETED",
        _tag("set", 15),
        {"policy": "fill", "argv": ["-p", "cpu", "--time=00:15:00", "align.sh"]},
        900,
        1800,
        True,
    ),
    # the same, killed at the advisor's limit.
    AdvisedJob(
        102,
        "alice",
        "cpu",
        "c2",
        2,
        905,
        900,
        "TIMEOUT",
        _tag("set", 15),
        {"policy": "fill", "argv": ["-p", "cpu", "--time=00:15:00", "align.sh"]},
        900,
        1800,
        True,
    ),
    # tighten lowered the user's --time=2:00:00 to 10 min.
    AdvisedJob(
        103,
        "alice",
        "cpu",
        "c1",
        1,
        300,
        600,
        "COMPLETED",
        _tag("lowered", 10),
        {
            "policy": "tighten",
            "argv": ["--time=2:00:00", "-p", "cpu", "--time=00:10:00", "align.sh"],
        },
        600,
        7200,
        True,
    ),
    # advise only: the user's hour stands; 20 min advised, and the job ran 25 min.
    AdvisedJob(
        104,
        "bob",
        "cpu",
        "c1",
        2,
        1500,
        3600,
        "COMPLETED",
        "my own comment",
        {"policy": "advise", "argv": ["-p", "cpu", "-t", "60", "align.sh"], "limit_s": 1200},
        1200,
        3600,
        False,
    ),
    # set by slurm/job_submit.lua: a tag, no advice row.
    AdvisedJob(
        105,
        "bob",
        "fat",
        "f1",
        4,
        200,
        600,
        "COMPLETED",
        "advisor:lua,action=set,limit=10,task=align",
        None,
        600,
        3600,
        True,
    ),
    # advice recorded without a cluster name (slurm.conf unreadable): joined through its tag.
    AdvisedJob(
        106,
        "carol",
        "cpu",
        "c2",
        1,
        100,
        300,
        "COMPLETED",
        _tag("set", 5),
        {"policy": "fill", "argv": ["align.sh"], "cluster": None},
        300,
        1800,
        True,
    ),
    # the user's --time=00:20:00 kept (fill never changes it); 15 min advised.
    AdvisedJob(
        107,
        "alice",
        "cpu",
        "c1",
        2,
        400,
        1200,
        "COMPLETED",
        _tag("kept", 15),
        {"policy": "fill", "argv": ["-p", "cpu", "--time=00:20:00", "align.sh"]},
        900,
        1200,
        False,
    ),
)
#: A job of another cluster with the same id as 106: it must not pick up 106's advice.
FOREIGN = AdvisedJob(
    106, "u1", "p1", "", 1, 50, 100, "COMPLETED", "", None, 0, None, False, cluster="kth"
)


def real_jobs() -> list[JobRecord]:
    """Every allocation of the capture run (job 47's '|' survives the 0x1f delimiter)."""
    return parse_sacct(capture("sacct_allocations_x1f.txt").body, delimiter="\x1f")


def advised_records() -> list[JobRecord]:
    """ADVISED and FOREIGN as records: job 38 of the capture with their fields."""
    template = next(job for job in real_jobs() if job.job_id == "38")
    return [
        template._replace(
            cluster=spec.cluster, job_id=str(spec.job_id), job_id_raw=spec.job_id,
            name="align.sh", user=spec.user, partition=spec.partition,
            nodes=(spec.node,) if spec.node else (), cpus=spec.cpus, elapsed_s=spec.elapsed_s,
            timelimit_s=spec.timelimit_s, state=spec.state, comment=spec.comment,
        )
        for spec in (*ADVISED, FOREIGN)
    ]  # fmt: skip


def _observations() -> list[Observation]:
    """align on small: 30 s + 60 s/GB; on fat about twice as fast (as its benchmark says)."""
    out = []
    for i in range(1, 13):
        size = i * GB / 2
        wobble = 1.0 + 0.04 * ((i * 7) % 5 - 2)
        out.append(
            Observation(
                "test",
                f"s{i}",
                "align",
                (30 + 60 * size / GB) * wobble,
                node="c1",
                node_class="small",
                input_bytes=int(size),
                cores=2,
            )
        )
    for i in (2, 6, 10):
        size = i * GB / 2
        out.append(
            Observation(
                "test",
                f"f{i}",
                "align",
                (15 + 30 * size / GB) * 1.05,
                node="f1",
                node_class="fat",
                input_bytes=int(size),
                cores=4,
            )
        )
    return out


def fill_cache(path: Path) -> Path:
    """The cache described in the module docstring, at path."""
    with Store.open(path) as store:
        save_cluster(
            store,
            parse_partitions(capture("scontrol_show_partition.txt").body),
            parse_nodes(capture("scontrol_show_node.txt").body),
        )
        save_node_classes(store, CLASSES)
        for node, speed in (("c1", 1.0), ("c2", 1.0), ("f1", 2.0)):
            save_bench_run(
                store,
                BenchRun(
                    node,
                    "advisor-bench",
                    "profile",
                    {
                        "cpu_single_events_s": Measurement(1000.0 * speed),
                        "seq_read_mib_s": Measurement(500.0 * speed),
                        "memory_mib_s": Measurement(8000.0),
                    },
                    {"cpu_model": "test"},
                    measured_at="2026-11-20T10:00:00+00:00",
                ),
            )
        add_observations(store, _observations())
        learn(store)
        save_jobs(store, [*real_jobs(), *advised_records()])
        for spec in ADVISED:
            if spec.advice is None:
                continue
            fields = dict(spec.advice)
            classes = "fat" if spec.partition == "fat" else "small"
            record_advice(store, Advice(
                user=spec.user, policy=str(fields["policy"]), argv=list(fields["argv"]),
                outcome="submitted", task="align", partition=spec.partition, node_class=classes,
                predicted_s=0.8 * spec.advisor_s, quantile=0.95,
                limit_s=int(fields.get("limit_s", spec.advisor_s)),
                cluster=fields.get("cluster", "advisor"),
                job_id=spec.job_id,
            ))  # fmt: skip
    return path
