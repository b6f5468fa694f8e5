"""Versioned schema: migration N turns a version N-1 cache into version N.

Rows hold plain numbers and JSON text; nothing is pickled, because the sbatch wrapper and the
slurmctld plugin read what users' jobs may influence.
"""

from __future__ import annotations

MIGRATIONS: tuple[str, ...] = (
    # 1: the foundation.
    """
    CREATE TABLE partitions (
        name TEXT PRIMARY KEY,
        nodes TEXT NOT NULL,                 -- JSON list of node names
        max_time_s INTEGER,                  -- NULL: no limit
        default_time_s INTEGER,
        is_default INTEGER NOT NULL CHECK (is_default IN (0, 1)),
        state TEXT NOT NULL,
        total_cpus INTEGER,
        updated_at TEXT NOT NULL
    );
    CREATE TABLE nodes (
        name TEXT PRIMARY KEY,
        node_class TEXT,                     -- set by node profiling
        cpus INTEGER NOT NULL CHECK (cpus >= 0),
        memory_mb INTEGER NOT NULL CHECK (memory_mb >= 0),
        features TEXT NOT NULL,              -- JSON list
        partitions TEXT NOT NULL,            -- JSON list
        state TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE TABLE bench_runs (
        id INTEGER PRIMARY KEY,
        node TEXT NOT NULL,
        measured_at TEXT NOT NULL,
        tool TEXT NOT NULL,
        source TEXT NOT NULL,                -- 'profile', 'bench', 'import:<file>'
        hardware TEXT NOT NULL               -- JSON object
    );
    CREATE INDEX bench_runs_node ON bench_runs (node, measured_at);
    CREATE TABLE bench_results (
        run_id INTEGER NOT NULL REFERENCES bench_runs (id) ON DELETE CASCADE,
        metric TEXT NOT NULL,
        value REAL NOT NULL,
        spread REAL,
        unit TEXT NOT NULL,
        PRIMARY KEY (run_id, metric)
    );
    CREATE TABLE observations (
        id INTEGER PRIMARY KEY,
        source TEXT NOT NULL,                -- 'lotaru:<file>', 'nextflow:<file>', 'sacct:<cluster>'
        source_key TEXT NOT NULL,            -- unique within the source: re-imports are idempotent
        task TEXT NOT NULL,
        node TEXT,
        node_class TEXT,
        workflow TEXT,
        label TEXT,
        input_bytes INTEGER CHECK (input_bytes IS NULL OR input_bytes >= 0),
        runtime_s REAL NOT NULL CHECK (runtime_s >= 0),
        censored INTEGER NOT NULL DEFAULT 0 CHECK (censored IN (0, 1)),
        cores INTEGER,
        user TEXT,
        partition TEXT,
        state TEXT,
        observed_at TEXT,
        UNIQUE (source, source_key)
    );
    CREATE INDEX observations_task ON observations (task, node_class);
    CREATE TABLE task_models (
        task TEXT NOT NULL,
        node_class TEXT NOT NULL,            -- '*' for the machine-independent model
        method TEXT NOT NULL,
        params TEXT NOT NULL,                -- JSON object of numbers
        n_obs INTEGER NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (task, node_class, method)
    );
    CREATE TABLE accounting_jobs (
        cluster TEXT NOT NULL,
        job_id TEXT NOT NULL,
        job_id_raw INTEGER NOT NULL,
        name TEXT NOT NULL,
        user TEXT NOT NULL,
        account TEXT NOT NULL,
        partition TEXT NOT NULL,
        nodes TEXT NOT NULL,                 -- JSON list
        cpus INTEGER NOT NULL,
        req_mem_mb REAL,
        elapsed_s INTEGER NOT NULL,
        timelimit_s INTEGER,
        state TEXT NOT NULL,
        exit_code INTEGER,
        submit TEXT,
        start TEXT,
        end TEXT,
        comment TEXT NOT NULL,
        ingested_at TEXT NOT NULL,
        PRIMARY KEY (cluster, job_id)
    );
    CREATE INDEX accounting_jobs_end ON accounting_jobs (end);
    CREATE TABLE watermarks (
        source TEXT PRIMARY KEY,             -- e.g. 'sacct:advisor'
        value TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE TABLE advice (
        id INTEGER PRIMARY KEY,
        created_at TEXT NOT NULL,
        user TEXT NOT NULL,
        task TEXT,
        partition TEXT,
        node_class TEXT,
        predicted_s REAL,
        quantile REAL,
        limit_s INTEGER,
        policy TEXT NOT NULL,
        argv TEXT NOT NULL,                  -- JSON list: the exact sbatch argv
        cluster TEXT,
        job_id INTEGER,
        outcome TEXT NOT NULL                -- 'submitted', 'dry-run', 'fallback', 'failed'
    );
    CREATE INDEX advice_job ON advice (cluster, job_id);
    """,
    # 2: workflows submitted with 'advisor submit' and their planned schedule (store/workflows.py).
    """
    CREATE TABLE workflow_runs (
        id INTEGER PRIMARY KEY,
        created_at TEXT NOT NULL,
        name TEXT NOT NULL,
        source TEXT NOT NULL,                -- the workflow file
        algorithm TEXT NOT NULL,
        user TEXT NOT NULL,
        cluster TEXT,
        planned_makespan_s REAL NOT NULL CHECK (planned_makespan_s >= 0),
        p50_s REAL NOT NULL,
        p95_s REAL NOT NULL,
        state TEXT NOT NULL                  -- 'submitting', 'submitted', 'failed'
    );
    CREATE TABLE workflow_jobs (
        run_id INTEGER NOT NULL REFERENCES workflow_runs (id) ON DELETE CASCADE,
        position INTEGER NOT NULL,           -- submission order
        task_id TEXT NOT NULL,
        task TEXT NOT NULL,                  -- the task-model name
        parents TEXT NOT NULL,               -- JSON list of task ids
        node TEXT NOT NULL,
        node_class TEXT NOT NULL,
        partition TEXT NOT NULL,
        slurm_constraint TEXT,
        nodelist TEXT,
        planned_start_s REAL NOT NULL,
        planned_finish_s REAL NOT NULL,
        limit_s INTEGER,
        argv TEXT NOT NULL,                  -- JSON list: the sbatch arguments run
        job_id INTEGER,
        PRIMARY KEY (run_id, task_id)
    );
    CREATE INDEX workflow_jobs_job ON workflow_jobs (job_id);
    """,
    # 3: what accounting ingestion learns for the history-based time-limit policy
    # (history/cache.py, advisor/history/policy.py): bounded state per history key, the
    # site-wide kill budget, and an index to count a key's advised jobs still running.
    """
    CREATE TABLE history_keys (
        kind TEXT NOT NULL,                  -- 'user+name', 'user+partition', 'user' ('partition' until 4)
        user TEXT NOT NULL,                  -- '' where the kind has no such part
        name TEXT NOT NULL,
        partition TEXT NOT NULL,
        runs TEXT NOT NULL,                  -- JSON list of [runtime_s, censored], oldest first, bounded
        cap REAL NOT NULL CHECK (cap >= 1),  -- at-risk budget: advised jobs running at once
        completed INTEGER NOT NULL CHECK (completed >= 0),
        kills INTEGER NOT NULL CHECK (kills >= 0),
        updated_at TEXT NOT NULL,
        PRIMARY KEY (kind, user, name, partition)
    );
    CREATE TABLE history_site (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        kill_rate REAL NOT NULL CHECK (kill_rate >= 0),
        widen REAL NOT NULL CHECK (widen >= 1),
        jobs INTEGER NOT NULL CHECK (jobs >= 0),
        updated_at TEXT NOT NULL
    );
    CREATE INDEX advice_user ON advice (user, created_at);
    CREATE INDEX accounting_jobs_raw ON accounting_jobs (job_id_raw);
    """,
    # 4: what one user's jobs teach, kept apart from what everyone's predictions rest on
    # (issue #8: another user's short jobs of the same name lowered everyone's limit).  Per
    # user, task and node class: the sufficient statistics of that user's runs only
    # (schemas/task-model.json, model 'user'); task_models learns only from runs without a
    # user (what the administrator imported).  The history policy's partition-wide key pooled
    # every user's runs in the same way and is dropped.  Run 'advisor learn' once after the
    # upgrade: it rebuilds both tables from the observations.  Advice rows also keep the input
    # size the prediction assumed and the slowest class's P50/P90/P95.
    """
    CREATE TABLE user_task_models (
        user TEXT NOT NULL,
        task TEXT NOT NULL,
        node_class TEXT NOT NULL,
        params TEXT NOT NULL,                -- JSON object of numbers
        n_obs INTEGER NOT NULL CHECK (n_obs >= 0),
        updated_at TEXT NOT NULL,
        PRIMARY KEY (user, task, node_class)
    );
    DELETE FROM history_keys WHERE kind = 'partition';
    ALTER TABLE advice ADD COLUMN input_bytes INTEGER;
    ALTER TABLE advice ADD COLUMN p50_s REAL;
    ALTER TABLE advice ADD COLUMN p90_s REAL;
    ALTER TABLE advice ADD COLUMN p95_s REAL;
    """,
    # 5: what ReqMem was per (issue #15): sacct before 21.08 printed '4000Mc' (per CPU) and
    # '16Gn' (per node), and dropping the suffix made every such size wrong by a factor.
    # NULL: the job's total, as sacct prints it since 21.08 (and for rows stored before).
    """
    ALTER TABLE accounting_jobs ADD COLUMN req_mem_per TEXT CHECK (req_mem_per IN ('cpu', 'node'));
    """,
    # 6: the live guard (advisor guard, issue 18).  Its heartbeat, one row: while it is fresh
    # the wrapper may lower a user's own --time (policy 'guarded'), because the guard raises the
    # limit again before the job reaches it.  Advice rows keep the user's own request, the
    # ceiling the guard never raises a limit past.
    """
    CREATE TABLE guard_heartbeat (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        beat_epoch REAL NOT NULL,            -- seconds since the epoch, UTC
        host TEXT NOT NULL,
        pid INTEGER NOT NULL,
        poll_s INTEGER NOT NULL CHECK (poll_s > 0),
        watched INTEGER NOT NULL CHECK (watched >= 0),
        extended INTEGER NOT NULL CHECK (extended >= 0)
    );
    ALTER TABLE advice ADD COLUMN request_s INTEGER;
    """,
    # 7: the limits Slurm enforces beside MaxTime (issue 30), as `advisor cluster --save` read
    # them: every QoS's MaxWall, the users' associations (parents' limits inherited) and their
    # default accounts, and each partition's QOS=.  site_limits says whether they were read at
    # all (no slurmdbd: only MaxTime bounds a limit).  Advice rows say where they came from: a
    # spool line is what a user's wrapper wrote, which that user may forge (issue 31, N14).
    """
    ALTER TABLE partitions ADD COLUMN qos TEXT;
    CREATE TABLE qos_limits (
        name TEXT PRIMARY KEY,
        max_wall_s INTEGER CHECK (max_wall_s IS NULL OR max_wall_s >= 0),
        over_partition_qos INTEGER NOT NULL CHECK (over_partition_qos IN (0, 1))
    );
    CREATE TABLE associations (
        cluster TEXT NOT NULL,
        account TEXT NOT NULL,
        user TEXT NOT NULL,
        partition TEXT NOT NULL,             -- '' for the account-wide association
        max_wall_s INTEGER CHECK (max_wall_s IS NULL OR max_wall_s >= 0),
        qos TEXT NOT NULL,                   -- JSON list of the QoS it may use
        default_qos TEXT NOT NULL,           -- '' when none is set
        PRIMARY KEY (cluster, account, user, partition)
    );
    CREATE TABLE default_accounts (
        user TEXT PRIMARY KEY,
        account TEXT NOT NULL
    );
    CREATE TABLE site_limits (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        known INTEGER NOT NULL CHECK (known IN (0, 1)),
        enforce TEXT NOT NULL,               -- AccountingStorageEnforce, e.g. 'associations,limits,qos'
        updated_at TEXT NOT NULL
    );
    ALTER TABLE advice ADD COLUMN origin TEXT NOT NULL DEFAULT 'direct'
        CHECK (origin IN ('direct', 'spool'));
    """,
    # 8: the runtime models on the log scale (issue 29).  The site's class effects (node
    # factors learnt from runs, per reference and class) and its calibration (typical spread,
    # conformal multipliers).  The older models' rows are dropped: their params describe a
    # raw-scale model no reader understands now; 'advisor learn' refits them from the
    # observations, which stay.
    """
    CREATE TABLE class_effects (
        reference TEXT NOT NULL,
        node_class TEXT NOT NULL,
        params TEXT NOT NULL,                -- JSON object of numbers
        tasks INTEGER NOT NULL CHECK (tasks >= 0),
        runs INTEGER NOT NULL CHECK (runs >= 0),
        updated_at TEXT NOT NULL,
        PRIMARY KEY (reference, node_class)
    );
    CREATE TABLE site_model (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        params TEXT NOT NULL,                -- JSON object of numbers
        updated_at TEXT NOT NULL
    );
    DELETE FROM task_models WHERE method IN ('lotaru', 'online');
    DELETE FROM user_task_models;
    """,
    # 9: the kill budget held by feedback (issue 30, advisor.history.policy).  Per partition the
    # promise and what the advised limits did (history_budget); per score cell the latest
    # scores of completed jobs and the margins they give per risk level (history_cells).  The
    # site-wide circuit breaker (history_site) and the per-key at-risk cap (history_keys.cap)
    # give way to them; a key's kills are now every kill at an advised limit among its jobs.
    # An index finds the recent advice rows of history limits (the jobs that may still run).
    """
    CREATE TABLE history_budget (
        partition TEXT PRIMARY KEY,          -- '' for jobs without a partition
        budget REAL NOT NULL CHECK (budget > 0 AND budget < 1),
        log_price REAL NOT NULL,             -- log of the price of a kill (s of freed time)
        credit REAL NOT NULL,                -- kills the budget still allows
        completed INTEGER NOT NULL CHECK (completed >= 0),
        killed INTEGER NOT NULL CHECK (killed >= 0),
        advised_completed INTEGER NOT NULL CHECK (advised_completed >= 0),
        updated_at TEXT NOT NULL
    );
    CREATE TABLE history_cells (
        partition TEXT NOT NULL,
        cell TEXT NOT NULL,                  -- a key kind ('user+name'...), or 'request<Ns' (a band)
        scores TEXT NOT NULL,                -- JSON list of numbers, oldest first, bounded
        quantiles TEXT NOT NULL,             -- JSON list, one margin per risk level (null: none)
        updated_at TEXT NOT NULL,
        PRIMARY KEY (partition, cell)
    );
    DROP TABLE history_site;
    ALTER TABLE history_keys DROP COLUMN cap;
    CREATE INDEX advice_policy ON advice (policy, created_at);
    """,
    # 10: bounded advice (issue 31, N6): the guard and accounting look advice up by job id alone
    # (applied_limits, guarded_requests: a scan of the whole table, 0.73 s at 5 M rows), and
    # the update deletes rows past their retention by time.
    """
    CREATE INDEX advice_job_id ON advice (job_id);
    CREATE INDEX advice_created ON advice (created_at);
    """,
    # 11: memory, the second resource (issue 33).  Accounting keeps each job's peak memory per
    # node (the largest MaxRSS of its steps); an observation keeps a run's peak and whether it
    # is a lower bound (OUT_OF_MEMORY: killed at its request, as TIMEOUT is for time).
    # memory_models holds the recent peaks per task (user '': the shared model, from imports
    # and calibration) and per user and job name (that user's own jobs); memory_site the
    # prediction errors the margins rest on, per pool (models/memory.py).
    """
    ALTER TABLE accounting_jobs ADD COLUMN max_rss_mb REAL;
    ALTER TABLE observations ADD COLUMN peak_mem_mb REAL CHECK (peak_mem_mb IS NULL OR peak_mem_mb >= 0);
    ALTER TABLE observations ADD COLUMN mem_censored INTEGER NOT NULL DEFAULT 0
        CHECK (mem_censored IN (0, 1));
    CREATE TABLE memory_models (
        user TEXT NOT NULL,                  -- '' for a task's shared model
        task TEXT NOT NULL,                  -- a task, or a user's job's task key
        runs TEXT NOT NULL,                  -- JSON list of [peak_mb, input_bytes or null, censored], oldest first, bounded
        n_obs INTEGER NOT NULL CHECK (n_obs >= 0),
        updated_at TEXT NOT NULL,
        PRIMARY KEY (user, task)
    );
    CREATE TABLE memory_site (
        pool TEXT PRIMARY KEY,               -- 'sized' (extrapolated over the input), 'runs'
        residuals TEXT NOT NULL,             -- JSON list of [distance, log(peak / P95)], bounded
        margins TEXT NOT NULL,               -- JSON list of [distance, margin]: conformal quantiles
        updated_at TEXT NOT NULL
    );
    -- the kill budget for OUT_OF_MEMORY per partition (models/memory_budget.py)
    CREATE TABLE memory_budget (
        partition TEXT PRIMARY KEY,
        budget REAL NOT NULL CHECK (budget > 0 AND budget < 1),
        log_margin REAL NOT NULL,
        ran INTEGER NOT NULL CHECK (ran >= 0),
        killed INTEGER NOT NULL CHECK (killed >= 0),
        updated_at TEXT NOT NULL
    );
    -- what a partition gives a job that asks for no memory and the most it may ask (MB, NULL:
    -- no such limit), from scontrol's partitions and the site's slurm.conf (advisor cluster --save)
    CREATE TABLE partition_memory (
        partition TEXT PRIMARY KEY,
        def_per_cpu_mb INTEGER,
        def_per_node_mb INTEGER,
        max_per_cpu_mb INTEGER,
        max_per_node_mb INTEGER,
        updated_at TEXT NOT NULL
    );
    -- the site's choices the wrappers read (key 'memory_mode': advise, fill or lower)
    CREATE TABLE site_settings (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    -- the --mem the advisor set (or, advising only, would have set) per node, and what it did
    ALTER TABLE advice ADD COLUMN mem_mb INTEGER;
    ALTER TABLE advice ADD COLUMN mem_action TEXT;
    """,
    # 12: the jobs a submission made (a job array's tasks; NULL: one), which the history
    # policy's burst bound counts (advisor.history.cache.running_advised)
    """
    ALTER TABLE advice ADD COLUMN tasks INTEGER;
    """,
)
