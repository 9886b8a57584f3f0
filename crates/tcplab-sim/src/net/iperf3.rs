//! iperf3's control protocol around a transfer (`iperf3 -c SERVER -n BYTES`): the client process
//! from its start to its exit, which is what `time iperf3 -n` measures.
//!
//! The sequence is esnet/iperf 3.12's (the iperf3 of Debian 12; tag 3.12, commit
//! e61aaf8c95df956cefbc54fab7b3d78914664180):
//! - src/iperf_client_api.c iperf_connect(): the control connection (netdial(): SYN, SYN-ACK),
//!   TCP_NODELAY on it, then the 37-byte cookie (COOKIE_SIZE, src/iperf.h) in one write;
//! - src/iperf_server_api.c iperf_accept(): TCP_NODELAY too, reads the cookie, sends
//!   PARAM_EXCHANGE (one state byte, iperf_set_send_state()) and, in iperf_exchange_parameters()
//!   (src/iperf_api.c), reads the client's parameters (get_parameters()), listens for the
//!   streams and sends CREATE_STREAMS;
//! - the client's iperf_handle_message_client(): on PARAM_EXCHANGE send_parameters(), which is
//!   JSON_write(): a 4-byte length, then the JSON, two writes; on CREATE_STREAMS
//!   iperf_create_streams() -> iperf_tcp_connect() (src/iperf_tcp.c): the data connection's own
//!   handshake, then its cookie (37 bytes) written on it;
//! - the server's iperf_run_server(): when every stream is accepted (iperf_tcp_accept() reads
//!   the data cookie), TEST_START and TEST_RUNNING, two writes; the client writes data from
//!   TEST_RUNNING on (iperf_run_client());
//! - iperf_run_client(): TEST_END as soon as `bytes_sent >= settings->bytes`, where bytes_sent
//!   counts what write(2) took into the send buffer (iperf_tcp_send()), not what was
//!   acknowledged;
//! - the server's iperf_handle_message_server() on TEST_END: closes the data sockets, sends
//!   EXCHANGE_RESULTS, then iperf_exchange_results(): reads the client's results (get_results())
//!   and sends its own (send_results(), JSON_write()), then DISPLAY_RESULTS;
//! - the client on EXCHANGE_RESULTS: sends its results, reads the server's; on DISPLAY_RESULTS
//!   iperf_client_end(): closes the streams, sends IPERF_DONE, closes the control socket, and
//!   the process exits.
//!
//! With TCP_NODELAY on both ends of the control connection every write leaves at once as one
//! segment (each is far below the MSS and the initial window), so neither Nagle nor the peer's
//! delayed ACKs hold a message back: ACKs are off the critical path and not modelled. Each side
//! waits for the other's whole message, so one message is in flight at a time.

use crate::time::{Ns, MS, SEC};

/// iperf3's cookie, bytes (COOKIE_SIZE, src/iperf.h: an ASCII UUID and its NUL).
pub const COOKIE_BYTES: u32 = 37;
/// A state byte (iperf_set_send_state(): one `signed char`).
const STATE_BYTES: u32 = 1;
/// JSON_write()'s length prefix (a `uint32_t` in network order).
const LENGTH_BYTES: u32 = 4;

/// One message of the exchange, named by what it carries; the side that sends it follows from
/// the sequence (`from_client`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Message {
    /// The control connection's SYN (client).
    Syn,
    /// Its SYN-ACK (server).
    SynAck,
    /// The cookie on the control connection (client).
    Cookie,
    /// PARAM_EXCHANGE (server).
    ParamExchange,
    /// The parameters: length, JSON (client).
    Params,
    /// CREATE_STREAMS (server).
    CreateStreams,
    /// The cookie on the data connection, once it is established (client).
    DataCookie,
    /// TEST_START, TEST_RUNNING (server).
    TestStart,
    /// TEST_END (client).
    TestEnd,
    /// EXCHANGE_RESULTS (server).
    ExchangeResults,
    /// The client's results: length, JSON (client).
    ClientResults,
    /// The server's results: length, JSON, then DISPLAY_RESULTS (server).
    ServerResults,
    /// IPERF_DONE (client), sent as the client exits.
    Done,
}

impl Message {
    /// Every message in protocol order (`index` is the position here).
    pub const ALL: [Message; 13] = [
        Message::Syn,
        Message::SynAck,
        Message::Cookie,
        Message::ParamExchange,
        Message::Params,
        Message::CreateStreams,
        Message::DataCookie,
        Message::TestStart,
        Message::TestEnd,
        Message::ExchangeResults,
        Message::ClientResults,
        Message::ServerResults,
        Message::Done,
    ];

