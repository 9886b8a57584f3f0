"""`tcplab compare SIM IMPORTED`: a run exported as logs and imported again names its flows by
address, so compare pairs them (analysis/flowmap.py): by --map, by server port, by order."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import SMALL_SPEC, tcplab
from tcplab.analysis.flowmap import FlowMapError, match, parse

SHORT = SMALL_SPEC.replace('time = "3s"', 'time = "1s"').replace('start = "500ms"', 'start = "200ms"')


def _flow(name: str, start: float = 0.0, **kw) -> dict:
    return {"flow": name, "start_s": start, **kw}


def _info(*flows: dict) -> dict:
    return {"flows": list(flows)}


SIM = _info(_flow("s1", 0.0), _flow("s2", 0.5))
IMP = _info(_flow("10.1.0.2:40002->10.2.0.1:5202", 0.5, **{"from": "10.1.0.2:40002", "to": "10.2.0.1:5202"}),
            _flow("10.1.0.1:40001->10.2.0.1:5201", 0.0, **{"from": "10.1.0.1:40001", "to": "10.2.0.1:5201"}))


def test_imported_flows_pair_by_server_port_in_either_direction():
    assert match(SIM, IMP) == ({"s1": "10.1.0.1:40001->10.2.0.1:5201", "s2": "10.1.0.2:40002->10.2.0.1:5202"}, "port")
    assert match(IMP, SIM) == ({"10.1.0.2:40002->10.2.0.1:5202": "s2", "10.1.0.1:40001->10.2.0.1:5201": "s1"}, "port")


def test_without_the_port_convention_flows_pair_by_start_order_when_unambiguous():
    other = _info(_flow("10.0.0.9:1->10.0.0.8:80", 0.5), _flow("10.0.0.9:2->10.0.0.8:81", 0.0))
    assert match(SIM, other) == ({"s1": "10.0.0.9:2->10.0.0.8:81", "s2": "10.0.0.9:1->10.0.0.8:80"}, "order")
    same_start = _info(_flow("10.0.0.9:1->10.0.0.8:80", 0.0), _flow("10.0.0.9:2->10.0.0.8:81", 0.0))
    assert match(SIM, same_start) == ({}, "")
    assert match(SIM, _info(_flow("10.0.0.9:1->10.0.0.8:80"))) == ({}, "")  # 2 flows vs 1: no guess


def test_two_spec_named_runs_are_never_paired_by_guess():
    assert match(SIM, _info(_flow("h1", 0.0), _flow("h2", 0.5))) == ({}, "")


def test_explicit_pairs_by_name_or_endpoint():
    assert match(SIM, IMP, parse(["s2=10.1.0.1:40001"]))[0]["s2"] == "10.1.0.1:40001->10.2.0.1:5201"
    assert match(SIM, IMP, parse({"s1": "10.2.0.1:5202"}))[0]["s1"] == "10.1.0.2:40002->10.2.0.1:5202"
    with pytest.raises(FlowMapError, match="'s9' is not a flow of the first run; its flows: s1, s2"):
        match(SIM, IMP, parse(["s9=10.2.0.1:5201"]))
    shared = _info(_flow("a:1->10.2.0.1:5201"), _flow("b:2->10.2.0.1:5201"))
    with pytest.raises(FlowMapError, match="is an endpoint of 2 flows"):
        match(SIM, shared, parse(["s1=10.2.0.1:5201"]))
    with pytest.raises(FlowMapError, match="--map takes FLOW=FLOW_OR_ENDPOINT"):
        parse(["s1"])


@pytest.fixture(scope="module")
def sim_and_imported(tmp_path_factory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("roundtrip")
    (d / "s.toml").write_text(SHORT)
    tcplab("run", str(d / "s.toml"), "--out", str(d / "sim"), "--no-report", check=True)
    tcplab("export", str(d / "sim"), "--to", "iperf3-json", "--to", "tcp_probe", "--out", str(d / "logs"), check=True)
    logs = sorted(str(p) for p in (d / "logs").iterdir() if p.suffix in (".json", ".txt"))
    tcplab("import", *logs, "--out", str(d / "imp"), "--no-report", check=True)
    return d / "sim", d / "imp"


def test_compare_sim_with_its_exported_and_imported_logs(sim_and_imported, tmp_path):
    sim, imp = sim_and_imported
    proc = tcplab("compare", str(sim), str(imp), "--out", str(tmp_path / "cmp"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "flows paired by port" in proc.stdout
    assert "s1 = 10.1.0.1:40001->10.2.0.1:5201" in proc.stdout and "s2 = 10.1.0.2:40002->10.2.0.1:5202" in proc.stdout
    rows = json.loads((tmp_path / "cmp" / "compare.json").read_text())["rows"]
    assert [(r["flow"], r["b_flow"], r["matched_by"]) for r in rows] == [
        ("s1", "10.1.0.1:40001->10.2.0.1:5201", "port"), ("s2", "10.1.0.2:40002->10.2.0.1:5202", "port")]
    assert all(r["cwnd_relative_diff"] is not None for r in rows)  # the samples were paired too
    assert sorted(p.name for p in (tmp_path / "cmp").glob("cwnd_*.png")) == ["cwnd_s1.png", "cwnd_s2.png"]


def test_compare_with_an_explicit_map_and_a_map_that_names_nothing(sim_and_imported, tmp_path):
    sim, imp = sim_and_imported
    proc = tcplab("compare", str(sim), str(imp), "--map", "s1=10.2.0.1:5202", "--map", "s2=10.2.0.1:5201", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "s1 = 10.1.0.2:40002->10.2.0.1:5202" in proc.stdout and "flows paired by map" in proc.stdout
    proc = tcplab("compare", str(sim), str(imp), "--map", "s1=10.9.9.9:1", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "'10.9.9.9:1' is neither the name nor an endpoint of a flow of the other run" in proc.stderr
