// Hover details; a zoom that widens a short run's timeline inside its scroll box; and a long run's
// overview, drawn here from the data the page carries, which zooms by dragging across it.
(function () {
  "use strict";
  var tip = document.getElementById("tip");
  document.addEventListener("mouseover", function (ev) {
    var el = ev.target.closest ? ev.target.closest("[data-tip]") : null;
    if (!el) { tip.style.display = "none"; return; }
    tip.textContent = el.getAttribute("data-tip");
    tip.style.display = "block";
  });
  document.addEventListener("mousemove", function (ev) {
    if (tip.style.display !== "block") { return; }
    var x = ev.clientX + 14, y = ev.clientY + 14;
    if (x + tip.offsetWidth > window.innerWidth) { x = ev.clientX - tip.offsetWidth - 10; }
    if (y + tip.offsetHeight > window.innerHeight) { y = ev.clientY - tip.offsetHeight - 10; }
    tip.style.left = x + "px";
    tip.style.top = y + "px";
  });
  var zoom = document.getElementById("zoom");
  var svg = document.getElementById("timeline");
  if (zoom && svg) {
    zoom.addEventListener("input", function () { svg.style.width = zoom.value + "%"; });
  }

  var overview = drawOverview();

  // What rendered, for whoever checks the page (the headless browser test reads this).
  document.body.setAttribute("data-rendered", JSON.stringify({
    holds: document.querySelectorAll("svg.timeline .hold").length,
    overlaps: document.querySelectorAll("svg.timeline .overlap").length,
    faults: document.querySelectorAll("svg.timeline .fault").length,
    accesses: document.querySelectorAll("svg.timeline .acc").length,
    windows: document.querySelectorAll("svg.timeline").length,
    plots: document.querySelectorAll("svg.plot").length,
    overview: overview
  }));

  // The overview of a long run (report/overview.go has the data's shape).
  function drawOverview() {
    var box = document.getElementById("overview-box");
    var src = document.getElementById("overview-data");
    if (!box || !src) { return null; }
    var d = JSON.parse(src.textContent);
    var W = 1200, L = 92, R = 14, AXIS = 22, FAULT_ROW = 11, MARK_ROW = 14, LANE = 22;
    var maxHolds = 2500, bins = 552;
    var state = {from: 0, to: d.span};
    var drawn = {};

    function x(t) { return L + (W - L - R) * Math.max(0, Math.min(1, (t - state.from) / Math.max(state.to - state.from, 1))); }
    function t(px) { return state.from + (px - L) / (W - L - R) * (state.to - state.from); }
    function secs(u) { return (u * d.unit / 1e9); }
    function when(u) {
      var s = secs(u);
      if (s >= 60) { var m = Math.floor(s / 60); return m + "m" + (s - 60 * m).toFixed(2).padStart(5, "0") + "s"; }
      return s.toFixed(3) + "s";
    }
    function esc(s) { return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;"); }
    function niceStep(span, n) {
      var raw = span / n, p = Math.pow(10, Math.floor(Math.log10(raw)));
      var ms = [1, 2, 5, 10];
      for (var i = 0; i < ms.length; i++) { if (ms[i] * p >= raw) { return ms[i] * p; } }
      return 10 * p;
    }
    // first index i of a start/end pair list whose end is >= from (pairs sorted by start, and a
    // client's holds do not overlap, so ends are sorted too).
    function firstPair(a, from) {
      var lo = 0, hi = a.length / 2;
      while (lo < hi) { var mid = (lo + hi) >> 1; if (a[2 * mid + 1] < from) { lo = mid + 1; } else { hi = mid; } }
      return lo;
    }

    function render() {
      var from = state.from, to = state.to, rows = d.kinds.length;
      var markY = AXIS + rows * FAULT_ROW + 4, lanesTop = markY + MARK_ROW + 6;
      var H = lanesTop + d.clients.length * LANE + 4;
      var out = [];
      out.push('<svg id="overview" viewBox="0 0 ' + W + " " + H + '" xmlns="http://www.w3.org/2000/svg" role="img" aria-label="overview of the run">');
      // Axis.
      var step = niceStep(to - from, 12);
      for (var tk = Math.ceil(from / step) * step; tk <= to; tk += step) {
        var tx = x(tk).toFixed(1);
        out.push('<line class="grid" x1="' + tx + '" x2="' + tx + '" y1="' + AXIS + '" y2="' + H + '"/>');
        out.push('<text class="tick" x="' + tx + '" y="14" text-anchor="middle">' + when(tk) + "</text>");
      }
      // Fault rows, one per kind.
      d.kinds.forEach(function (k, i) {
        out.push('<text class="reg-name" x="' + (L - 6) + '" y="' + (AXIS + i * FAULT_ROW + 8) + '" text-anchor="end">' + esc(k.Kind) + "</text>");
      });
      var faults = 0;
      d.faults.forEach(function (f) {
        if (f[1] < from || f[0] > to) { return; }
        faults++;
        var x0 = x(f[0]), w = Math.max(x(f[1]) - x0, 1.5), y = AXIS + f[2] * FAULT_ROW;
        var tipText = f[3] + "\nfrom " + when(f[0]) + " to " + when(f[1]) + (f[4] ? "\n(click: its detail window)" : "");
        var rect = '<rect class="fault-mark" x="' + x0.toFixed(2) + '" y="' + y + '" width="' + w.toFixed(2) + '" height="' + (FAULT_ROW - 2) +
          '" fill="' + d.kinds[f[2]].Color + '" data-tip="' + esc(tipText) + '"/>';
        out.push(f[4] ? '<a href="#' + f[4] + '">' + rect + "</a>" : rect);
      });
      // Double ownership.
      out.push('<text class="lane-name" x="8" y="' + (markY + 10) + '">2+ holders</text>');
      var overlaps = 0;
      d.overlaps.forEach(function (o) {
        if (o[1] < from || o[0] > to) { return; }
        overlaps++;
        var x0 = x(o[0]), w = Math.max(x(o[1]) - x0, 2);
        var tipText = "DOUBLE OWNERSHIP\n" + o[2] + " and " + o[3] + " both believed they held the lock\n" + when(o[0]) + " → " + when(o[1]) + " (" + o[4] + ")" +
          (o[6] ? "\n" + o[6].toUpperCase() + ": " + o[7] : "") + (o[5] ? "\n(click: its detail window)" : "");
        var rect = '<rect class="overlap-mark ' + (o[6] || "") + '" x="' + x0.toFixed(2) + '" y="' + (markY + 1) + '" width="' + w.toFixed(2) + '" height="' + (MARK_ROW - 2) + '" data-tip="' + esc(tipText) + '"/>';
        out.push(o[5] ? '<a href="#' + o[5] + '">' + rect + "</a>" : rect);
      });
      // Lanes: the holds one by one when few enough are in view, else how much of each slice of
      // time each client held the lock.
      var visible = 0, firsts = [];
      d.holds.forEach(function (h, c) {
        var i = firstPair(h, from);
        firsts[c] = i;
        for (; i < h.length / 2 && h[2 * i] <= to && visible <= maxHolds; i++) { visible++; }
      });
      var single = visible <= maxHolds, holds = 0;
      d.clients.forEach(function (c, ci) {
        var y = lanesTop + ci * LANE, h = d.holds[ci];
        if (ci % 2 === 0) { out.push('<rect class="lane-bg" x="0" y="' + (y - 3) + '" width="' + W + '" height="' + LANE + '"/>'); }
        out.push('<text class="lane-name" x="8" y="' + (y + 12) + '">' + esc(c) + "</text>");
        var i = firsts[ci];
        if (single) {
          for (; i < h.length / 2 && h[2 * i] <= to; i++) {
            var s = h[2 * i], e = h[2 * i + 1], x0 = x(s);
            holds++;
            out.push('<rect class="hold" x="' + x0.toFixed(2) + '" y="' + y + '" width="' + Math.max(x(e) - x0, 1).toFixed(2) + '" height="16" rx="2" data-tip="' +
              esc(c + " believed it held the lock\n" + when(s) + " → " + when(e)) + '"/>');
          }
          return;
        }
        var frac = new Float64Array(bins), width = (to - from) / bins;
        for (; i < h.length / 2 && h[2 * i] <= to; i++) {
          var a = Math.max(h[2 * i], from), b = Math.min(h[2 * i + 1], to);
          for (var k = Math.floor((a - from) / width); k < bins && from + k * width < b; k++) {
            var lo = Math.max(a, from + k * width), hi = Math.min(b, from + (k + 1) * width);
            if (hi > lo) { frac[k] += (hi - lo) / width; }
          }
        }
        var path = [];
        var bw = (W - L - R) / bins;
        for (var k2 = 0; k2 < bins; k2++) {
          var f = Math.min(frac[k2], 1);
          if (f > 0.002) { path.push("M" + (L + k2 * bw).toFixed(1) + " " + (y + 16 * (1 - f)).toFixed(1) + "h" + bw.toFixed(2) + "v" + (16 * f).toFixed(1) + "h-" + bw.toFixed(2) + "z"); }
        }
        out.push('<path class="occupancy" d="' + path.join("") + '" data-tip="' + esc(c + ": the height is the share of each slice of time it believed it held the lock; drag across the overview to zoom in") + '"/>');
      });
      out.push('<rect id="overview-sel" x="0" y="' + AXIS + '" width="0" height="' + (H - AXIS) + '"/>');
      out.push("</svg>");
      box.innerHTML = out.join("");
      var label = document.getElementById("overview-range");
      if (label) { label.textContent = when(from) + " – " + when(to) + (single ? " · holds drawn one by one" : " · share of time held"); }
      drawn = {holds: holds, overlaps: overlaps, faults: faults, single: single};
      box.setAttribute("data-drawn", JSON.stringify(drawn));
      return drawn;
    }

    // Drag across the overview to zoom in; the buttons zoom out and reset.
    var dragFrom = null;
    function svgX(ev) {
      var s = document.getElementById("overview");
      var rect = s.getBoundingClientRect();
      return (ev.clientX - rect.left) / rect.width * W;
    }
    box.addEventListener("mousedown", function (ev) { dragFrom = svgX(ev); ev.preventDefault(); });
    box.addEventListener("mousemove", function (ev) {
      if (dragFrom === null) { return; }
      var sel = document.getElementById("overview-sel"), x1 = svgX(ev);
      sel.setAttribute("x", Math.min(dragFrom, x1));
      sel.setAttribute("width", Math.abs(x1 - dragFrom));
    });
    document.addEventListener("mouseup", function (ev) {
      if (dragFrom === null) { return; }
      var a = dragFrom, b = svgX(ev);
      dragFrom = null;
      if (Math.abs(b - a) < 4) { render(); return; }
      zoomTo(t(Math.min(a, b)), t(Math.max(a, b)));
    });
    function zoomTo(a, b) {
      a = Math.max(0, a); b = Math.min(d.span, b);
      if (b - a < 10) { b = a + 10; }
      state.from = a; state.to = b;
      return render();
    }
    var out = document.getElementById("overview-out");
    if (out) {
      out.addEventListener("click", function () {
        var mid = (state.from + state.to) / 2, half = (state.to - state.from) * 2;
        zoomTo(mid - half, mid + half);
      });
    }
    var reset = document.getElementById("overview-reset");
    if (reset) { reset.addEventListener("click", function () { zoomTo(0, d.span); }); }
    // For tests and the curious: window.lockcheckZoom(fromSeconds, toSeconds).
    window.lockcheckZoom = function (a, b) { return zoomTo(a * 1e9 / d.unit, b * 1e9 / d.unit); };
    var first = render();
    return {counts: d.counts, drawn: first};
  }
})();
