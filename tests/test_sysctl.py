"""Host sysctls under their usual names: what they set, and the errors for wrong ones."""

from pathlib import Path

import pytest

import tcplab
from tcplab import _native
from conftest import tcplab as cli
from tcplab.spec import SpecError, resolve
from tcplab.backends.sim import lower

BASE = {
    "name": "k",
    "topology": {"kind": "pipe", "bottleneck": {"rate": "100Mbit", "rtt": "20ms", "buffer": "100p"}},
    "senders": {"s1": {"to": "r1", "time": "1s"}},
}


def with_hosts(hosts: dict, **sender) -> dict:
    spec = {**BASE, "hosts": hosts}
    spec["senders"] = {"s1": {**BASE["senders"]["s1"], **sender}}
    return spec


def test_linux_sysctls_set_buffers_window_and_cc_per_role():
    r = resolve(with_hosts({
        "s1": {"sysctl": {"net.ipv4.tcp_wmem": "4096 32768 8388608", "net.ipv4.tcp_congestion_control": "newreno",
                          "route.initcwnd": 20, "net.ipv4.tcp_rmem": "4096 87380 1000000"}},
        "r1": {"sysctl": {"net.ipv4.tcp_rmem": "4096 131072 268435456", "net.ipv4.tcp_no_metrics_save": 1}},
    }), "t.toml")
    f = lower(r)["flows"][0]
    assert (f["sndbuf_bytes"], f["sndbuf_initial_bytes"]) == (8_388_608, 32_768)  # the sender's wmem
    assert f["rcvbuf_bytes"] == 268_435_456  # the receiver's rmem, not the sender's
    assert (f["cc"], f["iw_segments"]) == ("newreno", 20)


def test_unknown_sysctl_lists_the_supported_ones():
    with pytest.raises(SpecError) as e:
        resolve(with_hosts({"s1": {"sysctl": {"net.ipv4.tcp_bogus": 1}}}), "t.toml")
    msg = str(e.value)
    assert msg.startswith('t.toml: hosts.s1.sysctl."net.ipv4.tcp_bogus": unknown sysctl (allowed: net.ipv4.tcp_rmem,')
    assert "net.inet.tcp.initcwnd_segments" in msg


def test_freebsd_sysctls_set_the_freebsd_knobs_per_role():
    r = resolve(with_hosts({
        "s1": {"sysctl": {"net.inet.tcp.sack.tso": 1, "net.inet.tcp.do_prr": 0, "net.inet.tcp.tso": 0,
                          "net.inet.tcp.sendbuf_max": 4_000_000, "net.inet.tcp.sendspace": 65_536,
                          "net.inet.tcp.sendbuf_inc": 16_384, "net.inet.tcp.initcwnd_segments": 4,
                          "net.inet.tcp.cc.algorithm": "newreno", "net.inet.tcp.functions_default": "freebsd",
                          "net.inet.tcp.hostcache.enable": 0}},
        "r1": {"sysctl": {"net.inet.tcp.recvbuf_max": 8_000_000, "net.inet.tcp.recvspace": 65_536}},
    }, stack="freebsd", d43470=False), "t.toml")
    f = lower(r)["flows"][0]
    assert f["freebsd"] == {"d43470": False, "version": "2023", "tso": False, "sack_tso": True, "do_prr": False,
                            "sendbuf_inc_bytes": 16_384, "sack_lrd": False}
    assert (f["sndbuf_bytes"], f["sndbuf_initial_bytes"], f["rcvbuf_bytes"]) == (4_000_000, 65_536, 8_000_000)
    assert (f["cc"], f["iw_segments"]) == ("newreno", 4)


def test_freebsd_defaults_are_those_of_freebsd_15():
    f = lower(resolve(with_hosts({}, stack="freebsd"), "t.toml"))["flows"][0]
    assert f["freebsd"] == {"d43470": True, "version": "2023", "tso": True, "sack_tso": False, "do_prr": True,
                            "sendbuf_inc_bytes": 8192, "sack_lrd": False}


