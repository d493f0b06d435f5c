/* bufferlab report: search and filter on the index, interactive time-series charts on run pages.
   Plain JavaScript, no library, nothing fetched: pages work from file:// as from a server. */
"use strict";

(function filters() {
  const search = document.getElementById("search");
  if (!search) return;
  const study = document.getElementById("study-filter");
  const status = document.getElementById("status-filter");
  const shown = document.getElementById("shown");
  const rows = Array.from(document.querySelectorAll("tr.filterable"));
  function apply() {
    const words = search.value.toLowerCase().split(/\s+/).filter(Boolean);
    let visible = 0;
    for (const row of rows) {
      const text = row.dataset.search || "";
      const ok = words.every((w) => text.includes(w)) &&
        (!study.value || row.dataset.study === study.value) &&
        (!status.value || row.dataset.status === status.value);
      row.classList.toggle("hidden", !ok);
      if (ok) visible += 1;
    }
    // A table of runs (one per study) with no row left to show is hidden, caption and all.
    for (const table of document.querySelectorAll("table.runs")) {
      table.classList.toggle("hidden", !table.querySelector("tr.filterable:not(.hidden)"));
    }
    shown.textContent = visible + " of " + rows.length + " shown";
  }
  search.addEventListener("input", apply);
  study.addEventListener("change", apply);
  status.addEventListener("change", apply);
  apply();
})();

/* A line chart on a canvas: drag to zoom the x axis, double-click to zoom out, hover for the
   values of every line at the nearest sample. */
function niceTicks(lo, hi, count) {
  const span = hi - lo || Math.abs(hi) || 1;
  const step0 = span / count;
  const mag = Math.pow(10, Math.floor(Math.log10(step0)));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => span / s <= count) || 10 * mag;
  const ticks = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) ticks.push(+t.toPrecision(12));
  return ticks;
}

function nearestIndex(xs, x) {
  let lo = 0, hi = xs.length - 1;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (xs[mid] < x) lo = mid; else hi = mid;
  }
  return Math.abs(xs[lo] - x) <= Math.abs(xs[hi] - x) ? lo : hi;
}

