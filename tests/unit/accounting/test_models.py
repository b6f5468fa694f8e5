"""What finished jobs teach the task models: COMPLETED moves them, TIMEOUT only raises them.

The task model is Lotaru's, fitted on the Lotaru excerpt (tests/data/imports) for node class
'local'; the accounting jobs ran on node c1 of that class.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.accounting.ingest import Ingestor
from advisor.advice.tag import Tag, with_tag
from advisor.imports.lotaru import read_lotaru_csv
from advisor.models.censoring import expected_above
from advisor.models.distributions import predictive
from advisor.services.learn import learn
from advisor.services.predict import predict_runtime
from advisor.slurm.records import JobRecord, Node, Partition
from advisor.store import Store
from advisor.store.cluster import save_cluster
from advisor.store.node_classes import save_node_classes
from advisor.store.observations import Observation, add_observations, load_observations
from tests.helpers.paths import TEST_DATA

START = datetime(2026, 11, 29, 12, 0)


@pytest.fixture
def store() -> Iterator[Store]:
    with Store.open(":memory:") as opened:
        runs = read_lotaru_csv(TEST_DATA / "imports" / "lotaru_local_eager_excerpt.csv")
        add_observations(opened, [run.observation for run in runs])
        learn(opened)
        save_cluster(
            opened,
            [Partition("cpu", ("c1",), 86400, 1800, True, "UP")],
            [Node("c1", 2, 4000, ("cpu",), ("cpu",), "IDLE")],
        )
        save_node_classes(opened, {"c1": "local"})
        yield opened


def job(number: int, state: str, elapsed_s: int, *, name: str = "fastqc", comment: str = "",
        limit_s: int = 7200) -> JobRecord:  # fmt: skip
    end = START + timedelta(minutes=number)
    return JobRecord(
        cluster="advisor", job_id=str(number), job_id_raw=number, name=name, user="alice",
        account="research", partition="cpu", nodes=("c1",), cpus=2, req_mem_mb=1000.0,
        elapsed_s=elapsed_s, timelimit_s=limit_s, timelimit_kind=None, state=state,
        state_by_uid=None, exit_code=0, exit_signal=0, submit=end - timedelta(seconds=elapsed_s),
        start=end - timedelta(seconds=elapsed_s), end=end, comment=comment,
    )  # fmt: skip


def forecast(store: Store, user: str | None = "alice") -> dict[str, float]:
    """fastqc on c1 at the input size the wrapper assumes without --input, as user sees it."""
    size = Ingestor(store).modelled["fastqc"]
    row = predict_runtime(store, "fastqc", size, node="c1", user=user).to_json()["predictions"][0]
    return {"mean": row["predicted_s"], "p95": row["p95_s"]}


def ingest(store: Store, *jobs: JobRecord) -> Ingestor:
    ingestor = Ingestor(store)
    with store.write():
        ingestor.add(jobs)
    return ingestor


def test_completed_runs_move_the_prediction_toward_them(store: Store) -> None:
    before = forecast(store)
    observed = round(before["mean"] * 3)
    distances = [abs(before["mean"] - observed)]
    for number in range(1, 6):
        ingestor = ingest(store, job(number, "COMPLETED", observed))
        assert ingestor.stats.model_updates == 1
        distances.append(abs(forecast(store)["mean"] - observed))
    assert distances == sorted(distances, reverse=True) and distances[-1] < distances[0] / 2


def test_one_users_runs_move_that_users_prediction_and_nobody_elses(store: Store) -> None:
    shared, bob = forecast(store, None), forecast(store, "bob")
    assert bob == shared == forecast(store)
    ingest(store, *(job(n, "COMPLETED", round(shared["mean"] / 4)) for n in range(1, 9)))
    mine = forecast(store)  # alice's own short runs count for her
    assert mine["mean"] < 0.75 * shared["mean"] and mine["p95"] < shared["p95"]
    assert forecast(store, "bob") == bob and forecast(store, None) == shared
    learned = forecast(store)
    learn(store)  # a refit from the observations arrives at the same separation
    assert forecast(store, "bob") == bob and forecast(store, None) == shared
    assert forecast(store)["mean"] == pytest.approx(learned["mean"], rel=1e-9)


def test_a_timeout_raises_the_upper_quantile_and_stays_censored(store: Store) -> None:
    before = forecast(store)
    limit = round(before["p95"] * 1.5)
    ingestor = ingest(store, job(1, "TIMEOUT", limit + 9, limit_s=limit))
    assert ingestor.stats.censored_updates == 1 and ingestor.stats.model_updates == 0
    assert forecast(store)["p95"] > before["p95"]
    stored = [o for o in load_observations(store, "fastqc") if o.source == "sacct:advisor"]
    assert [(o.censored, o.runtime_s) for o in stored] == [(True, float(limit + 9))]


def test_learn_fits_timeouts_as_accounting_did_online(store: Store) -> None:
    """Issue 19: a refit uses the censored runs the same way the online update did."""
    shared_before = forecast(store, None)
    limit = round(shared_before["p95"] * 1.5)
    ingest(
        store,
        job(1, "TIMEOUT", limit + 9, limit_s=limit),
        job(2, "COMPLETED", round(shared_before["mean"])),
        job(3, "TIMEOUT", limit * 2 + 5, limit_s=limit * 2),
    )
    online, shared = forecast(store), forecast(store, None)
    assert online["p95"] > shared_before["p95"]
    summary = learn(store)
    assert summary.to_json()["censored"] == {"runs": 2, "used": 2}
    refit = forecast(store)
    assert refit["mean"] == pytest.approx(online["mean"], rel=1e-9)
    assert refit["p95"] == pytest.approx(online["p95"], rel=1e-9)
    assert forecast(store, None) == shared  # alice's kills raised her limits, nobody else's


def test_an_administrators_timeout_raises_the_shared_model_in_learn(store: Store) -> None:
    before = forecast(store, None)
    limit = round(before["p95"] * 1.5)
    killed = Observation(
        "import", "k1", "fastqc", float(limit), node="c1", node_class="local",
        input_bytes=Ingestor(store).modelled["fastqc"], censored=True,
    )  # fmt: skip
    add_observations(store, [killed])
    assert learn(store).to_json()["censored"] == {"runs": 1, "used": 1}
    after = forecast(store, None)
    assert after["p95"] > before["p95"] and forecast(store, "bob") == after


def test_a_timeout_far_below_the_prediction_teaches_nothing(store: Store) -> None:
    before = forecast(store)
    ingestor = ingest(store, job(1, "TIMEOUT", 60, limit_s=60))
    assert ingestor.stats.censored_updates == 0
    assert forecast(store) == before


@pytest.mark.parametrize("state", ["FAILED", "CANCELLED", "OUT_OF_MEMORY", "NODE_FAIL"])
def test_failed_runs_are_kept_but_do_not_train(store: Store, state: str) -> None:
    before = forecast(store)
    ingestor = ingest(store, job(1, state, 5))
    assert ingestor.stats.model_updates == 0 and forecast(store) == before
    assert [o.state for o in load_observations(store, "fastqc") if o.source == "sacct:advisor"] == [
        state
    ]


def test_the_tag_names_the_task_when_the_job_name_does_not(store: Store) -> None:
    tagged = job(1, "COMPLETED", 600, name="my-script.sh",
                 comment=with_tag("user text", Tag("wrapper", "set", 120, 0.95, "fastqc")))  # fmt: skip
    ingestor = ingest(store, tagged)
    assert ingestor.stats.model_updates == 1
    assert [o.task for o in load_observations(store) if o.source == "sacct:advisor"] == ["fastqc"]


def test_a_job_of_a_task_without_model_is_only_recorded(store: Store) -> None:
    ingestor = ingest(store, job(1, "COMPLETED", 600, name="unknown-task"))
    assert ingestor.stats.stored == 1 and ingestor.stats.model_updates == 0


@settings(max_examples=60, deadline=None)
@given(
    loc=st.floats(10, 1e5),
    scale=st.floats(1, 1e4),
    dof=st.floats(1.5, 200),
    limit_over=st.floats(-5, 8),
)
def test_the_imputed_runtime_is_above_the_limit_and_grows_with_it(
    loc: float, scale: float, dof: float, limit_over: float
) -> None:
    model = predictive(loc, scale, dof)
    limit = loc + limit_over * scale
    low, high = expected_above(model, limit), expected_above(model, limit + scale)
    assert low >= limit and high >= limit + scale
    assert high >= low


def _models_after(store: Store, batches: list[list[JobRecord]]) -> list[tuple[object, ...]]:
    ingestor = Ingestor(store)
    for batch in batches:
        with store.write():
            ingestor.add(batch)
    rows = store.conn.execute(
        "SELECT task, node_class, method, params, n_obs FROM task_models UNION ALL "
        "SELECT user || '/' || task, node_class, 'user', params, n_obs FROM user_task_models"
    ).fetchall()
    return sorted(rows, key=repr)


def test_online_updates_kept_between_batches_store_what_fresh_ones_store(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Batches of runs (several users, COMPLETED and TIMEOUT) give the same models either way."""
    import advisor.accounting.ingest as ingest_module

    users = ("alice", "bob", "carol")
    jobs = [
        job(number, "TIMEOUT" if number % 9 == 0 else "COMPLETED", 60 + 37 * (number % 11),
            name=("fastqc", "bwa")[number % 2])._replace(user=users[number % 3])
        for number in range(1, 121)
    ]  # fmt: skip
    batches = [jobs[start : start + 17] for start in range(0, len(jobs), 17)]
    with Store.open(":memory:") as fresh_store:
        store.conn.backup(fresh_store.conn)
        kept = _models_after(store, batches)
        monkeypatch.setattr(ingest_module, "MAX_KEPT_MODELS", -1)  # new updates every batch
        fresh = _models_after(fresh_store, batches)
    assert kept == fresh
    assert any(row[2] == "user" for row in kept) and len(kept) > 3


def test_kept_online_updates_read_again_what_another_connection_wrote(
    store: Store, tmp_path: Path
) -> None:
    """Between two batches another process teaches the same user's model: the next run adds to it."""
    path = tmp_path / "cache.db"
    with Store.open(path) as copy:
        store.conn.backup(copy.conn)
    runs = [job(number, "COMPLETED", 100 + number) for number in range(1, 4)]
    with Store.open(path) as mine, Store.open(path) as other:
        ingestor = Ingestor(mine)
        with mine.write():
            ingestor.add(runs[:1])
        with other.write():
            Ingestor(other).add(runs[1:2])
        with mine.write():
            ingestor.add(runs[2:])
        (n_obs,) = mine.conn.execute(
            "SELECT n_obs FROM user_task_models WHERE user = 'alice' AND task = 'fastqc'"
        ).fetchone()
    assert n_obs == 3  # kept records would have written 2 over the other's
