//! tcp_probe ftrace text read end to end.

use tcplab_trace::import::parse_bytes;

#[test]
fn fields_in_any_order_parse_the_same() {
    let a = b"  x-1 [000] ..... 1.000000: tcp_probe: src=10.0.0.1:1 dest=10.0.0.2:2 snd_nxt=0x10 snd_una=0x1 snd_cwnd=10 ssthresh=7 srtt=100\n";
    let b = b"  x-1 [000] ..... 1.000000: tcp_probe: dest=10.0.0.2:2 snd_cwnd=10 src=10.0.0.1:1 ssthresh=7 srtt=100 snd_una=0x1 snd_nxt=0x10\n";
    assert_eq!(
        parse_bytes("tcp_probe", a, false),
        parse_bytes("tcp_probe", b, false)
    );
    assert!(parse_bytes("tcp_probe", b, false).unwrap() > 0);
}
