"""A host's egress queue (hosts.NAME.nic.tx_queue: driver TX ring + txqueuelen / ifqmaxlen): unset, the
host's queue is unlimited as before; set, it drops what does not fit when the host's NIC is the
slowest link; bad values fail in one line; the netns backend refuses it in one line."""

import pytest

import tcplab
from tcplab.backends.netns.plan import PlanError, _refuse
from tcplab.backends.sim import lower
from tcplab.spec import SpecError, resolve

SPEC = {
    "name": "txq",
    "topology": {"kind": "pipe", "access": {"rate": "20Mbit", "delay": "1ms"},
                 "bottleneck": {"rate": "100Mbit", "delay": "10ms", "buffer": "100p"}},
    "senders": {"s1": {"to": "r1", "cc": "cubic", "time": "4s"}},
}


def _with(queue=None) -> dict:
    s = {**SPEC, "hosts": {"s1": {"nic": {"tx_queue": queue}}}} if queue else dict(SPEC)
    return s


def test_unset_keeps_the_host_queue_unlimited_and_the_lowering_unchanged():
    assert lower(resolve(_with(), "t.toml")) == lower(resolve({**SPEC, "hosts": {"s1": {"nic": {}}}}, "t.toml"))
    d = resolve(_with(), "t.toml").links[0].ab
    assert (d.buffer_packets, d.buffer_bytes) == (None, None)


def test_a_full_tx_queue_drops_at_the_sender(tmp_path):
    free = tcplab.run(_with(), out=tmp_path / "free", report=False)
    small = tcplab.run(_with("5p"), out=tmp_path / "small", report=False)
    assert free.info["flows"][0]["retransmits"] == 0
    assert small.info["flows"][0]["retransmits"] > 0
    # The sender's queue no longer hides behind the RTT: 5 packets at 20 Mbit/s is 3 ms of queue.
    assert small.info["flows"][0]["srtt_ms"] < 0.5 * free.info["flows"][0]["srtt_ms"]
    exp = resolve(_with("64KB"), "t.toml")
    assert (exp.links[0].ab.buffer_bytes, exp.links[0].ab.buffer_packets) == (64_000, None)


@pytest.mark.parametrize("value, expected", [("0p", "hosts.s1.nic.tx_queue: buffer '0p' must be larger than zero"),
                                             ("ten", "hosts.s1.nic.tx_queue: 'ten' is not a buffer")])
def test_bad_tx_queue_fails_in_one_line(value, expected):
    with pytest.raises(SpecError) as e:
        resolve(_with(value), "t.toml")
    assert str(e.value).startswith("t.toml: ") and expected in str(e.value)


def test_netns_refuses_a_tx_queue():
    with pytest.raises(PlanError, match=r"hosts.s1.nic.tx_queue: .* run it on the simulator"):
        _refuse(resolve(_with("50p"), "t.toml"))
