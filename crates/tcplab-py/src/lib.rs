//! PyO3 bindings of tcplab-sim and tcplab-trace. No logic lives here: only conversion to and
//! from Python, by domain (as polars' binding crate is split): running a simulation (`run`),
//! importing logs (`import`) and writing them (`export`), what the simulator offers
//! (`options`), link impairments (`impair`), user-written congestion control (`pycc`), a packetdrill script's model endpoint
//! (`drill`).

mod drill;
mod drill_linux_rx;
mod drill_rx;
mod export;
mod impair;
mod import;
mod options;
mod pycc;
mod run;
mod tables;

use pyo3::prelude::*;

/// The netns backend's link emulator (tcplab-linkem), run in this process until SIGTERM/SIGINT:
/// `python -m tcplab.linkem ARGS`. Returns its exit status. Carried here so that an installed
/// wheel has every backend without a separate binary.
#[pyfunction]
fn linkem_main(py: Python<'_>, args: Vec<String>) -> i32 {
    py.allow_threads(|| tcplab_linkem::run(args))
}

/// The native module `tcplab._native`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<run::Simulation>()?;
    m.add_class::<import::Importer>()?;
    m.add_class::<pycc::CcState>()?;
    m.add_class::<drill::DrillEndpoint>()?;
    m.add_class::<drill_linux_rx::DrillLinuxReceiver>()?;
    m.add_class::<drill_rx::DrillReceiver>()?;
    m.add_class::<drill_rx::DrillOpen>()?;
    m.add_function(wrap_pyfunction!(import::detect_format, m)?)?;
    m.add_function(wrap_pyfunction!(linkem_main, m)?)?;
    m.add_function(wrap_pyfunction!(impair::parse_mahimahi_trace, m)?)?;
    m.add_function(wrap_pyfunction!(impair::netem_decisions, m)?)?;
    m.add_function(wrap_pyfunction!(import::origin_ns, m)?)?;
    m.add_function(wrap_pyfunction!(export::write_siftr2, m)?)?;
    m.add_function(wrap_pyfunction!(export::write_tcp_probe, m)?)?;
    m.add_function(wrap_pyfunction!(export::write_iperf3_json, m)?)?;
    m.add_function(wrap_pyfunction!(import::import_formats, m)?)?;
    m.add_function(wrap_pyfunction!(import::parse_tcp_probe_line, m)?)?;
    m.add_function(wrap_pyfunction!(options::algorithms, m)?)?;
    m.add_function(wrap_pyfunction!(options::algorithms_for, m)?)?;
    m.add_function(wrap_pyfunction!(options::stacks, m)?)?;
    m.add_function(wrap_pyfunction!(run::histogram_quantiles, m)?)?;
    m.add_function(wrap_pyfunction!(options::stack_options, m)?)?;
    m.add_function(wrap_pyfunction!(options::record_contract, m)?)?;
    Ok(())
}
