"""Why the linux model disagrees with a kernel recording: the readings a recording cannot decide,
each checked by a run (`python -m tcplab.drill.explain DIR/scripts [--json OUT]`).

A recording holds the kernel's packets as the runner read them, not the kernel's own clocks, so
several things can part the model from it without a rule being wrong. Each disagreeing recording is
given the first reading a check confirms, in this order:

- `handshake-rtt`: the model agrees when its handshake RTT is the kernel's. The kernel stamps its
  SYN-ACK when it builds it, somewhere between the SYN's arrival and the runner's read of the SYN-ACK;
  the model answers at once, so its first RTT sample (and min_rtt, the pacing rate, TSO sizes,
  RACK's retransmission filter) is up to that gap longer. Checked by replaying a copy whose SYN
  arrives at the SYN-ACK's recorded time, the other end of the same range.
- `kernel-does-the-same`: replayed on the kernel target (`KERNEL_REPLAYS` times), the kernel itself
  departs from its recording at the same line the way the model does: the recording caught one
  of the kernel's outcomes at a µs edge (a timer's tick, RACK's min-RTT filter) and the model
  takes the other.
- `kernel-varies-here`: a kernel replay departs from the recording at the model's line, another
  way than the model: the kernel's own packet there is not fixed by the script (nondeterminism at
  that line), so the line cannot judge the model.
- `kernel-unstable`: the kernel fails its own recording in at least two of its replays (anywhere):
  the recording is not reproducible, as `--check-kernel` counts it (`kernel_unstable`, left out of
  the agreement there).
- `late-timer`: the model's packet is early by more than the 4 ms tolerance and at most one jiffy
  (4 ms at HZ=250) plus the gap between the model's clock phase and the runner's (1.75 ms) and the
  runner's read lag: a timer (RACK's reordering timer, the loss probe) the recording shows a jiffy
  after its tick, as a loaded machine's timer softirq can run it. (The kernel's replays on a quiet
  machine fire on the tick, within tolerance of both the model and the recording.)
- `min-rtt-edge`: the model sends nothing, or another segment, where the kernel retransmitted, and
  the kernel's min_rtt (tcp_info, read on replays cut before that line) can be below the model's:
  RACK's `tcp_rack_advance()` ignores a retransmission ACKed within min_rtt, and the kernel's min_rtt
  comes from its own transmit stamps, earlier than the recorded times by the read lag.
- `unexplained`: none of these.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .kernel import run_script as run_kernel
from .model_targets import run_script as run_model
from .parse import parse_file
from .result import Result
from .runner import RunnerError, expand
from .syntax import Script, ScriptError

KERNEL_REPLAYS = 3
TOLERANCE_S = 0.004
#: One jiffy at HZ=250, the model's half-jiffy clock phase less the runner's 0.25 ms, and up to
#: 0.75 ms of read lag: the largest lead of the model over a timer recorded a jiffy late.
LATE_TIMER_MAX_S = 0.004 + 0.00175 + 0.00075
_TIMING = re.compile(r"expected outbound packet at ([\d.]+) sec but happened at ([\d.]+) sec")
_ACTUAL = re.compile(r"actual: (.*)$")
_SYN = re.compile(r"^(\d+\.\d+) < S ")
_SYN_ACK = re.compile(r"^(\d+\.\d+) > S\. ")


@dataclass
class Explained:
    script: str
    reading: str
    model: Result
    kernel: list[Result] = field(default_factory=list)
    detail: str = ""

    def as_dict(self) -> dict:
        return {"script": self.script, "reading": self.reading, "line": self.model.line,
                "model": self.model.reason, "detail": self.detail,
                "kernel": [f"{k.result}" + (f"@{k.line}: {k.reason}" if k.result != "pass" else "")
                           for k in self.kernel]}


def handshake_variant(text: str) -> str | None:
    """The recording with its SYN arriving when the kernel's SYN-ACK was read (None: no handshake)."""
    lines = text.splitlines()
    syn = next((i for i, s in enumerate(lines) if _SYN.match(s)), None)
    ack = next((i for i, s in enumerate(lines) if _SYN_ACK.match(s)), None)
    if syn is None or ack is None:
        return None
    at = _SYN_ACK.match(lines[ack]).group(1)
    lines[syn] = at + lines[syn][len(_SYN.match(lines[syn]).group(1)):]
    return "\n".join(lines) + "\n"