    /// Its position in the sequence.
    pub fn index(self) -> usize {
        Message::ALL.iter().position(|&m| m == self).unwrap_or(0)
    }

    /// Whether the client sends it.
    pub fn from_client(self) -> bool {
        !matches!(
            self,
            Message::SynAck
                | Message::ParamExchange
                | Message::CreateStreams
                | Message::TestStart
                | Message::ExchangeResults
                | Message::ServerResults
        )
    }

    /// Its writes, payload bytes each (0: a SYN or SYN-ACK); each write is one segment.
    pub fn writes(self, cfg: &crate::config::Iperf3Config) -> Vec<u32> {
        match self {
            Message::Syn | Message::SynAck => vec![0],
            Message::Cookie | Message::DataCookie => vec![COOKIE_BYTES],
            Message::Params => vec![LENGTH_BYTES, cfg.params_json_bytes],
            Message::TestStart => vec![STATE_BYTES, STATE_BYTES],
            Message::ClientResults => vec![LENGTH_BYTES, cfg.client_results_json_bytes],
            Message::ServerResults => {
                vec![LENGTH_BYTES, cfg.server_results_json_bytes, STATE_BYTES]
            }
            _ => vec![STATE_BYTES],
        }
    }

    /// What the receiving side does once the whole message has arrived: the message it answers
    /// with (None: it waits for something else) and what happens to the transfer.
    pub fn reaction(self) -> (Option<Message>, Effect) {
        match self {
            Message::Syn => (Some(Message::SynAck), Effect::None),
            Message::SynAck => (Some(Message::Cookie), Effect::ControlConnected),
            Message::Cookie => (Some(Message::ParamExchange), Effect::None),
            Message::ParamExchange => (Some(Message::Params), Effect::None),
            Message::Params => (Some(Message::CreateStreams), Effect::None),
            // The data connection's SYN; its cookie follows when the SYN-ACK comes back.
            Message::CreateStreams => (None, Effect::ConnectData),
            Message::DataCookie => (Some(Message::TestStart), Effect::None),
            Message::TestStart => (None, Effect::StartWriting),
            Message::TestEnd => (Some(Message::ExchangeResults), Effect::None),
            Message::ExchangeResults => (Some(Message::ClientResults), Effect::None),
            Message::ClientResults => (Some(Message::ServerResults), Effect::None),
            // iperf_client_end(): IPERF_DONE written, then exit.
            Message::ServerResults => (Some(Message::Done), Effect::Exit),
            Message::Done => (None, Effect::None),
        }
    }
}

/// What a message's arrival does to the transfer around it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Nothing.
    None,
    /// The control connection is up: its RTT sample sets the retransmission timeout.
    ControlConnected,
    /// The client connects the data connection.
    ConnectData,
    /// The client's application starts writing the transfer.
    StartWriting,
    /// The client process exits.
    Exit,
}

/// One control flow's state: the message in flight and the times the client's clock reads.
#[derive(Clone, Debug)]
pub struct Iperf3Control {
    /// Message sizes.
    pub cfg: crate::config::Iperf3Config,
    /// Whether the client has started (connected its control socket).
    pub started: bool,
    /// The messages sent so far (bit i: `Message::ALL[i]`).
    pub sent: u16,
    /// The message in flight and which of its segments have arrived (bit i: write i).
    pub in_flight: Option<(Message, u8)>,
    /// Lost segments due again: (when, message, write, retransmission count).
    pub due: Vec<(Ns, Message, u32, u64)>,
    /// When the control connection's (last) SYN left.
    pub syn_ns: Ns,
    /// When the client process started (the flow's start time).
    pub start_ns: Ns,
    /// When the data connection's SYN left.
    pub data_syn_ns: Option<Ns>,
    /// When the application started writing (TEST_RUNNING arrived).
    pub writing_ns: Option<Ns>,
    /// When the client sent TEST_END.
    pub test_end_ns: Option<Ns>,
    /// When the client process exited.
    pub exit_ns: Option<Ns>,
    /// The control connection's handshake RTT (SYN to SYN-ACK), once known.
    pub rtt_ns: Option<Ns>,
    /// Control segments retransmitted after a loss.
    pub retransmits: u64,
}

