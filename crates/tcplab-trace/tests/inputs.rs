//! Malformed logs a new user fed the importers (issue 31, row 11), each refused in a strict
//! import and skipped-and-counted, naming the line (packet, interval), in a lenient one.

use tcplab_trace::import::import_bytes;
use tcplab_trace::lines::ParseError;

/// Import `data` as `format` to the end: (flows, interval rows, skipped count, first errors).
fn import(
    format: &str,
    data: &[u8],
    lenient: bool,
) -> Result<(usize, usize, u64, Vec<String>), ParseError> {
    let (imp, skipped) = import_bytes(format, data, lenient, |_| {})?;
    Ok((
        imp.flows.flows.len(),
        imp.rec.intervals.len(),
        skipped.count,
        skipped.first,
    ))
}

fn iperf3_json(intervals: &[(f64, f64)]) -> Vec<u8> {
    let iv: Vec<String> = intervals
        .iter()
        .map(|(a, b)| {
            format!(
                r#"{{"streams":[{{"socket":5,"start":{a},"end":{b},"seconds":1,"bytes":1000}}]}}"#
            )
        })
        .collect();
    format!(
        r#"{{"start":{{"connected":[{{"socket":5,"local_host":"10.0.0.1","local_port":40000,"remote_host":"10.0.0.2","remote_port":5201}}]}},"intervals":[{}]}}"#,
        iv.join(",")
    )
    .into_bytes()
}

#[test]
fn an_iperf3_interval_that_ends_before_it_starts_is_refused_or_skipped_by_name() {
    let doc = iperf3_json(&[(0.0, 1.0), (2.0, 1.0), (2.0, 3.0)]);
    let e = import("iperf3-json", &doc, false).unwrap_err();
    assert!(
        e.message
            .contains("intervals[1] (socket 5, 2 to 1 s): ends before it starts"),
        "{e}"
    );
    let (flows, rows, skipped, first) = import("iperf3-json", &doc, true).unwrap();
    assert_eq!((flows, rows, skipped), (1, 2, 1));
    assert!(first[0].contains("intervals[1]"));
}

/// A libpcap file (raw IP link type) of `packets`.
fn pcap(packets: &[Vec<u8>]) -> Vec<u8> {
    let mut f = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0];
    f.extend([0u8; 8]);
    f.extend(65535u32.to_le_bytes());
    f.extend(101u32.to_le_bytes());
    for (i, p) in packets.iter().enumerate() {
        f.extend((i as u32).to_le_bytes());
        f.extend(0u32.to_le_bytes());
        f.extend((p.len() as u32).to_le_bytes());
        f.extend((p.len() as u32).to_le_bytes());
        f.extend(p);
    }
    f
}

/// A TCP header from port `sport` with `payload` bytes of data after it.
fn tcp(sport: u16, payload: usize) -> Vec<u8> {
    let mut t = Vec::new();
    t.extend(sport.to_be_bytes());
    t.extend(5201u16.to_be_bytes());
    t.extend(1000u32.to_be_bytes());
    t.extend(1u32.to_be_bytes());
    t.extend([0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0]);
    t.extend(std::iter::repeat_n(0xab, payload));
    t
}

