"""The interactive charts section of tcplab's pages: the page model and detail blobs as JSON
script elements, dygraphs and tcplab's charts.js vendored inline, so every page stays one
offline file.

dygraphs (MIT), which the `dygraphs` package from PyPI carries (pinned in pyproject.toml, so the
page needs no OS package), draws on one canvas per chart: its cost is the points in the visible
window, not DOM nodes per point (SVG libraries) or a 3.5 MB bundle (plotly). With the page's M4
overview and per-window reduction in charts.js, no chart draws more than a few thousand points per
series, whatever the run's length.
"""

from __future__ import annotations

import html
from importlib import metadata
from pathlib import Path

from .panels import PageModel
from .series import script_json

#: The PyPI distribution that carries dygraphs' JavaScript (its version pinned in pyproject.toml)
#: and the library's file inside it: dygraphs 1.1.1, one file with its styles set from the script.
DYGRAPHS_DIST = "dygraphs"
DYGRAPHS_FILE = "dygraphs/assets/dygraph-combined.js"
_JS = Path(__file__).with_name("js") / "charts.js"

CSS = """
#interactive .panel{margin:1.2em 0}#interactive h3,#tseq-section h3{margin:.3em 0;font-size:1em}
.chart{width:100%}.legend{font-size:.8em;min-height:1.3em;color:#333}.legend span{margin-right:.6em}
.note{color:#8a5a00;font-size:.85em;margin:.2em 0}.hint{color:#666;font-size:.85em}
#controls{position:sticky;top:0;background:#fff;padding:.4em 0;z-index:5;border-bottom:1px solid #eee}
#controls label{margin-right:1em}#controls button{margin:0 1em}#range{color:#555;font-size:.85em}
#episodes{max-height:7em;overflow-y:auto;font-size:.8em}#episodes button{margin:.1em;border:1px solid;background:#fafafa;cursor:pointer}
.kinds{font-size:.8em;margin:.1em 0}.readout{font-size:.8em;color:#333;min-height:1.2em}
"""


def dygraphs_js() -> Path | None:
    """The library's file in the installed `dygraphs` distribution, found from its metadata, not
    by importing it (its import loads a chart builder the report does not use); None without it."""
    try:
        path = Path(metadata.distribution(DYGRAPHS_DIST).locate_file(DYGRAPHS_FILE))
    except metadata.PackageNotFoundError:
        return None
    return path if path.is_file() else None


def section(model: PageModel, title: str = "Charts") -> str:
    """The charts section: controls, linked panels, time-sequence graphs, and their scripts."""
    js = dygraphs_js()
    if js is None:  # only an install that skipped tcplab's dependencies (pip --no-deps) lands here
        return (f'<section id="charts"><h2>{html.escape(title)}</h2><p class="bad">Interactive charts need the '
                f"<code>{DYGRAPHS_DIST}</code> package, a dependency of tcplab ({DYGRAPHS_FILE} is missing): "
                f"install tcplab with its dependencies (not <code>pip --no-deps</code>), then "
                f"<code>tcplab plot RUN</code> or re-run. <code>tcplab plot RUN --what cwnd</code> draws static charts."
                f"</p></section>")
    blobs = "".join(f'<script type="application/json" id="blob-{k}">{text}</script>' for k, text in model.blobs.texts())
    tseq = '<section id="tseq-section"><h2>Time-sequence graphs</h2></section>' if model.tseq else ""
    return (f'<style>{CSS}</style><section id="charts"><h2>{html.escape(title)}</h2>'
            f'<div id="interactive"></div></section>{tseq}'
            f'<script type="application/json" id="tcplab-model">{script_json(model.as_json())}</script>{blobs}'
            f'<script>{js.read_text(encoding="utf-8")}</script><script>{_JS.read_text(encoding="utf-8")}</script>')
