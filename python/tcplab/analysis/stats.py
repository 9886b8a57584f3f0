"""Sample statistics as FreeBSD's ministat(1) reports them: N, min, max, median, mean, stddev,
and a difference against a base sample by Student's t with the pooled standard deviation
(usr.bin/ministat/ministat.c, Relative()); confidence intervals of a mean by the same t.

Student's t quantiles are computed (regularized incomplete beta, inverted by bisection) rather
than read from ministat's table, which rounds them to three decimals.
"""

from __future__ import annotations

import math
import re
import sys
from dataclasses import dataclass
from statistics import NormalDist

from ..spec import numbers


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with `df` degrees of freedom."""
    x = df / (df + t * t)
    tail = 0.5 * _betainc(df / 2.0, 0.5, x)
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The t with P(T <= t) = p (0.5 < p < 1), by bisection to 1e-12."""
    if not 0.5 < p < 1.0 or df <= 0:
        raise ValueError("t_quantile needs 0.5 < p < 1 and df > 0")
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12:
            break
    return (lo + hi) / 2.0


@dataclass
class Sample:
    n: int
    min: float
    max: float
    median: float
    mean: float
    stddev: float  # sample standard deviation (n - 1), as ministat; 0 for n = 1
    points: tuple[float, ...] = ()  # sorted, for ministat's plot


def describe(xs: list[float]) -> Sample:
    """ministat's Vitals(): the median is the upper middle value (points[n / 2] of the sorted
    sample, not the mean of the two middle ones), and the variance comes from the running sums
    in input order, (syy - sy^2 / n) / (n - 1), so the printed digits match ministat's."""
    if not xs:
        raise ValueError("an empty sample")
    sy = syy = 0.0
    for x in xs:
        x = float(x)
        sy += x
        syy += x * x
    v = sorted(float(x) for x in xs)
    n = len(v)
    var = (syy - sy * sy / n) / (n - 1.0) if n > 1 else 0.0
    return Sample(n, v[0], v[-1], v[n // 2], sy / n, math.sqrt(max(var, 0.0)), tuple(v))


def ci_half_width(s: Sample, confidence: float = 0.95) -> float | None:
    """Half-width of the two-sided confidence interval of the mean (t with n - 1 df)."""
    if s.n < 2:
        return None
    return t_quantile(1.0 - (1.0 - confidence) / 2.0, s.n - 1) * s.stddev / math.sqrt(s.n)


@dataclass
class Difference:
    """Sample vs base, as ministat's "Difference at C% confidence" block."""

    diff: float  # mean - base mean
    error: float  # +/- at the confidence level
    pct: float | None  # diff as % of the base mean
    pct_error: float | None  # error as % of the base mean (ministat derives its % error differently)
    pooled_s: float
    significant: bool


def difference(base: Sample, other: Sample, confidence: float = 0.95) -> Difference | None:
    """Student's t with pooled s, with ministat's t (ministat.c Relative(), ministat_t below);
    None when either sample has n < 2."""
    if base.n < 2 or other.n < 2:
        return None
    df = base.n + other.n - 2
    spool = math.sqrt(((base.n - 1) * base.stddev ** 2 + (other.n - 1) * other.stddev ** 2) / df)
    err = ministat_t(confidence * 100.0, df) * spool * math.sqrt(1.0 / base.n + 1.0 / other.n)
    diff = other.mean - base.mean
    pct = diff * 100.0 / base.mean if base.mean else None
    pct_err = err * 100.0 / base.mean if base.mean else None
    return Difference(diff, err, pct, pct_err, spool, abs(diff) > err)


# ---------------------------------------------------------------------------------------------
# ministat(1) itself: its confidence levels, its t, its input rules.

#: The confidence levels ministat accepts (`-c`), in percent.
MINISTAT_CONFIDENCE = (80.0, 90.0, 95.0, 98.0, 99.0, 99.5)
#: ministat's table of t holds degrees of freedom 1..100; above that it uses the infinite row.
MINISTAT_MAX_DF = 100


#: Where ministat's table is not the rounded quantile: its "99.5%" row values for 7..12 degrees
#: of freedom sit 0.001-0.003 below t(0.999). Measured from Debian's ministat binary (the test
#: test_t_equals_ministat_table_for_every_df_it_can_reach backs t out of its printed error).
MINISTAT_T_ERRATA = {(99.5, 7): 4.782, (99.5, 8): 4.499, (99.5, 9): 4.296, (99.5, 10): 4.143, (99.5, 11): 4.024,
                     (99.5, 12): 3.929}


def ministat_t(confidence_pct: float, df: int) -> float:
    """Student's t as ministat uses it: two-sided, from a table of three-decimal values for 1..100
    degrees of freedom and the normal limit beyond (ministat.c, Relative()). Computed here and
    rounded the same way; a test checks the result against Debian's ministat binary for every
    degree of freedom two samples can give and every level."""
    if (confidence_pct, df) in MINISTAT_T_ERRATA:
        return MINISTAT_T_ERRATA[(confidence_pct, df)]
    p = 1.0 - (1.0 - confidence_pct / 100.0) / 2.0
    if confidence_pct == 99.5:
        # ministat's "99.5%" column holds the two-sided 99.8% values (t at p = 0.999: 7.173 for
        # 4 degrees of freedom, 3.090 for infinity), found by comparing with the binary; kept so
        # that `tcplab stats` prints what ministat prints.
        p = 0.999
    if df > MINISTAT_MAX_DF:
        return round(NormalDist().inv_cdf(p), 3)
    return round(t_quantile(p, df), 3)


class SampleFileError(Exception):
    """A sample file that cannot be read: names the file and, for bad data, the line."""


def read_sample(path: str, column: int = 1, delimiters: str = " \t") -> list[float]:
    """Values of one column of a text file, as ministat reads them: fields split on any of
    `delimiters`, a field starting with '#' ends the line, lines without the column are skipped,
    anything else that is not a number is an error naming the line. '-' reads stdin."""
    name = "<stdin>" if path == "-" else path
    split = re.compile("[" + re.escape(delimiters) + "]+")
    values = []
    try:
        fh = sys.stdin if path == "-" else open(path, encoding="utf-8", errors="replace")
    except OSError as e:
        raise SampleFileError(f"{name}: cannot open: {e.strerror}") from None
    with fh:
        for line_no, line in enumerate(fh, 1):
            fields = [f for f in split.split(line.rstrip("\n")) if f]
            picked = None
            for i, f in enumerate(fields, 1):
                if f.startswith("#"):
                    break
                if i == column:
                    picked = f
                    break
            if picked is None:
                continue
            try:  # the one reader of numbers: nan, infinities (1e400) and absurd lengths refused
                values.append(numbers.finite(picked, f"{name}:{line_no}"))
            except numbers.NumberError as e:
                raise SampleFileError(str(e)) from None
    if len(values) < 3:
        raise SampleFileError(f"{name}: a sample needs at least 3 data points, found {len(values)}")
    return values
