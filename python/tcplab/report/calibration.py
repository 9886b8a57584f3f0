"""calibration.html: a calibration's unknowns (value, spread, identifiable or not), its observables
(measured, twin, error) and the measured run and its twin overlaid on the report's interactive
charts (the compare page's model)."""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Any

from ..store import read_json
from . import interactive
from .html import _CSS, _table
from .panels import overlay_model


def _unknowns(result: dict[str, Any]) -> str:
    rows = [[u["key"], str(u["value"]), " .. ".join(map(str, u.get("range") or u.get("one_of") or [])),
             " .. ".join(map(str, u["best_candidates"])), u.get("spread"), u["verdict"]] for u in result["unknowns"]]
    table = _table("unknowns-table", ["unknown", "value", "range or set", f"best {result['identifiability']['best_candidates']} "
                                      "candidates", "spread", "identifiable"], rows, left=6)
    lost = [u["key"] for u in result["unknowns"] if not u["identifiable"]]
    note = (f'<p class="bad">Not identifiable from the data given: {html.escape(", ".join(lost))}. Candidates '
            "spread over the range score about as well; the value shown is one of them, not a measurement.</p>"
            if lost else '<p class="ok">Every unknown is identified.</p>')
    return f'<section id="unknowns"><h2>Unknowns</h2>{table}{note}</section>'


def _observables(result: dict[str, Any]) -> str:
    rows = [[o["observable"], o["measured"], o["twin"], o["error"], o["weight"]] for o in result["observables"]]
    return ('<section id="observables"><h2>Observables</h2>'
            + _table("observables-table", ["observable", "measured", "twin", "error", "weight"], rows, left=1)
            + "<p class=\"sub\">Measured and twin: total episodes and retransmissions, else the mean over flows "
              "(throughput Mbit/s per interval, RTT p5, p50, p95 and min in ms, cwnd at loss bytes); errors as docs/calibrate.md "
              "defines them.</p></section>")


def write(out: Path, measured: Path, twin: Path, result: dict[str, Any]) -> Path:
    """out/calibration.html."""
    runs = [("measured", measured, read_json(measured / "summary.json")), ("twin", twin, read_json(twin / "summary.json"))]
    model = overlay_model(runs)
    title = html.escape(f"tcplab calibrate: {runs[0][2]['name']}")
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>{_CSS}</style></head><body>
<h1>Calibration of {html.escape(str(result['spec']))}</h1>
<p class="sub">Measured: <code>{html.escape(str(measured))}</code>; twin: <code>calibrated.toml</code> run in
<code>twin/</code>. {result['evaluations']} candidates scored ({result['runs']} simulator runs), best score
{result['best_score']}.</p>
{_unknowns(result)}
{_observables(result)}
{interactive.section(model, "Measured and twin")}
</body></html>
"""
    path = out / "calibration.html"
    tmp = out / f".calibration.html.tmp-{os.getpid()}"  # renamed when written: never half a page
    tmp.write_text(page)
    tmp.rename(path)
    return path
