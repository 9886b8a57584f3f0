//! Link impairments (tcplab-impair) for the spec and the tests: a mahimahi trace's parser and
//! netem's decision sequence for a configuration and seed.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// A mahimahi trace's timestamps (ms); ValueError naming the line if malformed.
#[pyfunction]
pub(crate) fn parse_mahimahi_trace(text: &str) -> PyResult<Vec<u64>> {
    tcplab_impair::trace::parse(text).map_err(PyValueError::new_err)
}

/// netem's first `n` decisions (tcplab_impair::digest) for a NetemConfig (JSON), a seed and a
/// link delay: what a port of either backend decides for its first `n` packets.
#[pyfunction]
pub(crate) fn netem_decisions(
    config_json: &str,
    seed: u64,
    latency_ns: u64,
    n: usize,
) -> PyResult<Vec<u64>> {
    let c: tcplab_impair::NetemConfig =
        serde_json::from_str(config_json).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let mut q = tcplab_impair::Netem::new(&c, seed);
    Ok((0..n)
        .map(|_| tcplab_impair::digest(&q.decide(latency_ns)))
        .collect())
}