impl Iperf3Control {
    /// A client that starts at `start_ns`.
    pub fn new(cfg: crate::config::Iperf3Config, start_ns: Ns) -> Self {
        Iperf3Control {
            cfg,
            started: false,
            sent: 0,
            in_flight: None,
            due: Vec::new(),
            syn_ns: start_ns,
            start_ns,
            data_syn_ns: None,
            writing_ns: None,
            test_end_ns: None,
            exit_ns: None,
            rtt_ns: None,
            retransmits: 0,
        }
    }

    /// Segment `write` of `m` arrived; returns whether the whole message now has (TCP hands the
    /// application bytes in order, so a message is read once all its segments are in).
    pub fn arrived(&mut self, m: Message, write: u32) -> bool {
        let Some((cur, mask)) = self.in_flight.as_mut() else {
            return false;
        };
        if *cur != m {
            return false; // a duplicate of an earlier message (a spurious retransmission)
        }
        *mask |= 1 << write;
        let all = (1u8 << m.writes(&self.cfg).len()) - 1;
        if *mask == all {
            self.in_flight = None;
            return true;
        }
        false
    }

    /// The retransmission timeout of a lost control segment on its `attempt`-th retransmission
    /// (1 = the first). Before the handshake's RTT sample, Linux's initial 1 s (TCP_TIMEOUT_INIT,
    /// include/net/tcp.h); after it, the first sample's RTO: tcp_rtt_estimator() sets srtt = m,
    /// mdev = m/2, rttvar = max(4 mdev, tcp_rto_min = 200 ms), so RTO = m + max(2m, 200 ms);
    /// doubled on each retransmission (tcp_retransmit_timer()).
    pub fn rto_ns(&self, attempt: u32) -> Ns {
        let base = match self.rtt_ns {
            None => SEC,
            Some(m) => m + (2 * m).max(200 * MS),
        };
        base << attempt.saturating_sub(1).min(6)
    }

    /// Whether `m` has been sent.
    pub fn has_sent(&self, m: Message) -> bool {
        self.sent & 1 << m.index() != 0
    }

    /// `m` is sent now: it is the message in flight.
    pub fn sending(&mut self, m: Message) {
        self.sent |= 1 << m.index();
        self.in_flight = Some((m, 0));
    }

    /// Whether the client has exited.
    pub fn exited(&self) -> bool {
        self.exit_ns.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Iperf3Config;

    const CFG: Iperf3Config = Iperf3Config {
        params_json_bytes: 120,
        client_results_json_bytes: 260,
        server_results_json_bytes: 250,
    };

    #[test]
    fn each_reply_comes_from_the_other_side() {
        for m in Message::ALL {
            if let (Some(next), _) = m.reaction() {
                assert_ne!(m.from_client(), next.from_client(), "{m:?} -> {next:?}");
            }
        }
    }

    #[test]
    fn the_exchange_follows_the_order_of_the_sequence() {
        // Each answer is a later message, and the chain from the SYN reaches the data
        // connection; from the data cookie it reaches TEST_START; from TEST_END it reaches exit.
        let chain = |mut m: Message| {
            let mut seen = vec![m];
            while let (Some(next), _) = m.reaction() {
                assert!(next.index() > m.index());
                seen.push(next);
                m = next;
            }
            seen
        };
        assert_eq!(*chain(Message::Syn).last().unwrap(), Message::CreateStreams);
        assert_eq!(
            *chain(Message::DataCookie).last().unwrap(),
            Message::TestStart
        );
        assert_eq!(chain(Message::TestEnd).len(), 5);
        assert_eq!(Message::ServerResults.reaction().1, Effect::Exit);
    }

    #[test]
    fn a_message_is_read_when_all_its_writes_are_in() {
        let mut c = Iperf3Control::new(CFG, 0);
        c.in_flight = Some((Message::ServerResults, 0));
        assert_eq!(Message::ServerResults.writes(&CFG), vec![4, 250, 1]);
        assert!(!c.arrived(Message::ServerResults, 2));
        assert!(!c.arrived(Message::ServerResults, 0));
        assert!(!c.arrived(Message::Params, 1));
        assert!(c.arrived(Message::ServerResults, 1));
        assert_eq!(c.in_flight, None);
    }

    #[test]
    fn the_timeout_is_linux_initial_then_the_first_samples_and_doubles() {
        let mut c = Iperf3Control::new(CFG, 0);
        assert_eq!(c.rto_ns(1), SEC);
        assert_eq!(c.rto_ns(2), 2 * SEC);
        c.rtt_ns = Some(40 * MS);
        assert_eq!(c.rto_ns(1), 240 * MS);
        c.rtt_ns = Some(150 * MS);
        assert_eq!(c.rto_ns(1), 450 * MS);
    }
}
