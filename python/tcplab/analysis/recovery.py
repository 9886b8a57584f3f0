"""Loss-recovery episodes: each flow's fast recoveries and retransmission timeouts, with cwnd and
ssthresh at entry and exit, the flight before the loss, the retransmissions, and whether segments
larger than one MSS (TSO bursts) or smaller (fractional) were sent during the episode.

One rule for every stack and every source of records: an episode starts at a recovery-start, RTO
or tail-loss-probe event and ends at the matching end event (an RTO inside a fast recovery ends that
episode and starts an RTO episode; repeated timeouts stay in one; a probe whose loss is then
repaired by fast recovery ends when the recovery starts). Sends come from the `sends` table: TSO =
any send of more than one MSS, fractional = any send of less than one MSS.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..contract import LOSS_END, RECOVERY_END, RECOVERY_START, RTO, TLP, TLP_END  # noqa: E402,F401  (re-exported)

COLUMNS = [
    "flow", "episode", "kind", "start_s", "duration_s", "ended_by", "cwnd_entry_bytes", "ssthresh_entry_bytes",
    "cwnd_exit_bytes", "ssthresh_exit_bytes", "flight_before_bytes", "retransmissions", "rtos",
    "tso_sends", "fractional_sends", "largest_send_bytes", "smallest_send_bytes",
]


def _sends_in(sends: pd.DataFrame | None, flow: str, t0: int, t1: int | None, mss: int) -> dict[str, Any]:
    if sends is None:
        return {"tso_sends": None, "fractional_sends": None, "largest_send_bytes": None, "smallest_send_bytes": None}
    mine = sends[(sends["flow"] == flow) & (sends["t_ns"] >= t0)]
    if t1 is not None:
        mine = mine[mine["t_ns"] < t1]
    b = mine["bytes"]
    return {
        "tso_sends": bool((b > mss).any()),
        "fractional_sends": bool(((b > 0) & (b < mss)).any()),
        "largest_send_bytes": int(b.max()) if len(b) else None,
        "smallest_send_bytes": int(b.min()) if len(b) else None,
    }


def episodes(events: pd.DataFrame, sends: pd.DataFrame | None, mss: dict[str, int]) -> pd.DataFrame:
    """Episodes of every flow, in time order per flow. `mss` maps flow name to its MSS."""
    rows: list[dict[str, Any]] = []
    if not len(events):
        return pd.DataFrame(columns=COLUMNS)
    for flow, ev in events.sort_values(["flow", "t_ns"], kind="stable").groupby("flow", sort=False):
        open_ep: dict[str, Any] | None = None
        n = 0

        def close(end: Any, ended_by: str) -> None:
            nonlocal open_ep
            ep = open_ep
            assert ep is not None
            start = ep.pop("_start")
            ep.update({
                "duration_s": None if end is None else (end.t_ns - start.t_ns) / 1e9,
                "ended_by": ended_by,
                "cwnd_exit_bytes": None if end is None else int(end.cwnd_bytes),
                "ssthresh_exit_bytes": None if end is None else int(end.ssthresh_bytes),
                # -1: the log does not know retransmissions (SIFTR2 >= 2.3, tcp_probe).
                "retransmissions": None if end is None or start.retrans_segs < 0 else int(end.retrans_segs - start.retrans_segs),
            })
            ep.update(_sends_in(sends, flow, int(start.t_ns), None if end is None else int(end.t_ns), mss[flow]))
            rows.append(ep)
            open_ep = None

        def begin(e: Any, kind: str) -> None:
            nonlocal open_ep, n
            n += 1
            open_ep = {"flow": flow, "episode": n, "kind": kind, "start_s": e.t_ns / 1e9, "_start": e,
                       "cwnd_entry_bytes": int(e.cwnd_bytes), "ssthresh_entry_bytes": int(e.ssthresh_bytes),
                       "flight_before_bytes": int(e.outstanding_bytes), "rtos": 1 if kind == "rto" else 0}

        for e in ev.itertuples(index=False):
            if e.event == RECOVERY_START:
                if open_ep is not None:
                    close(e, "fast recovery" if open_ep["kind"] == "tlp" else "new episode")
                begin(e, "fast recovery")
            elif e.event == RTO:
                if open_ep is not None and open_ep["kind"] == "rto":
                    open_ep["rtos"] += 1
                    continue
                if open_ep is not None:
                    close(e, "rto")
                begin(e, "rto")
            elif e.event == TLP and open_ep is None:
                begin(e, "tlp")
            elif e.event == TLP_END and open_ep is not None and open_ep["kind"] == "tlp":
                close(e, "probe acked")
            elif e.event in (RECOVERY_END, LOSS_END) and open_ep is not None:
                close(e, "full ack")
        if open_ep is not None:
            close(None, "end of run")
    return pd.DataFrame(rows, columns=COLUMNS)


def first_per_flow(eps: pd.DataFrame) -> pd.DataFrame:
    """Each flow's first episode."""
    return eps.groupby("flow", sort=False).head(1)
