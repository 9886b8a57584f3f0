"""The record contract, owned by tcplab-trace (crates/tcplab-trace/src/records.rs) and read from the
native module, never restated: each table's columns, the event codes, the sender-state codes."""

from __future__ import annotations

from ._native import record_contract

_CONTRACT = record_contract()

#: table -> its columns, in order (flows, intervals, queues, ports, events, sends).
COLUMNS: dict[str, list[str]] = {k: list(v) for k, v in _CONTRACT["tables"].items()}
#: event name -> code in the events table (recovery_start, recovery_end, rto, loss_end, complete, tlp, tlp_end).
EVENTS: dict[str, int] = dict(_CONTRACT["events"])
#: sender state name -> code in the flows and sends tables (open, recovery, loss).
STATES: dict[str, int] = dict(_CONTRACT["states"])

RECOVERY_START, RECOVERY_END, RTO, LOSS_END = (EVENTS[k] for k in ("recovery_start", "recovery_end", "rto", "loss_end"))
TLP, TLP_END = EVENTS["tlp"], EVENTS["tlp_end"]
