"""User-written congestion control: a Python class named in a spec as `cc = "module:Class"` (as
uvicorn and pytest name objects), instantiated once per sender and called by the simulator through
the same hooks as its own modules (FreeBSD cc(4) names; see examples/ and docs/spec.md).

Hooks, all optional, each given a `CcState` (cwnd_bytes and ssthresh_bytes to read and set;
mss_bytes, iw_bytes, bytes_acked, flight_bytes, cwnd_limited, in_recovery, in_slow_start,
srtt_us, min_rtt_us, now_ns to read):
  conn_init(s)                 once, when the connection is established
  on_ack(s, dupack)            each ACK outside recovery (dupack: a duplicate ACK)
  on_cong_signal(s, signal)    "loss" (fast retransmit), "rto", "rto_err" (spurious RTO), "ecn";
                               set ssthresh here; the stack then sets cwnd for its recovery
  post_recovery(s)             when fast recovery ends
  after_idle(s)                sending resumes after an idle RTO (default: cwnd = min(cwnd, IW))
  on_rtt_sample(s, rtt_us)     each RTT sample
  on_new_round(s)              each new round (a window of data)
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any, Sequence

HOOKS = ("conn_init", "on_ack", "on_cong_signal", "post_recovery", "after_idle", "on_rtt_sample", "on_new_round")


class UserCcError(ValueError):
    """A `module:Class` that cannot be used as a congestion-control algorithm."""


def is_user_cc(name: str) -> bool:
    """Whether a cc name refers to a Python class rather than a built-in module."""
    return ":" in name


def load(name: str) -> type:
    """The class `name` = "package.module:Class". The working directory is importable, as for
    `python -m`, so a spec beside its algorithm works from where it is run."""
    mod_name, _, cls_name = name.partition(":")
    if not mod_name or not cls_name:
        raise UserCcError(f"{name!r} is not module:Class")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        mod = importlib.import_module(mod_name)
    except Exception as e:  # an algorithm's import error, whatever it is, is the user's to see
        raise UserCcError(f"cannot import {mod_name!r}: {type(e).__name__}: {e}") from None
    cls = getattr(mod, cls_name, None)
    if not isinstance(cls, type):
        raise UserCcError(f"{mod_name!r} has no class {cls_name!r}")
    if not any(callable(getattr(cls, h, None)) for h in HOOKS):
        raise UserCcError(f"{name} defines none of the hooks {', '.join(HOOKS)}")
    return cls


def instances(flows: Sequence[Any]) -> dict[int, Any]:
    """One fresh instance per flow (model.Flow) whose cc is user-written, by flow index."""
    return {i: load(f.cc)() for i, f in enumerate(flows) if is_user_cc(f.cc)}
