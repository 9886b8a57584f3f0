"""Time series for the interactive pages, decimated once: an M4 overview of each series (first,
min, max and last sample per time bucket: Jugel et al., "M4: A Visualization-Oriented Time Series
Data Aggregation", PVLDB 7(10), 2014 — exact for a line chart of that many pixel columns), and a
detail level loaded when a panel is zoomed: every sample inside the run's focus windows (each
flow's first second and its recovery episodes, in time order while the page budget lasts) and
M4 at a finer bucket elsewhere.

Page budget: PAGE_POINTS samples of detail and PAGE_OVERVIEW_BUCKETS overview buckets shared by
all series of a page (at most OVERVIEW_BUCKETS buckets each), PAGE_SENDS segments for the
time-sequence graphs: a page of a few flows gives each series its full 1000-bucket overview, a
thousand flows' page stays bounded (`page_share`). Times go to the page as
integer microseconds, delta-encoded (the page adds them up), so a 200 s run stays compact.
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass, field

import numpy as np

#: Buckets of a series' overview (at most 4 samples each): ~1000 pixel columns.
OVERVIEW_BUCKETS = 1000
#: Overview buckets in one page, shared equally by its series: every series of up to 200 keeps
#: OVERVIEW_BUCKETS; a thousand flows (~7000 series) made a 149 MB page that took longer to
#: write than the simulation took to run (bench/README.md, issue 23).
PAGE_OVERVIEW_BUCKETS = 200_000
#: Fewest overview buckets of a series, however many share the page.
MIN_OVERVIEW_BUCKETS = 25
#: Detail samples in one page, shared equally by its series (~12 bytes each in the page).
PAGE_POINTS = 600_000
#: Fewest detail samples of a series, however many share the page.
MIN_DETAIL_POINTS = 100
#: Segments of the time-sequence graphs in one page (~20 bytes each).
PAGE_SENDS = 400_000


class RawJSON:
    """A value already turned into the page's JSON text (`script_json`), placed as it is when
    the document holding it is written: a thousand flows' overviews held as Python lists took
    ~0.5 GB until the page was written (bench/README.md, issue 23)."""

    __slots__ = ("text",)

    def __init__(self, value: object):
        self.text = script_json(value)

    def value(self) -> object:
        return json.loads(self.text)


def script_json(data: object) -> str:
    """`data` as JSON for a script element of the page: "</" cannot end the element early once
    escaped; the JSON stays valid. A RawJSON inside `data` is written as its text."""
    raws: list[str] = []
    token = f"\0{secrets.token_hex(8)}:"  # a NUL and 16 random hex digits: in no name of a spec

    def raw(o: object) -> str:
        if not isinstance(o, RawJSON):
            raise TypeError(f"{type(o).__name__} is not JSON serializable")
        raws.append(o.text)
        return f"{token}{len(raws) - 1}"

    text = json.dumps(data, separators=(",", ":"), allow_nan=False, default=raw)
    if raws:
        quoted = re.escape(json.dumps(token)[:-1]) + r'(\d+)"'
        text = re.sub(quoted, lambda m: raws[int(m.group(1))], text)
    return text.replace("</", "<\\/")


class Blobs(dict):
    """The page's detail blobs by key, each held as the JSON text the page embeds: as Python
    lists, T1's 600 000 detail samples took ~40 MB until the page was written (bench/README.md,
    issue 23). Reading a blob back (static charts) parses its text."""

    def __setitem__(self, key: str, value: dict) -> None:
        super().__setitem__(key, script_json(value))

    def __getitem__(self, key: str) -> dict:
        return json.loads(super().__getitem__(key))

    def texts(self) -> list[tuple[str, str]]:
        """(key, JSON text) of every blob, in the order they were added."""
        return list(super().items())


@dataclass(frozen=True)
class Share:
    """One series' part of its page: overview buckets, and detail samples when zoomed."""

    overview_buckets: int
    detail_points: int


