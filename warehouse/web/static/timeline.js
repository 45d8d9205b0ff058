// A run's timeline: its trace-event JSON (the Perfetto export) drawn on a canvas, a row per track (each device's
// sections, blocks and op lanes), zoomed with the wheel, panned by dragging, an op's figures on hover; ?row=N opens
// on the op of CSV row N.
(() => {
  const box = document.getElementById("timeline");
  if (!box) return;
  const canvas = box.querySelector("canvas"), tip = box.querySelector(".tip");
  const status = document.getElementById("timeline-status");
  const ROW = 18, TOP = 24, LEFT = 170;
  const rows = [], byRow = [];  // rows: {label, pid}; byRow[i]: that row's slices in time order
  let slices = [], instants = [], view = [0, 1], whole = [0, 1];

  const hue = name => { let h = 0; for (const c of name) h = (h * 31 + c.charCodeAt(0)) % 360; return h; };
  const width = () => box.clientWidth;
  const x = t => LEFT + (t - view[0]) / (view[1] - view[0]) * (width() - LEFT);
  const timeAt = px => view[0] + (px - LEFT) / (width() - LEFT) * (view[1] - view[0]);
  const fmt = us => us >= 1000 ? (us / 1000).toFixed(us >= 10000 ? 1 : 2) + " ms" : us.toFixed(us >= 10 ? 1 : 3) + " us";
  // a tick's time with as many decimals as the ticks' spacing needs (zoomed far into a long run, they differ late)
  const fmtTick = (us, tick) => {
    const [v, d, unit] = tick >= 1000 ? [us / 1000, tick / 1000, " ms"] : [us, tick, " us"];
    return v.toFixed(Math.max(0, Math.min(6, -Math.floor(Math.log10(d) + 1e-9)))) + unit;
  };

  function draw() {
    const dpr = window.devicePixelRatio || 1, w = width(), h = TOP + rows.length * ROW + 4;
    canvas.width = w * dpr; canvas.height = h * dpr; canvas.style.width = w + "px"; canvas.style.height = h + "px";
    const g = canvas.getContext("2d");
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, h); g.font = "11px system-ui, sans-serif"; g.textBaseline = "middle";
    // the time axis
    const span = view[1] - view[0], step = Math.pow(10, Math.floor(Math.log10(span / 6)));
    const tick = [1, 2, 5, 10].map(k => k * step).find(k => span / k <= 8);
    g.fillStyle = "#556"; g.strokeStyle = "#e6e9ee";
    for (let t = Math.ceil(view[0] / tick) * tick; t <= view[1]; t += tick) {
      const px = x(t); g.beginPath(); g.moveTo(px, TOP - 4); g.lineTo(px, h); g.stroke(); g.fillText(fmtTick(t, tick), px + 2, 10);
    }
    rows.forEach((r, i) => {
      const y = TOP + i * ROW;
      if (i === 0 || rows[i - 1].pid !== r.pid) { g.fillStyle = "#1d2b3a"; g.fillRect(0, y, w, 1); }
      g.fillStyle = "#334"; g.fillText(r.label, 4, y + ROW / 2, LEFT - 8);
    });
    let drawn = 0;
    g.save(); g.beginPath(); g.rect(LEFT, 0, w - LEFT, h); g.clip();
    for (const s of slices) {
      if (s.ts > view[1] || s.ts + s.dur < view[0]) continue;
      const x0 = x(s.ts), x1 = Math.max(x(s.ts + s.dur), x0 + 1), y = TOP + s.row * ROW + 2;
      g.fillStyle = `hsl(${hue(s.name)}, ${s.cat === "op" ? 55 : 30}%, ${s.cat === "op" ? 60 : 78}%)`;
      g.fillRect(x0, y, x1 - x0, ROW - 4);
      const left = Math.max(x0, LEFT), right = Math.min(x1, w);  // (a name in the part in view)
      if (right - left > 40) { g.fillStyle = "#112"; g.fillText(s.name, left + 3, y + ROW / 2 - 2, right - left - 6); }
      drawn++;
    }
    g.fillStyle = "#b00020";
    for (const e of instants) {
      if (e.ts < view[0] || e.ts > view[1]) continue;
      g.fillRect(x(e.ts), TOP + e.row * ROW, 1, ROW);
    }
    g.restore();
    box.dataset.drawn = String(drawn);
  }

  function at(px, py) {  // the slice under a point, by a binary search of its row
    const row = Math.floor((py - TOP) / ROW), t = timeAt(px), list = byRow[row];
    if (!list || px < LEFT) return null;
    let lo = 0, hi = list.length - 1, hit = null, slack = (view[1] - view[0]) / (width() - LEFT);
    while (lo <= hi) {
      const mid = (lo + hi) >> 1, s = list[mid];
      if (s.ts > t + slack) hi = mid - 1;
      else if (s.ts + s.dur < t - slack) lo = mid + 1;
      else { hit = s; break; }
    }
    return hit;
  }

  function show(ev) {
    const r = canvas.getBoundingClientRect(), s = at(ev.clientX - r.left, ev.clientY - r.top);
    if (!s) { tip.hidden = true; return; }
    const lines = [`${s.name} (${s.cat})`, `start ${fmt(s.ts)} · ${fmt(s.dur)}`];
    for (const [k, v] of Object.entries(s.args)) lines.push(`${k}: ${v}`);
    tip.textContent = lines.join("\n"); tip.hidden = false;
    tip.style.left = (ev.clientX - r.left + 12) + "px"; tip.style.top = (ev.clientY - r.top + 12) + "px";
  }

  let drag = null;
  canvas.addEventListener("wheel", ev => {
    ev.preventDefault();
    const r = canvas.getBoundingClientRect(), t = timeAt(ev.clientX - r.left), k = ev.deltaY > 0 ? 1.25 : 0.8;
    const lo = t - (t - view[0]) * k, hi = t + (view[1] - t) * k;
    view = hi - lo < 1e-3 ? view : [Math.max(whole[0], lo), Math.min(whole[1], hi)];
    draw();
  }, {passive: false});
  canvas.addEventListener("mousedown", ev => { drag = {px: ev.clientX, view: view.slice()}; });
  window.addEventListener("mouseup", () => { drag = null; });
  canvas.addEventListener("mousemove", ev => {
    if (drag) {
      const dt = (ev.clientX - drag.px) / (width() - LEFT) * (drag.view[1] - drag.view[0]);
      view = [drag.view[0] - dt, drag.view[1] - dt]; draw();
    } else show(ev);
  });
  canvas.addEventListener("mouseleave", () => { tip.hidden = true; });
  canvas.addEventListener("dblclick", () => { view = whole.slice(); draw(); });
  window.addEventListener("resize", draw);

  fetch(box.dataset.src).then(r => r.json()).then(doc => {
    const procs = {}, threads = [];
    for (const e of doc.traceEvents) {
      if (e.ph !== "M") continue;
      if (e.name === "process_name") procs[e.pid] = e.args.name;
      if (e.name === "thread_name") threads.push(e);
    }
    threads.sort((a, b) => a.pid - b.pid || a.tid - b.tid);
    const rowOf = new Map();
    for (const e of threads) {
      rowOf.set(e.pid + ":" + e.tid, rows.length);
      rows.push({label: `${procs[e.pid] || "pid " + e.pid} · ${e.args.name}`, pid: e.pid}); byRow.push([]);
    }
    let end = 0;
    for (const e of doc.traceEvents) {
      const row = rowOf.get(e.pid + ":" + (e.tid ?? 0));
      if (row === undefined) continue;
      if (e.ph === "X") {
        const s = {row, ts: e.ts, dur: e.dur, name: e.name, cat: e.cat || "", args: e.args || {}};
        slices.push(s); byRow[row].push(s); end = Math.max(end, e.ts + e.dur);
      } else if (e.ph === "i") instants.push({row, ts: e.ts, name: e.name});
    }
    whole = [0, Math.max(end, 1e-3)]; view = whole.slice();
    box.dataset.slices = String(slices.length);
    // ?row=N: the op of CSV row N in view, with ten times its length around it
    const row = new URLSearchParams(location.search).get("row");
    const op = row === null ? undefined : slices.find(s => s.cat === "op" && String(s.args.row) === row);
    if (op) view = [Math.max(whole[0], op.ts - 5 * op.dur - 1e-3), Math.min(whole[1], op.ts + 6 * op.dur + 1e-3)];
    const ops = slices.filter(s => s.cat === "op").length;
    status.textContent = `${ops} ops on ${Object.keys(procs).length} device(s), ${fmt(whole[1])} from the first FW start; ` +
      `${doc.otherData && doc.otherData.ops_without_fw_cycles || 0} op(s) without FW cycles left out.`;
    draw();
  }).catch(err => { status.textContent = "Could not load the timeline: " + err; });

  // (for tests and for a person's console: the page position of slice i's middle)
  window.warehouseTimeline = {
    middle(i) {
      const s = slices[i], r = canvas.getBoundingClientRect();
      return {x: r.left + (x(s.ts) + Math.max(x(s.ts + s.dur), x(s.ts) + 1)) / 2, y: r.top + TOP + s.row * ROW + ROW / 2,
              name: s.name};
    },
    index: row => slices.findIndex(s => s.cat === "op" && String(s.args.row) === String(row)),
  };
})();
