//! Loss detection: the rules that decide a segment is lost, each a component beside the
//! scoreboard that reads it and marks it (after ns-3, which keeps this apart from
//! `TcpRecoveryOps`; the window's reduction is [`super::reduction`]): RFC 6675 IsLost, RACK and
//! its tail loss probes, FreeBSD's lost-retransmission detection. NewReno's rule (the head is
//! lost after dupthresh duplicate ACKs) is the scoreboard's `mark_head_lost`, called by the
//! stacks.

pub(crate) mod is_lost;
pub(crate) mod lrd;
pub(crate) mod rack;
pub(in crate::tcp::sender) mod tlp;