fn ipv4(ihl: u8, seg: &[u8]) -> Vec<u8> {
    let total = (20 + seg.len()) as u16;
    let mut p = vec![0x40 | ihl, 0];
    p.extend(total.to_be_bytes());
    p.extend([0, 0, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
    p.extend(seg);
    p
}

#[test]
fn an_ipv4_header_length_the_packet_cannot_hold_is_refused_not_read_from_the_payload() {
    let good = ipv4(5, &tcp(40000, 100));
    for ihl in [15u8, 3] {
        let bad = ipv4(ihl, &tcp(40000, 100));
        let cap = pcap(&[good.clone(), bad]);
        let e = import("pcap", &cap, false).unwrap_err();
        assert!(e.message.starts_with("packet 2 (byte offset "), "{e}");
        assert!(e.message.contains(&format!("(IHL {ihl})")), "{e}");
        let (flows, _, skipped, first) = import("pcap", &cap, true).unwrap();
        assert_eq!(
            (flows, skipped),
            (1, 1),
            "no phantom flow from the payload: {first:?}"
        );
    }
}

#[test]
fn a_plot_file_of_noise_is_no_run_even_lenient() {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let noise: Vec<u8> = (0..20_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let e = import("siftr2-plot", &noise, true).unwrap_err();
    assert!(
        e.message.starts_with("no record parsed as siftr2-plot: "),
        "{e}"
    );
    assert!(e.message.contains("(the first: line 1: "), "{e}");
    // One good line among the noise is a run of that line.
    let mut one = b"o 0.5 1448 1065742 2612399709 1453072297 1448\n".to_vec();
    one.extend(&noise);
    assert!(import("siftr2-plot", &one, true).is_ok());
}

const SIFTR2_HEAD: &str = "enable_time_secs=1700000000\tenable_time_usecs=000000\tsiftrver=2.2\tsysname=FreeBSD\tsysver=1500000\tipmode=4\n";
const SIFTR2_LINE: &str = "o,1700000000.000100,0a0b0c0d,14480,1073725440,0,0,0,0,4,40000,200000,0,0,0,0,0,0,1000,1000,1448";
const SIFTR2_FOOT: &str = "disable_time_secs=1700000001\tdisable_time_usecs=000000\tglobal_flow_cnt=1\tflow_list=0a0b0c0d,10.0.0.1,5201,10.0.0.2,40000,0,0,1448,1,0,0,5,5;\n";

#[test]
fn every_siftr2_field_is_a_number_even_the_ones_tcplab_does_not_use() {
    for field in [2usize, 5, 6, 8, 9, 12, 13, 14, 15, 17] {
        for junk in ["x", "nan", "inf", "-1", "1.5", "4294967296"] {
            let mut f: Vec<&str> = SIFTR2_LINE.split(',').collect();
            f[field] = junk;
            let log = format!("{SIFTR2_HEAD}{SIFTR2_LINE}\n{}\n{SIFTR2_FOOT}", f.join(","));
            let e = import("siftr2", log.as_bytes(), false).unwrap_err();
            assert_eq!(e.line, 3, "field {field} = {junk}: {e}");
            assert!(e.message.contains(&format!("(field {})", field + 1)), "{e}");
        }
    }
    let log = format!("{SIFTR2_HEAD}{SIFTR2_LINE}\n{SIFTR2_FOOT}");
    assert_eq!(import("siftr2", log.as_bytes(), false).unwrap().0, 1);
}

fn ipv6(next: u8, ext: &[u8], seg: &[u8]) -> Vec<u8> {
    let mut p = vec![0x60, 0, 0, 0];
    p.extend(((ext.len() + seg.len()) as u16).to_be_bytes());
    p.extend([next, 64]);
    p.extend([0u8; 15]);
    p.push(1);
    p.extend([0u8; 15]);
    p.push(2);
    p.extend(ext);
    p.extend(seg);
    p
}

#[test]
fn ipv6_extension_headers_are_walked_to_the_tcp_header() {
    let seg = tcp(40000, 100);
    // Hop-by-hop (8 bytes, PadN) -> routing (24 bytes) -> destination options -> fragment
    // (offset 0) -> TCP.
    let mut ext = vec![43, 0, 1, 4, 0, 0, 0, 0];
    ext.extend([60, 2, 0, 0, 0, 0, 0, 0]);
    ext.extend([0u8; 16]);
    ext.extend([44, 0, 1, 4, 0, 0, 0, 0]);
    ext.extend([6, 0, 0, 0, 0, 0, 0, 7]);
    for (next, ext) in [
        (0u8, &ext[..]),
        (0, &[6, 0, 1, 4, 0, 0, 0, 0][..]),
        (6, &[][..]),
    ] {
        let cap = pcap(&[ipv6(next, ext, &seg)]);
        let (flows, _, skipped, _) = import("pcap", &cap, false).unwrap();
        assert_eq!((flows, skipped), (1, 0));
    }
    // A chain longer than the payload length says is malformed.
    let mut bad = ipv6(0, &[6, 20, 1, 4, 0, 0, 0, 0], &seg);
    bad.extend([0u8; 200]);
    let e = import("pcap", &pcap(&[bad]), false).unwrap_err();
    assert!(e.message.contains("runs past the payload length"), "{e}");
}

#[test]
fn a_plot_file_without_a_line_that_parses_makes_no_flow() {
    for empty in [&b""[..], b"\n\n# only a comment\n"] {
        assert_eq!(import("siftr2-plot", empty, false).unwrap().0, 0);
    }
}
