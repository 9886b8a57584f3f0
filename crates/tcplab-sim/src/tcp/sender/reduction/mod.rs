//! What the window does in loss recovery, the components a stack composes (after ns-3's
//! TcpRecoveryOps): RFC 6675's send loop, Linux PRR, FreeBSD's PRR before and after review
//! D43470, rack.c's PRR in bytes. What decides a segment is lost is [`super::detection`].
//!
//! A component keeps its own episode state and works on the connection core ([`super::core::Conn`])
//! it is handed; which components a stack uses, and when, is the stack's business.

pub(super) mod freebsd_prr;
pub mod linux_prr;
pub(super) mod rack_prr;
pub(super) mod rfc6675;