def test_freebsd_version_is_a_freebsd_knob_checked_against_the_stack_options():
    f = lower(resolve(with_hosts({}, stack="freebsd", version="15.0-2025"), "t.toml"))["flows"][0]
    assert (f["freebsd"]["version"], f["sndbuf_bytes"]) == ("15.0-2025", 8 * 1024 * 1024)
    with pytest.raises(SpecError, match="senders.s1.version: '1999' is not one of the choices"):
        resolve(with_hosts({}, stack="freebsd", version="1999"), "t.toml")
    with pytest.raises(SpecError, match="senders.s1.version: applies to the freebsd and freebsd-rack stacks only"):
        resolve(with_hosts({}, version="2023"), "t.toml")
    # The RACK stack has its own versions (rack.c of 2023 and 2025), not the 2024-10 tree's.
    rack = lower(resolve(with_hosts({}, stack="freebsd-rack", version="15.0-2025"), "t.toml"))["flows"][0]
    assert (rack["freebsd"]["version"], rack["sndbuf_bytes"]) == ("15.0-2025", 8 * 1024 * 1024)
    with pytest.raises(SpecError, match="senders.s1.version: '15.0-2024-10' is not one of the choices"):
        resolve(with_hosts({}, stack="freebsd-rack", version="15.0-2024-10"), "t.toml")
    with pytest.raises(SpecError, match="senders.s1.d43470: version '15.0-2025' includes review D43470"):
        resolve(with_hosts({}, stack="freebsd", version="15.0-2025", d43470=False), "t.toml")
    # T4's 2024-10 tree takes both d43470 values; its sendbuf_max default is that of its tcp_output.c
    # (2 MB), given by the native stack options per version, not restated in the spec code.
    f = lower(resolve(with_hosts({}, stack="freebsd", version="15.0-2024-10", d43470=False), "t.toml"))["flows"][0]
    assert (f["freebsd"]["version"], f["freebsd"]["d43470"], f["sndbuf_bytes"]) == ("15.0-2024-10", False, 2 * 1024 * 1024)
    defaults = _native.stack_options()["freebsd"]["version"]["defaults"]
    assert defaults["15.0-2024-10"]["sndbuf_bytes"] == f["sndbuf_bytes"]
    assert "sndbuf_bytes" not in defaults["2023"]
    # Lost-retransmission detection: off in 2023 (net.inet.tcp.do_lrd = 0), on from late 2023
    # (net.inet.tcp.sack.lrd = 1), and the sysctl overrides the version's default.
    assert (f["freebsd"]["sack_lrd"], defaults["2023"]["sack_lrd"]) == (True, False)
    off = with_hosts({"s1": {"sysctl": {"net.inet.tcp.sack.lrd": 0}}}, stack="freebsd", version="15.0-2025")
    assert lower(resolve(off, "t.toml"))["flows"][0]["freebsd"]["sack_lrd"] is False


def test_rack_rto_cwnd_is_a_freebsd_rack_knob_defaulting_by_version():
    """rack.c @ 0c19274c keeps cwnd on an RTO (15.0-2025: "kept"); the 2023 model sets 1 MSS."""
    def rto(**sender):
        return lower(resolve(with_hosts({}, stack="freebsd-rack", **sender), "t.toml"))["flows"][0]["freebsd"]["rack_rto_cwnd"]
    assert (rto(), rto(version="15.0-2025"), rto(version="15.0-2025", rack_rto_cwnd="one_mss")) == ("one_mss", "kept", "one_mss")
    with pytest.raises(SpecError, match="senders.s1.rack_rto_cwnd: 'half' is not one of the choices"):
        resolve(with_hosts({}, stack="freebsd-rack", rack_rto_cwnd="half"), "t.toml")
    with pytest.raises(SpecError, match="senders.s1.rack_rto_cwnd: applies to the freebsd-rack stack only"):
        resolve(with_hosts({}, stack="freebsd", rack_rto_cwnd="kept"), "t.toml")


