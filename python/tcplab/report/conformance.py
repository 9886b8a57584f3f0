"""report/conformance.py: the conformance page of `tcplab drill --report DIR` (index.html, in the
report's style, self-contained): per suite and target the pass / fail / unsupported counts, how
many of the scripts the kernel passes each model passes, and per script the verdict of every
target side by side (kernel first) with each model's first mismatch. Built from the rows
`tcplab drill --json` writes ({script, target, result, line, reason}); conformance.json keeps them."""

from __future__ import annotations

import html
import json
import os
from pathlib import Path
from typing import Any

from .html import _CSS

RESULTS = ("pass", "fail", "unsupported")
_CLASS = {"pass": "ok", "fail": "bad", "unsupported": "unsup"}
_MORE_CSS = ".unsup{color:#8a6d00}td.why{text-align:left;font-size:.85em;max-width:40em;overflow-wrap:anywhere}"


def suites(scripts: list[str]) -> dict[str, str]:
    """Each script's suite: its first folder below the folder all scripts share (the suite
    folder itself when they all lie in one), e.g. linux-selftests, google."""
    parents = [os.path.dirname(os.path.abspath(s)) for s in scripts]
    root = os.path.commonpath(parents) if parents else ""
    out = {}
    for s, parent in zip(scripts, parents):
        rel = os.path.relpath(parent, root)
        out[s] = os.path.basename(root) if rel == "." else rel.split(os.sep)[0]
    return out


def targets(rows: list[dict[str, Any]]) -> list[str]:
    """The targets in the order given, the kernel first (the reference the models are read against)."""
    seen = list(dict.fromkeys(r["target"] for r in rows))
    return sorted(seen, key=lambda t: t != "kernel")


def counts(rows: list[dict[str, Any]], groups: dict[str, str] | None = None) -> dict[tuple[str, str], dict[str, int]]:
    """(suite, target) -> {pass, fail, unsupported}; `groups` names each script's suite (else suites())."""
    suite = groups or suites(list(dict.fromkeys(r["script"] for r in rows)))
    out: dict[tuple[str, str], dict[str, int]] = {}
    for r in rows:
        cell = out.setdefault((suite[r["script"]], r["target"]), dict.fromkeys(RESULTS, 0))
        cell[r["result"]] += 1
    return out


def _verdict(r: dict[str, Any] | None) -> str:
    if r is None:
        return "<td>-</td>"
    line = "" if r["line"] is None else f" (line {r['line']})"
    return f'<td class="l {_CLASS[r["result"]]}" title="{html.escape(r["reason"])}">{r["result"]}{line}</td>'


def _counts_table(rows: list[dict[str, Any]], order: list[str], groups: dict[str, str] | None) -> str:
    c = counts(rows, groups)
    names = list(dict.fromkeys(s for s, _ in c))
    head = '<th class="l">suite (scripts)</th>' + "".join(f"<th>{html.escape(t)}<br>pass / fail / unsupported</th>" for t in order)
    body = ""
    for s in names:
        n = max(sum(c[(s, t)].values()) for t in order if (s, t) in c)
        cells = "".join(f"<td>{' / '.join(str(c[(s, t)][k]) for k in RESULTS)}</td>" if (s, t) in c else "<td>-</td>"
                        for t in order)
        body += f'<tr><td class="l">{html.escape(s)} ({n})</td>{cells}</tr>'
    return f'<table id="counts"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _agreement(by: dict[str, dict[str, dict[str, Any]]], order: list[str]) -> str:
    """Of the scripts the kernel passes, how many each model passes, fails, cannot run."""
    if "kernel" not in order:
        return ""
    passed = [s for s, v in by.items() if v.get("kernel", {}).get("result") == "pass"]
    items = []
    for t in order[1:]:
        got = [by[s][t]["result"] for s in passed if t in by[s]]
        items.append(f"<li>{html.escape(t)}: of the {len(passed)} scripts the kernel passes, "
                     + ", ".join(f"{got.count(k)} {k}" for k in RESULTS) + "</li>")
    return f'<ul id="agreement">{"".join(items)}</ul>'


def _script_table(by: dict[str, dict[str, dict[str, Any]]], order: list[str]) -> str:
    parents = {os.path.dirname(os.path.abspath(s)) for s in by}
    root = os.path.commonpath(sorted(parents)) if parents else ""
    root = os.path.dirname(root) if len(parents) == 1 else root  # the suite's folder name stays in view
    head = '<th class="l">script</th>' + "".join(f"<th class=\"l\">{html.escape(t)}</th>" for t in order) + \
        '<th class="l">first mismatch / what is missing</th>'
    body = ""
    for script, v in by.items():
        why = "; ".join(f"{t}: {v[t]['reason']}" for t in order if t in v and v[t]["result"] != "pass"
                        and (t != "kernel" or v[t]["result"] == "fail"))
        name = os.path.relpath(os.path.abspath(script), root) if root else script
        body += (f'<tr><td class="l" title="{html.escape(script)}">{html.escape(name)}</td>' + "".join(_verdict(v.get(t)) for t in order)
                 + f'<td class="why">{html.escape(why)}</td></tr>')
    return f'<table id="scripts"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def page(rows: list[dict[str, Any]], title: str = "packetdrill conformance", groups: dict[str, str] | None = None) -> str:
    """The HTML page for `rows`; `groups`: each script's suite, where its folder does not say it."""
    order = targets(rows)
    by: dict[str, dict[str, dict[str, Any]]] = {}
    for r in rows:
        by.setdefault(r["script"], {})[r["target"]] = r
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>tcplab: {html.escape(title)}</title>
<style>{_CSS}{_MORE_CSS}</style></head><body>
<h1>{html.escape(title)}</h1>
<p class="sub">{len(by)} scripts on {len(order)} targets ({html.escape(", ".join(order))}). Per script and target:
pass, fail (the first mismatch: its line and what differed) or unsupported (what the target cannot run, and
where). The kernel is this machine's, run as packetdrill runs it; the others are tcplab's stack models.</p>
<h2>Per suite</h2>
{_counts_table(rows, order, groups)}
{_agreement(by, order)}
<h2>Per script</h2>
{_script_table(by, order)}
</body></html>
"""


def write(out_dir: Path, rows: list[dict[str, Any]], title: str = "packetdrill conformance",
          groups: dict[str, str] | None = None) -> Path:
    """out_dir/index.html and out_dir/conformance.json (the rows); the page's path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "conformance.json").write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    path = out_dir / "index.html"
    path.write_text(page(rows, title, groups), encoding="utf-8")
    return path
