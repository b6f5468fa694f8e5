"""A real, small in situ pipeline: a simulation and an analysis process sharing a bounded buffer.

It exists to check the model against reality (and for users to try ``advisor insitu``).  Two OS
processes (multiprocessing, spawn) exchange frames through a ring of k slots in shared memory,
guarded by two semaphores - exactly the paper's constraints (Sect. 4.1):

* simulation, per step i: S (compute: sleep, then build frame i), then wait for a free slot
  (the idle stage I^S), then W (copy the frame into the slot, sleep) and signal "frame ready";
* analysis, per step i: wait for a frame (idle), R (copy the frame out, sleep) and free the slot,
  then A (check the frame, sleep).  The wait before R_{i+1} is recorded as I^A_i, the idle after
  A_i as in the paper's Eq. 3; the last step has no such wait.

Idle is the time a process had finished its own stage and the other had not yet handed over
(written the frame, freed the slot); every other moment belongs to a stage, including the wake-up
after the hand-over and any wait for a CPU.  Each hand-over is stamped in shared memory before its
semaphore is released, and a stage starts at the later of its process's previous stage and that
stamp: exactly the model's constraints, so replaying the recorded stage times through them gives
the measured makespan, whatever the machine's load.

So W_{i+k} cannot start before R_i has freed its slot (Eq. 2 with k frames), and R_i waits for
W_i (Eq. 1).  Stage times are sleeps, and every stage is *timed*, not assumed: on a loaded machine
sleeps overrun, and the step file records what really happened.  Both processes read the same
system-wide monotonic clock, so the measured makespan runs from the start of S_0 to the end of the
last A.  The first ``warmup_steps`` steps run S and A ``warmup_factor`` times longer, to emulate
the warm-up the paper saw (Sect. 6).

Try it: ``python -m advisor.insitu.pipeline --output steps.csv && advisor insitu steps.csv``.
"""

from __future__ import annotations

import argparse
import ctypes
import multiprocessing
import queue
import sys
import time
import zlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from advisor.errors import AdvisorError, InputError

COLUMNS = ("S", "W", "R", "A", "IS", "IA")

#: Stage times (seconds) of the two scenarios of the paper's Fig. 2.
PRESETS = {
    # The analysis is the slower component: the simulation waits for a free slot.
    "idle-simulation": {"simulate_s": 0.006, "write_s": 0.002, "read_s": 0.002, "analyse_s": 0.015},
    # The simulation is the slower component: the analysis waits for frames.
    "idle-analyzer": {"simulate_s": 0.015, "write_s": 0.002, "read_s": 0.002, "analyse_s": 0.006},
}


@dataclass(frozen=True)
class PipelineConfig:
    """What to run: stage sleeps in seconds, buffer slots, frame size, emulated warm-up."""

    steps: int = 100
    simulate_s: float = 0.015
    write_s: float = 0.002
    read_s: float = 0.002
    analyse_s: float = 0.006
    buffer_frames: int = 1
    frame_bytes: int = 65536
    warmup_steps: int = 3
    warmup_factor: float = 1.5

    def __post_init__(self) -> None:
        if self.steps < 1 or self.buffer_frames < 1 or self.warmup_steps < 0:
            raise InputError("steps and buffer frames must be >= 1, warm-up steps >= 0")
        if self.frame_bytes < 16 or self.frame_bytes % 8:
            raise InputError(f"frame size must be a multiple of 8 >= 16, got {self.frame_bytes}")
        stage_times = (self.simulate_s, self.write_s, self.read_s, self.analyse_s)
        if min(stage_times) < 0 or self.warmup_factor < 0:
            raise InputError("stage times and the warm-up factor must be >= 0")

    def warmup(self, step: int) -> float:
        """The factor of step ``step``'s S and A."""
        return self.warmup_factor if step < self.warmup_steps else 1.0


@dataclass(frozen=True)
class PipelineRun:
    """What one run measured: per-step stage times (keys ``COLUMNS``) and the makespan."""

    config: PipelineConfig
    steps: tuple[dict[str, float], ...]
    makespan_s: float
    corrupt_frames: int


