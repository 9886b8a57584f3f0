/* tcplab's interactive charts: linked time panels, recovery episodes, time-sequence graphs.
   Reads the page model (#tcplab-model) and detail blobs (#blob-<key>, parsed on first zoom),
   draws with dygraphs (vendored into the page). window.tcplab exposes the charts for tests. */
(function () {
  "use strict";
  var t0 = performance.now();
  var M = JSON.parse(document.getElementById("tcplab-model").textContent);
  var PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"];
  var KIND_COLOURS = ["#222222", "#1f5fbf", "#c000c0", "#e00000", "#ff8c00"];
  var KIND_NAMES = ["segment", "TSO burst", "fractional", "retransmission", "probe"];
  var MAX_POINTS = 6000;      // per series and redraw; more are reduced to M4 buckets here
  var MAX_MARKS = 250000;     // segments drawn at once in a time-sequence graph
  var blobs = {};
  var groups = [];
  var groupColour = {};
  var charts = [];            // {g, kind: "panel"|"tseq", series: [...], id, group}
  var range = null;           // the shared x window [lo, hi] in seconds, null: whole run
  var full = [Infinity, -Infinity];
  var syncing = false;

  function cum(a, scale) {
    var out = new Float64Array(a.length), s = 0;
    for (var i = 0; i < a.length; i++) { s += a[i]; out[i] = s / scale; }
    return out;
  }
  function xy(o) { return { t: cum(o.t, 1e6), y: o.y }; }
  function blob(key) {
    if (!(key in blobs)) blobs[key] = JSON.parse(document.getElementById("blob-" + key).textContent);
    return blobs[key];
  }
  function lowerBound(a, x) { var lo = 0, hi = a.length; while (lo < hi) { var m = (lo + hi) >> 1; if (a[m] < x) lo = m + 1; else hi = m; } return lo; }
  function fmt(v) {
    if (v === null || v === undefined || isNaN(v)) return "-";
    var a = Math.abs(v);
    return a >= 1e6 ? v.toFixed(0) : a >= 100 ? v.toFixed(1) : a >= 1 ? v.toFixed(3) : v.toPrecision(3);
  }
  function addGroup(g) { if (!(g in groupColour)) { groupColour[g] = g === "sum" ? "#000000" : g === "queue" ? "#555555" : PALETTE[groups.length % PALETTE.length]; groups.push(g); } }

  // ---- series: overview, detail when zoomed, M4 in the window -----------------------------
  function prepare(s) {
    s.ovd = xy(s.ov);
    if (s.ovd.t.length) { full[0] = Math.min(full[0], s.ovd.t[0]); full[1] = Math.max(full[1], s.ovd.t[s.ovd.t.length - 1]); }
  }
  function source(s, r) {
    if (r && s.detail) {
      var span = s.ovd.t[s.ovd.t.length - 1] - s.ovd.t[0];
      if (r[1] - r[0] < 0.5 * span) { if (!s.dd) s.dd = xy(blob(s.detail)); return s.dd; }
    }
    return s.ovd;
  }
  function m4(t, y, i, j, buckets) {
    var lo = t[i], w = (t[j - 1] - lo) / buckets || 1, ot = [], oy = [], b0 = -1, first, last, mn, mx;
    function flush() { var idx = [first, mn, mx, last].sort(function (a, b) { return a - b; }); var prev = -1;
      for (var q = 0; q < 4; q++) if (idx[q] !== prev) { ot.push(t[idx[q]]); oy.push(y[idx[q]]); prev = idx[q]; } }
    for (var k = i; k < j; k++) {
      var b = Math.floor((t[k] - lo) / w);
      if (b !== b0) { if (b0 >= 0) flush(); b0 = b; first = mn = mx = last = k; continue; }
      last = k; if (y[k] < y[mn]) mn = k; if (y[k] > y[mx]) mx = k;
    }
    if (b0 >= 0) flush();
    return { t: ot, y: oy };
  }
  function windowed(s, r) {
    var src = source(s, r), t = src.t, y = src.y;
    var i = 0, j = t.length;
    if (r) { i = Math.max(0, lowerBound(t, r[0]) - 1); j = Math.min(t.length, lowerBound(t, r[1]) + 1); }
    if (j - i > MAX_POINTS) return m4(t, y, i, j, MAX_POINTS / 4);
    return { t: Array.prototype.slice.call(t, i, j), y: y.slice(i, j) };
  }
  function rows(list, r) {
    var parts = list.map(function (s) { return windowed(s, r); });
    var xs = [];
    parts.forEach(function (p) { for (var k = 0; k < p.t.length; k++) xs.push(p.t[k]); });
    xs = Float64Array.from(xs).sort();
    var ux = [];
    for (var k = 0; k < xs.length; k++) if (k === 0 || xs[k] !== xs[k - 1]) ux.push(xs[k]);
    var out = ux.map(function (x) { var row = new Array(list.length + 1).fill(null); row[0] = x; return row; });
    parts.forEach(function (p, c) {
      var q = 0;
      for (var k = 0; k < p.t.length; k++) { while (ux[q] < p.t[k]) q++; out[q][c + 1] = p.y[k]; }
    });
    if (!out.length) out.push([0].concat(list.map(function () { return null; })));
    return out;
  }

  // ---- episodes ------------------------------------------------------------------------------
  function episodesFor(c) { return M.episodes.filter(function (e) { return c.kind === "panel" || e.group === c.group; }); }
  function shade(c) {
    return function (ctx, area, g) {
      episodesFor(c).forEach(function (e) {
        if (!visibleGroup(e.group)) return;
        var x0 = g.toDomXCoord(e.start), x1 = g.toDomXCoord(e.end);
        if (x1 < area.x || x0 > area.x + area.w) return;
        ctx.fillStyle = hexAlpha(groupColour[e.group] || "#888888", e.kind === "rto" ? 0.25 : 0.13);
        ctx.fillRect(x0, area.y, Math.max(2, x1 - x0), area.h);
      });
      if (c.kind === "tseq") drawTseq(c, ctx, area, g);
    };
  }
  function hexAlpha(hex, a) {
    var n = parseInt(hex.slice(1), 16);
    return "rgba(" + (n >> 16) + "," + ((n >> 8) & 255) + "," + (n & 255) + "," + a + ")";
  }
  function episodeAt(c, x) {
    // The episode under the click: one that contains x (the shortest when they overlap), else
    // one within 4 pixels (a short episode is drawn 2 pixels wide).
    var r = c.g.xAxisRange(), pad = 4 * (r[1] - r[0]) / Math.max(1, c.g.getArea().w), best = null, bestOut = null;
    episodesFor(c).forEach(function (e) {
      if (!visibleGroup(e.group)) return;
      if (x >= e.start && x <= e.end) { if (!best || e.end - e.start < best.end - best.start) best = e; }
      else if (x >= e.start - pad && x <= e.end + pad && !bestOut) bestOut = e;
    });
    return best || bestOut;
  }
  function zoomEpisode(e) {
    var d = Math.max(e.end - e.start, 0.001), pad = Math.max(0.3 * d, 0.005);
    setRange([e.start - pad, e.end + pad]);
  }

  // ---- time-sequence marks -------------------------------------------------------------------
  function tseqData(c) {
    if (c.sends === undefined) {
      c.sends = null; c.sacks = null;
      if (c.spec.sends) { var o = blob(c.spec.sends); c.sends = { t: cum(o.t, 1e6), s: cum(o.s, 1), b: o.b, k: o.k }; }
      if (c.spec.sacks) { var q = blob(c.spec.sacks); c.sacks = { t: cum(q.t, 1e6), s: cum(q.s, 1), e: q.e }; }
    }
  }
  function visibleSpan(t, g) { var r = g.xAxisRange(); return [lowerBound(t, r[0]), lowerBound(t, r[1] + 1e-12)]; }
  function drawTseq(c, ctx, area, g) {
    tseqData(c);
    c.drawn = [0, 0, 0, 0, 0];
    c.tooMany = false;
    if (c.sacks) {
      var sp = visibleSpan(c.sacks.t, g);
      if (sp[1] - sp[0] <= MAX_MARKS) {
        ctx.strokeStyle = "rgba(150,0,200,0.45)"; ctx.lineWidth = 1; ctx.beginPath();
        for (var k = sp[0]; k < sp[1]; k++) {
          var x = g.toDomXCoord(c.sacks.t[k]) + 2;
          ctx.moveTo(x, g.toDomYCoord(c.sacks.s[k])); ctx.lineTo(x, g.toDomYCoord(c.sacks.s[k] + c.sacks.e[k]));
        }
        ctx.stroke();
      }
    }
    if (!c.sends) return;
    var s = c.sends, span = visibleSpan(s.t, g);
    if (span[1] - span[0] > MAX_MARKS) { c.tooMany = true; return; }
    for (var kind = 0; kind < 5; kind++) {
      ctx.strokeStyle = KIND_COLOURS[kind]; ctx.lineWidth = kind >= 3 ? 2 : 1; ctx.beginPath();
      for (var i = span[0]; i < span[1]; i++) {
        if (s.k[i] !== kind) continue;
        var x = g.toDomXCoord(s.t[i]), y0 = g.toDomYCoord(s.s[i]), y1 = g.toDomYCoord(s.s[i] + s.b[i]);
        ctx.moveTo(x, y0); ctx.lineTo(x, y1);
        if (y0 - y1 > 5) { ctx.moveTo(x - 2, y0); ctx.lineTo(x + 2, y0); ctx.moveTo(x - 2, y1); ctx.lineTo(x + 2, y1); }
        c.drawn[kind]++;
      }
      ctx.stroke();
    }
  }
  function nearestSend(c, x) {
    tseqData(c);
    if (!c.sends || !c.sends.t.length) return null;
    var t = c.sends.t, i = lowerBound(t, x);
    if (i >= t.length || (i > 0 && x - t[i - 1] < t[i] - x)) i--;
    return i;
  }

  // ---- charts ---------------------------------------------------------------------------------
  function visibleGroup(g) { var el = document.getElementById("toggle-" + cssId(g)); return !el || el.checked; }
  function cssId(s) { return String(s).replace(/[^A-Za-z0-9_-]/g, "_"); }
  function seriesOptions(list) {
    var o = {};
    list.forEach(function (s) {
      o[s.name] = { stepPlot: !!s.step, color: groupColour[s.group] || "#000", axis: s.axis === "y2" ? "y2" : "y",
                    strokePattern: s.dash ? [6, 3] : null, strokeWidth: s.axis === "y2" ? 1 : 1.3 };
      if (s.axis === "y2") o[s.name].color = "#d00000";
    });
    return o;
  }
  function bytesLabel(v) { var a = Math.abs(v); return a >= 1e9 ? +(v / 1e9).toPrecision(4) + " GB" : a >= 1e6 ? +(v / 1e6).toPrecision(4) + " MB" : +(v / 1e3).toPrecision(4) + " kB"; }
  function timeLabel(v, gran, opts, g) {
    // As many decimals as the window needs, so close ticks never read the same.
    var r = g.xAxisRange(), d = Math.max(0, Math.min(6, Math.ceil(-Math.log10((r[1] - r[0]) / 8))));
    return v.toFixed(d);
  }
  function unitFormatter(unit) { return function (v) { return fmt(v) + " " + unit; }; }
  function make(c, div, labelsDiv, ylabel, unit, y2label, y2unit) {
    var hasY2 = c.series.some(function (s) { return s.axis === "y2"; });
    var opts = {
      labels: ["time"].concat(c.series.map(function (s) { return s.name; })),
      xlabel: "time (s)", ylabel: ylabel, legend: "always", labelsDiv: labelsDiv, labelsSeparateLines: false,
      connectSeparatedPoints: true, animatedZooms: false, series: seriesOptions(c.series), includeZero: c.kind !== "tseq",
      dateWindow: range || full, height: c.kind === "tseq" ? 360 : 220,
      axes: { x: { valueFormatter: function (v) { return "t = " + v.toFixed(6) + " s"; }, axisLabelFormatter: timeLabel },
              y: { valueFormatter: unitFormatter(unit), axisLabelWidth: 70 } },
      underlayCallback: shade(c),
      drawCallback: function (g, initial) { if (!initial && !syncing) onUserRange(g); },
      clickCallback: function (ev, x) { var e = episodeAt(c, x); if (e) zoomEpisode(e); },
      interactionModel: Dygraph.defaultInteractionModel
    };
    if (c.kind === "tseq") { opts.axes.y.axisLabelFormatter = bytesLabel; opts.axes.y.axisLabelWidth = 80; opts.yLabelWidth = 22; }
    if (hasY2) { opts.y2label = y2label; opts.axes.y2 = { valueFormatter: unitFormatter(y2unit), independentTicks: true }; }
    if (c.kind === "tseq") {
      opts.highlightCallback = function (ev, x) { tseqReadout(c, x); };
      opts.unhighlightCallback = function () { c.readout.textContent = ""; };
    }
    if (c.series.some(function (s) { return s.edge; })) {
      c.edgeNote = el("p", { "class": "note edge-note" }, "The receive window is far above this window's data: hover to read it.");
      div.parentNode.insertBefore(c.edgeNote, div.nextSibling);
    }
    opts.valueRange = valueRange(c, range);
    c.g = new Dygraph(div, rows(c.series, range), opts);
    div.addEventListener("wheel", function (ev) { wheelZoom(c, ev); }, { passive: false });
  }
  function tseqReadout(c, x) {
    var i = nearestSend(c, x);
    if (i === null) { c.readout.textContent = ""; return; }
    var s = c.sends, mss = c.spec.mss || 0, b = s.b[i];
    c.readout.textContent = "nearest send: t = " + s.t[i].toFixed(6) + " s, seq " + s.s[i] + "–" + (s.s[i] + b) + " (" + b + " B" +
      (mss ? ", " + (b / mss).toFixed(2) + " MSS" : "") + "), " + KIND_NAMES[s.k[i]];
  }
  function wheelZoom(c, ev) {
    if (!ev.ctrlKey && !ev.altKey) return;   // plain wheel scrolls the page; Ctrl/Alt + wheel zooms
    ev.preventDefault();
    var r = c.g.xAxisRange(), x = c.g.toDataXCoord(ev.offsetX), f = ev.deltaY > 0 ? 1.25 : 0.8;
    setRange([x - (x - r[0]) * f, x + (r[1] - x) * f]);
  }
  function onUserRange(g) {
    // A zoom, pan or reset by the user on one chart: every chart follows, after this draw.
    var r = g.xAxisRange();
    var whole = r[0] <= full[0] + 1e-9 && r[1] >= full[1] - 1e-9;
    var next = whole ? null : [r[0], r[1]], cur = range;
    if ((next === null && cur === null) || (next && cur && Math.abs(next[0] - cur[0]) < 1e-12 && Math.abs(next[1] - cur[1]) < 1e-12)) return;
    setTimeout(function () { setRange(next); }, 0);
  }
  function valueRange(c, r) {
    // The y axis follows the data in the window; an "edge" series (a receive window) far above it
    // (a large buffer) is left above the chart, its value still in the read-out. Null: automatic.
    var lo = Infinity, hi = -Infinity, ehi = -Infinity, w = r || full;
    function take(v) { if (v !== null && !isNaN(v)) { if (v < lo) lo = v; if (v > hi) hi = v; } }
    var edges = c.series.filter(function (s) { return s.edge; });
    if (!edges.length && c.kind !== "tseq") return null;
    c.series.forEach(function (s, i) {
      if (c.g && !c.g.visibility()[i]) return;
      var p = windowed(s, w);
      if (s.edge) p.y.forEach(function (v) { if (v !== null && v > ehi) ehi = v; }); else p.y.forEach(take);
    });
    if (c.kind === "tseq") {
      tseqData(c);
      [c.sends, c.sacks].forEach(function (d) {
        if (!d) return;
        var a = lowerBound(d.t, w[0]), b = lowerBound(d.t, w[1]);
        for (var i = a; i < b; i++) { take(d.s[i]); take(d.s[i] + (d.b ? d.b[i] : d.e[i])); }
      });
    }
    if (!isFinite(lo)) return null;
    c.edgeAbove = ehi > hi && ehi - lo > 3 * (hi - lo);
    if (c.edgeNote) c.edgeNote.style.display = c.edgeAbove ? "" : "none";
    if (!c.edgeAbove && ehi > hi) hi = ehi;
    if (c.kind !== "tseq") lo = Math.min(0, lo);
    var pad = Math.max(1e-9, (hi - lo) * 0.05);
    return [c.kind === "tseq" ? lo - pad : lo, hi + pad];
  }
  function setRange(r) {
    if (r && r[1] <= r[0]) return;
    range = r;
    syncing = true;
    try {
      charts.forEach(function (c) {
        var o = { file: rows(c.series, range), dateWindow: range || full };
        o.valueRange = valueRange(c, range);
        c.g.updateOptions(o);
      });
    } finally { syncing = false; }
    var el = document.getElementById("range");
    if (el) el.textContent = range ? range[0].toFixed(4) + " s – " + range[1].toFixed(4) + " s" : "whole run";
  }
  function toggle(group, on) { toggleQuiet(group, on); setRange(range); }
  function toggleQuiet(group, on) {
    charts.forEach(function (c) {
      c.series.forEach(function (s, i) { if (s.group === group) c.g.setVisibility(i, on); });
      if (c.kind === "tseq" && c.group === group) c.box.style.display = on ? "" : "none";
    });
  }

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function build() {
    var root = document.getElementById("interactive");
    M.panels.forEach(function (p) { p.series.forEach(function (s) { addGroup(s.group); prepare(s); }); });
    M.tseq.forEach(function (q) { addGroup(q.group); q.lines.forEach(function (s) { s.group = q.group; prepare(s); }); });
    if (!isFinite(full[0])) full = [0, 1];
    var bar = el("div", { id: "controls" });
    bar.appendChild(el("span", {}, "Flows: "));
    groups.forEach(function (g) {
      var lab = el("label", { "class": "toggle" }), cb = el("input", { type: "checkbox", id: "toggle-" + cssId(g) });
      cb.checked = true;
      cb.addEventListener("change", function () { toggle(g, cb.checked); });
      lab.appendChild(cb); lab.appendChild(el("span", { style: "color:" + groupColour[g] }, " " + g));
      bar.appendChild(lab);
    });
    if (M.runs.length > 1) {   // a compare, peers or sweep page: one switch per run too
      var runsBar = el("div", { id: "run-toggles" });
      runsBar.appendChild(el("span", {}, "Runs: "));
      M.runs.forEach(function (r, i) {
        var mine = {};
        M.panels.forEach(function (p) { p.series.forEach(function (s) { if (s.run === i) mine[s.group] = 1; }); });
        M.tseq.forEach(function (q) { if (q.run === i) mine[q.group] = 1; });
        var lab = el("label", { "class": "toggle" }), cb = el("input", { type: "checkbox", id: "run-" + i });
        cb.checked = true;
        cb.addEventListener("change", function () {
          Object.keys(mine).forEach(function (g) { var t = document.getElementById("toggle-" + cssId(g)); if (t) t.checked = cb.checked; });
          Object.keys(mine).forEach(function (g) { toggleQuiet(g, cb.checked); });
          setRange(range);
        });
        lab.appendChild(cb); lab.appendChild(el("span", {}, " " + r.label));
        runsBar.appendChild(lab);
      });
      root.appendChild(runsBar);
    }
    var reset = el("button", { id: "reset-zoom" }, "whole run");
    reset.addEventListener("click", function () { setRange(null); });
    bar.appendChild(reset);
    bar.appendChild(el("span", { id: "range" }, "whole run"));
    root.appendChild(bar);
    root.appendChild(el("p", { "class": "hint" }, "Drag to zoom (every panel follows), shift-drag to pan, Ctrl+wheel to zoom, double-click or " +
      "\u201cwhole run\u201d to reset; click a shaded recovery episode (or one below) to zoom to it; hover for values."));
    if (M.episodes.length) {
      var list = el("div", { id: "episodes" });
      list.appendChild(el("span", {}, "Recovery episodes: "));
      M.episodes.slice(0, 300).forEach(function (e, i) {
        var b = el("button", { "class": "episode", "data-ep": String(i), style: "border-color:" + groupColour[e.group] },
                   e.group + " #" + e.n + " " + e.kind + " @" + e.start.toFixed(3) + " s");
        b.addEventListener("click", function () { zoomEpisode(e); });
        list.appendChild(b);
      });
      if (M.episodes.length > 300) list.appendChild(el("span", {}, " … " + (M.episodes.length - 300) + " more (zoom in to see them shaded)"));
      root.appendChild(list);
    }
    M.panels.forEach(function (p) {
      var box = el("div", { "class": "panel", id: "panel-" + p.id });
      box.appendChild(el("h3", {}, p.title));
      var div = el("div", { "class": "chart", id: "chart-" + p.id }), leg = el("div", { "class": "legend", id: "legend-" + p.id });
      box.appendChild(leg); box.appendChild(div);
      p.notes.forEach(function (n) { box.appendChild(el("p", { "class": "note" }, n)); });
      root.appendChild(box);
      if (!p.series.length) { div.remove(); return; }
      var c = { kind: "panel", id: p.id, series: p.series };
      make(c, div, leg, p.ylabel, p.unit, p.y2label, p.y2unit);
      charts.push(c);
    });
    var tsec = document.getElementById("tseq-section");
    M.tseq.forEach(function (q, i) {
      var box = el("div", { "class": "panel tseq", id: "tseq-" + cssId(q.group) });
      box.appendChild(el("h3", {}, q.title));
      var key = el("p", { "class": "kinds" });
      KIND_NAMES.forEach(function (n, k) { key.appendChild(el("span", { style: "color:" + KIND_COLOURS[k] }, "\u2503 " + n + "  ")); });
      key.appendChild(el("span", { style: "color:rgb(150,0,200)" }, "\u2503 SACK block"));
      box.appendChild(key);
      var leg = el("div", { "class": "legend", id: "tseq-legend-" + cssId(q.group) }), div = el("div", { "class": "chart" });
      var readout = el("div", { "class": "readout", id: "tseq-readout-" + cssId(q.group) });
      box.appendChild(leg); box.appendChild(div); box.appendChild(readout);
      q.notes.forEach(function (n) { box.appendChild(el("p", { "class": "note" }, n)); });
      (tsec || root).appendChild(box);
      var lines = q.lines;
      if (!lines.length && !q.sends) { div.remove(); return; }
      if (!lines.length) {   // dygraphs needs one series: the sends' ends, not stroked
        var o = blob(q.sends), t = o.t, y = [], s = 0;
        for (var k = 0; k < o.s.length; k++) { s += o.s[k]; y.push(s + o.b[k]); }
        lines = [{ name: "segment end", group: q.group, step: false, ov: { t: t, y: y }, detail: null }];
        prepare(lines[0]);
      }
      var c = { kind: "tseq", group: q.group, series: lines, spec: q, box: box, readout: readout };
      lines.forEach(function (s) { s.group = q.group; });
      make(c, div, leg, "sequence (bytes)", "B", null, null);
      charts.push(c);
    });
    window.tcplab = {
      charts: charts, model: M, ready: true, renderMs: performance.now() - t0,
      range: function () { return range; }, zoom: function (lo, hi) { setRange([lo, hi]); }, reset: function () { setRange(null); },
      chart: function (id) { return charts.filter(function (c) { return c.id === id; })[0]; },
      tseq: function (group) { return charts.filter(function (c) { return c.kind === "tseq" && c.group === group; })[0]; },
      visible: function (id, name) { var c = this.chart(id); var i = c.series.map(function (s) { return s.name; }).indexOf(name); return c.g.visibility()[i]; },
      marks: function (group) { var c = this.tseq(group); var out = {}; KIND_NAMES.forEach(function (n, k) { out[n] = c.drawn ? c.drawn[k] : 0; }); return out; },
      zoomEpisode: function (i) { zoomEpisode(M.episodes[i]); }
    };
  }
  if (typeof Dygraph === "undefined") {
    document.getElementById("interactive").appendChild(el("p", { "class": "bad" }, "The charting library is missing from this page."));
    return;
  }
  build();
})();