def same_divergence(model: Result, kernel: Result) -> bool:
    """Whether a kernel replay failed where and as the model did: the same line, and the same
    packet sent, or (a timing error) a time within the tolerance of the model's."""
    if kernel.result != "fail" or kernel.line != model.line:
        return False
    mt, kt = _TIMING.search(model.reason), _TIMING.search(kernel.reason)
    if mt and kt:
        return abs(float(mt.group(2)) - float(kt.group(2))) <= TOLERANCE_S
    ma, ka = _ACTUAL.search(model.reason), _ACTUAL.search(kernel.reason)
    if ma and ka:
        return ma.group(1).split(" win")[0] == ka.group(1).split(" win")[0]
    return model.reason.startswith("Timed out") and (kernel.reason.startswith("Timed out") or bool(kt))


def kernel_unstable(kernel: list[Result]) -> bool:
    """Whether the kernel failed its own recording in at least two replays (diff.py's rule)."""
    return sum(k.result == "fail" for k in kernel) >= 2


def late_timer(model: Result) -> bool:
    """A timing error where the model leads the recording by more than the tolerance and at most
    a jiffy plus the phase gap and read lag."""
    m = _TIMING.search(model.reason)
    if not m:
        return False
    lead = float(m.group(1)) - float(m.group(2))
    return TOLERANCE_S < lead <= LATE_TIMER_MAX_S


def min_rtts(text: str, line: int, folder: Path) -> tuple[int, int] | None:
    """(kernel's, model's) tcpi_min_rtt in µs just before `line`, from replays of the recording cut
    there with an assertion that shows it (the kernel's the lowest of `KERNEL_REPLAYS`: it moves by
    tens of µs between replays); None when either could not be read."""
    lines = text.splitlines()[: line - 1]
    at = next((s.split()[0] for s in reversed(lines) if re.match(r"^\d+\.\d+ ", s)), None)
    if at is None:
        return None
    cut = folder / "min_rtt.pkt"
    cut.write_text("\n".join([*lines, f"{at} %{{ assert 0, tcpi_min_rtt }}%"]) + "\n")
    def value(r: Result) -> int | None:
        m = re.search(r"\(value: (\d+)\)", r.reason)
        return int(m.group(1)) if m else None

    kernel = [value(run_kernel(str(cut), parse_file(cut), 60.0)) for _ in range(KERNEL_REPLAYS)]
    kernel_min = min((v for v in kernel if v is not None), default=None)
    model = value(run_model(str(cut), parse_file(cut), "linux"))
    return None if kernel_min is None or model is None else (kernel_min, model)


def explain(script: str, parsed: Script, model: Result, target: str = "linux") -> Explained:
    """The first reading a check confirms for one disagreeing recording (module docstring)."""
    text = Path(script).read_text()
    with tempfile.TemporaryDirectory(prefix="tcplab-explain-") as tmp:
        folder = Path(tmp)
        variant = handshake_variant(text)
        if variant is not None:
            v = folder / Path(script).name
            v.write_text(variant)
            if run_model(str(v), parse_file(v), target).result == "pass":
                return Explained(script, "handshake-rtt", model)
        kernel = [run_kernel(script, parsed, 60.0) for _ in range(KERNEL_REPLAYS)]
        if any(same_divergence(model, k) for k in kernel):
            return Explained(script, "kernel-does-the-same", model, kernel)
        if any(k.result == "fail" and k.line == model.line for k in kernel):
            return Explained(script, "kernel-varies-here", model, kernel)
        if kernel_unstable(kernel):
            return Explained(script, "kernel-unstable", model, kernel)
        if late_timer(model):
            return Explained(script, "late-timer", model, kernel)
        if model.line and (model.reason.startswith("Timed out") or "tcp_seq" in model.reason):
            rtts = min_rtts(text, model.line, folder)
            if rtts and rtts[0] < rtts[1]:
                return Explained(script, "min-rtt-edge", model, kernel,
                                 f"min_rtt kernel {rtts[0]} us, model {rtts[1]} us")
        return Explained(script, "unexplained", model, kernel)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tcplab.drill.explain", description=__doc__.split("\n")[0])
    ap.add_argument("scripts", nargs="+", help="recordings (.pkt) or folders of them")
    ap.add_argument("--json", help="write the readings to this file")
    args = ap.parse_args(argv)
    out = []
    try:
        paths = expand(args.scripts)
        for p in paths:
            parsed = parse_file(p)
            model = run_model(p, parsed, "linux")
            if model.result != "fail":
                continue
            e = explain(p, parsed, model)
            out.append(e)
            print(f"{Path(p).name}\t{e.reading}\tline {model.line}\t{e.detail or model.reason[:100]}", flush=True)
    except (RunnerError, ScriptError) as err:
        print(f"tcplab.drill.explain: {err}", file=sys.stderr)
        return 2
    counts = Counter(e.reading for e in out)
    print(f"{len(paths)} recordings, {len(out)} disagree: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    if args.json:
        Path(args.json).write_text(json.dumps([e.as_dict() for e in out], indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
