"""Real testbeds' logs: `tcplab import` builds a run folder (same tables, summary and report as a
simulated or kernel run) from iperf3, SIFTR, SIFTR2, tcp_probe and pcap logs of one experiment;
`tcplab export` writes a run as those logs, for the tools users already have.

Parsing and writing live in the Rust crate tcplab-trace (streamed: a log is never held in memory);
this module orders the work, aligns the logs' clocks, and builds the summary with DuckDB over the
written Parquet (so a large import is summarised without loading it).

Clocks: logs that record wall-clock time (SIFTR/SIFTR2 enable time, iperf3 -J start, pcap) are
placed on one axis whose zero is the earliest of them; logs without a clock (tcp_probe's uptime,
iperf3 text) start at zero. tcplab does not cross-correlate clocks.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ._native import import_formats, origin_ns, write_iperf3_json, write_siftr2, write_tcp_probe
from .version import __version__
from .analysis.summary import summarize_import
from .logs import Log, LogError, detect, located_error, read_logs
from .paths import name_problem, slug
from .results import finish_run
from .runs import Run
from .store import RunDir, read_json, read_table, require_table, write_toml

def import_logs(paths: list[Path], out: Path, *, formats: list[str] | None = None, name: str | None = None,
                lenient: bool = False, interval_s: float = 1.0, mss: int = 0, force: bool = False,
                report: bool = True, command: str = "",
                progress: Callable[[str, int, int], None] | None = None) -> tuple[Path, dict[str, Any]]:
    """Import the logs at `paths` (formats auto-detected unless given, one per path) into a new
    run folder `out`. Returns (folder, summary)."""
    wall0 = time.monotonic()
    if not paths:
        raise LogError("no logs given")
    if name is not None and (problem := name_problem(name)) is not None:
        raise LogError(f"--name: {problem}")
    for p in paths:
        if not p.is_file():
            raise LogError(f"{p}: no such file")
    if formats and len(formats) not in (1, len(paths)):
        raise LogError(f"--format given {len(formats)} times for {len(paths)} logs: give it once (all logs) or once per log")
    known = import_formats()
    fmts = []
    for i, p in enumerate(paths):
        f = (formats[i] if len(formats) > 1 else formats[0]) if formats else "auto"
        if f != "auto" and f not in known:
            raise LogError(f"--format {f!r}: not a known format; known: auto, {', '.join(known)}")
        fmts.append(detect(p) if f == "auto" else f)
    origins = []
    for p, f in zip(paths, fmts):
        try:
            origins.append(origin_ns(str(p), f))
        except (ValueError, OSError) as e:
            raise located_error(p, e) from None
    known_origins = [o for o in origins if o is not None]
    t0 = min(known_origins) if known_origins else 0
    rd = RunDir(out, force=force)
    try:
        logs = [Log(p, f, p.stem, (o - t0) if o is not None else 0, o is not None) for p, f, o in zip(paths, fmts, origins)]
        imp, sources = read_logs(logs, rd.tmp, interval_ns=int(interval_s * 1e9), mss=mss, lenient=lenient,
                                 progress=progress)
        flows = imp.flows()
        if not flows:
            raise LogError(f"no TCP flow found in {', '.join(str(p) for p in paths)}")
        run_name = name or slug(paths[0].stem)
        summary = summarize_import(rd.tmp, run_name, flows, sources)
        write_toml(rd.tmp / "spec.toml", {"name": run_name, "description": f"imported from {len(paths)} log(s)",
                                          "import": {"logs": [str(p) for p in paths], "formats": fmts,
                                                     "interval_s": interval_s, "lenient": lenient, "mss": mss}})
        meta = {"tcplab_version": __version__, "backend": "import", "seed": None,
                "description": f"imported from {', '.join(p.name for p in paths)}",
                "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), "command": command}
        finish_run(rd.tmp, summary, meta, key=f"import-{run_name}", flows=_plot_flows(summary), report=report,
                   wall0_s=wall0)
        return rd.commit(), summary
    except BaseException:
        rd.abort()
        raise


def _plot_flows(summary: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"name": f["flow"], "start_ns": int(round((f["start_s"] or 0) * 1e9))} for f in summary["flows"]]


# --- export -------------------------------------------------------------------------------------

EXPORT_FORMATS = ("siftr2", "tcp_probe", "iperf3-json")


def _addresses(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Each flow's addresses in the written logs: an imported run keeps its own; a simulated one
    gets sender i 10.1.0.(i+1):(40001+i) -> 10.2.0.1:(5201+i) (IPv4, so every tool reads them)."""
    out = []
    for i, f in enumerate(summary["flows"]):
        m = re.match(r"^(.+):(\d+)->(.+):(\d+)$", f["flow"])
        if m and summary.get("backend") == "import":
            la, lp, fa, fp = m.group(1).strip("[]"), int(m.group(2)), m.group(3).strip("[]"), int(m.group(4))
        else:
            la, lp, fa, fp = f"10.1.{i // 250}.{i % 250 + 1}", 40001 + i, "10.2.0.1", 5201 + i
        stack = f["stack"] if f["stack"] in ("freebsd", "freebsd-rack", "linux") else "freebsd"
        out.append({"laddr": la, "lport": lp, "faddr": fa, "fport": fp, "stack": stack, "cc": f["cc"],
                    "mss": int(f["mss_bytes"] or 1448)})
    return out


