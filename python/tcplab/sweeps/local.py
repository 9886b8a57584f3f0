"""The local executor: N worker processes (spawned, one per core by default) take runs from a
queue; the driver collects results as they finish.

Interruption: the driver (Ctrl-C, SIGTERM) sends SIGTERM to every worker, which raises
KeyboardInterrupt inside its run, so the run's partial folder is removed; workers ignore SIGINT
so that only the driver decides. A worker that dies (a crash in native code, the OOM killer)
loses only its run, which is recorded as failed, and is replaced.
"""

from __future__ import annotations

import ctypes
import multiprocessing as mp
import os
import queue
import signal
from typing import Any, Callable

from .task import run_task


def _on_term(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _die_with_parent() -> None:
    """Ask Linux to send this worker SIGTERM when the driver dies, even by SIGKILL (prctl(2)
    PR_SET_PDEATHSIG), so no orphan goes on writing into a sweep folder."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _worker(todo: Any, done: Any, runs_dir: str, parent_pid: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _on_term)
    _die_with_parent()
    if os.getppid() != parent_pid:  # the driver died before prctl took effect
        return
    try:
        while True:
            task = todo.get()
            if task is None:
                return
            done.put(("start", task["key"], os.getpid()))
            done.put(("result", run_task(task, runs_dir), os.getpid()))
    except KeyboardInterrupt:
        return


def run_local(tasks: list[dict[str, Any]], runs_dir: str, jobs: int, on_result: Callable[[dict[str, Any]], None]) -> None:
    """Run `tasks` on `jobs` processes; `on_result` is called in this process for each."""
    if not tasks:
        return
    ctx = mp.get_context("spawn")
    todo, done = ctx.Queue(), ctx.Queue()
    for t in tasks:
        todo.put(t)
    jobs = max(1, min(jobs, len(tasks)))
    for _ in range(jobs):
        todo.put(None)

    def spawn() -> Any:
        w = ctx.Process(target=_worker, args=(todo, done, runs_dir, os.getpid()), daemon=True)
        w.start()
        return w

    workers = {w.pid: w for w in (spawn() for _ in range(jobs))}
    running: dict[int, str] = {}  # worker pid -> key of the run it has started
    remaining = len(tasks)
    deaths = 0
    try:
        while remaining:
            try:
                kind, payload, pid = done.get(timeout=0.5)
            except queue.Empty:
                for pid, w in list(workers.items()):
                    if not w.is_alive() and w.exitcode not in (0, None):
                        del workers[pid]
                        deaths += 1
                        if deaths > 3 * jobs:
                            raise RuntimeError(f"sweep workers keep dying (last exit code {w.exitcode}); see the run logs")
                        key = running.pop(pid, None)
                        if key is not None:
                            remaining -= 1
                            on_result({"key": key, "status": "failed", "archive": None, "compute_s": None,
                                       "error": f"the worker process died (exit code {w.exitcode})", "traceback": None})
                        if remaining:
                            # Its end-of-queue marker is still queued: a replacement will take it.
                            w2 = spawn()
                            workers[w2.pid] = w2
                continue
            if kind == "start":
                running[pid] = payload
            else:
                running.pop(pid, None)
                remaining -= 1
                on_result(payload)
    except BaseException:
        for w in workers.values():
            if w.is_alive():
                os.kill(w.pid, signal.SIGTERM)
        for w in workers.values():
            w.join(timeout=20)
            if w.is_alive():
                w.kill()
                w.join()
        raise
    for w in workers.values():
        w.join(timeout=20)
