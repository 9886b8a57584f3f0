"""One run of a sweep, as a worker executes it (in a local worker process or a Ray task)."""

from __future__ import annotations

import io
import tarfile
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

from ..runner import execute


def run_task(task: dict[str, Any], runs_dir: str | None) -> dict[str, Any]:
    """Run `task` (key, resolved, backend, labels, report, command). With `runs_dir` (a folder
    the driver also sees) the run lands in runs_dir/<key> atomically; without, it runs in a
    temporary folder and comes back as a tar archive for the driver to land (a Ray worker on
    another machine). A failure comes back as a result, never as an exception, except an
    interruption, which the caller handles."""
    t0 = time.monotonic()
    res: dict[str, Any] = {"key": task["key"], "status": "done", "error": None, "traceback": None, "archive": None}
    try:
        kw = dict(report=task["report"], command=task["command"], backend=task["backend"], labels=task["labels"])
        if runs_dir is not None:
            _, summary = execute(task["resolved"], Path(runs_dir) / task["key"], **kw)
        else:
            with tempfile.TemporaryDirectory(prefix="tcplab-task-") as tmp:
                path, summary = execute(task["resolved"], Path(tmp) / task["key"], **kw)
                buf = io.BytesIO()
                with tarfile.open(fileobj=buf, mode="w:gz") as tar:
                    tar.add(path, arcname=".")
                res["archive"] = buf.getvalue()
        b = summary.get("bottleneck", {})
        res["line"] = (f"throughput {sum(f['throughput_mbps'] for f in summary['flows']):.2f} Mbit/s, "
                       f"utilisation {b.get('utilisation', 0) * 100:.1f}%, drops {b.get('drops')}")
    except Exception as e:  # noqa: BLE001 - a failing run is recorded, the sweep goes on
        res.update(status="failed", error=f"{type(e).__name__}: {e}", traceback=traceback.format_exc())
    res["compute_s"] = round(time.monotonic() - t0, 3)
    return res