def page_share(n_series: int, full: bool = False) -> Share:
    """Each series' share of a page of about `n_series` series: the page budgets split equally,
    within the floors above; `full`: every sample in the detail (static charts of a window)."""
    n = max(1, n_series)
    if full:
        return Share(OVERVIEW_BUCKETS, 1 << 62)
    buckets = min(OVERVIEW_BUCKETS, max(MIN_OVERVIEW_BUCKETS, PAGE_OVERVIEW_BUCKETS // n))
    return Share(buckets, max(MIN_DETAIL_POINTS, PAGE_POINTS // n))


@dataclass
class Focus:
    """Time windows [start_ns, end_ns) worth full resolution, most important first."""

    windows: list[tuple[int, int]] = field(default_factory=list)


def m4_indices(t_ns: np.ndarray, y: np.ndarray, buckets: int, lo: int | None = None, hi: int | None = None) -> np.ndarray:
    """Sorted indices of the first, minimum, maximum and last sample of each of `buckets` equal
    time buckets over [lo, hi] (default: the samples' span). `t_ns` is sorted."""
    n = len(t_ns)
    if n <= 4 * buckets or buckets <= 0:
        return np.arange(n)
    lo = int(t_ns[0]) if lo is None else lo
    hi = int(t_ns[-1]) if hi is None else hi
    width = max(1, (hi - lo) // buckets + 1)
    b = (t_ns - lo) // width
    starts = np.flatnonzero(np.r_[True, b[1:] != b[:-1]])
    ends = np.r_[starts[1:], n] - 1
    bucket_of = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, n]))
    mins = np.minimum.reduceat(y, starts)
    maxs = np.maximum.reduceat(y, starts)

    def first_where(extreme: np.ndarray) -> np.ndarray:
        # The first position in each bucket holding the bucket's extreme (positions are sorted,
        # so a bucket's first is where the bucket number changes).
        at = np.flatnonzero(y == extreme[bucket_of])
        bk = bucket_of[at]
        return at[np.r_[True, bk[1:] != bk[:-1]]]

    chosen = np.zeros(n, dtype=bool)  # the sorted union, by a mask: np.unique sorted ~0.1 s a page
    for at in (starts, ends, first_where(mins), first_where(maxs)):
        chosen[at] = True
    return np.flatnonzero(chosen)


def in_windows(t_ns: np.ndarray, windows: list[tuple[int, int]]) -> np.ndarray:
    """Mask of the samples inside any of the windows."""
    mask = np.zeros(len(t_ns), dtype=bool)
    for a, b in windows:
        i, j = np.searchsorted(t_ns, [a, b])
        mask[i:j] = True
    return mask


def detail_indices(t_ns: np.ndarray, y: np.ndarray, budget: int, focus: Focus) -> tuple[np.ndarray, str]:
    """Indices of the detail level within `budget` samples, and its resolution in words."""
    n = len(t_ns)
    if n <= budget:
        return np.arange(n), "every sample"
    keep = np.zeros(n, dtype=bool)
    kept_windows = 0
    for a, b in focus.windows:  # raw inside focus windows while half the budget lasts
        i, j = np.searchsorted(t_ns, [a, b])
        if keep.sum() + (j - i) > budget // 2:
            break
        keep[i:j] = True
        kept_windows += 1
    rest = budget - int(keep.sum())
    buckets = max(1, rest // 4)
    keep[m4_indices(t_ns, y, buckets)] = True  # the union of the windows' samples and M4's
    idx = np.flatnonzero(keep)
    span_ms = (int(t_ns[-1]) - int(t_ns[0])) / 1e6
    return idx, f"every sample in {kept_windows} focus window(s), elsewhere M4 over {span_ms / buckets:.3g} ms buckets"


def encode_times(t_ns: np.ndarray, origin_ns: int) -> list[int]:
    """Integer microseconds since `origin_ns`, delta-encoded (first value absolute)."""
    us = (np.asarray(t_ns, dtype=np.int64) - origin_ns) // 1000
    return np.diff(us, prepend=0).tolist()


def encode_values(y: np.ndarray, decimals: int) -> list:
    """Values rounded for the page (`decimals` <= 0: integers); NaN as null."""
    y = np.asarray(y, dtype=float)
    r = np.round(y) if decimals <= 0 else np.round(y, decimals)
    nan = np.isnan(r)
    if decimals <= 0:
        # int() of each float, as numpy's conversion where it is exact (below 2**53).
        finite = np.where(nan, 0, r)
        exact = not len(r) or float(np.abs(finite).max()) < 2**53
        out = finite.astype(np.int64).tolist() if exact else [None if v != v else int(v) for v in r.tolist()]
    else:
        out = r.tolist()
    for i in np.flatnonzero(nan).tolist():
        out[i] = None
    return out


def changes(y: np.ndarray) -> np.ndarray:
    """Mask of the samples a step chart needs: the first, each change of value, and the last
    (a step holds its value until the next sample, so repeats draw nothing new)."""
    keep = np.ones(len(y), dtype=bool)
    if len(y) > 2:
        keep[1:-1] = y[1:-1] != y[:-2]
    return keep


def series(t_ns: np.ndarray, y: np.ndarray, origin_ns: int, decimals: int, share: Share, focus: Focus,
           blobs: dict[str, dict], step: bool = False) -> dict:
    """One series for the page: its overview inline and, when the overview drops samples, its
    detail level as a separate blob (parsed only when a panel is zoomed), each within the
    series' `share` of the page. A `step` series first loses its repeated values (losslessly), so
    the budget goes further."""
    t_ns = np.asarray(t_ns, dtype=np.int64)
    y = np.asarray(y, dtype=float)
    ok = ~np.isnan(y)
    t_ns, y = t_ns[ok], y[ok]
    if step and len(y):
        keep = changes(np.round(y, decimals) if decimals > 0 else np.round(y))
        t_ns, y = t_ns[keep], y[keep]
    ov = m4_indices(t_ns, y, share.overview_buckets)
    out = {"ov": RawJSON({"t": encode_times(t_ns[ov], origin_ns), "y": encode_values(y[ov], decimals)}), "detail": None,
           "res": "every sample", "n": int(len(t_ns))}
    if len(ov) < len(t_ns):
        idx, res = detail_indices(t_ns, y, share.detail_points, focus)
        key = f"d{len(blobs)}"
        blobs[key] = {"t": encode_times(t_ns[idx], origin_ns), "y": encode_values(y[idx], decimals)}
        out.update(detail=key, res=res)
    return out
