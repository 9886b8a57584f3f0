//! What a parser writes into (the import's records and flows, and where its log lies on the
//! run's time axis): a module of its own so the parsers and the import that drives them do not
//! import each other.

use crate::flows::FlowTable;
use crate::records::Recorder;

/// What parsers write into.
pub struct Ctx<'a> {
    /// Records.
    pub rec: &'a mut Recorder,
    /// Flows of the import.
    pub flows: &'a mut FlowTable,
    /// Derived interval length, ns.
    pub interval_ns: i64,
    /// Added to this log's times: where its origin lies on the run's time axis.
    pub offset_ns: i64,
}
