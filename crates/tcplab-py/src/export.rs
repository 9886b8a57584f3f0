//! Writing records out as the tools' own logs: SIFTR2, tcp_probe ftrace text, iperf3 -J.

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use tcplab_trace::flows::FlowKey;
use tcplab_trace::write;

pub(crate) fn column(cols: &Bound<'_, PyDict>, name: &str) -> PyResult<Vec<i64>> {
    let v = cols
        .get_item(name)?
        .ok_or_else(|| PyValueError::new_err(format!("column {name} missing")))?;
    let b: &[u8] = v.extract()?;
    Ok(b.chunks_exact(8)
        .map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect())
}

pub(crate) fn columns(cols: &Bound<'_, PyDict>, names: &[&str]) -> PyResult<Vec<Vec<i64>>> {
    names.iter().map(|n| column(cols, n)).collect()
}

pub(crate) fn write_flows(flows: &Bound<'_, PyList>) -> PyResult<Vec<write::WriteFlow>> {
    flows
        .iter()
        .map(|f| {
            let d = f.downcast::<PyDict>()?;
            let get = |k: &str| {
                d.get_item(k)?
                    .ok_or_else(|| PyValueError::new_err(format!("flow field {k} missing")))
            };
            Ok(write::WriteFlow {
                key: FlowKey {
                    laddr: get("laddr")?.extract()?,
                    lport: get("lport")?.extract()?,
                    faddr: get("faddr")?.extract()?,
                    fport: get("fport")?.extract()?,
                },
                stack: get("stack")?.extract()?,
                cc: get("cc")?.extract()?,
                mss: get("mss")?.extract()?,
            })
        })
        .collect()
}

pub(crate) fn create(path: &PathBuf) -> PyResult<BufWriter<File>> {
    File::create(path)
        .map(BufWriter::new)
        .map_err(|e| PyOSError::new_err(format!("{}: {e}", path.display())))
}

pub(crate) fn io_err(e: std::io::Error) -> PyErr {
    PyOSError::new_err(e.to_string())
}

/// Write a SIFTR2 log from time-ordered columns (see tcplab_trace::write::SiftrRows).
#[pyfunction]
pub(crate) fn write_siftr2(
    path: PathBuf,
    enable_ns: i64,
    flows: &Bound<'_, PyList>,
    cols: &Bound<'_, PyDict>,
) -> PyResult<()> {
    let c = columns(
        cols,
        &[
            "t_ns",
            "flow",
            "outbound",
            "cwnd_bytes",
            "ssthresh_bytes",
            "srtt_us",
            "rto_us",
            "flight_bytes",
            "seq",
            "ack",
            "data_bytes",
            "state",
        ],
    )?;
    let rows = write::SiftrRows {
        t_ns: &c[0],
        flow: &c[1],
        outbound: &c[2],
        cwnd_bytes: &c[3],
        ssthresh_bytes: &c[4],
        srtt_us: &c[5],
        rto_us: &c[6],
        flight_bytes: &c[7],
        seq: &c[8],
        ack: &c[9],
        data_bytes: &c[10],
        state: &c[11],
    };
    write::siftr2(&mut create(&path)?, enable_ns, &write_flows(flows)?, &rows).map_err(io_err)
}

/// Write tcp_probe ftrace text from time-ordered columns (see tcplab_trace::write::ProbeRows).
#[pyfunction]
pub(crate) fn write_tcp_probe(
    path: PathBuf,
    flows: &Bound<'_, PyList>,
    cols: &Bound<'_, PyDict>,
) -> PyResult<()> {
    let c = columns(
        cols,
        &[
            "t_ns",
            "flow",
            "cwnd_bytes",
            "ssthresh_bytes",
            "snd_una",
            "snd_nxt",
            "srtt_us",
            "change_t_ns",
            "change_flow",
            "change_state",
        ],
    )?;
    let rows = write::ProbeRows {
        t_ns: &c[0],
        flow: &c[1],
        cwnd_bytes: &c[2],
        ssthresh_bytes: &c[3],
        snd_una: &c[4],
        snd_nxt: &c[5],
        srtt_us: &c[6],
        change_t_ns: &c[7],
        change_flow: &c[8],
        change_state: &c[9],
    };
    write::tcp_probe(&mut create(&path)?, &write_flows(flows)?, &rows).map_err(io_err)
}

/// Write one flow's iperf3 -J document from its interval columns.
#[pyfunction]
pub(crate) fn write_iperf3_json(
    path: PathBuf,
    flow: &Bound<'_, PyList>,
    start_secs: i64,
    cols: &Bound<'_, PyDict>,
    bytes_received: u64,
) -> PyResult<()> {
    let c = columns(
        cols,
        &[
            "t_start_ns",
            "t_end_ns",
            "bytes",
            "retrans_segs",
            "cwnd_bytes",
            "srtt_us",
        ],
    )?;
    let rows: Vec<write::IntervalRow> = (0..c[0].len())
        .map(|i| write::IntervalRow {
            t_start_ns: c[0][i],
            t_end_ns: c[1][i],
            bytes: c[2][i],
            retrans_segs: c[3][i],
            cwnd_bytes: c[4][i],
            srtt_us: c[5][i],
        })
        .collect();
    let flows = write_flows(flow)?;
    let f = flows
        .first()
        .ok_or_else(|| PyValueError::new_err("one flow expected"))?;
    write::iperf3_json(&mut create(&path)?, f, start_secs, &rows, bytes_received).map_err(io_err)
}
