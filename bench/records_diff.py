"""Compare two results folders (a run, a peers or a sweep folder) record by record.

Every Parquet table is compared as data (columns, dtypes, values, row order); the resolved spec.toml as text, every
summary.json and meta.json as JSON without the keys that legitimately differ between two runs (wall time, paths, dates,
the tool's version). Prints the first differences; exit 1 if any.
Usage: python bench/records_diff.py OLD NEW
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow.parquet as pq

SUFFIXES = (".parquet", ".json", ".toml")
VOLATILE = {"command", "git_revision", "wall_s", "created", "path", "finished", "started", "version", "elapsed_s", "host", "argv", "out"}


# cpu.json holds CPU-time samples of the run (`[measure] cpu`, T5): measurements of this machine,
# different on every run of the same build (two runs of one build differ in them), so only what the
# simulation determines is compared.
CPU_MEASURED = ("cc_", "tcp_", "sampled_s", "samples")


def _clean_cpu(x: dict) -> dict:
    return {k: v for k, v in x.items() if not k.startswith(CPU_MEASURED)}


def _clean(x):
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items() if k not in VOLATILE}
    if isinstance(x, list):
        return [_clean(v) for v in x]
    return x


def main(old: Path, new: Path) -> int:
    diffs: list[str] = []
    files_old = {p.relative_to(old).as_posix() for p in old.rglob("*") if p.suffix in SUFFIXES}
    files_new = {p.relative_to(new).as_posix() for p in new.rglob("*") if p.suffix in SUFFIXES}
    for rel in sorted(files_old ^ files_new):
        diffs.append(f"only in {'old' if rel in files_old else 'new'}: {rel}")
    for rel in sorted(files_old & files_new):
        a, b = old / rel, new / rel
        if rel.endswith(".parquet"):
            ta, tb = pq.read_table(a), pq.read_table(b)
            if ta.schema.remove_metadata() != tb.schema.remove_metadata():
                diffs.append(f"{rel}: columns differ: {ta.schema.names} vs {tb.schema.names}")
            elif not ta.equals(tb):
                diffs.append(f"{rel}: values differ ({ta.num_rows} vs {tb.num_rows} rows)")
        elif rel.endswith(".toml"):
            if a.read_bytes() != b.read_bytes():
                diffs.append(f"{rel}: differs")
        else:
            ja, jb = _clean(json.loads(a.read_text())), _clean(json.loads(b.read_text()))
            if rel.endswith("cpu.json"):
                ja, jb = _clean_cpu(ja), _clean_cpu(jb)
            if ja != jb:
                keys = [k for k in set(ja) | set(jb) if ja.get(k) != jb.get(k)] if isinstance(ja, dict) and isinstance(jb, dict) else []
                diffs.append(f"{rel}: differs (keys: {sorted(keys)[:8]})")
    for d in diffs[:20]:
        print("  " + d)
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
