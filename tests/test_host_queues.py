"""A host's egress queue (hosts.NAME.nic.tx_queue: driver TX ring + txqueuelen / ifqmaxlen) and a VM's
virtual NIC (nic.vnic_rate: the VM behind its host's bridge): unset, today's model (an unlimited
host queue); set, drops where the queue overflows; bad values fail in one line; the netns backend
refuses both in one line."""

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


VM = {
    "name": "vm",
    "topology": {"kind": "dumbbell", "pairs": 1, "access": {"rate": "1Gbit", "delay": "50us"},
                 "bottleneck": {"rate": "1Gbit", "delay": "10ms", "buffer": "256p"}},
    "senders": {"s1": {"to": "r1", "cc": "cubic", "time": "3s"}},
}


def _vm(**nic) -> dict:
    return {**VM, "hosts": {"s1": {"nic": nic}}}


def test_a_vm_sits_behind_its_hosts_bridge():
    plain, vm = resolve(VM, "t.toml"), resolve(_vm(vnic_rate="10Gbit", tx_queue="20p"), "t.toml")
    assert [n.name for n in vm.nodes] == [n.name for n in plain.nodes] + ["s1-bridge"]
    assert vm.bottleneck_port == plain.bottleneck_port and vm.bottleneck.label == plain.bottleneck.label
    first = vm.links[0]  # the VM's link now leaves the bridge: the host's NIC, its queue the VM's tx_queue
    assert (first.a, first.ab.rate_bps, first.ab.buffer_packets) == ("s1-bridge", 10**9, 20)
    new = vm.links[-1]
    assert (new.a, new.b, new.ab.rate_bps, new.ab.delay_ns, new.ab.buffer_packets) == ("s1", "s1-bridge", 10**10, 0, None)
    assert [p.label for p in vm.route("s1", "r1")][:2] == ["s1->s1-bridge", "s1-bridge->rt1"]


def test_a_vms_bursts_overflow_its_hosts_nic_queue(tmp_path):
    """A 10 Gbit/s virtual NIC into a 1 Gbit/s wire: a 20-packet host queue drops; unlimited, it queues."""
    plain = tcplab.run(VM, out=tmp_path / "plain", report=False).info["flows"][0]
    free = tcplab.run(_vm(vnic_rate="10Gbit"), out=tmp_path / "free", report=False).info["flows"][0]
    small = tcplab.run(_vm(vnic_rate="10Gbit", tx_queue="20p"), out=tmp_path / "small", report=False).info["flows"][0]
    assert plain["retransmits"] == free["retransmits"] == 0 and free["srtt_ms"] > plain["srtt_ms"]
    assert small["retransmits"] > 0 and small["throughput_mbps"] < 0.5 * plain["throughput_mbps"]


def test_netns_refuses_a_vm():
    with pytest.raises(PlanError, match=r"hosts.s1.nic.vnic_rate: s1 is a VM behind its host's bridge"):
        _refuse(resolve(_vm(vnic_rate="10Gbit"), "t.toml"))


def test_a_receiver_that_cannot_keep_up_drops_at_its_ring(tmp_path):
    """1000 full-size packets a second (12 Mbit/s) behind a 50-packet ring on a 20 Mbit/s path:
    the receiver's CPU is the bottleneck and its ring drops; unset, the path's rate as before."""
    r1 = lambda nic: {**SPEC, "hosts": {"r1": {"nic": nic}}}  # noqa: E731
    exp = resolve(r1({"rx_pps": 1000, "rx_ring": 50}), "t.toml")
    ring = exp.links[-1]
    assert (ring.a, ring.b, ring.ba.rate_bps, ring.ba.buffer_packets) == ("r1", "r1-rxring", 12_000_000, 50)
    assert resolve(r1({"rx_pps": 1000}), "t.toml").links[-1].ba.buffer_packets == 256  # e1000e's ring
    slow = tcplab.run(r1({"rx_pps": 1000, "rx_ring": 50}), out=tmp_path / "slow", report=False).info["flows"][0]
    assert slow["retransmits"] > 0 and 9 < slow["throughput_mbps"] <= 12
    with pytest.raises(SpecError, match="hosts.r1.nic.rx_ring: applies with rx_pps only"):
        resolve(r1({"rx_ring": 50}), "t.toml")
    with pytest.raises(PlanError, match=r"hosts.r1.nic.rx_pps: r1 is a receiver with a processing budget"):
        _refuse(exp)
