//! Writers: a run's records as the logs testbed tools produce, so a simulated run can be fed to
//! the scripts users already have — SIFTR2 (the 2.2 text layout: the one with sequence numbers),
//! tcp_probe ftrace text, and iperf3 `-J` JSON. What the readers in this crate read back equals
//! what was written (tests/test_import.py runs the round trips on simulated runs).

use std::io::{self, Write};

use crate::flows::FlowKey;
use crate::iperf3;

/// A flow as a writer describes it.
#[derive(Debug, Clone)]
pub struct WriteFlow {
    /// Addresses and ports to write.
    pub key: FlowKey,
    /// tcplab stack name.
    pub stack: String,
    /// Congestion control.
    pub cc: String,
    /// MSS, bytes.
    pub mss: u32,
}

/// Rows for a SIFTR2 log, time-ordered: one per packet the sender sent (`outbound` 1, with its
/// `seq` and `data_bytes`) or received (`outbound` 0: an ACK, with its `ack`). Sequence
/// numbers are relative to the flow's first byte; `ssthresh_bytes` -1 is "not yet set".
#[allow(missing_docs)]
pub struct SiftrRows<'a> {
    pub t_ns: &'a [i64],
    pub flow: &'a [i64],
    pub outbound: &'a [i64],
    pub cwnd_bytes: &'a [i64],
    pub ssthresh_bytes: &'a [i64],
    pub srtt_us: &'a [i64],
    pub rto_us: &'a [i64],
    pub flight_bytes: &'a [i64],
    pub seq: &'a [i64],
    pub ack: &'a [i64],
    pub data_bytes: &'a [i64],
    pub state: &'a [i64],
}

/// FreeBSD's ISS is random; a fixed one keeps the written log deterministic.
const ISS: u32 = 1_000_000;

fn flowid(i: usize) -> u32 {
    0x5ca1_ab00 + i as u32
}

/// Write a SIFTR2 2.2-layout log (header, one line per row, footer with each flow's metadata).
/// `enable_ns` is the wall-clock time the log says logging began.
pub fn siftr2<W: Write>(
    out: &mut W,
    enable_ns: i64,
    flows: &[WriteFlow],
    rows: &SiftrRows<'_>,
) -> io::Result<()> {
    let (secs, usecs) = (
        enable_ns.div_euclid(1_000_000_000),
        enable_ns.rem_euclid(1_000_000_000) / 1000,
    );
    writeln!(out, "enable_time_secs={secs}\tenable_time_usecs={usecs:06}\tsiftrver=2.2\tsysname=tcplab\tsysver=0\tipmode=4")?;
    let mut nrecord = vec![0u64; flows.len()];
    let n = rows.t_ns.len();
    for k in 0..n {
        let f = rows.flow[k] as usize;
        if f >= flows.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("row {k}: flow {f} not in the flow list"),
            ));
        }
        nrecord[f] += 1;
        let t = enable_ns + rows.t_ns[k];
        let (s, us) = (
            t.div_euclid(1_000_000_000),
            t.rem_euclid(1_000_000_000) / 1000,
        );
        let dir = if rows.outbound[k] != 0 { 'o' } else { 'i' };
        let ssth = if rows.ssthresh_bytes[k] < 0 {
            65535u64 << 14
        } else {
            rows.ssthresh_bytes[k] as u64
        };
        let flags: u64 = if rows.state[k] == 1 {
            crate::siftr::TF_FASTRECOVERY | crate::siftr::TF_CONGRECOVERY
        } else {
            0
        };
        let seq = ISS.wrapping_add(rows.seq[k].max(0) as u32);
        let ack = ISS.wrapping_add(rows.ack[k].max(0) as u32);
        writeln!(
            out,
            "{dir},{s}.{us:06},{:08x},{},{ssth},0,0,{flags},0,4,{},{},0,0,0,0,{},0,{seq},{ack},{}",
            flowid(f),
            rows.cwnd_bytes[k].max(0),
            rows.srtt_us[k].max(0),
            rows.rto_us[k].max(0),
            rows.flight_bytes[k].max(0),
            rows.data_bytes[k].max(0)
        )?;
    }
    let end = enable_ns + rows.t_ns.last().copied().unwrap_or(0);
    write!(out, "disable_time_secs={}\tdisable_time_usecs={:06}\tglobal_flow_cnt={}\tring_drops=0\tmax_str_size=0\tgen_flowid_cnt=0\tflow_list=",
           end.div_euclid(1_000_000_000), end.rem_euclid(1_000_000_000) / 1000, flows.len())?;
    for (i, f) in flows.iter().enumerate() {
        let stack = if f.stack == "freebsd-rack" { "1" } else { "0" };
        let cc = match f.cc.as_str() {
            "cubic" => "0",
            "newreno" | "reno" => "1",
            other => other,
        };
        write!(
            out,
            "{:08x},{},{},{},{},{stack},{cc},{},1,0,0,{},{};",
            flowid(i),
            f.key.laddr,
            f.key.lport,
            f.key.faddr,
            f.key.fport,
            f.mss,
            nrecord[i],
            nrecord[i]
        )?;
    }
    writeln!(out)
}

