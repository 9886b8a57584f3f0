"""The Ray executor: the same runs as Ray tasks, on a local Ray instance or a cluster
(`--address`). Each task runs in a temporary folder on its worker and returns the finished run
folder as an archive, so workers need no shared filesystem: the driver lands every run in the
sweep folder, and the catalog is the same as a local sweep's."""

from __future__ import annotations

import os
import socket
from typing import Any, Callable

from .task import run_task


class RayUnavailable(Exception):
    pass


def _check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """Ray keeps retrying an unreachable head for minutes; fail fast with a clear message."""
    host, _, port = address.rpartition(":")
    host = host.removeprefix("ray://") or "127.0.0.1"
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            pass
    except (OSError, ValueError) as e:
        raise RayUnavailable(f"cannot reach the Ray cluster at {address}: {e}") from None


def _remote_run(task: dict[str, Any]) -> dict[str, Any]:
    return run_task(task, None)


def run_ray(tasks: list[dict[str, Any]], address: str | None, jobs: int,
            on_result: Callable[[dict[str, Any]], None]) -> None:
    """Run `tasks` as Ray tasks (one CPU each); without `address` a local Ray instance with
    `jobs` CPUs is started for the sweep and stopped after it."""
    if not tasks:
        return
    try:
        import ray  # optional: installed with tcplab[ray]
    except ImportError:
        raise RayUnavailable("the ray executor needs Ray: pip install 'ray>=2.40' (or tcplab[ray])") from None
    if address and address != "auto":
        _check_reachable(address)
    kw: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
    if address:
        kw["address"] = address
    else:
        kw["num_cpus"] = jobs
    try:
        ray.init(**kw)
    except (ConnectionError, RuntimeError, ValueError) as e:
        hint = ""
        if address and os.environ.get("RAY_AUTH_MODE") != "token":
            # Ray >= 2.59 starts clusters with token authentication by default, and a driver that
            # connects by address sends the token only in token mode (docs.ray.io, token-auth).
            hint = " (if the cluster uses token authentication, as `ray start` does by default since Ray 2.59, " \
                   "set RAY_AUTH_MODE=token here, with the cluster's token in ~/.ray/auth_token or RAY_AUTH_TOKEN)"
        raise RayUnavailable(f"cannot reach the Ray cluster at {address or 'local'}: {e}{hint}") from None
    try:
        remote = ray.remote(num_cpus=1, max_retries=0)(_remote_run)
        pending = [remote.remote(t) for t in tasks]
        keys = {ref: t["key"] for ref, t in zip(pending, tasks)}
        try:
            while pending:
                ready, pending = ray.wait(pending, num_returns=1, timeout=0.5)
                for ref in ready:
                    try:
                        res = ray.get(ref)
                    except Exception as e:  # noqa: BLE001 - the worker died: that run failed
                        res = {"key": keys[ref], "status": "failed", "archive": None, "compute_s": None,
                               "error": f"Ray task failed: {type(e).__name__}: {str(e)[:500]}", "traceback": None}
                    on_result(res)
        except BaseException:
            for ref in pending:
                ray.cancel(ref, force=True)
            raise
    finally:
        ray.shutdown()
