//! What the simulator offers, for the spec to check against: CC algorithms per stack, stacks
//! and their knobs, and the records' contract.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// Congestion-control algorithms the simulator knows.
#[pyfunction]
pub(crate) fn algorithms() -> Vec<&'static str> {
    tcplab_sim::cc::ALGORITHMS.to_vec()
}

/// The algorithms a stack offers (the Linux modules only on `linux`).
#[pyfunction]
pub(crate) fn algorithms_for(stack: &str) -> PyResult<Vec<&'static str>> {
    let profile = tcplab_sim::stack::profile(stack)
        .ok_or_else(|| PyValueError::new_err(format!("unknown stack {stack:?}")))?;
    Ok(tcplab_sim::cc::algorithms_for(profile.cc_family))
}

/// Stack profiles the simulator knows.
#[pyfunction]
pub(crate) fn stacks() -> Vec<&'static str> {
    tcplab_sim::stack::PROFILES.to_vec()
}

pub(crate) fn knob_value<'py>(
    py: Python<'py>,
    v: tcplab_sim::stack::KnobValue,
) -> PyResult<Bound<'py, PyAny>> {
    use tcplab_sim::stack::KnobValue;
    Ok(match v {
        KnobValue::Bool(b) => b.into_pyobject(py)?.to_owned().into_any(),
        KnobValue::Int(i) => i.into_pyobject(py)?.into_any(),
        KnobValue::Text(t) => t.into_pyobject(py)?.into_any(),
    })
}

/// Per stack, the knobs a flow may set: {stack: {knob: {"default": value, "allowed": [values]
/// or None (any value of the type), "doc": str}}}.
#[pyfunction]
pub(crate) fn stack_options(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let out = PyDict::new(py);
    for &name in tcplab_sim::stack::PROFILES {
        let knobs = PyDict::new(py);
        for k in tcplab_sim::stack::options(name).unwrap_or_default() {
            let d = PyDict::new(py);
            d.set_item("default", knob_value(py, k.default)?)?;
            if k.allowed.is_empty() {
                d.set_item("allowed", py.None())?;
            } else {
                let allowed = k
                    .allowed
                    .iter()
                    .map(|&v| knob_value(py, v))
                    .collect::<PyResult<Vec<_>>>()?;
                d.set_item("allowed", PyList::new(py, allowed)?)?;
            }
            d.set_item("doc", k.doc)?;
            if k.name == "version" {
                // Per version, the defaults it sets for other keys (stack.rs version_defaults).
                let per = PyDict::new(py);
                for v in &k.allowed {
                    let tcplab_sim::stack::KnobValue::Text(v) = *v else {
                        continue;
                    };
                    let dd = PyDict::new(py);
                    for (key, val) in tcplab_sim::stack::version_defaults(name, v) {
                        dd.set_item(key, knob_value(py, val)?)?;
                    }
                    per.set_item(v, dd)?;
                }
                d.set_item("defaults", per)?;
            }
            knobs.set_item(k.name, d)?;
        }
        out.set_item(name, knobs)?;
    }
    Ok(out)
}

/// The records' contract: {"tables": {table: [columns]}, "events": {name: code},
/// "states": {name: code}} as tcplab-trace and the simulator write them.
#[pyfunction]
pub(crate) fn record_contract(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    use tcplab_trace::records as r;
    let tables = PyDict::new(py);
    for (name, cols) in [
        ("flows", r::FLOW_COLUMNS),
        ("intervals", r::INTERVAL_COLUMNS),
        ("queues", r::QUEUE_COLUMNS),
        ("ports", r::PORT_COLUMNS),
        ("events", r::EVENT_COLUMNS),
        ("sends", r::SEND_COLUMNS),
        ("acks", r::ACK_COLUMNS),
        ("probes", r::PROBE_COLUMNS),
    ] {
        tables.set_item(name, cols.to_vec())?;
    }
    let events = PyDict::new(py);
    for e in tcplab_sim::tcp::sender::SenderEvent::ALL {
        events.set_item(e.name(), e.code())?;
    }
    let states = PyDict::new(py);
    use tcplab_trace::flows::{LOSS, OPEN, RECOVERY};
    for (name, code) in [("open", OPEN), ("recovery", RECOVERY), ("loss", LOSS)] {
        states.set_item(name, code)?;
    }
    let d = PyDict::new(py);
    d.set_item("tables", tables)?;
    d.set_item("events", events)?;
    d.set_item("states", states)?;
    Ok(d)
}