def test_functions_default_must_name_the_senders_stack():
    with pytest.raises(SpecError, match=r'functions_default": names the freebsd-rack stack but sender s1 uses freebsd'):
        resolve(with_hosts({"s1": {"sysctl": {"net.inet.tcp.functions_default": "rack"}}}, stack="freebsd"), "t.toml")


def test_d43470_is_a_freebsd_knob_and_freebsd_needs_sack():
    with pytest.raises(SpecError, match="senders.s1.d43470: applies to the freebsd stack only"):
        resolve(with_hosts({}, d43470=True), "t.toml")
    with pytest.raises(SpecError, match="senders.s1.sack: the freebsd stack is modelled for SACK connections only"):
        resolve(with_hosts({}, stack="freebsd", sack=False), "t.toml")


def test_linux_sysctl_on_a_freebsd_host_is_refused_with_the_reason():
    with pytest.raises(SpecError, match=r'hosts.s1.sysctl."route.initcwnd": is a Linux setting'):
        resolve(with_hosts({"s1": {"sysctl": {"route.initcwnd": 4}}}, stack="freebsd"), "t.toml")


def test_freebsd_sysctl_on_a_linux_host_is_refused_with_the_reason():
    with pytest.raises(SpecError, match=r'hosts.s1.sysctl."net.inet.tcp.sack.tso": is a FreeBSD setting'):
        resolve(with_hosts({"s1": {"sysctl": {"net.inet.tcp.sack.tso": 1}}}), "t.toml")


@pytest.mark.parametrize("value", ["4096 131072", "big", "8 4 2", 5])
def test_bad_rmem_values_are_refused(value):
    with pytest.raises(SpecError, match="hosts.r1.sysctl"):
        resolve(with_hosts({"r1": {"sysctl": {"net.ipv4.tcp_rmem": value}}}), "t.toml")


def test_a_sender_key_and_a_sysctl_setting_the_same_thing_conflict():
    with pytest.raises(SpecError, match="senders.s1.cc: is also set by a sysctl"):
        resolve(with_hosts({"s1": {"sysctl": {"net.ipv4.tcp_congestion_control": "cubic"}}}, cc="newreno"), "t.toml")


def test_prr_version_is_a_linux_knob():
    r = resolve(with_hosts({}, prr="5.15"), "t.toml")
    assert lower(r)["flows"][0]["prr"] == "5.15"
    with pytest.raises(SpecError, match="senders.s1.prr: applies to the linux stack only"):
        resolve(with_hosts({}, prr="5.15", stack="rfc"), "t.toml")


def test_t1_preset_takes_its_buffers_from_the_hosts_sysctls(tmp_path: Path):
    run = tcplab.run("T1", duration="2s", out=tmp_path / "t1", report=False)
    spec = (run.path / "spec.toml").read_text()
    assert '"net.ipv4.tcp_rmem" = "4096 131072 268435456"' in spec
    assert "rcvbuf" not in spec  # it comes from r1's tcp_rmem, which the resolved spec keeps
    assert run.info["flows"][0]["bytes_delivered"] > 0
    proc = cli("run", str(run.path / "spec.toml"), "--out", str(tmp_path / "again"), "--no-report", cwd=tmp_path, check=True)
    assert "results:" in proc.stdout


@pytest.mark.parametrize("name,value", [("net.inet.tcp.do_prr", 2), ("net.inet.tcp.functions_default", "bbr"),
                                        ("net.inet.tcp.sendbuf_max", -1)])
def test_a_bad_freebsd_value_names_its_sysctl(name, value):
    with pytest.raises(SpecError, match=rf'hosts.s1.sysctl."{name}": '):
        resolve(with_hosts({"s1": {"sysctl": {name: value}}}, stack="freebsd"), "t.toml")


