"""The readings `python -m tcplab.drill.explain` gives a recording the linux model disagrees with."""

from pathlib import Path

from tcplab.drill.explain import handshake_variant, kernel_unstable, late_timer, same_divergence
from tcplab.drill.model_targets import run_script as run_model
from tcplab.drill.parse import parse_file
from tcplab.drill.result import Result

REPO = Path(__file__).resolve().parent.parent
EDGE = REPO / "tests" / "drill" / "edges" / "handshake-rtt-edge.pkt"


def fail(line: int, reason: str, target: str = "linux") -> Result:
    return Result("x.pkt", target, "fail", line, reason)


def timing(expected: float, happened: float) -> str:
    return (f"timing error: expected outbound packet at {expected:.6f} sec but happened at {happened:.6f} sec; "
            "tolerance 0.004000 sec")


def test_the_handshake_variant_moves_only_the_syn_to_the_syn_acks_recorded_time():
    text = "0.000000 listen(3, 1) = 0\n0.000062 < S 0:0(0) win 65535 <mss 1000>\n0.000112 > S. 0:0(0) ack 1\n"
    assert handshake_variant(text).splitlines() == [
        "0.000000 listen(3, 1) = 0", "0.000112 < S 0:0(0) win 65535 <mss 1000>", "0.000112 > S. 0:0(0) ack 1"]
    assert handshake_variant("0.1 write(4, ..., 10) = 10\n") is None


def test_a_kernel_replay_counts_as_the_same_divergence_only_at_the_same_line_and_packet_or_time():
    model = fail(44, timing(0.079770, 0.074000))
    assert same_divergence(model, fail(44, timing(0.079770, 0.075760), "kernel"))
    assert not same_divergence(model, fail(44, timing(0.079770, 0.079000 + 0.0001), "kernel"))  # 5.1 ms apart
    assert not same_divergence(model, fail(45, timing(0.079770, 0.075760), "kernel"))
    seq = ("live packet field tcp_seq: expected: 32001 (0x7d01) vs actual: 36001 (0x8ca1); script: . 32001:33001(1000) "
           "ack 1; actual: . 36001:37001(1000) ack 1")
    assert same_divergence(fail(84, seq), fail(84, seq + " win 2048", "kernel"))
    assert not same_divergence(fail(84, seq), fail(84, seq.replace("36001:37001", "40001:41001"), "kernel"))
    assert not same_divergence(model, Result("x.pkt", "kernel", "pass", None, ""))


def test_a_recording_is_kernel_unstable_when_two_replays_of_three_fail_it():
    ok = Result("x.pkt", "kernel", "pass", None, "")
    assert kernel_unstable([fail(54, "a", "kernel"), ok, fail(67, "b", "kernel")])
    assert not kernel_unstable([fail(54, "a", "kernel"), ok, ok])


def test_a_late_timer_leads_by_more_than_the_tolerance_and_at_most_a_jiffy_and_the_phase_gap():
    assert late_timer(fail(41, timing(0.203765, 0.198000)))  # 5.77 ms
    assert not late_timer(fail(41, timing(0.203765, 0.201000)))  # within tolerance
    assert not late_timer(fail(41, timing(0.157213, 0.134817)))  # 22 ms: not a jiffy
    assert not late_timer(fail(41, timing(0.150000, 0.155781)))  # late, not early
    assert not late_timer(fail(41, "Timed out waiting for packet (the model sent nothing by 0.1 sec)"))


def test_a_handshake_rtt_edge_disagrees_as_recorded_and_agrees_with_the_kernels_handshake_rtt(tmp_path):
    """tests/drill/edges/handshake-rtt-edge.pkt: the first TSO packet is 4 segments on the kernel,
    3 on the model with its handshake RTT 50 us longer; with the SYN at the SYN-ACK's time it agrees."""
    as_recorded = run_model(str(EDGE), parse_file(EDGE), "linux")
    assert (as_recorded.result, as_recorded.line) == ("fail", 28)
    assert "tcp_psh" in as_recorded.reason and "1:4001(4000)" in as_recorded.reason
    variant = tmp_path / EDGE.name
    variant.write_text(handshake_variant(EDGE.read_text()))
    assert run_model(str(variant), parse_file(variant), "linux").result == "pass"


def test_a_bad_recording_is_refused_with_one_line_naming_file_and_line(tmp_path, capsys):
    from tcplab.drill.explain import main

    bad = tmp_path / "bad.pkt"
    bad.write_text("0.0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\nnot a time at all\n")
    missing = tmp_path / "missing.pkt"
    assert main([str(bad)]) == 2
    assert main([str(missing)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and err[0].startswith(f"tcplab.drill.explain: {bad}:2:") and str(missing) in err[1]
