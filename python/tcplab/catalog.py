"""The results catalog: every run folder's summary as one Parquet row per flow
(`summary.parquet`), and DuckDB views over all of them under a root folder.

Views (each with a `run` column, the run folder relative to the root):
  runs          one row per run: name, backend, seed, sweep labels and p_* parameters, bottleneck
                utilisation, goodput, drops, Jain fairness, summed throughput and retransmits; where
                measured, the bottleneck's discipline and queue delay percentiles and the first
                probe's RTT percentiles and loss
  flow_results  one row per flow of every run (the summary table of `tcplab show`)
  flows, intervals, queues, ports, events, sends, acks, probes
                the runs' time series, where recorded
  cpu           runs measured with [measure] cpu: CPU shares and work per GB (cpu.json)

Only finished run folders are seen: a run being written lives under a hidden temporary name.
The connection is sandboxed (Catalog): it opens only these files, and a user's SQL may only read.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from . import arrowbuf
from .store import PARQUET_OPTIONS, DamagedResults, read_arrow

SUMMARY_FILE = "summary.parquet"
TIME_SERIES = ("flows", "intervals", "queues", "ports", "events", "sends", "acks", "probes")
RUN_COLUMNS = ["name", "backend", "seed", "spec_hash", "sweep", "sweep_part", "point", "iteration",
               "bottleneck_link", "bottleneck_rate_mbps", "utilisation", "goodput_mbps", "drops", "fairness_jain"]
#: Columns a run has only when its bottleneck ran a queue discipline or measured latency (absent
#: otherwise, so older runs' rows stay as they were; the views read files by column name).
LATENCY_COLUMNS = ["aqm", "aqm_drops", "ecn_marks", "queue_delay_p50_ms", "queue_delay_p95_ms", "queue_delay_p99_ms"]
#: Columns of a run with [[probes]]: its first probe's RTT percentiles and loss (every probe's are
#: in summary.json and the `probes` view).
PROBE_COLUMNS = ["probe", "probe_rtt_p50_ms", "probe_rtt_p95_ms", "probe_rtt_p99_ms", "probe_loss_pct"]
#: `time iperf3 -n` per flow, where the run modelled or timed iperf3's whole client.
IPERF3_COLUMNS = ["iperf3_s"]
#: Columns of a run with [[workload]] tables: its first workload's FCT slowdown p50/p99 by size
#: bucket and over all its flows, and the first incast's or request-response workload's request
#: completion (every workload's are
#: in summary.json; each flow's slowdown in flow_results).
WORKLOAD_COLUMNS = ["workload", "slowdown_p50", "slowdown_p99", "slowdown_small_p50", "slowdown_small_p99",
                    "slowdown_medium_p50", "slowdown_medium_p99", "slowdown_large_p50", "slowdown_large_p99",
                    "request_completion_p50_ms", "request_completion_p99_ms"]
#: The size buckets of analysis/fct.BUCKETS as column words.
_BUCKET_WORDS = {"all": "", "<100KB": "small_", "100KB-10MB": "medium_", ">10MB": "large_"}
#: A workload flow's ideal FCT and slowdown (analysis/fct.py).
FLOW_WORKLOAD_COLUMNS = ["bytes_written", "ideal_fct_s", "slowdown"]
#: A flow's RTT percentiles (its sender's samples), where the run measured latency.
FLOW_RTT_COLUMNS = ["rtt_p50_ms", "rtt_p95_ms", "rtt_p99_ms"]
FLOW_COLUMNS = ["flow", "from", "to", "stack", "cc", "start_s", "duration_s", "bytes_delivered", "throughput_mbps",
                "completion_s", "fct_s", "connect_ms", "retransmits", "syn_retransmits", "recoveries", "rtos",
                "min_rtt_ms", "srtt_ms", "final_cwnd_bytes"]


def param_column(key: str) -> str:
    """A sweep key as a column name SQL can use unquoted: senders.*.cc -> p_senders_all_cc."""
    return "p_" + re.sub(r"[^0-9A-Za-z]+", "_", key.replace("*", "all")).strip("_")


def summary_rows(summary: dict[str, Any], spec_hash: str, labels: dict[str, Any] | None = None) -> pa.Table:
    """The catalog rows of one run. `labels`: sweep, sweep_part, point, iteration and params
    (sweep key -> value, stored as text in p_* columns so values like "15Mbit" stay as written)."""
    labels = labels or {}
    b = summary.get("bottleneck", {})
    run = {"name": summary["name"], "backend": summary.get("backend", "sim"), "seed": summary["seed"],
           "spec_hash": spec_hash, "sweep": labels.get("sweep"), "sweep_part": labels.get("sweep_part"),
           "point": labels.get("point"), "iteration": labels.get("iteration"),
           "bottleneck_link": b.get("link"), "bottleneck_rate_mbps": b.get("rate_mbps"),
           "utilisation": b.get("utilisation"), "goodput_mbps": b.get("goodput_mbps"), "drops": b.get("drops"),
           "fairness_jain": summary.get("fairness_jain")}
    latency: dict[str, Any] = {}
    if "aqm" in b or "queue_delay_ms" in b:
        aqm, qd = b.get("aqm", {}), b.get("queue_delay_ms", {})
        latency = {"aqm": aqm.get("kind", "drop-tail"), "aqm_drops": aqm.get("drops"), "ecn_marks": aqm.get("ecn_marks"),
                   **{f"queue_delay_{k}_ms": qd.get(k) for k in ("p50", "p95", "p99")}}
        run |= latency
    if summary.get("probes"):
        p = summary["probes"][0]
        r = p["rtt_ms"] or {}
        latency |= {"probe": p["probe"], **{f"probe_rtt_{k}_ms": r.get(k) for k in ("p50", "p95", "p99")},
                    "probe_loss_pct": p["loss_pct"]}
        run |= latency
    if summary.get("workloads"):
        latency |= _workload(summary["workloads"])
        run |= latency
    flows = summary["flows"]
    flow_cols = FLOW_COLUMNS + (IPERF3_COLUMNS if any("iperf3_s" in f for f in flows) else []) \
        + (FLOW_RTT_COLUMNS if any("rtt_ms" in f for f in flows) else []) \
        + (FLOW_WORKLOAD_COLUMNS if summary.get("workloads") else [])
    extra = [c for c in flow_cols if c in IPERF3_COLUMNS + FLOW_WORKLOAD_COLUMNS]
    params = {param_column(k): _text(v) for k, v in (labels.get("params") or {}).items()}
    rows = [run | {c: f.get(c) for c in FLOW_COLUMNS + extra} | _flow_rtt(f, flow_cols) | params for f in flows]
    types = {"seed": pa.int64(), "point": pa.int64(), "iteration": pa.int64(), "drops": pa.int64(),
             "bytes_delivered": pa.int64(), "retransmits": pa.int64(), "recoveries": pa.int64(), "rtos": pa.int64(),
             "final_cwnd_bytes": pa.int64(), "aqm_drops": pa.int64(), "ecn_marks": pa.int64(),
             "probe_loss_pct": pa.float64(), "syn_retransmits": pa.int64(), "bytes_written": pa.int64()}
    fields = []
    for c in RUN_COLUMNS + list(latency) + flow_cols:
        fields.append(pa.field(c, types.get(c, pa.float64() if c.endswith(("_s", "_mbps", "_ms", "utilisation",
                                                                            "fairness_jain", "_p50", "_p99", "slowdown"))
                                  else pa.string())))
    fields += [pa.field(c, pa.string()) for c in params]
    schema = pa.schema(fields)
    return arrowbuf.table(rows, schema)


def _workload(ws: list[dict[str, Any]]) -> dict[str, Any]:
    """The run's workload columns from summary.json's `workloads` (its first; the first with requests)."""
    w = ws[0]
    out: dict[str, Any] = {"workload": w["name"]}
    for b in w["fct_slowdown"]:
        word = _BUCKET_WORDS[b["bucket"]]
        out[f"slowdown_{word}p50"], out[f"slowdown_{word}p99"] = b["p50"], b["p99"]
    req = next((x["requests"]["completion_ms"] for x in ws if "requests" in x), {})
    out["request_completion_p50_ms"], out["request_completion_p99_ms"] = req.get("p50"), req.get("p99")
    return {c: out.get(c) for c in WORKLOAD_COLUMNS}


def _flow_rtt(f: dict[str, Any], cols: list[str]) -> dict[str, Any]:
    if FLOW_RTT_COLUMNS[0] not in cols:
        return {}
    r = f.get("rtt_ms") or {}
    return {f"rtt_{k}_ms": r.get(k) for k in ("p50", "p95", "p99")}


def _text(v: Any) -> str:
    """A swept value as the spec wrote it: strings as they are, TOML spellings for the rest."""
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    return repr(v) if isinstance(v, float) else str(v)


def write_summary(directory: Path, summary: dict[str, Any], spec_hash: str, labels: dict[str, Any] | None = None) -> None:
    pq.write_table(summary_rows(summary, spec_hash, labels), directory / SUMMARY_FILE, **PARQUET_OPTIONS)


def _files(root: Path, name: str) -> list[str]:
    """`name` in every finished run folder under root (hidden folders are runs being written)."""
    out = []
    for p in sorted(root.rglob(name)):
        rel = p.relative_to(root).parts
        if not any(part.startswith(".") for part in rel):
            out.append(str(p))
    return out


#: Files of which a run folder has all: one without some is listed as damaged, naming it.
RUN_FILES = ("summary.json", SUMMARY_FILE)


def scan(root: Path) -> tuple[list[str], list[tuple[str, str, bool]]]:
    """The summary.parquet of every run under root that can be read (page checksums verified),
    and the damaged runs as (folder relative to root, what is wrong, whether its catalog row is
    still read): a run folder (one with any of
    RUN_FILES or meta.json) missing one of RUN_FILES, or whose summary.parquet cannot be read."""
    folders = sorted({Path(f).parent for n in (*RUN_FILES, "meta.json") for f in _files(root, n)})
    good, damaged = [], []
    for d in folders:
        rel = d.relative_to(root).as_posix()
        missing = [n for n in RUN_FILES if not (d / n).is_file()]
        if SUMMARY_FILE in missing:
            damaged.append((rel, f"no {' and no '.join(missing)}", False))
            continue
        try:
            read_arrow(d / SUMMARY_FILE)
        except DamagedResults as e:
            damaged.append((rel, str(e).removeprefix(str(d) + "/"), False))
            continue
        good.append(str(d / SUMMARY_FILE))
        if missing:
            damaged.append((rel, f"no {missing[0]}", True))
    return good, damaged


class CatalogError(Exception):
    pass


#: What a catalog query may be: it reads (EXPLAIN shows how); COPY, ATTACH, SET, INSTALL, LOAD,
#: PRAGMA, CREATE ... are refused before DuckDB sees them.
READ_STATEMENTS = ("SELECT", "EXPLAIN")


class Catalog:
    """A sandboxed in-memory DuckDB connection with the catalog's views over a root folder:
    DuckDB may open only the runs' own files (allowed_paths), loads and installs no extension,
    spills nothing to disk, and its configuration is locked before any user SQL runs."""

    def __init__(self, root: str | Path = "results"):
        import duckdb  # loaded on use: writing a run's catalog row needs no DuckDB

        root = Path(root)
        if not root.is_dir():
            raise CatalogError(f"{root}: no such folder (run something first, or give the results folder)")
        self.root = root
        self.con = duckdb.connect(":memory:", config={"autoinstall_known_extensions": False,
                                                      "autoload_known_extensions": False, "temp_directory": ""})
        summaries, self.damaged = scan(root)
        self.files: list[str] = []
        self._views(summaries)
        self.con.execute(f"SET allowed_paths = [{', '.join(_sql_str(f) for f in self.files)}]")
        self.con.execute("SET enable_external_access = false")
        self.con.execute("SET lock_configuration = true")

    def _views(self, summaries: list[str]) -> None:
        con, root = self.con, self.root
        # The run folder relative to the root, from DuckDB's `filename` column (every file read is
        # under the root, so cutting the root's length off is exact).
        run_col = f"substr(parse_dirpath(filename), {len(str(root.resolve())) + 2}) AS run"

        def view(name: str, files: list[str], reader: str = "read_parquet") -> bool:
            if not files:
                return False
            resolved = [str(Path(f).resolve()) for f in files]
            self.files += resolved
            paths = "[" + ", ".join(_sql_str(f) for f in resolved) + "]"
            con.execute(f"CREATE VIEW {name} AS SELECT {run_col}, * EXCLUDE (filename) "
                        f"FROM {reader}({paths}, union_by_name = true, filename = true)")
            return True

        if not view("flow_results", summaries):
            con.execute("CREATE VIEW flow_results AS SELECT NULL::VARCHAR AS run WHERE false")
            con.execute("CREATE VIEW runs AS SELECT NULL::VARCHAR AS run WHERE false")
        else:
            cols = [r[0] for r in con.execute("DESCRIBE flow_results").fetchall()]
            keep = [c for c in cols if c in RUN_COLUMNS or c in LATENCY_COLUMNS or c in PROBE_COLUMNS or c in WORKLOAD_COLUMNS
                    or c.startswith("p_")]
            con.execute("CREATE VIEW runs AS SELECT run, " + ", ".join(f"any_value({_ident(c)}) AS {_ident(c)}" for c in keep)
                        + ", count(*) AS flows, sum(throughput_mbps) AS throughput_mbps, sum(retransmits) AS retransmits"
                        " FROM flow_results GROUP BY run")
        for t in TIME_SERIES:
            view(t, _files(root, f"{t}.parquet"))
        view("cpu", _files(root, "cpu.json"), "read_json_auto")

    def query(self, sql: str):
        """One read-only statement (READ_STATEMENTS) as a pandas DataFrame; CatalogError for
        anything else, duckdb.Error for what DuckDB refuses (a file outside the catalog)."""
        if not isinstance(sql, str) or not sql.strip():
            raise CatalogError("query: no SQL given (e.g. \"SELECT * FROM runs\")")
        statements = self.con.extract_statements(sql)
        if len(statements) != 1:
            raise CatalogError(f"query: one SQL statement at a time, got {len(statements)}")
        kind = str(statements[0].type).rsplit(".", 1)[-1]
        if kind not in READ_STATEMENTS:
            raise CatalogError(f"query: {kind} statements are refused: the catalog is read-only "
                               f"(allowed: {', '.join(READ_STATEMENTS)})")
        return self.con.execute(sql).df()


def connect(root: str | Path = "results"):
    """The sandboxed DuckDB connection of Catalog(root), for tcplab's own SQL: a user's SQL goes
    through Catalog.query (or query()), which admits reading statements only (a COPY could still
    write over the catalog's own files, which DuckDB may open)."""
    return Catalog(root).con


def _sql_str(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _ident(c: str) -> str:
    return '"' + c.replace('"', '""') + '"'


def query(sql: str, root: str | Path = "results"):
    """Run one reading SQL statement over the catalog of `root`; a pandas DataFrame. Runs whose
    catalog row cannot be read are left out with a warning naming them (Catalog.damaged)."""
    cat = Catalog(root)
    skipped = [f"{run} ({why})" for run, why, kept in cat.damaged if not kept]
    if skipped:
        warnings.warn(f"skipped {len(skipped)} damaged run(s): {'; '.join(skipped)}", CatalogWarning, stacklevel=2)
    return cat.query(sql)


class CatalogWarning(UserWarning):
    """Runs left out of a query because their catalog row is missing or damaged."""