def _frame(step: int, size: int) -> bytes:
    """Frame ``step``: its number repeated, so a reader sees if a slot was overwritten too early."""
    return step.to_bytes(8, "little") * (size // 8)


def _frame_ok(data: bytes, step: int) -> bool:
    mark = step.to_bytes(8, "little")
    return data[:8] == mark and data[-8:] == mark


def _acquire(semaphore: Any, since: float, handed_over: Any, slot: int) -> float:
    """Take the semaphore; return when the next stage starts.

    ``since`` is when this process's previous stage ended, ``handed_over[slot]`` when the other
    process stamped the slot or frame this one waits for (read once the semaphore is held, so the
    stamp is the one released).  Before the later of the two this process waited; after it, the
    time is the stage's, even while the kernel had yet to wake it or give it a CPU.
    """
    semaphore.acquire()
    return max(since, float(handed_over[slot]))


def _simulation(
    config: PipelineConfig, buffer: Any, stamps: Any, free: Any, full: Any, barrier: Any, out: Any
) -> None:
    view = memoryview(buffer).cast("B")
    size, slots = config.frame_bytes, config.buffer_frames
    written_at, read_at = stamps
    rows = []
    barrier.wait()
    start = now = time.monotonic()
    for step in range(config.steps):
        time.sleep(config.simulate_s * config.warmup(step))
        frame = _frame(step, size)
        computed = time.monotonic()
        slot = step % slots
        granted = _acquire(free, computed, read_at, slot)
        view[slot * size : (slot + 1) * size] = frame
        time.sleep(config.write_s)
        written = written_at[slot] = time.monotonic()
        full.release()
        rows.append((computed - now, written - granted, granted - computed))
        now = written
    out.put(("simulation", start, rows))


def _analysis(
    config: PipelineConfig, buffer: Any, stamps: Any, free: Any, full: Any, barrier: Any, out: Any
) -> None:
    view = memoryview(buffer).cast("B")
    size, slots = config.frame_bytes, config.buffer_frames
    written_at, read_at = stamps
    rows, waits, corrupt, checksum = [], [], 0, 0
    barrier.wait()
    now = time.monotonic()
    for step in range(config.steps):
        slot = step % slots
        ready = _acquire(full, now, written_at, slot)
        data = bytes(view[slot * size : (slot + 1) * size])
        time.sleep(config.read_s)
        read = read_at[slot] = time.monotonic()
        free.release()
        corrupt += not _frame_ok(data, step)
        checksum = zlib.crc32(data, checksum)
        time.sleep(config.analyse_s * config.warmup(step))
        analysed = time.monotonic()
        waits.append(ready - now)
        rows.append((read - ready, analysed - read))
        now = analysed
    idle_after = [*waits[1:], 0.0]  # the wait before R_{i+1} is the idle after A_i
    out.put(
        (
            "analysis",
            now,
            [(*row, idle) for row, idle in zip(rows, idle_after, strict=True)],
            corrupt,
        )
    )


def _collect(out: Any, processes: Sequence[Any], timeout_s: float) -> dict[str, tuple[Any, ...]]:
    results: dict[str, tuple[Any, ...]] = {}
    deadline = time.monotonic() + timeout_s
    while len(results) < len(processes):
        try:
            message = out.get(timeout=0.2)
        except queue.Empty:  # check the workers are still alive
            failed = [p for p in processes if p.exitcode not in (None, 0)]
            if failed or time.monotonic() > deadline:
                raise AdvisorError(
                    "in situ test pipeline failed: "
                    + (
                        f"{failed[0].name} exited with {failed[0].exitcode}"
                        if failed
                        else "timed out"
                    )
                ) from None
            continue
        results[message[0]] = message
    return results


def run_pipeline(config: PipelineConfig) -> PipelineRun:
    """Run the two processes once; blocks for about ``steps`` times the slower component."""
    context = multiprocessing.get_context("spawn")
    buffer = context.RawArray(ctypes.c_char, config.frame_bytes * config.buffer_frames)
    # When each slot was last written and last read (monotonic seconds; 0: never, a free slot).
    stamps = tuple(context.RawArray(ctypes.c_double, config.buffer_frames) for _ in range(2))
    free, full = context.Semaphore(config.buffer_frames), context.Semaphore(0)
    barrier, out = context.Barrier(2), context.Queue()
    args = (config, buffer, stamps, free, full, barrier, out)
    processes = [
        context.Process(target=_simulation, args=args, name="simulation", daemon=True),
        context.Process(target=_analysis, args=args, name="analysis", daemon=True),
    ]
    for process in processes:
        process.start()
    slowest = max(config.simulate_s + config.write_s, config.read_s + config.analyse_s)
    try:
        results = _collect(
            out, processes, 30.0 + 10 * config.steps * slowest * config.warmup_factor
        )
    finally:
        for process in processes:
            process.join(timeout=5)
            if process.is_alive():
                process.terminate()
                process.join()
    _, start, produced = results["simulation"]
    _, end, consumed, corrupt = results["analysis"]
    steps = tuple(
        dict(zip(("S", "W", "IS", "R", "A", "IA"), (*p, *c), strict=True))
        for p, c in zip(produced, consumed, strict=True)
    )
    return PipelineRun(config, steps, end - start, corrupt)


def write_steps_csv(run: PipelineRun, path: str | Path) -> None:
    """The steps as ``advisor insitu`` reads them, with the configuration as comment lines."""
    settings = " ".join(f"{key}={value}" for key, value in asdict(run.config).items())
    lines = [
        "# advisor.insitu.pipeline: a simulation and an analysis process, bounded shared buffer",
        f"# configured: {settings}",
        f"# measured makespan_s={run.makespan_s:.6f} (start of S_0 to end of the last A)",
        "step," + ",".join(COLUMNS),
    ]
    lines += [
        f"{index}," + ",".join(f"{step[column]:.6f}" for column in COLUMNS)
        for index, step in enumerate(run.steps)
    ]
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m advisor.insitu.pipeline",
        description="Run a two-process in situ pipeline (simulation -> bounded buffer -> "
        "analysis) with sleeps as stage times, and write its per-step stage times as a CSV "
        "for 'advisor insitu'.",
    )
    parser.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        default="idle-analyzer",
        help="stage times of one scenario (default idle-analyzer)",
    )
    for name, what in (("simulate", "S"), ("write", "W"), ("read", "R"), ("analyse", "A")):
        parser.add_argument(
            f"--{name}-ms",
            type=float,
            metavar="MS",
            help=f"{what} stage time in milliseconds (overrides the preset)",
        )
    parser.add_argument("--steps", type=int, default=100, help="steps to run (default 100)")
    parser.add_argument(
        "--buffer", type=int, default=1, metavar="K", help="buffer slots (default 1)"
    )
    parser.add_argument("--frame-kib", type=int, default=64, help="frame size in KiB (default 64)")
    parser.add_argument(
        "--warmup-steps",
        type=int,
        default=3,
        help="first steps whose S and A run longer (default 3)",
    )
    parser.add_argument(
        "--warmup-factor", type=float, default=1.5, help="how much longer (default 1.5)"
    )
    parser.add_argument(
        "--output",
        default="insitu-steps.csv",
        metavar="CSV",
        help="where to write the steps (default insitu-steps.csv)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run once, write the CSV, print the measured makespan."""
    args = _parser().parse_args(argv)
    times = dict(PRESETS[args.preset])
    for name in ("simulate", "write", "read", "analyse"):
        if getattr(args, f"{name}_ms") is not None:
            times[f"{name}_s"] = getattr(args, f"{name}_ms") / 1000
    try:
        config = PipelineConfig(
            steps=args.steps,
            buffer_frames=args.buffer,
            frame_bytes=args.frame_kib * 1024,
            warmup_steps=args.warmup_steps,
            warmup_factor=args.warmup_factor,
            **times,
        )
        run = run_pipeline(config)
        write_steps_csv(run, args.output)
    except (AdvisorError, OSError) as error:
        sys.stderr.write(f"pipeline: error: {error}\n")
        return error.exit_code if isinstance(error, AdvisorError) else 1
    sys.stdout.write(
        f"{len(run.steps)} steps in {run.makespan_s:.3f} s (measured), "
        f"{run.corrupt_frames} corrupt frames; wrote {args.output}\n"
        f"next: advisor insitu {args.output} --first 10\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