def _cols(df, names: list[str]) -> dict[str, bytes]:
    return {n: np.ascontiguousarray(df[n].to_numpy(dtype="<i8")).tobytes() for n in names}


#: Linux icsk_ca_state written for tcplab's recovery events (include/net/tcp.h: TCP_CA_Open 0,
#: TCP_CA_Recovery 3, TCP_CA_Loss 4).
_CA_STATE = {1: 3, 2: 0, 3: 4, 4: 0}


def export_run(run_dir: Path, out: Path, formats: list[str], *, force: bool = False) -> list[Path]:
    """Write the run at `run_dir` as logs into the folder `out` (created atomically): siftr2 ->
    siftr2.log, tcp_probe -> tcp_probe.txt, iperf3-json -> iperf3-<n>.json per flow."""
    import pandas as pd  # loaded on use: an import needs no pandas, only an export does

    for f in formats:
        if f not in EXPORT_FORMATS:
            raise LogError(f"--to {f!r}: not a format tcplab writes; choose from {', '.join(EXPORT_FORMATS)}")
    summary = Run(run_dir).info
    flows = _addresses(summary)
    index = {f["flow"]: i for i, f in enumerate(summary["flows"])}
    samples = read_table(run_dir, "flows")
    if len(samples):
        samples = samples[samples["flow"].isin(index)].assign(flow=lambda d: d["flow"].map(index)).sort_values(["t_ns", "flow"], kind="stable")
    # Wall clock for formats that carry one: the run's creation time, whole seconds (deterministic
    # for a given run folder).
    meta = read_json(run_dir / "meta.json") if (run_dir / "meta.json").is_file() else {}
    try:
        epoch_s = int(_dt.datetime.fromisoformat(meta["created"]).timestamp())
    except (KeyError, ValueError, TypeError):
        epoch_s = 0
    rd = RunDir(out, force=force, kind="export", inputs=(run_dir,))
    written = []
    try:
        if "siftr2" in formats:
            if not len(samples):
                raise LogError(f"{run_dir}: no flow samples (flows.parquet) to write as SIFTR2")
            sends = read_table(run_dir, "sends")
            if not len(sends):
                raise LogError(f"{run_dir}: no sends recorded (set trace.sends = true) to write as SIFTR2")
            sends = sends[sends["flow"].isin(index)].assign(flow=lambda d: d["flow"].map(index)).sort_values(["t_ns", "flow"], kind="stable")
            # An outbound record carries the sender's state at that send: the last sample at or
            # before it (SIFTR reads the tcpcb as the packet passes).
            # Sends before a flow's first sample carry that first sample's state.
            state = samples.drop(columns=["state"])
            o = pd.merge_asof(sends, state, on="t_ns", by="flow", direction="backward")
            first = pd.merge_asof(sends, state, on="t_ns", by="flow", direction="forward")
            o = o.fillna(first).fillna(-1)
            o = o.assign(outbound=1, ack=0, data_bytes=o["bytes"])
            i = samples.assign(outbound=0, seq=samples["snd_nxt"], ack=samples["snd_una"], data_bytes=0)
            cols = ["t_ns", "flow", "outbound", "cwnd_bytes", "ssthresh_bytes", "srtt_us", "rto_us", "flight_bytes", "seq", "ack", "data_bytes", "state"]
            rows = pd.concat([o[cols], i[cols]]).sort_values(["t_ns", "outbound"], kind="stable")
            path = rd.tmp / "siftr2.log"
            write_siftr2(str(path), epoch_s * 1_000_000_000, flows, _cols(rows, cols))
            written.append(path)
        if "tcp_probe" in formats:
            if not len(samples):
                raise LogError(f"{run_dir}: no flow samples (flows.parquet) to write as tcp_probe")
            events = read_table(run_dir, "events")
            ch = events[events["flow"].isin(index) & events["event"].isin(list(_CA_STATE))] if len(events) else pd.DataFrame(columns=["t_ns", "flow", "event"])
            ch = ch.assign(change_t_ns=ch["t_ns"], change_flow=ch["flow"].map(index), change_state=ch["event"].map(_CA_STATE)).sort_values("change_t_ns", kind="stable")
            cols = _cols(samples, ["t_ns", "flow", "cwnd_bytes", "ssthresh_bytes", "snd_una", "snd_nxt", "srtt_us"])
            cols |= _cols(ch, ["change_t_ns", "change_flow", "change_state"])
            path = rd.tmp / "tcp_probe.txt"
            write_tcp_probe(str(path), flows, cols)
            written.append(path)
        if "iperf3-json" in formats:
            require_table(run_dir, "intervals", "iperf3 JSON is written from it")
            intervals = read_table(run_dir, "intervals")
            for k, f in enumerate(summary["flows"]):
                mine = intervals[intervals["flow"] == f["flow"]].sort_values("t_start_ns") if len(intervals) else intervals
                if not len(mine):
                    continue
                path = rd.tmp / f"iperf3-{k + 1}.json"
                write_iperf3_json(str(path), [flows[k]], epoch_s, _cols(mine, ["t_start_ns", "t_end_ns", "bytes", "retrans_segs", "cwnd_bytes", "srtt_us"]),
                                          int(f["bytes_delivered"] or 0))
                written.append(path)
        final = rd.commit()
        return [final / p.name for p in written]
    except BaseException:
        rd.abort()
        raise