function lineChart(area, spec) {
  const canvas = document.createElement("canvas");
  const tip = document.createElement("div");
  tip.className = "chart-tip";
  area.appendChild(canvas);
  area.appendChild(tip);
  const legend = document.createElement("div");
  legend.className = "chart-legend";
  for (const s of spec.series) {
    const item = document.createElement("span");
    const swatch = document.createElement("i");
    swatch.style.background = s.colour;
    item.appendChild(swatch);
    item.appendChild(document.createTextNode(s.name));
    legend.appendChild(item);
  }
  area.parentNode.appendChild(legend);
  let xmin = Infinity, xmax = -Infinity;
  for (const s of spec.series) for (const x of s.x) if (x !== null) { xmin = Math.min(xmin, x); xmax = Math.max(xmax, x); }
  if (!isFinite(xmin)) { xmin = 0; xmax = 1; }
  const full = [xmin, xmax];
  let view = full.slice();
  let drag = null;
  const pad = { left: 52, right: 10, top: 8, bottom: 26 };

  function size() {
    const ratio = window.devicePixelRatio || 1;
    const w = area.clientWidth, h = area.clientHeight;
    canvas.width = Math.round(w * ratio);
    canvas.height = Math.round(h * ratio);
    const ctx = canvas.getContext("2d");
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    return { ctx, w, h };
  }
  function yRange() {
    let lo = Infinity, hi = -Infinity;
    for (const s of spec.series) {
      for (let i = 0; i < s.x.length; i++) {
        const x = s.x[i], y = s.y[i];
        if (y === null || x < view[0] || x > view[1]) continue;
        lo = Math.min(lo, y); hi = Math.max(hi, y);
      }
    }
    if (!isFinite(lo)) return [0, 1];
    if (lo === hi) return [lo - 1, hi + 1];
    const margin = (hi - lo) * 0.05;
    return [lo > 0 && lo - margin < 0 ? 0 : lo - margin, hi + margin];
  }
  function draw() {
    const { ctx, w, h } = size();
    const [y0, y1] = yRange();
    const px = (x) => pad.left + (x - view[0]) / (view[1] - view[0] || 1) * (w - pad.left - pad.right);
    const py = (y) => h - pad.bottom - (y - y0) / (y1 - y0) * (h - pad.top - pad.bottom);
    ctx.clearRect(0, 0, w, h);
    ctx.font = "11px system-ui, sans-serif";
    ctx.strokeStyle = "#e3e3e3"; ctx.fillStyle = "#555"; ctx.lineWidth = 1;
    ctx.textAlign = "right"; ctx.textBaseline = "middle";
    for (const t of niceTicks(y0, y1, 5)) {
      ctx.beginPath(); ctx.moveTo(pad.left, py(t)); ctx.lineTo(w - pad.right, py(t)); ctx.stroke();
      ctx.fillText(String(t), pad.left - 4, py(t));
    }
    ctx.textAlign = "center"; ctx.textBaseline = "top";
    for (const t of niceTicks(view[0], view[1], 8)) {
      ctx.beginPath(); ctx.moveTo(px(t), pad.top); ctx.lineTo(px(t), h - pad.bottom); ctx.stroke();
      ctx.fillText(String(t), px(t), h - pad.bottom + 4);
    }
    ctx.fillText(spec.x_label, (w + pad.left) / 2, h - 12);
    ctx.save();
    ctx.beginPath(); ctx.rect(pad.left, pad.top, w - pad.left - pad.right, h - pad.top - pad.bottom); ctx.clip();
    for (const s of spec.series) {
      ctx.strokeStyle = s.colour; ctx.lineWidth = 1.2; ctx.beginPath();
      let pen = false;
      for (let i = 0; i < s.x.length; i++) {
        if (s.y[i] === null || s.x[i] === null) { pen = false; continue; }
        if (pen) ctx.lineTo(px(s.x[i]), py(s.y[i])); else { ctx.moveTo(px(s.x[i]), py(s.y[i])); pen = true; }
      }
      ctx.stroke();
    }
    ctx.restore();
    if (drag && drag.now !== undefined) {
      ctx.fillStyle = "rgba(31, 95, 168, 0.15)";
      ctx.fillRect(Math.min(drag.start, drag.now), pad.top, Math.abs(drag.now - drag.start), h - pad.top - pad.bottom);
    }
    return { px, w };
  }
  function toX(offsetX) {
    const w = area.clientWidth;
    return view[0] + (offsetX - pad.left) / (w - pad.left - pad.right) * (view[1] - view[0]);
  }
  canvas.addEventListener("mousedown", (e) => { drag = { start: e.offsetX }; });
  canvas.addEventListener("mousemove", (e) => {
    if (drag) { drag.now = e.offsetX; draw(); return; }
    const x = toX(e.offsetX);
    if (x < view[0] || x > view[1]) { tip.style.display = "none"; return; }
    const lines = [];
    let at = null;
    for (const s of spec.series) {
      if (!s.x.length) continue;
      const i = nearestIndex(s.x, x);
      at = at === null ? s.x[i] : at;
      lines.push(s.name + ": " + (s.y[i] === null ? "—" : (+s.y[i].toPrecision(4))));
    }
    tip.textContent = "";
    const head = document.createElement("b");
    head.textContent = "t = " + (at === null ? "—" : (+at.toPrecision(5))) + " s";
    tip.appendChild(head);
    for (const line of lines.slice(0, 12)) { tip.appendChild(document.createElement("br")); tip.appendChild(document.createTextNode(line)); }
    tip.style.display = "block";
    tip.style.left = Math.min(e.offsetX + 12, area.clientWidth - tip.offsetWidth - 2) + "px";
    tip.style.top = "4px";
  });
  canvas.addEventListener("mouseleave", () => { tip.style.display = "none"; });
  window.addEventListener("mouseup", (e) => {
    if (!drag) return;
    if (drag.now !== undefined && Math.abs(drag.now - drag.start) > 4) {
      const a = toX(Math.min(drag.start, drag.now)), b = toX(Math.max(drag.start, drag.now));
      view = [Math.max(full[0], a), Math.min(full[1], b)];
    }
    drag = null;
    draw();
  });
  canvas.addEventListener("dblclick", () => { view = full.slice(); draw(); });
  window.addEventListener("resize", draw);
  draw();
}

for (const figure of document.querySelectorAll("figure.chart")) {
  const data = JSON.parse(figure.querySelector("script.chart-data").textContent);
  lineChart(figure.querySelector(".chart-area"), data);
}
