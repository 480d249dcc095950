
(function () {
'use strict';
var D = JSON.parse(document.getElementById('ssdlab-data').textContent);
var COLORS = ['#1f5fa8', '#d9822b', '#2ca02c', '#9467bd', '#8c564b', '#e377c2', '#17becf', '#bcbd22', '#7f7f7f'];
var STALL = '#d62728';
// latency statistics keep their colour whatever else is shown
var STAT_COLORS = {'p50': '#1f5fa8', 'p99': '#d9822b', 'p99.9': '#2ca02c', 'max': '#d62728'};
var REVIEW_ZOOM = 1400, REVIEW_RUN = 2000, LINEAR_TOP = 40000;

function trim3(x) { return String(parseFloat(Number(x).toPrecision(3))); }
// ``v`` with an SI suffix (K, M, G, T) and ``p`` significant digits: 1403 -> 1.4K (3), 1.403K (4).
function siDigits(v, p) {
  if (v === 0) return '0';
  var a = Math.abs(v), u = [[1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'K'], [1, '']], k = 0;
  while (k < u.length - 1 && a < u[k][0]) k++;
  return String(parseFloat(Number(v / u[k][0]).toPrecision(p))) + u[k][1];
}
function si(v) { return siDigits(v, 3); }
// si() with as many significant digits (3 to 6) as ``v`` needs to read back within 0.01 %:
// the label at an axis end names the end itself (1.403K, not 1.4K).
function siExact(v) {
  for (var p = 3; p < 6; p++) {
    var t = siDigits(v, p), back = parseFloat(t) * ({T: 1e12, G: 1e9, M: 1e6, K: 1e3}[t.slice(-1)] || 1);
    if (Math.abs(back - v) <= Math.abs(v) * 1e-4) return t;
  }
  return siDigits(v, 6);
}
function fmt(v) {
  if (v === null || v === undefined || !isFinite(v)) return 'n/a';
  var a = Math.abs(v);
  if (a >= 100) return Math.round(v).toLocaleString('en-US');
  return trim3(v);
}
function esc(t) {
  return String(t).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
function niceCeil(x) {
  if (!(x > 0)) return 1;
  var e = Math.floor(Math.log10(x)), m = x / Math.pow(10, e), ms = [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 7, 8, 10];
  for (var i = 0; i < ms.length; i++) if (m <= ms[i] + 1e-9) return ms[i] * Math.pow(10, e);
  return 10 * Math.pow(10, e);
}
// Axis ticks that label both ends of the range shown (a reader takes the range off the
// labels): linear axes at multiples of a 1/2/2.5/5 step plus the two ends (a neighbour closer
// than half a step to an end gives way), log axes at every decade (the range is whole decades).
function niceStep(span, n) {
  var raw = span / Math.max(n, 1), e = Math.floor(Math.log10(raw)), ms = [1, 2, 2.5, 5, 10];
  for (var i = 0; i < ms.length; i++) if (ms[i] * Math.pow(10, e) >= raw * (1 - 1e-9)) return ms[i] * Math.pow(10, e);
  return 10 * Math.pow(10, e);
}
// The significant digits that tell ticks ``step`` apart on [a, b] (3 at least): 1,202 to 1,203
// in steps of 0.1 needs 5 (1.2021K), where 3 would label every tick 1.2K.
function stepDigits(a, b, step) {
  var top = Math.max(Math.abs(a), Math.abs(b));
  if (!(top > 0) || !(step > 0)) return 3;
  var e = Math.floor(Math.log10(step) + 1e-9), p = Math.floor(Math.log10(top) + 1e-9) - e + 1;
  if (Math.abs(step / Math.pow(10, e) - Math.round(step / Math.pow(10, e))) > 1e-6) p++;  // a 2.5 step
  return Math.min(Math.max(p, 3), 12);
}
// Interior ticks labelled with the digits their step needs, the two ends exactly (siExact).
function linearTicks(a, b, n) {
  if (!(b > a)) return [{v: a, label: siExact(a)}];
  var step = niceStep(b - a, n), eps = step * 1e-6, out = [], p = stepDigits(a, b, step);
  for (var k = Math.ceil((a - eps) / step); k * step <= b + eps; k++) {
    var v = parseFloat((k * step).toPrecision(12));
    if (v - a > step / 2 - eps && b - v > step / 2 - eps) out.push({v: v, label: siDigits(v, p)});
  }
  out.unshift({v: a, label: siExact(a)});
  out.push({v: b, label: siExact(b)});
  return out;
}
function logTicks(a, b, label) {
  var lo = Math.floor(Math.log10(a) + 1e-9), hi = Math.ceil(Math.log10(b) - 1e-9), out = [], few = hi - lo <= 2;
  for (var e = lo; e <= hi; e++) {
    var d = Math.pow(10, e);
    if (d >= a * (1 - 1e-9) && d <= b * (1 + 1e-9)) out.push({v: d, label: label(d)});
    if (e === hi) break;
    for (var m = 2; m < 10; m++) {  // minor grid lines; 2 and 5 labelled when the axis spans few decades
      var v = m * d;
      if (v > a && v < b) out.push(few && (m === 2 || m === 5) ? {v: v, label: label(v)} : {v: v});
    }
  }
  return out;
}
// dygraphs leaves out a tick at the right end of x (position 1) and at the top of y: those
// move a hair inside the range (their labels keep the exact value).
function keepEnd(ticks, b, inside) {
  ticks.forEach(function (t) { if (t.v >= b) t.v = inside; });
  return ticks;
}
// A log axis over the whole decades around [lo, hi] (positive values).
function decades(lo, hi) {
  if (!(lo > 0)) lo = 1;
  if (!(hi >= lo)) hi = lo;
  var a = Math.pow(10, Math.floor(Math.log10(lo) + 1e-9)), b = Math.pow(10, Math.ceil(Math.log10(hi) - 1e-9));
  return [a, b > a ? b : a * 10];
}
// The y range of a chart: whole decades (log), else from 0 (or below it, for negative values)
// to a nice number above the highest value.
function yRange(series, logy, x0, x1) {
  var lo = Infinity, hi = -Infinity, minPos = Infinity;
  series.forEach(function (s) {
    if (s.hidden) return;
    for (var i = 0; i < s.x.length; i++) {
      var v = s.y[i], xv = s.x[i];
      if (v === null || v === undefined || xv === null || xv < x0 || xv > x1) continue;
      if (v < lo) lo = v; if (v > hi) hi = v; if (v > 0 && v < minPos) minPos = v;
    }
  });
  if (logy) return isFinite(minPos) ? decades(minPos, Math.max(hi, minPos)) : [1, 10];
  if (!isFinite(lo)) return [0, 1];
  return [lo < 0 ? -niceCeil(-lo * 1.05) : 0, hi > 0 ? niceCeil(hi * 1.05) : 1];
}
function percentile(arr, p) {
  if (!arr.length) return 0;
  var a = arr.slice().sort(function (x, y) { return x - y; });
  var k = (a.length - 1) * p / 100, f = Math.floor(k), c = Math.min(f + 1, a.length - 1);
  return a[f] + (a[c] - a[f]) * (k - f);
}
function el(tag, attrs, text) {
  var e = document.createElement(tag);
  if (attrs) for (var k in attrs) if (attrs.hasOwnProperty(k)) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  return e;
}

/* ---------------------------------------------------------------- dygraphs glue */
// dygraphs wants rows [x, y1, y2, ...] sorted by x; series with their own x arrays are merged
// on the union of their x values (null where a series has no point).
function toRows(series) {
  var rows = [], i, k;
  if (series.every(function (s) { return s.x === series[0].x; })) {
    var xs = series.length ? series[0].x : [];
    for (i = 0; i < xs.length; i++) {
      if (xs[i] === null) continue;
      var row = [xs[i]];
      for (k = 0; k < series.length; k++) row.push(series[k].y[i] === undefined ? null : series[k].y[i]);
      rows.push(row);
    }
    return rows;
  }
  var at = new Map();
  series.forEach(function (s, k) {
    for (var i = 0; i < s.x.length; i++) {
      var xv = s.x[i];
      if (xv === null) continue;
      var row = at.get(xv);
      if (!row) { row = [xv]; for (var j = 0; j < series.length; j++) row.push(null); at.set(xv, row); rows.push(row); }
      row[k + 1] = s.y[i];
    }
  });
  rows.sort(function (a, b) { return a[0] - b[0]; });
  return rows;
}
// a zero-IOPS marker: a downward triangle whose tip is at the value (so it stays inside the plot at y=0)
function triangle(g, name, ctx, cx, cy, color) {
  ctx.beginPath(); ctx.moveTo(cx - 3.5, cy - 7); ctx.lineTo(cx + 3.5, cy - 7); ctx.lineTo(cx, cy); ctx.closePath();
  ctx.fillStyle = color; ctx.fill(); ctx.lineWidth = 0.5; ctx.strokeStyle = '#000'; ctx.stroke();
}
// marker shapes tell runs or phases apart where colours tell latency statistics apart
var SHAPES = ['circle', 'square', 'diamond', 'triangle'];
function shapeCallback(shape, hollow) {
  return function (g, name, ctx, cx, cy, color, r) {
    ctx.beginPath(); ctx.fillStyle = color; ctx.strokeStyle = color; ctx.lineWidth = 1.2;
    if (shape === 'square') ctx.rect(cx - r, cy - r, 2 * r, 2 * r);
    else if (shape === 'diamond') { r *= 1.4; ctx.moveTo(cx, cy - r); ctx.lineTo(cx + r, cy); ctx.lineTo(cx, cy + r); ctx.lineTo(cx - r, cy); ctx.closePath(); }
    else if (shape === 'triangle') { r *= 1.4; ctx.moveTo(cx, cy - r); ctx.lineTo(cx + r, cy + 0.8 * r); ctx.lineTo(cx - r, cy + 0.8 * r); ctx.closePath(); }
    else ctx.arc(cx, cy, r, 0, 2 * Math.PI);
    if (hollow) ctx.stroke(); else ctx.fill();
  };
}
// Latency statistics overlap (p99.9 often equals max or p99): drawn from the highest up, max as
// the largest hollow marker, p99.9 a size larger than p99 and p50, so each one shows around the
// one drawn over it.
var STAT_STYLE = {'max': {rank: 0, size: 2.0, hollow: true}, 'p99.9': {rank: 1, size: 1.6},
                  'p99': {rank: 2, size: 1.0}, 'p50': {rank: 3, size: 1.0}};
function statStyled(series) {
  series.forEach(function (s, i) {
    var st = s.stat && STAT_STYLE[s.stat];
    s._order = i;
    if (st) { s.size = (s.size || 1.5) * st.size; s.hollow = !!st.hollow; }
  });
  return series.sort(function (a, b) {
    var ra = a.stat && STAT_STYLE[a.stat] ? STAT_STYLE[a.stat].rank : 9, rb = b.stat && STAT_STYLE[b.stat] ? STAT_STYLE[b.stat].rank : 9;
    return ra - rb || a._order - b._order;
  });
}
function positives(ys) { return ys.map(function (v) { return v !== null && v > 0 ? v : null; }); }

// One chart block (.chart): controls, title line, the dygraph, legend, caption.
// handlers: {zoom(x0, x1) after a drag, reset() on double-click}
function Chart(root, handlers) {
  this.root = root;
  this.plot = root.querySelector('.plot');
  this.controls = root.querySelector('.controls');
  this.titleEl = root.querySelector('.ctitle .t');
  this.subEl = root.querySelector('.ctitle .s');
  this.legendEl = root.querySelector('.legend');
  this.caption = root.querySelector('.caption');
  this.h = handlers || {};
  this.g = null; this.P = null; this.renders = 0; this.kinds = {}; this.units = {};
  var self = this, t = null;
  window.addEventListener('resize', function () { clearTimeout(t); t = setTimeout(function () { if (self.g && !self.root.hidden) self.g.resize(); }, 120); });
}
Chart.prototype.group = function (label, cls) {
  var d = el('div', {'class': 'ctl' + (cls ? ' ' + cls : '')});
  d.appendChild(el('span', {'class': 'lbl'}, label));
  this.controls.appendChild(d);
  return d;
};
Chart.prototype.button = function (parent, text, role, value, on, onclick) {
  var b = el('button', {'class': 'btn' + (on ? ' on' : ''), 'type': 'button', 'data-role': role, 'data-value': String(value)}, text);
  b.setAttribute('aria-pressed', on ? 'true' : 'false');
  b.addEventListener('click', onclick);
  parent.appendChild(b);
  return b;
};
Chart.prototype.interaction = function () {
  // dygraphs' own model (drag = zoom, shift-drag = pan), but a double-click goes back to the
  // view's whole range rather than the data's extent
  var self = this, m = {}, d = Dygraph.defaultInteractionModel;
  for (var k in d) if (d.hasOwnProperty(k)) m[k] = d[k];
  m.dblclick = function (event, g, context) {
    if (context.cancelNextDblclick) { context.cancelNextDblclick = false; return; }
    if (self.h.reset) self.h.reset();
  };
  return m;
};
Chart.prototype.legendHTML = function (d) {
  var self = this, P = self.P;
  if (d.x === undefined || d.x === null || !P) return '';
  var out = [esc((P.xname || 'x') + ' ' + fmt(d.x) + (P.xunit || ''))];
  d.series.forEach(function (s) {
    if (!s.isVisible || s.y === undefined || s.y === null || isNaN(s.y)) return;
    var v = self.kinds[s.label] === 'stall' ? '0' : fmt(s.y);
    out.push('<span style="color:' + s.color + '">' + s.labelHTML + '</span>: ' + esc(v + (self.units[s.label] ? ' ' + self.units[s.label] : '')));
  });
  return out.join('<br>');
};
// P: {title, subtitle, xlabel, ylabel, xname, xunit, logy, x0, x1, y0, y1 (null: dygraphs picks),
//     connect, series: [{label, color, x, y, kind: 'scatter'|'line'|'stall', hidden, unit, size}]}
Chart.prototype.draw = function (P) {
  var self = this, labels = ['x'], colors = [], vis = [], per = {}, cols = [];
  if (!(P.x1 > P.x0)) {  // data at one x (an interrupted phase's one sample): centred in a window around it
    var half = Math.max(1, Math.abs(P.x0) * 0.05);
    P.x1 = P.x0 + half; P.x0 -= half;
  }
  self.P = P; self.kinds = {}; self.units = {};
  P.series.forEach(function (s) {
    var name = s.label;
    while (per[name]) name += '\u200b';  // dygraphs needs distinct labels
    labels.push(name); colors.push(s.color); vis.push(!s.hidden);
    self.kinds[name] = s.kind; self.units[name] = s.unit || '';
    var o;
    if (s.kind === 'line') o = {strokeWidth: 1.6, drawPoints: s.x.length <= 60, pointSize: 2};
    else if (s.kind === 'stall') o = {strokeWidth: 0, drawPoints: true, pointSize: 4, drawPointCallback: triangle, drawHighlightPointCallback: triangle};
    else o = {strokeWidth: 0, drawPoints: true, pointSize: s.size || 1.5};
    if (s.kind !== 'stall' && s.x.length <= 3) o.pointSize = Math.max(o.pointSize, 4);  // a few points: large enough to see alone
    if (s.kind !== 'stall' && ((s.shape && s.shape !== 'circle') || s.hollow)) o.drawPointCallback = o.drawHighlightPointCallback = shapeCallback(s.shape, s.hollow);
    per[name] = o;
    cols.push({x: s.x, y: P.logy && s.kind !== 'stall' ? positives(s.y) : s.y});
  });
  var rows = toRows(cols);
  if (!rows.length) { var r0 = [P.x0]; cols.forEach(function () { r0.push(null); }); rows.push(r0); }
  var o = {labels: labels, colors: colors, visibility: vis, series: per, logscale: !!P.logy,
           dateWindow: [P.x0, P.x1],
           valueRange: (P.y0 === null || P.y0 === undefined) ? null : [P.y0, P.y1],
           includeZero: !!P.includeZero, connectSeparatedPoints: !!P.connect,
           xlabel: esc(P.xlabel || ''), ylabel: esc(P.ylabel || '')};
  var xfmt = function (v) { return si(v); }, yfmt = xfmt;
  o.axes = {x: {axisLabelFormatter: xfmt, valueFormatter: fmt, pixelsPerLabel: 70,
                ticker: function (a, b, px) { return keepEnd(linearTicks(a, b, px / 70), b, b - (b - a) * 1e-9); }},
            y: {axisLabelFormatter: yfmt, valueFormatter: fmt, pixelsPerLabel: 30,
                ticker: function (a, b, px) {
                  return P.logy ? keepEnd(logTicks(a, b, yfmt), b, b * (1 - 1e-9))
                                : keepEnd(linearTicks(a, b, px / 30), b, b - (b - a) * 1e-9);
                }}};
  var wasHidden = self.root.hidden;
  self.root.hidden = false;
  if (!self.g) {
    o.legend = 'follow'; o.labelsSeparateLines = true; o.labelsShowZeroValues = true; o.animatedZooms = false;
    o.xRangePad = 0; o.axisLabelWidth = 56; o.gridLineColor = '#e4e4e4'; o.axisLineColor = '#888';
    o.highlightCircleSize = 3; o.interactionModel = self.interaction();
    o.legendFormatter = function (d) { return self.legendHTML(d); };
    o.zoomCallback = function (a, b) {
      var p = self.P, eps = Math.abs(p.x1 - p.x0) * 1e-6;
      if ((Math.abs(a - p.x0) > eps || Math.abs(b - p.x1) > eps) && self.h.zoom) self.h.zoom(a, b);
    };
    self.g = new Dygraph(self.plot, rows, o);
  } else {
    if (wasHidden) self.g.resize();
    o.file = rows;
    self.g.updateOptions(o);
  }
  if (self.titleEl) self.titleEl.textContent = P.title || '';
  if (self.subEl) self.subEl.textContent = P.subtitle || '';
  self.renders++;
  self.root.setAttribute('data-renders', String(self.renders));
  self.root.setAttribute('data-x0', String(P.x0)); self.root.setAttribute('data-x1', String(P.x1));
  self.root.setAttribute('data-scale', P.logy ? 'log' : 'linear');
  self.root.setAttribute('data-series', String(P.series.filter(function (s) { return !s.hidden && s.kind !== 'stall'; }).length));
  return self.g;
};
Chart.prototype.hide = function () { this.root.hidden = true; this.root.setAttribute('data-series', '0'); };
// items: [{label, color, marker: 'dot'|'line'|'tri'|'none', key, off}]; onToggle(key) makes entries clickable
Chart.prototype.legend = function (items, onToggle) {
  var lg = this.legendEl;
  lg.textContent = '';
  items.forEach(function (it) {
    var sp = el('span', {'class': (onToggle && it.key ? 'toggle' : '') + (it.off ? ' off' : '')});
    if (onToggle && it.key) { sp.setAttribute('data-key', it.key); sp.setAttribute('title', 'click to show or hide'); }
    var sw = el('i', {'class': it.marker || 'dot'});
    if (it.marker === 'tri') sw.style.borderTopColor = it.color; else sw.style.background = it.color;
    sp.appendChild(sw); sp.appendChild(document.createTextNode(it.label));
    if (onToggle && it.key) sp.addEventListener('click', function () { onToggle(it.key); });
    lg.appendChild(sp);
  });
};
function countIn(xs, ys, x0, x1, test) {
  var n = 0;
  for (var i = 0; i < xs.length; i++) if (xs[i] !== null && xs[i] >= x0 && xs[i] <= x1 && ys[i] !== null && test(ys[i])) n++;
  return n;
}
function highlightColumns(section, ids) {
  var tables = document.querySelectorAll('table.metrics[data-section="' + section + '"]');
  Array.prototype.forEach.call(tables, function (t) {
    Array.prototype.forEach.call(t.querySelectorAll('[data-run]'), function (c) {
      c.classList.toggle('shown', ids.indexOf(c.getAttribute('data-run')) >= 0);
    });
  });
}
function bindColumns(section, pick) {
  var tables = document.querySelectorAll('table.metrics[data-section="' + section + '"]');
  Array.prototype.forEach.call(tables, function (t) {
    Array.prototype.forEach.call(t.querySelectorAll('thead th[data-run]'), function (th) {
      var go = function () { pick(th.getAttribute('data-run')); };
      th.addEventListener('click', go);
      th.addEventListener('keydown', function (ev) { if (ev.key === 'Enter' || ev.key === ' ') { ev.preventDefault(); go(); } });
    });
  });
}
function thinNote(name, n_shown, n_total) {
  return name + ': ' + n_shown.toLocaleString('en-US') + ' of ' + n_total.toLocaleString('en-US') + ' points shown (thinned; min/max kept)';
}

/* ---------------------------------------------------------------- consistency view */
function ConsistencyView(root) {
  var groups = D.groups, runs = D.runs;
  var st = {group: 0, variant: 0, scale: 'log', zoom: 'whole', custom: null};
  var zoomTo = {zoom: function (a, b) { st.zoom = 'custom'; st.custom = [a, b]; render(); },
                reset: function () { st.zoom = 'whole'; render(); }};
  var chart = new Chart(root, zoomTo);
  // the latency and simulator-internals charts under it follow the same runs and time range
  var comps = [];
  D.companions.forEach(function (cid) {
    var r = document.getElementById('consistency-' + cid);
    if (r) comps.push({id: cid, chart: new Chart(r, zoomTo), hidden: {}});
  });
  // one y scale for every drive, as in the reviews
  var minPos = Infinity, peak = 0;
  groups.forEach(function (g) { g.runs.forEach(function (id) {
    runs[id].consistency.y.forEach(function (v) { if (v !== null && v > 0) { if (v < minPos) minPos = v; if (v > peak) peak = v; } });
  }); });
  var floor = (!isFinite(minPos) || minPos >= 1) ? 1 : Math.pow(10, Math.floor(Math.log10(minPos)) - 1);
  var logTop = Math.max(1e5, Math.pow(10, Math.ceil(Math.log10(Math.max(peak, 1) * 1.05))));
  var linCache = {};
  function shown() {
    var g = groups[st.group];
    return st.variant === 'all' ? g.runs.slice() : [g.runs[Math.min(st.variant, g.runs.length - 1)]];
  }
  function runEnd(ids) { var e = 0; ids.forEach(function (id) { e = Math.max(e, runs[id].consistency.end_s); }); return e; }
  function reviewStart(end) { return end >= REVIEW_RUN ? REVIEW_ZOOM : 0.7 * end; }
  function onsetOf(ids) {
    var o = null;
    ids.forEach(function (id) { var v = runs[id].onset_s; if (v !== null && v !== undefined && (o === null || v < o)) o = v; });
    return o;
  }
  function windowFor(ids) {
    var end = runEnd(ids);
    if (st.zoom === 'custom' && st.custom) return [st.custom[0], st.custom[1]];
    if (st.zoom === 'steady') { var o = onsetOf(ids); if (o !== null && o < end) return [o, end]; }
    if (st.zoom === 'review') return [reviewStart(end), end];
    return [0, end];
  }
  function linearTop(w) {
    var key = w[0] + ':' + w[1];
    if (linCache[key]) return linCache[key];
    var vals = [];
    groups.forEach(function (g) { g.runs.forEach(function (id) {
      var c = runs[id].consistency;
      for (var i = 0; i < c.x.length; i++) if (c.x[i] !== null && c.x[i] >= w[0] && c.x[i] < w[1] && c.y[i] !== null) vals.push(c.y[i]);
    }); });
    var p = percentile(vals, 99.5);
    return (linCache[key] = p <= LINEAR_TOP ? LINEAR_TOP : niceCeil(p));
  }
  function variantLabel() { var v = shown(); return st.variant === 'all' ? 'all' : runs[v[0]].variant; }
  function matchVariant(label) {
    if (label === 'all') return groups[st.group].runs.length > 1 ? 'all' : 0;
    var i = groups[st.group].runs.map(function (id) { return runs[id].variant; }).indexOf(label);
    return i < 0 ? 0 : i;
  }
  function build() {
    chart.controls.textContent = '';
    var g = groups[st.group];
    var dg = chart.group('Drive', 'drives');
    groups.forEach(function (gg, i) {
      chart.button(dg, gg.label, 'drive', i, i === st.group, function () {
        if (st.group !== i) { var cur = variantLabel(); st.group = i; st.variant = matchVariant(cur); if (st.zoom === 'custom') st.zoom = 'whole'; render(); }
      });
    });
    var vg = chart.group('Variant', 'variants');
    g.runs.forEach(function (id, i) {
      chart.button(vg, runs[id].variant, 'variant', i, st.variant === i, function () { st.variant = i; render(); });
    });
    if (g.runs.length > 1) chart.button(vg, 'All (overlay)', 'variant', 'all', st.variant === 'all', function () { st.variant = 'all'; render(); });
    var sg = chart.group('Scale');
    chart.button(sg, 'Log', 'scale', 'log', st.scale === 'log', function () { st.scale = 'log'; render(); });
    chart.button(sg, 'Linear', 'scale', 'linear', st.scale === 'linear', function () { st.scale = 'linear'; render(); });
    var zg = chart.group('Zoom'), ids = shown(), end = runEnd(ids), o = onsetOf(ids), rs = reviewStart(end);
    chart.button(zg, 'Whole run', 'zoom', 'whole', st.zoom === 'whole', function () { st.zoom = 'whole'; render(); });
    var sb = chart.button(zg, o !== null ? 'Steady state (t \u2265 ' + fmt(o) + ' s)' : 'Steady state', 'zoom', 'steady', st.zoom === 'steady', function () { st.zoom = 'steady'; render(); });
    if (o === null) { sb.disabled = true; sb.title = 'no steady state detected (SNIA rule)'; }
    chart.button(zg, end >= REVIEW_RUN ? 'From t=1400 s (reviews)' : 'From t=' + fmt(rs) + ' s (70% of run)', 'zoom', 'review', st.zoom === 'review', function () { st.zoom = 'review'; render(); });
    if (st.zoom === 'custom') chart.button(zg, 'Custom ' + fmt(st.custom[0]) + '\u2013' + fmt(st.custom[1]) + ' s', 'zoom', 'custom', true, function () {});
  }
  // zero-IOPS intervals as their own series, at the floor (log) or at 0 (linear)
  function stallsOf(c, logy) {
    var key = logy ? '_stallLog' : '_stallLin';
    if (!c[key]) { var at = logy ? floor : 0; c[key] = c.y.map(function (v) { return v !== null && v <= 0 ? at : null; }); }
    return c[key];
  }
  function render() {
    if (st.zoom === 'steady' && onsetOf(shown()) === null) st.zoom = 'whole';
    build();
    var ids = shown(), w = windowFor(ids), g = groups[st.group], multi = ids.length > 1;
    var logy = st.scale === 'log', top = logy ? logTop : linearTop(w);
    var interval = runs[ids[0]].consistency.interval_s;
    var series = [], legend = [], points = 0, stalls = 0, above = 0;
    ids.forEach(function (id, i) {
      var r = runs[id], c = r.consistency, color = COLORS[i % COLORS.length];
      if (!c._pos) c._pos = positives(c.y);
      series.push({label: multi ? r.variant : 'IOPS', color: color, x: c.x, y: c._pos, kind: 'scatter', unit: 'IOPS',
                   size: c.x.length > 6000 ? 1.1 : 1.5});
      if (c.zeros) series.push({label: (multi ? r.variant + ': ' : '') + '0 IOPS (stall)', color: multi ? color : STALL,
                                x: c.x, y: stallsOf(c, logy), kind: 'stall', unit: 'IOPS'});
      points += countIn(c.x, c._pos, w[0], w[1], function (v) { return logy || v <= top; });
      if (!logy) above += countIn(c.x, c._pos, w[0], w[1], function (v) { return v > top; });
      if (c.zeros) stalls += countIn(c.x, c.y, w[0], w[1], function (v) { return v <= 0; });
      if (multi) legend.push({label: r.variant, color: color});
    });
    if (!multi) legend.push({label: 'IOPS per ' + fmt(interval) + ' s interval', color: COLORS[0]});
    if (stalls) legend.push({label: '0 IOPS (stall), drawn at ' + (logy ? si(floor) : '0') + ': ' + stalls, color: multi ? '#888' : STALL, marker: 'tri'});
    if (above) legend.push({label: above + ' points above ' + si(top) + ' not shown', color: '#999', marker: 'none'});
    chart.draw({title: g.label + ' \u2014 ' + (multi ? 'all variants' : runs[ids[0]].variant),
                subtitle: (st.zoom === 'whole' ? 'whole run' : 'from t=' + fmt(w[0]) + ' s') + ', ' + st.scale + ' scale',
                xlabel: 'time (s)', ylabel: 'IOPS', xname: 't', xunit: ' s', logy: logy, x0: w[0], x1: w[1],
                y0: logy ? floor : 0, y1: top, series: series});
    chart.legend(legend);
    root.setAttribute('data-points', String(points));
    root.setAttribute('data-stalls', String(stalls));
    root.setAttribute('data-zoom', st.zoom);
    root.setAttribute('data-group', String(st.group));
    root.setAttribute('data-drive', g.label);
    root.setAttribute('data-variant', multi ? 'all' : runs[ids[0]].variant);
    root.setAttribute('data-run', ids.join(','));
    chart.caption.textContent = ids.map(function (id) { return (multi ? runs[id].variant + ': ' : '') + runs[id].facts; }).join('  |  ');
    highlightColumns('consistency', ids);
    comps.forEach(function (cp) { drawCompanion(cp, ids, w); });
  }
  function drawCompanion(cp, ids, w) {
    var have = ids.filter(function (id) { return runs[id].companions.some(function (c) { return c.id === cp.id; }); });
    if (!have.length) { cp.chart.hide(); return; }
    var multi = have.length > 1, series = [], items = [], notes = [], first = null, k = 0;
    have.forEach(function (id, ri) {
      var r = runs[id], ch = r.companions.filter(function (c) { return c.id === cp.id; })[0];
      first = first || ch;
      if (ch.n_shown < ch.n_total) notes.push(thinNote(r.name, ch.n_shown, ch.n_total));
      ch.ys.forEach(function (y) {
        var key = id + '/' + y.name, byStat = y.stat && STAT_COLORS[y.stat];
        var color = byStat ? STAT_COLORS[y.stat] : COLORS[k % COLORS.length], shape = byStat ? SHAPES[ri % SHAPES.length] : null;
        k++;
        var label = (multi ? r.variant + ' \u00b7 ' : '') + y.label;
        series.push({label: label, color: color, x: ch.x, y: y.values, kind: ch.kind, unit: y.unit, hidden: !!cp.hidden[key],
                     shape: shape, stat: y.stat, size: ch.x.length > 6000 ? 1.1 : ch.x.length > 300 ? 1.5 : 2.5});
        items.push({label: label, color: color, key: key, off: !!cp.hidden[key], marker: shape || (ch.kind === 'line' ? 'line' : 'dot')});
      });
    });
    var yr = yRange(series, first.logy, w[0], w[1]);
    cp.chart.draw({title: first.title, subtitle: (multi ? 'all variants' : runs[have[0]].variant) + (first.logy ? ', log scale' : ''),
                   xlabel: 'time (s)', ylabel: first.ylabel, xname: 't', xunit: ' s', logy: first.logy, x0: w[0], x1: w[1],
                   y0: yr[0], y1: yr[1], series: statStyled(series)});
    cp.chart.legend(items, function (key) { cp.hidden[key] = !cp.hidden[key]; drawCompanion(cp, shown(), windowFor(shown())); });
    cp.chart.root.setAttribute('data-run', have.join(','));
    cp.chart.caption.textContent = notes.join(' | ');
  }
  bindColumns('consistency', function (id) {
    var r = runs[id]; if (!r || r.group === null) return;
    st.group = r.group; st.variant = groups[r.group].runs.indexOf(id); if (st.zoom === 'custom') st.zoom = 'whole'; render();
    root.scrollIntoView({block: 'nearest'});
  });
  render();
  return {state: st, render: render, chart: chart, companions: comps};
}

/* ---------------------------------------------------------------- line view */
function LinesView(root, section) {
  var runs = D.runs, ids = section.runs;
  var first = runs[ids[0]].charts[0];
  var st = {run: 0, chart: 0, scale: first.logy ? 'log' : 'linear', custom: null, hidden: {}};
  var chart = new Chart(root, {zoom: function (a, b) { st.custom = [a, b]; render(); },
                               reset: function () { st.custom = null; render(); }});
  var nCharts = 0; ids.forEach(function (id) { nCharts = Math.max(nCharts, runs[id].charts.length); });
  function shownRuns() { return st.run === 'all' ? ids.slice() : [ids[st.run]]; }
  function charts() {
    var out = [];
    shownRuns().forEach(function (id) { var c = runs[id].charts[Math.min(st.chart, runs[id].charts.length - 1)]; if (c) out.push([id, c]); });
    return out;
  }
  function sameLabel(i) {
    var r = runs[ids[i]];
    return ids.some(function (id, j) { return j !== i && runs[id].drive === r.drive && runs[id].variant === r.variant; });
  }
  function build() {
    chart.controls.textContent = '';
    var rg = chart.group('Run', 'drives');
    ids.forEach(function (id, i) {
      var r = runs[id];
      chart.button(rg, r.drive + ' \u00b7 ' + r.variant + (ids.length > 1 && sameLabel(i) ? ' \u00b7 ' + r.name : ''), 'run', i, st.run === i, function () { st.run = i; st.custom = null; render(); });
    });
    if (ids.length > 1) chart.button(rg, 'All (overlay)', 'run', 'all', st.run === 'all', function () { st.run = 'all'; render(); });
    if (nCharts > 1) {
      var cg = chart.group('Chart');
      var titles = runs[ids[st.run === 'all' ? 0 : st.run]].charts;
      for (var k = 0; k < nCharts; k++) (function (k) {
        var t = titles[k] ? titles[k].label || titles[k].title : 'chart ' + (k + 1);
        chart.button(cg, t, 'chart', k, st.chart === k, function () {
          st.chart = k; st.custom = null; st.hidden = {};
          var c = runs[ids[st.run === 'all' ? 0 : st.run]].charts[k];
          if (c) st.scale = c.logy ? 'log' : 'linear';
          render();
        });
      })(k);
    }
    var sg = chart.group('Scale');
    chart.button(sg, 'Log', 'scale', 'log', st.scale === 'log', function () { st.scale = 'log'; render(); });
    chart.button(sg, 'Linear', 'scale', 'linear', st.scale === 'linear', function () { st.scale = 'linear'; render(); });
    var zg = chart.group('Zoom');
    chart.button(zg, 'Whole range', 'zoom', 'whole', !st.custom, function () { st.custom = null; render(); });
    if (st.custom) chart.button(zg, 'Custom ' + fmt(st.custom[0]) + '\u2013' + fmt(st.custom[1]), 'zoom', 'custom', true, function () {});
  }
  function render() {
    build();
    var cs = charts(), series = [], items = [], k = 0, groups = [], xmin = Infinity, xmax = -Infinity, ymin = Infinity, ymax = -Infinity, minPos = Infinity;
    var multiRun = cs.length > 1, logy = st.scale === 'log', nonpos = 0, points = 0;
    cs.forEach(function (pair) {
      var r = runs[pair[0]], c = pair[1];
      c.ys.forEach(function (y) {
        var key = pair[0] + '/' + y.name, xs = y.x || c.x, hidden = !!st.hidden[key], color, shape = null;
        if (y.stat && STAT_COLORS[y.stat]) {  // latency: colour = statistic, shape = phase (and run)
          var gk = pair[0] + '/' + (y.group || ''), gi = groups.indexOf(gk);
          if (gi < 0) { groups.push(gk); gi = groups.length - 1; }
          color = STAT_COLORS[y.stat]; shape = SHAPES[gi % SHAPES.length];
        } else color = COLORS[k % COLORS.length];
        k++;
        var label = (multiRun ? r.drive + ' \u00b7 ' + r.variant + ' \u00b7 ' : '') + y.label;
        series.push({label: label, color: color, x: xs, y: y.values, kind: c.kind, hidden: hidden, unit: y.unit || '',
                     shape: shape, stat: y.stat, size: xs.length > 6000 ? 1.1 : xs.length > 300 ? 1.5 : 2.5});
        items.push({label: label, color: color, key: key, off: hidden, marker: shape || (c.kind === 'line' ? 'line' : 'dot')});
        xs.forEach(function (v) { if (v !== null) { if (v < xmin) xmin = v; if (v > xmax) xmax = v; } });
        if (hidden) return;
        y.values.forEach(function (v) {
          if (v === null) return;
          if (v < ymin) ymin = v; if (v > ymax) ymax = v; if (v > 0 && v < minPos) minPos = v;
          if (v <= 0) nonpos++; else points++;
        });
      });
    });
    var floor = isFinite(minPos) ? Math.pow(10, Math.floor(Math.log10(minPos))) : 1;
    if (logy) {  // values <= 0 cannot sit on a log axis: markers at the floor, in the series' colour
      series.slice().forEach(function (s) {
        if (s.hidden || !s.y.some(function (v) { return v !== null && v <= 0; })) return;
        series.push({label: s.label + ' (\u2264 0)', color: s.color, x: s.x, kind: 'stall', unit: s.unit,
                     y: s.y.map(function (v) { return v !== null && v <= 0 ? floor : null; })});
      });
    }
    if (!isFinite(xmin)) { xmin = 0; xmax = 1; }
    if (!isFinite(ymin)) { ymin = 0; ymax = 1; }
    if (xmin > 0 && xmin <= 0.05 * xmax) xmin = 0;  // a count from zero (GB written): the axis starts at 0
    var c0 = cs[0][1], w = st.custom || [xmin, xmax];
    var yr = yRange(series, logy, w[0], w[1]), y0 = logy ? Math.min(yr[0], floor) : yr[0], y1 = yr[1];
    var ownX = series.some(function (s) { return s.x !== series[0].x; });  // series on their own x: join their points
    chart.draw({title: c0.title, subtitle: (multiRun ? 'all runs' : runs[cs[0][0]].drive + ' \u00b7 ' + runs[cs[0][0]].variant) + ', ' + st.scale + ' scale',
                xlabel: c0.xlabel, ylabel: c0.ylabel, xname: c0.xcol, xunit: '', logy: logy, x0: w[0], x1: w[1],
                y0: y0, y1: y1, series: statStyled(series), connect: multiRun || ownX});
    chart.legend(items, function (key) { st.hidden[key] = !st.hidden[key]; render(); });
    root.setAttribute('data-zoom', st.custom ? 'custom' : 'whole');
    root.setAttribute('data-run', cs.map(function (p) { return p[0]; }).join(','));
    root.setAttribute('data-chart', String(st.chart));
    root.setAttribute('data-points', String(points));
    var notes = [];
    cs.forEach(function (p) { if (p[1].n_shown < p[1].n_total) notes.push(thinNote(runs[p[0]].name, p[1].n_shown, p[1].n_total)); });
    if (logy && nonpos) notes.push(nonpos + ' values \u2264 0 drawn as \u25bc at ' + si(floor));
    chart.caption.textContent = notes.join(' | ');
    highlightColumns(section.id, cs.map(function (p) { return p[0]; }));
  }
  bindColumns(section.id, function (id) { var i = ids.indexOf(id); if (i >= 0) { st.run = i; st.custom = null; render(); } });
  render();
  return {state: st, render: render, chart: chart};
}

var views = {};
var croot = document.getElementById('consistency');
if (croot && D.groups.length) views.consistency = ConsistencyView(croot);
D.line_sections.forEach(function (sec) {
  var r = document.getElementById(sec.id);
  if (r) views[sec.id] = LinesView(r, sec);
});
window.ssdlabReport = {data: D, views: views};
document.body.setAttribute('data-ready', '1');
})();
