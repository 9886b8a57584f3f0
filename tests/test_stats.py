"""ministat-style statistics: Student's t quantiles against printed tables, sample description and
the pooled-s difference against an independent calculation with numpy."""

import math

import numpy as np
import pytest

from tcplab.analysis.stats import ci_half_width, describe, difference, t_cdf, t_quantile

# Two-sided critical values from a printed Student's t table (e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2).
TABLE = [(0.975, 1, 12.706), (0.975, 2, 4.303), (0.975, 5, 2.571), (0.975, 10, 2.228), (0.975, 30, 2.042),
         (0.975, 100, 1.984), (0.95, 4, 2.132), (0.995, 5, 4.032), (0.995, 20, 2.845), (0.9, 2, 1.886),
         (0.9995, 10, 4.587)]


@pytest.mark.parametrize("p,df,expected", TABLE)
def test_t_quantiles_match_the_printed_table(p, df, expected):
    assert round(t_quantile(p, df), 3) == expected
    assert abs(t_cdf(t_quantile(p, df), df) - p) < 1e-9


def test_t_approaches_the_normal_for_large_df():
    assert abs(t_quantile(0.975, 1e7) - 1.959964) < 1e-5


def test_describe_and_difference_equal_an_independent_calculation():
    rng = np.random.default_rng(7)
    for n1, n2, conf in [(5, 5, 0.95), (20, 7, 0.99), (3, 12, 0.90)]:
        a, b = rng.normal(100, 10, n1), rng.normal(110, 15, n2)
        sa, sb = describe(list(a)), describe(list(b))
        assert sa.n == n1 and math.isclose(sa.mean, a.mean()) and math.isclose(sa.stddev, a.std(ddof=1))
        assert math.isclose(sa.median, float(np.median(a)))
        assert sa.min == a.min() and sa.max == a.max()
        d = difference(sa, sb, conf)
        spool = math.sqrt(((n1 - 1) * a.var(ddof=1) + (n2 - 1) * b.var(ddof=1)) / (n1 + n2 - 2))
        err = t_quantile(1 - (1 - conf) / 2, n1 + n2 - 2) * spool * math.sqrt(1 / n1 + 1 / n2)
        assert math.isclose(d.pooled_s, spool) and math.isclose(d.error, err)
        assert math.isclose(d.diff, b.mean() - a.mean()) and d.significant == (abs(b.mean() - a.mean()) > err)
        half = ci_half_width(sa, conf)
        assert math.isclose(half, t_quantile(1 - (1 - conf) / 2, n1 - 1) * a.std(ddof=1) / math.sqrt(n1))


def test_identical_samples_prove_no_difference_and_single_values_allow_no_test():
    s = describe([1.0, 2.0, 3.0])
    assert difference(s, s).significant is False
    assert difference(describe([1.0]), s) is None and ci_half_width(describe([4.0])) is None
    with pytest.raises(ValueError):
        describe([])
