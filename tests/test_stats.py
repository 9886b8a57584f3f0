"""ministat-style statistics: Student's t quantiles against printed tables, sample description and
the pooled-s difference against an independent calculation with numpy."""

import math

import numpy as np
import pytest

from tcplab.analysis.stats import ci_half_width, describe, difference, ministat_t, t_cdf, t_quantile

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
        assert sa.median == sorted(a)[n1 // 2]  # ministat's median: the upper middle value
        assert sa.min == a.min() and sa.max == a.max()
        d = difference(sa, sb, conf)
        spool = math.sqrt(((n1 - 1) * a.var(ddof=1) + (n2 - 1) * b.var(ddof=1)) / (n1 + n2 - 2))
        err = ministat_t(conf * 100, n1 + n2 - 2) * spool * math.sqrt(1 / n1 + 1 / n2)
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


# ---------------------------------------------------------------------------------------------
# `tcplab stats` against Debian's ministat binary (installed by scripts/install --test).

import random  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402

from conftest import tcplab  # noqa: E402
from tcplab.report.ministat import render  # noqa: E402

MINISTAT = shutil.which("ministat") or "/usr/bin/ministat"


def _write(tmp_path, name, values):
    p = tmp_path / name
    p.write_text("".join(f"{v!r}\n" for v in values))
    return p


def _ministat(*args):
    proc = subprocess.run([MINISTAT, *map(str, args)], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_render_equals_ministat_on_random_samples(tmp_path):
    rng = random.Random(11)
    cases = 0
    for sizes in [(3, 3), (5, 8), (20, 20), (3, 40, 7), (60, 70), (4, 4, 4, 4, 4, 4, 4)]:
        for conf in (80, 90, 95, 98, 99, 99.5):
            for flags in ([], ["-s"], ["-n"], ["-w", "50"]):
                samples = []
                for k, n in enumerate(sizes):
                    mu = 100 + rng.choice([0, 1, 5, 30]) * k
                    # Rounded values: repeated points stack in the plot, as timing data does.
                    samples.append([round(rng.gauss(mu, 10), rng.choice([0, 1, 3])) for _ in range(n)])
                files = [_write(tmp_path, f"s{k}.txt", v) for k, v in enumerate(samples)]
                width = int(flags[1]) if flags[:1] == ["-w"] else 74
                mine = render(samples, [str(f) for f in files], confidence_pct=conf, width=width,
                              separate="-s" in flags, summary_only="-n" in flags)
                assert mine == _ministat("-c", conf, *flags, *files), (sizes, conf, flags)
                cases += 1
    assert cases == 144


def test_t_equals_ministat_table_for_every_df_it_can_reach(tmp_path):
    """ministat prints e = t * s; with samples whose difference is always significant, every
    degree of freedom from 4 (two samples of 3) to 110 and every confidence level shows its t."""
    for df in range(4, 111):
        n1 = 3
        n2 = df + 2 - n1
        a = _write(tmp_path, "a.txt", [1.0, 2.0, 4.0])
        b = _write(tmp_path, "b.txt", [1000.0 + (i % 7) for i in range(n2)])
        for conf in (80, 90, 95, 98, 99, 99.5):
            mine = render([[1.0, 2.0, 4.0], [1000.0 + (i % 7) for i in range(n2)]], [str(a), str(b)],
                          confidence_pct=conf, summary_only=False)
            assert mine == _ministat("-c", conf, a, b), (df, conf)


def test_stats_command_prints_what_ministat_prints_and_names_bad_lines(tmp_path):
    a = _write(tmp_path, "a.txt", [10.5, 11.0, 9.75, 10.25, 10.0])
    b = tmp_path / "b.txt"
    b.write_text("# iperf3 seconds\n12.5 x\n13.0 y\n\n12.75 z # comment\n13.25\n")
    proc = tcplab("stats", str(a), str(b), "-c", "99", cwd=tmp_path, check=True)
    assert proc.stdout == _ministat("-c", "99", a, b)
    proc = tcplab("stats", "-C", "2", "-d", ",", str(_write(tmp_path, "c.txt", [])), cwd=tmp_path)
    assert proc.returncode == 2 and "needs at least 3 data points, found 0" in proc.stderr
    bad = tmp_path / "bad.txt"
    bad.write_text("1\n2\nthree\n4\n")
    proc = tcplab("stats", str(bad), cwd=tmp_path)
    assert proc.returncode == 2 and f"{bad}:3: 'three' is not a number" in proc.stderr
    proc = tcplab("stats", str(a), "-c", "97", cwd=tmp_path)
    assert proc.returncode == 2 and "allowed: 80, 90, 95, 98, 99, 99.5" in proc.stderr


def test_run_iterations_prints_the_seeds_ministat_tables(tmp_path):
    """T6's question on a small path: IW10 against IW3 for a 65 KB transfer, over 3 seeds; the
    block equals ministat's on the completion times the runs recorded."""
    import json

    spec = tmp_path / "iw.toml"
    spec.write_text("""
name = "iw"
[topology]
kind = "pipe"
[topology.bottleneck]
rate = "100Mbit"
delay = "10ms"
buffer = "100p"
[senders.iw3]
host = "s1"
to = "r1"
initcwnd = 3
bytes = "65K"
[senders.iw10]
host = "s1"
to = "r1"
initcwnd = 10
bytes = "65K"
start = "1s"
""")
    proc = tcplab("run", str(spec), "--iterations", "3", "--out", "r", cwd=tmp_path, check=True)
    assert "report:  r/iterations.html" in proc.stdout
    block = (tmp_path / "r" / "stats.txt").read_text()
    assert block.startswith("completion time (s) of 66560-byte transfers, 3 iterations:\n") and block in proc.stdout
    times = {name: [json.loads((tmp_path / "r" / f"iter-00{i}" / "summary.json").read_text())["flows"][k]["completion_s"]
                    for i in (1, 2, 3)] for k, name in enumerate(["iw3", "iw10"])}
    for name, vs in times.items():
        (tmp_path / name).write_text("".join(f"{v!r}\n" for v in vs))
    theirs = subprocess.run([MINISTAT, "iw3", "iw10"], cwd=tmp_path, capture_output=True, text=True).stdout
    assert block.split("\n", 1)[1] == theirs
    assert "Difference at 95.0% confidence" in theirs  # IW10 saves round trips: always faster
    # iterations.html: mean +- CI per flow (checked against the runs' numbers), the block, links.
    from tcplab.analysis.stats import ci_half_width, describe
    from tcplab.report.html import _show

    page = (tmp_path / "r" / "iterations.html").read_text()
    d = describe(times["iw10"])
    assert f"{_show(d.mean)} ± {_show(ci_half_width(d))}" in page
    assert "completion time (s) of 66560-byte transfers" in page and page.count('href="iter-00') == 3
    for i in (1, 2, 3):
        assert (tmp_path / "r" / f"iter-00{i}" / "report.html").is_file()


def test_the_python_api_prints_what_ministat_prints(tmp_path):
    import tcplab

    a, b = [1.0, 2.0, 3.0, 4.0, 5.0], [3.0, 4.0, 5.0, 6.0, 7.5]
    fa, fb = _write(tmp_path, "a.txt", a), _write(tmp_path, "b.txt", b)
    assert tcplab.ministat(a, b, names=[str(fa), str(fb)], confidence=90) == _ministat("-c", 90, fa, fb)
