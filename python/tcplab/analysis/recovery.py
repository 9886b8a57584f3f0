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

from collections import namedtuple
from typing import TYPE_CHECKING, Any, Callable, Iterable

import numpy as np

from ..contract import LOSS_END, RECOVERY_END, RECOVERY_START, RTO, TLP, TLP_END  # noqa: E402,F401  (re-exported)

if TYPE_CHECKING:  # the report reads episodes without pandas (episode_list)
    import pandas as pd

    from ..report.columns import Columns

COLUMNS = [
    "flow", "episode", "kind", "start_s", "duration_s", "ended_by", "cwnd_entry_bytes", "ssthresh_entry_bytes",
    "cwnd_exit_bytes", "ssthresh_exit_bytes", "flight_before_bytes", "retransmissions", "rtos",
    "tso_sends", "fractional_sends", "largest_send_bytes", "smallest_send_bytes",
]
#: One episode as `episodes(...).itertuples(index=False)` gives it (what the report reads).
Episode = namedtuple("Episode", COLUMNS)
#: The events' columns the episodes read.
_EVENT_COLUMNS = ["t_ns", "event", "cwnd_bytes", "ssthresh_bytes", "outstanding_bytes", "retrans_segs"]
_Event = namedtuple("_Event", _EVENT_COLUMNS)
#: What an episode says of the sends when there are no send records.
_NO_SENDS = {"tso_sends": None, "fractional_sends": None, "largest_send_bytes": None, "smallest_send_bytes": None}


def _send_facts(b: Any, mss: int) -> dict[str, Any]:
    """TSO, fractional, largest and smallest of the byte counts `b` (numpy or pandas) sent in an episode."""
    return {
        "tso_sends": bool((b > mss).any()),
        "fractional_sends": bool(((b > 0) & (b < mss)).any()),
        "largest_send_bytes": int(b.max()) if len(b) else None,
        "smallest_send_bytes": int(b.min()) if len(b) else None,
    }


def _flow_episodes(flow: str, events: Iterable[Any], sends_in: Callable[[int, int | None], dict[str, Any]]) -> list[dict[str, Any]]:
    """One flow's episodes from its events in time order (rows with the _EVENT_COLUMNS as
    attributes); `sends_in(t0_ns, t1_ns or None)` describes the sends in [t0, t1)."""
    rows: list[dict[str, Any]] = []
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
        ep.update(sends_in(int(start.t_ns), None if end is None else int(end.t_ns)))
        rows.append(ep)
        open_ep = None

    def begin(e: Any, kind: str) -> None:
        nonlocal open_ep, n
        n += 1
        open_ep = {"flow": flow, "episode": n, "kind": kind, "start_s": e.t_ns / 1e9, "_start": e,
                   "cwnd_entry_bytes": int(e.cwnd_bytes), "ssthresh_entry_bytes": int(e.ssthresh_bytes),
                   "flight_before_bytes": int(e.outstanding_bytes), "rtos": 1 if kind == "rto" else 0}

    for e in events:
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
    return rows


def episodes(events: pd.DataFrame, sends: pd.DataFrame | None, mss: dict[str, int]) -> pd.DataFrame:
    """Episodes of every flow, in time order per flow. `mss` maps flow name to its MSS."""
    import pandas as pd  # loaded on use: the report reads episodes without pandas (episode_list)

    if not len(events):
        return pd.DataFrame(columns=COLUMNS)
    rows: list[dict[str, Any]] = []
    for flow, ev in events.sort_values(["flow", "t_ns"], kind="stable").groupby("flow", sort=False):
        def sends_in(t0: int, t1: int | None, flow: Any = flow) -> dict[str, Any]:
            if sends is None:
                return dict(_NO_SENDS)
            mine = sends[(sends["flow"] == flow) & (sends["t_ns"] >= t0)]
            if t1 is not None:
                mine = mine[mine["t_ns"] < t1]
            return _send_facts(mine["bytes"], mss[flow])

        rows += _flow_episodes(flow, ev[_EVENT_COLUMNS].itertuples(index=False, name="_Event"), sends_in)
    return pd.DataFrame(rows, columns=COLUMNS)


def episode_list(events: Columns, sends: Columns | None, mss: dict[str, int], by_name: bool = False) -> list[Episode]:
    """`episodes()` without pandas, for the report: the same episodes, in the same order, as
    `episodes(...).itertuples(index=False)` gives them (values as pandas holds them: `frame_rows`).
    Flows come in the order of their names' codes, as pandas sorts a table read with its names
    as categories; `by_name`: in the order of their names, as pandas sorts them as strings."""
    if not len(events):
        return []
    names = events.names["flow"]
    rank = np.arange(len(names))
    if by_name:
        rank[np.argsort(np.array(names, dtype=object), kind="stable")] = np.arange(len(names))
    keys = rank[events.codes("flow")]
    order = np.lexsort((events.codes("t_ns"), keys))  # stable, as sort_values(["flow", "t_ns"], kind="stable")
    ev, keys = events.take(order), keys[order]
    code_of = {int(r): c for c, r in enumerate(rank)}
    rows: list[dict[str, Any]] = []
    for key in np.unique(keys):
        flow = names[code_of[int(key)]]
        mine = ev.take(keys == key)
        mine_sends = sends.of("flow", flow) if sends is not None else None

        def sends_in(t0: int, t1: int | None, flow: str = flow, mine_sends: Any = mine_sends) -> dict[str, Any]:
            if mine_sends is None:
                return dict(_NO_SENDS)
            t = mine_sends.codes("t_ns")
            ok = (t >= t0) if t1 is None else (t >= t0) & (t < t1)
            return _send_facts(mine_sends.codes("bytes")[ok], mss[flow])

        rows += _flow_episodes(flow, map(_Event._make, zip(*(mine.codes(c).tolist() for c in _EVENT_COLUMNS))), sends_in)
    return frame_rows(rows)


def frame_rows(rows: list[dict[str, Any]]) -> list[Episode]:
    """Episode rows with each column's values as `pd.DataFrame(rows, columns=COLUMNS)` holds
    them (so the report shows what it showed from pandas): a column of numbers with a None, or
    of integers and floats, is all floats, None as NaN; any other column keeps its values."""
    cols = {c: [r.get(c) for r in rows] for c in COLUMNS}
    for c, vals in cols.items():
        numbers = [v for v in vals if v is not None]
        if numbers and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in numbers) \
                and (len(numbers) < len(vals) or any(isinstance(v, float) for v in numbers)):
            cols[c] = [float("nan") if v is None else float(v) for v in vals]
    return [Episode(*vals) for vals in zip(*cols.values())]


def first_per_flow(eps: pd.DataFrame) -> pd.DataFrame:
    """Each flow's first episode."""
    return eps.groupby("flow", sort=False).head(1)
