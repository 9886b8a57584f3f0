"""The FreeBSD model targets (`freebsd`, `freebsd-rack`, and `freebsd@VERSION`): the expectation
scripts in tests/drill/freebsd (the rules the models follow from source) parse, cite their source,
pass on the target of the FreeBSD version they follow and fail where that rule is absent; the
upstream FreeBSD suites in ../shared/packetdrill (freebsd-tcp-testsuite, nplab-bsd: read there,
never copied) give the verdicts of tests/drill/table_freebsd.tsv and the counts docs/drill.md lists. Tests that read ../shared skip, with a one-line
reason, only where that folder is absent (a clone outside this workspace)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tcplab.drill import nic_freebsd, parse_file
from tcplab.drill.model_targets import run_script
from tcplab.drill.runner import RunnerError, check_targets

ROOT = Path(__file__).resolve().parent.parent
FOLDER = ROOT / "tests" / "drill" / "freebsd"
SCRIPTS = sorted(FOLDER.glob("*.pkt"))
SHARED = ROOT.parent.parent / "shared" / "packetdrill"
if not SHARED.is_dir():
    SHARED = ROOT.parent / "shared" / "packetdrill"
#: Each expectation script's target (the FreeBSD source it follows); it passes there.
EXPECTED = {
    "entry-cwnd-before-d43470.pkt": "freebsd@15.0-2024-10",
    "entry-cwnd-after-d43470.pkt": "freebsd@15.0-2025",
    "prr-sndcnt.pkt": "freebsd@15.0-2024-10",
    "rescue-retransmission.pkt": "freebsd@15.0-2024-10",
    "lrd.pkt": "freebsd@15.0-2024-10",
    "sndbuf-roundup-tail.pkt": "freebsd",
    "rack-prr-app-limited.pkt": "freebsd-rack",
    "rack-rto-keeps-cwnd.pkt": "freebsd-rack@15.0-2025",
    "rack-pacing-slot.pkt": "freebsd-rack@15.0-2025",
    "rack-tlp.pkt": "freebsd-rack@15.0-2025",
    "tso-fragment-cut-bce.pkt": "freebsd",
    "rack-compressed-acks-lro.pkt": "freebsd-rack@15.0-2025",
    "rack-autosndbuf-20pct.pkt": "freebsd-rack@15.0-2025",
    "prr-cwnd-after-d43470.pkt": "freebsd@15.0-2025",
}
#: The interface (--nic) a script needs: the NIC the rule depends on.
NIC = {"tso-fragment-cut-bce.pkt": ["driver=bce"], "rack-compressed-acks-lro.pkt": ["lro=true"]}
#: Where the rule a script checks is absent (an older source, or its sysctl off) the script fails:
#: each of these tests fails if the rule is reverted in the model.
WITHOUT_THE_RULE = {
    "entry-cwnd-before-d43470.pkt": "freebsd@15.0-2025",
    "entry-cwnd-after-d43470.pkt": "freebsd@15.0-2024-10",
    "rescue-retransmission.pkt": "freebsd",  # "2023": the rescue only while snd_recover == snd_max
    "lrd.pkt": "freebsd",  # "2023": net.inet.tcp.do_lrd = 0
    "rack-rto-keeps-cwnd.pkt": "freebsd-rack",  # 2023 rack.c: cwnd 1 MSS after an RTO
    "rack-autosndbuf-20pct.pkt": "freebsd-rack",  # 2023 rack.c: sendbuf_inc steps
    "prr-cwnd-after-d43470.pkt": "freebsd",  # "2023": the review's reading, pipe after the ACK + sndcnt
}
#: Where the NIC the rule needs is absent (its EXPECTED target, another --nic) the script fails.
WITHOUT_THE_NIC = {
    "tso-fragment-cut-bce.pkt": ["tso=true"],  # TSO without bce's fragment limits: 65160 at once
    "rack-compressed-acks-lro.pkt": [],  # no LRO: each ACK processed on arrival
}


def _run(name: str, target: str, nic: list[str] | None = None):
    path = FOLDER / name
    opts = NIC.get(name, []) if nic is None else nic
    return run_script(str(path), parse_file(path), target, nic_freebsd.parse(opts) if opts else None)


def test_there_are_scripts_and_each_parses_with_a_cited_commit():
    assert SCRIPTS
    for path in SCRIPTS:
        script = parse_file(path)
        assert script.events, path
        assert not script.unsupported, (path, script.unsupported)
        text = path.read_text()
        # Each names the file and the 40-digit commit its expectation comes from.
        assert "sys/netinet/" in text and any(len(w.strip(",:")) == 40 for w in text.split()), path


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_script_passes_on_its_target(name):
    r = _run(name, EXPECTED[name])
    assert r.result == "pass", r


@pytest.mark.parametrize("name", sorted(WITHOUT_THE_NIC))
def test_each_nic_script_fails_without_its_nic(name):
    r = _run(name, EXPECTED[name], WITHOUT_THE_NIC[name])
    assert r.result == "fail", r


def test_a_scripts_ifconfig_sets_the_interface_as_nic_does(tmp_path):
    # `ifconfig IF lro` in a backtick line is --nic lro=true; `-lro` after it turns it off again.
    text = (FOLDER / "rack-compressed-acks-lro.pkt").read_text()
    for line, want in (("ifconfig tun0 lro; ", "pass"), ("ifconfig tun0 lro -lro; ", "fail")):
        path = tmp_path / "s.pkt"
        path.write_text(text.replace("`sysctl ", "`" + line + "sysctl "))
        r = run_script(str(path), parse_file(path), "freebsd-rack@15.0-2025")
        assert r.result == want, r


def test_the_cli_takes_nic_options_and_refuses_bad_ones():
    path = FOLDER / "tso-fragment-cut-bce.pkt"
    cmd = [sys.executable, "-m", "tcplab.cli", "drill", str(path), "-t", "freebsd"]
    assert subprocess.run(cmd + ["--nic", "driver=bce"], capture_output=True, cwd=ROOT).returncode == 0
    for bad, why in ((["--nic", "driver=xl"], "driver"), (["--nic", "tso_max_segcount=35"], "tso_max_segsize"),
                     (["--nic", "speed=1"], "KEY one of"), (["--nic", "lro=true", "-t", "linux"], "not for target")):
        r = subprocess.run(cmd + bad, capture_output=True, text=True, cwd=ROOT)
        assert r.returncode == 2 and why in r.stderr and len(r.stderr.strip().splitlines()) == 1, (bad, r.stderr)


@pytest.mark.parametrize("name", sorted(WITHOUT_THE_RULE))
def test_each_script_fails_where_its_rule_is_absent(name):
    r = _run(name, WITHOUT_THE_RULE[name])
    assert r.result == "fail", r


def test_a_version_target_is_checked():
    assert check_targets(["freebsd@15.0-2025", "freebsd-rack@2023"]) == ["freebsd@15.0-2025", "freebsd-rack@2023"]
    for bad, why in (("freebsd@14.1", "versions are"), ("linux@6.18", "freebsd and freebsd-rack"),
                     ("freebsd-rack@15.0-2024-10", "versions are")):
        with pytest.raises(RunnerError, match=why):
            check_targets([bad])


def test_the_cli_runs_a_script_on_both_freebsd_targets(tmp_path):
    path = FOLDER / "rack-prr-app-limited.pkt"
    out = tmp_path / "r.json"
    r = subprocess.run([sys.executable, "-m", "tcplab.cli", "drill", str(path), "--target", "freebsd",
                        "--target", "freebsd-rack", "--json", str(out)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, (r.stdout, r.stderr)
    res = json.loads(out.read_text())
    # The script asks for the RACK stack: the default stack's target says which target to use.
    assert [(x["target"], x["result"]) for x in res] == [("freebsd", "unsupported"), ("freebsd-rack", "pass")]
    assert "--target freebsd-rack" in res[0]["reason"]


#: The FreeBSD drill table: one row per script of both suites, a column per target
#: (tests/drill/table_freebsd.tsv says how to read it).
TABLE = ROOT / "tests" / "drill" / "table_freebsd.tsv"
TARGETS = ("freebsd", "freebsd-rack", "rfc")


@pytest.fixture(scope="module")
def suite_verdicts() -> dict[str, dict[str, str]]:
    """Both upstream FreeBSD suites on the three model targets, once (about 3 s), shared by the
    table and the counts below: {script relative to ../shared/packetdrill: {target: cell}}."""
    from tcplab.drill.runner import run

    results, bad = run([str(SHARED / "freebsd-tcp-testsuite"), str(SHARED / "nplab-bsd")], list(TARGETS))
    assert not bad
    got: dict[str, dict[str, str]] = {}
    for r in results:
        cell = r.result if r.line is None else f"{r.result}@{r.line}"
        got.setdefault(str(Path(r.script).relative_to(SHARED)), {})[r.target] = cell
    return got


def _expected_table() -> dict[str, dict[str, str]]:
    lines = [ln for ln in TABLE.read_text().splitlines() if ln and not ln.startswith("#")]
    head = lines[0].split("\t")
    return {cells[0]: dict(zip(head[1:], cells[1:])) for cells in (ln.split("\t") for ln in lines[1:])}


@pytest.mark.skipif(not SHARED.is_dir(), reason="reads ../shared/packetdrill, absent outside this workspace")
def test_the_freebsd_drill_table(suite_verdicts):
    """Every script's verdict (result@line) on each FreeBSD model target is the table's."""
    want = _expected_table()
    assert sorted(suite_verdicts) == sorted(want)
    wrong = {s: (want[s], suite_verdicts[s]) for s in want if suite_verdicts[s] != want[s]}
    assert not wrong, wrong


@pytest.mark.skipif(not SHARED.is_dir(), reason="reads ../shared/packetdrill, absent outside this workspace")
@pytest.mark.parametrize("target,counts", [("freebsd", (205, 1, 0)), ("freebsd-rack", (203, 3, 0)),
                                           ("rfc", (173, 2, 31))])
def test_the_upstream_freebsd_suites_give_the_documented_counts(suite_verdicts, target, counts):
    c = Counter(v[target].split("@")[0] for v in suite_verdicts.values())
    assert (c["pass"], c["fail"], c["unsupported"]) == counts


def test_each_tso_pass_is_one_outbound_packet(tmp_path):
    # With packetdrill's joining of consecutive segments off (strict_segments), the bce script's
    # two passes must each arrive as one packet: the cut pass of 51 000 bytes, then 40 544.
    text = (FOLDER / "tso-fragment-cut-bce.pkt").read_text()
    path = tmp_path / "s.pkt"
    path.write_text(text.replace("--tolerance_usecs=5000\n", "--tolerance_usecs=5000\n--strict_segments\n"))
    nic = nic_freebsd.parse(["driver=bce"])
    assert run_script(str(path), parse_file(path), "freebsd", nic).result == "pass"
    # Without TSO (tun's default) the same bytes leave as single segments: the first is 1448.
    r = run_script(str(path), parse_file(path), "freebsd")
    assert r.result == "fail" and "51000" in r.reason, r