/// Rows for a tcp_probe trace: the sender's state per ACK, and its congestion-state changes.
#[allow(missing_docs)]
pub struct ProbeRows<'a> {
    pub t_ns: &'a [i64],
    pub flow: &'a [i64],
    pub cwnd_bytes: &'a [i64],
    pub ssthresh_bytes: &'a [i64],
    pub snd_una: &'a [i64],
    pub snd_nxt: &'a [i64],
    pub srtt_us: &'a [i64],
    /// Times of the congestion-state changes and their flows and Linux ca_state values.
    pub change_t_ns: &'a [i64],
    pub change_flow: &'a [i64],
    pub change_state: &'a [i64],
}

/// Write tcp_probe (and tcp_cong_state_set) ftrace text as `cat trace_pipe` shows it; cwnd and
/// ssthresh in packets of each flow's MSS (rounded down, as the kernel's counts are whole).
pub fn tcp_probe<W: Write>(
    out: &mut W,
    flows: &[WriteFlow],
    rows: &ProbeRows<'_>,
) -> io::Result<()> {
    writeln!(out, "# tracer: nop\n#\n# written by tcplab")?;
    let (mut i, mut j) = (0, 0);
    let (n, m) = (rows.t_ns.len(), rows.change_t_ns.len());
    let bad = |k: usize| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("row {k}: flow not in the flow list"),
        )
    };
    while i < n || j < m {
        // Merge in time order; at equal times the state change first (the kernel sets the state
        // before the ACK's processing ends, where tcp_probe fires).
        if j < m && (i >= n || rows.change_t_ns[j] <= rows.t_ns[i]) {
            let f = flows
                .get(rows.change_flow[j] as usize)
                .ok_or_else(|| bad(j))?;
            let t = rows.change_t_ns[j];
            writeln!(out, "          tcplab-0       [000] .....  {}.{:06}: tcp_cong_state_set: family=AF_INET sport={} dport={} saddr={} daddr={} saddrv6=::ffff:{} daddrv6=::ffff:{} cong_state={}",
                     t / 1_000_000_000, (t % 1_000_000_000) / 1000, f.key.lport, f.key.fport, f.key.laddr, f.key.faddr, f.key.laddr, f.key.faddr, rows.change_state[j])?;
            j += 1;
        } else {
            let f = flows.get(rows.flow[i] as usize).ok_or_else(|| bad(i))?;
            let mss = i64::from(f.mss.max(1));
            let t = rows.t_ns[i];
            let ssth = if rows.ssthresh_bytes[i] < 0 {
                crate::tcp_probe::INFINITE_SSTHRESH as i64
            } else {
                rows.ssthresh_bytes[i] / mss
            };
            writeln!(out, "          tcplab-0       [000] ..s1.  {}.{:06}: tcp_probe: family=AF_INET src={}:{} dest={}:{} mark=0x0 data_len=0 snd_nxt={:#x} snd_una={:#x} snd_cwnd={} ssthresh={} snd_wnd=0 srtt={} rcv_wnd=0 sock_cookie={:x}",
                     t / 1_000_000_000, (t % 1_000_000_000) / 1000, f.key.laddr, f.key.lport, f.key.faddr, f.key.fport,
                     ISS.wrapping_add(rows.snd_nxt[i].max(0) as u32), ISS.wrapping_add(rows.snd_una[i].max(0) as u32),
                     rows.cwnd_bytes[i].max(0) / mss, ssth, rows.srtt_us[i].max(0), rows.flow[i] + 1)?;
            i += 1;
        }
    }
    Ok(())
}