@pytest.mark.parametrize("hosts, ratio", [
    ({}, 128),  # a Linux receiver by default: tcp_adv_win_scale 1, half the buffer
    ({"r1": {"sysctl": {"net.ipv4.tcp_adv_win_scale": 2}}}, 192),  # 1 - 1/4
    ({"r1": {"sysctl": {"net.ipv4.tcp_adv_win_scale": 0}}}, 256),  # space >> 0
    ({"r1": {"sysctl": {"net.ipv4.tcp_adv_win_scale": -2}}}, 64),  # space >> 2
    ({"r1": {"sysctl": {"net.inet.tcp.recvbuf_max": 2_000_000}}}, 256),  # FreeBSD: sbspace()
])
def test_the_receiving_hosts_os_decides_how_much_of_its_buffer_is_window(hosts, ratio):
    f = lower(resolve(with_hosts(hosts), "t.toml"))["flows"][0]
    assert f["rcv_scaling_ratio"] == ratio


def test_a_buffer_whose_window_holds_no_segment_is_refused():
    # 2000 bytes hold a 1448-byte segment, but a Linux receiver offers half: 1000 bytes.
    with pytest.raises(SpecError) as e:
        resolve(with_hosts({}, rcvbuf="2000B"), "t.toml")
    assert str(e.value).startswith("t.toml: senders.s1.rcvbuf: must offer a window of at least one segment")
    assert "receiver r1 offers 128/256 of its buffer" in str(e.value)
    with pytest.raises(SpecError, match="tcp_adv_win_scale"):
        resolve(with_hosts({"r1": {"sysctl": {"net.ipv4.tcp_adv_win_scale": 40}}}), "t.toml")


def test_a_linux_receiver_window_limits_the_rate_to_half_its_buffer_per_rtt(tmp_path: Path):
    # 100 Mbit/s x 20 ms, tcp_rmem max 262144, no loss: the window is 262144 / 2 = 131072 bytes
    # = 90 whole segments (130320 bytes; an even number, so none waits for a delayed ACK) per RTT
    # of 20 ms + ~0.3 ms of serialisation: 90 x 1448 x 8 / 20.3 ms = 51.4 Mbit/s. A FreeBSD
    # receiver with the same buffer offers all of it: 181 segments, over the 100 Mbit/s link.
    linux = with_hosts({"r1": {"sysctl": {"net.ipv4.tcp_rmem": "4096 131072 262144"}}}, time="5s")
    bsd = with_hosts({"r1": {"sysctl": {"net.inet.tcp.recvbuf_max": 262144}}}, time="5s")
    rates = []
    for name, spec in (("linux", linux), ("bsd", bsd)):
        res = tcplab.run(spec, out=tmp_path / name, report=False)
        # After the first second (slow start), over the intervals' own lengths: the last one is
        # as long as the handshake (iperf3's -t counts from the connection being set up).
        rows = res.intervals[res.intervals["flow"] == "s1"].iloc[1:]
        rates.append(rows["bytes"].sum() * 8 / ((rows["t_end_ns"] - rows["t_start_ns"]).sum() / 1e9) / 1e6)
    assert rates[0] == pytest.approx(90 * 1448 * 8 / 0.0203 / 1e6, rel=0.02)
    assert rates[1] > 90  # the link, not the window


def test_a_receiving_nic_with_gro_needs_its_coalescing_time():
    f = lower(resolve(with_hosts({"r1": {"nic": {"gro": True, "rx_usecs": 50}}}), "t.toml"))["flows"][0]
    assert f["rx_nic"] == {"coalesce": "gro", "rx_usecs_ns": 50_000, "rx_frames": 0}
    assert lower(resolve(with_hosts({}), "t.toml"))["flows"][0]["rx_nic"] == {"coalesce": "none", "rx_usecs_ns": 0,
                                                                            "rx_frames": 0}
    with pytest.raises(SpecError) as e:
        resolve(with_hosts({"r1": {"nic": {"gro": True}}}), "t.toml")
    assert str(e.value).startswith("t.toml: hosts.r1.nic.rx_usecs: is required with gro = true")
    with pytest.raises(SpecError) as e:
        resolve(with_hosts({"r1": {"nic": {"gso": True}}}), "t.toml")
    assert "hosts.r1.nic.gso: unknown key" in str(e.value) and "gro" in str(e.value)