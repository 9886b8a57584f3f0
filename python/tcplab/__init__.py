"""tcplab: a laboratory for TCP congestion control.

    import tcplab
    run = tcplab.run("T1", duration="20s")      # a preset, a spec file, or a dict
    run.summary      # per-flow DataFrame
    run.intervals    # iperf3-style intervals
    run.flows        # sampled cwnd, ssthresh, flight, srtt ... per flow
    runs = tcplab.sweep("T5", duration="60s")   # one catalog row per run of the sweep
    cmp = tcplab.peers("T1", duration="20s")    # every stack x cc, rows as % vs Linux
    tcplab.compare(run.path, "results/t1-kernel")   # two runs side by side
    tcplab.query("SELECT name, avg(throughput_mbps) FROM runs GROUP BY name")
"""

from __future__ import annotations

import os

# numpy's OpenBLAS starts spinning worker threads that compete with the simulator for the CPU
# (seen in profiles when pinned to one core); tcplab does no linear algebra that needs them.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# Arrow's default allocator in pyarrow's wheels (mimalloc) keeps what Parquet writing and reading
# freed for reuse: ~45 MB of peak RSS on `tcplab run T1` with its report (bench/README.md, issue
# 23). The C library's malloc returns large blocks when they are freed, at no measured cost in
# time. Read once, when pyarrow is first imported, so it is set here, before any import of it.
os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")

from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from . import options  # noqa: E402
from .api import compare, output as _output, peers, run, spec_data as _spec_data  # noqa: E402
from .model import Experiment  # noqa: E402
from .paths import slug  # noqa: E402
from .runs import Run  # noqa: E402
from .spec import SpecError, load_spec, resolve  # noqa: E402
from .spec.numbers import finite as _finite  # noqa: E402
from .version import __version__  # noqa: E402

#: Experiment's former name, kept for scripts that import it.
Resolved = Experiment


def sweep(spec: str | Path | dict[str, Any], *, set: list[str] | None = None, jobs: int | None = None,
          iterations: int | None = None, duration: str | None = None, out: str | Path | None = None,
          executor: str = "local", address: str | None = None, report: bool = True):
    """Run (or resume) a spec's [sweep]; returns its catalog rows, one per run (a DataFrame with
    the p_* parameter columns, seed, throughput_mbps, utilisation, ...). Failed runs are absent
    from it and listed in `<out>/sweep.json`."""
    from . import sweeps as sweepmod  # loaded on use: `import tcplab` stays free of pyarrow and numpy
    from .catalog import query as catalog_query

    options.choice(executor, sweepmod.EXECUTORS, "executor", "an executor")
    jobs = None if jobs is None else options.integer(jobs, "jobs", 1, 4096)
    data, source = _spec_data(spec, set)
    pl = sweepmod.plan(data, source, duration=duration, iterations=iterations, out=Path(out) if out else None)
    outcome = sweepmod.execute(pl, jobs=jobs or os.cpu_count() or 1, executor=executor, address=address,
                               report=report, command="tcplab.sweep()")
    if outcome.interrupted:
        raise KeyboardInterrupt
    return catalog_query("SELECT * FROM runs ORDER BY sweep_part, point, iteration", pl.out / "runs")


def query(sql: str, root: str | Path = "results"):
    """SQL over the results catalog under `root` (views runs, flow_results, flows, intervals,
    queues, ports, events); a pandas DataFrame."""
    from .catalog import query as catalog_query  # loaded on use: `import tcplab` stays free of pyarrow and numpy

    return catalog_query(sql, root)


def import_logs(logs: list[str | Path] | str | Path, *, out: str | Path | None = None, formats: list[str] | None = None,
                name: str | None = None, lenient: bool = False, interval_s: float = 1.0, mss: int = 0,
                report: bool = True, force: bool = False) -> Run:
    """Build a run from a testbed's logs (iperf3 text or -J, SIFTR, SIFTR2, tcp_probe, pcap), as
    `tcplab import` does (docs/import.md). Without `out`, into a new temporary folder."""
    from .import_export import import_logs as _import  # loaded on use: `import tcplab` stays free of pyarrow and numpy

    paths, formats = options.paths(logs, "logs"), options.names(formats, "formats")  # "x.pcap": one log
    mss, interval_s = options.mss(mss, "mss"), options.interval(interval_s, "interval_s")
    with _output(out, name or slug(paths[0].stem)) as target:
        path, _ = _import(paths, target, formats=formats, name=name, lenient=lenient, interval_s=interval_s, mss=mss,
                          report=report, force=force, command="tcplab.import_logs()")
    return Run(path)


def export(run_dir: str | Path, formats: list[str] | str, out: str | Path | None = None, force: bool = False) -> list[Path]:
    """Write a run as SIFTR2 / tcp_probe / iperf3-json logs (default into <run>/export)."""
    from .import_export import export_run  # loaded on use: `import tcplab` stays free of pyarrow and numpy

    formats = options.names(formats, "formats", required=True)  # "siftr2": one format
    return export_run(Path(run_dir), Path(out) if out else Path(run_dir) / "export", formats, force=force)


def ministat(*samples: list[float], names: list[str] | None = None, confidence: float = 95.0) -> str:
    """ministat's report for `samples` (the first is the baseline), as `tcplab stats` prints it:
    N, min, max, median, avg, stddev, the distribution plot and each difference at `confidence`."""
    from .report.ministat import render  # loaded on use, as the other commands' modules

    checked = [[_finite(x, f"sample {i + 1}") for x in s] for i, s in enumerate(samples)]
    return render(checked, names or [f"sample{i + 1}" for i in range(len(samples))], confidence_pct=confidence)


def load(path: str | Path) -> Run:
    """Open a finished results folder."""
    return Run(path)


__all__ = ["Run", "run", "peers", "compare", "sweep", "query", "import_logs", "export", "ministat", "load", "resolve", "load_spec", "SpecError", "Experiment", "Resolved", "__version__"]
