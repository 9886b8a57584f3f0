"""Sample statistics as FreeBSD's ministat(1) reports them: N, min, max, median, mean, stddev,
and a difference against a base sample by Student's t with the pooled standard deviation
(usr.bin/ministat/ministat.c, Relative()); confidence intervals of a mean by the same t.

Student's t quantiles are computed (regularized incomplete beta, inverted by bisection) rather
than read from ministat's table, which rounds them to three decimals.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


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


def describe(xs: list[float]) -> Sample:
    if not xs:
        raise ValueError("an empty sample")
    v = sorted(float(x) for x in xs)
    n = len(v)
    mean = sum(v) / n
    median = v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2.0
    var = sum((x - mean) ** 2 for x in v) / (n - 1) if n > 1 else 0.0
    return Sample(n, v[0], v[-1], median, mean, math.sqrt(var))


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
    """Student's t with pooled s (ministat.c Relative()); None when either sample has n < 2."""
    if base.n < 2 or other.n < 2:
        return None
    df = base.n + other.n - 2
    spool = math.sqrt(((base.n - 1) * base.stddev ** 2 + (other.n - 1) * other.stddev ** 2) / df)
    err = t_quantile(1.0 - (1.0 - confidence) / 2.0, df) * spool * math.sqrt(1.0 / base.n + 1.0 / other.n)
    diff = other.mean - base.mean
    pct = diff * 100.0 / base.mean if base.mean else None
    pct_err = err * 100.0 / base.mean if base.mean else None
    return Difference(diff, err, pct, pct_err, spool, abs(diff) > err)