/// One row of an interval table.
#[derive(Debug, Clone, Copy)]
pub struct IntervalRow {
    /// Interval start and end, ns from the flow's start.
    pub t_start_ns: i64,
    /// See t_start_ns.
    pub t_end_ns: i64,
    /// Bytes in the interval.
    pub bytes: i64,
    /// Retransmitted segments (-1 unknown).
    pub retrans_segs: i64,
    /// cwnd at the end, bytes (-1 unknown).
    pub cwnd_bytes: i64,
    /// srtt at the end, us (-1 unknown).
    pub srtt_us: i64,
}

/// iperf3's socket number in the written document (any number works; iperf3's own are small).
const SOCKET: i64 = 5;

fn secs(ns: i64) -> f64 {
    ns as f64 / 1e9
}

/// One row as a `-J` interval of one stream.
fn json_interval(r: &IntervalRow) -> iperf3::Interval {
    let opt = |v: i64| (v >= 0).then_some(v as u64);
    let seconds = secs(r.t_end_ns - r.t_start_ns);
    iperf3::Interval {
        streams: vec![iperf3::IntervalStream {
            socket: SOCKET,
            start: secs(r.t_start_ns),
            end: secs(r.t_end_ns),
            seconds,
            bytes: r.bytes.max(0) as u64,
            bits_per_second: if seconds > 0.0 {
                r.bytes.max(0) as f64 * 8.0 / seconds
            } else {
                0.0
            },
            retransmits: (r.retrans_segs >= 0).then_some(r.retrans_segs),
            snd_cwnd: opt(r.cwnd_bytes),
            rtt: opt(r.srtt_us),
            omitted: false,
            sender: Some(true),
        }],
    }
}

/// The `-J` start section: the connection, the test's parameters, its wall-clock start.
fn json_start(flow: &WriteFlow, start_secs: i64, dur: f64) -> iperf3::Start {
    iperf3::Start {
        connected: vec![iperf3::Connected {
            socket: SOCKET,
            local_host: flow.key.laddr.clone(),
            local_port: flow.key.lport,
            remote_host: flow.key.faddr.clone(),
            remote_port: flow.key.fport,
        }],
        version: "tcplab".into(),
        timestamp: iperf3::Timestamp {
            time: String::new(),
            timesecs: start_secs,
        },
        tcp_mss_default: Some(u64::from(flow.mss)),
        test_start: iperf3::TestStart {
            protocol: "TCP".into(),
            num_streams: 1,
            duration: dur.round() as i64,
            ..Default::default()
        },
    }
}

/// Write one flow's iperf3 `-J` document (the client's view: it sends).
pub fn iperf3_json<W: Write>(
    out: &mut W,
    flow: &WriteFlow,
    start_secs: i64,
    rows: &[IntervalRow],
    bytes_received: u64,
) -> io::Result<()> {
    let sent: u64 = rows.iter().map(|r| r.bytes.max(0) as u64).sum();
    let dur = rows.last().map_or(0.0, |r| secs(r.t_end_ns))
        - rows.first().map_or(0.0, |r| secs(r.t_start_ns));
    let retx: i64 = rows.iter().map(|r| r.retrans_segs.max(0)).sum();
    let sum = |bytes: u64| iperf3::Sum {
        socket: SOCKET,
        start: 0.0,
        end: dur,
        seconds: dur,
        bytes,
        bits_per_second: if dur > 0.0 {
            bytes as f64 * 8.0 / dur
        } else {
            0.0
        },
        ..Default::default()
    };
    let doc = iperf3::Report {
        start: json_start(flow, start_secs, dur),
        intervals: rows.iter().map(json_interval).collect(),
        end: iperf3::End {
            streams: vec![iperf3::EndStream {
                sender: iperf3::Sum {
                    retransmits: Some(retx),
                    ..sum(sent)
                },
                receiver: sum(bytes_received),
            }],
            sum_sent: iperf3::Sum {
                retransmits: Some(retx),
                ..sum(sent)
            },
            sum_received: sum(bytes_received),
            sender_tcp_congestion: Some(flow.cc.clone()),
        },
    };
    serde_json::to_writer_pretty(&mut *out, &doc)?;
    writeln!(out)
}
