//! What a parser writes into (the import's records and flows, and where its log lies on the
//! run's time axis): a module of its own so the parsers and the import that drives them do not
//! import each other.

use crate::flows::FlowTable;
use crate::lines::ParseError;
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

/// Malformed lines (packets, intervals) of one log: fatal in a strict import; in a lenient one
/// skipped, counted, and the first few errors kept for the report.
#[derive(Debug, Clone, Default)]
pub struct Skipped {
    /// Whether bad input is skipped (counted) rather than fatal.
    pub lenient: bool,
    /// How many were skipped.
    pub count: u64,
    /// The first few skipped ones' errors.
    pub first: Vec<String>,
}

impl Skipped {
    /// Errors kept for the report.
    const KEPT: usize = 5;

    /// Strict or lenient (`lenient`), nothing skipped yet.
    pub fn new(lenient: bool) -> Self {
        Skipped {
            lenient,
            ..Skipped::default()
        }
    }

    /// `e` skipped and counted when lenient; returned (to stop the import) when strict.
    pub fn skip(&mut self, e: ParseError) -> Result<(), ParseError> {
        if !self.lenient {
            return Err(e);
        }
        self.count += 1;
        if self.first.len() < Self::KEPT {
            self.first.push(e.to_string());
        }
        Ok(())
    }
}
