"""The sizes of iperf3's control-connection JSON for a flow, as iperf3 3.12 prints it
(cJSON_PrintUnformatted() in JSON_write(), src/iperf_api.c @ e61aaf8c95df956cefbc54fab7b3d78914664180):
the simulator's model of the control exchange (tcplab-sim net/iperf3.rs) sends segments this size."""

from __future__ import annotations

import json

from ..model import Flow

#: The version string the client sends (send_parameters(): "client_version", IPERF_VERSION).
CLIENT_VERSION = "3.12"
#: cJSON prints a double as "%1.15g", or "%1.17g" when that does not read back (print_number()):
#: a CPU share such as 83.605842598648351 (measured: `iperf3 --debug`) takes 18 characters.
_CPU_SHARE = "83.605842598648351"
#: The server's "-1" fields (a receiver's retransmits) go through an unsigned cast and print as
#: 1.8446744073709552e+19 (measured with iperf3 3.12 --debug).
_MINUS_ONE = "1.8446744073709552e+19"


def _compact(d: dict) -> int:
    return len(json.dumps(d, separators=(",", ":")))


def params_bytes(f: Flow) -> int:
    """send_parameters() for the client the kernel backends run (backends/shared.py
    `client_args`: -C cc, -l write, -n bytes), in its key order."""
    d = {"tcp": True, "omit": 0, "time": 0, "num": f.app.bytes, "blockcount": 0, "parallel": 1,
         "len": f.write_bytes, "pacing_timer": 1000, "congestion": f.cc_model, "client_version": CLIENT_VERSION}
    return _compact(d)


def _results(f: Flow, sender: bool) -> int:
    """send_results(): CPU shares, retransmit flag, congestion module, one stream. The numbers a
    run produces are not known before it: the byte count is the transfer's, the floats of their
    typical printed length."""
    flag = 1 if sender else 0
    stream = {"id": 1, "bytes": f.app.bytes, "retransmits": flag, "jitter": 0, "errors": 0, "packets": 0,
              "start_time": 0, "end_time": 0}
    d = {"cpu_util_total": 0, "cpu_util_user": 0, "cpu_util_system": 0, "sender_has_retransmits": flag,
         "congestion_used": f.cc_model, "streams": [stream]}
    # Replace the placeholders' lengths: three CPU shares, an end time like 1.234567, and on the
    # server (the receiver) two -1 fields printed as an unsigned 64-bit number.
    extra = 3 * (len(_CPU_SHARE) - 1) + len("1.234567") - 1
    if not sender:
        extra += 2 * (len(_MINUS_ONE) - 1)
    return _compact(d) + extra


def config(f: Flow) -> dict[str, int]:
    """The simulator's `iperf3` entry of a flow (tcplab-sim config.rs `Iperf3Config`)."""
    return {"params_json_bytes": params_bytes(f), "client_results_json_bytes": _results(f, True),
            "server_results_json_bytes": _results(f, False)}
