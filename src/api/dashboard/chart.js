// The last hour, day or week on a canvas: tasks finished per bucket as bars (done green, failed
// red, left axis) and the queue's depth as lines (ready, running; right axis). Data is GET
// /api/stats's shape: {range, bucket_ms, from, to, throughput: [{at, done, failed}], depth: [{at,
// ready, running}]}.

const MINUTE = 60 * 1000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

// The time axis's ticks back from now: every 15 minutes of an hour, 6 hours of a day, day of a week.
function ticksOf(span) {
  if (span <= 2 * HOUR) return {step: 15 * MINUTE, unit: MINUTE, suffix: 'm'};
  if (span <= 2 * DAY) return {step: 6 * HOUR, unit: HOUR, suffix: 'h'};
  return {step: DAY, unit: DAY, suffix: 'd'};
}

function niceCeil(v) {
  if (v <= 1) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

function colors() {
  const css = getComputedStyle(document.documentElement);
  const v = (name) => css.getPropertyValue(name).trim();
  return {fg: v('--muted'), line: v('--line'), done: v('--green'), failed: v('--red'), ready: v('--teal'), running: v('--blue')};
}

// At most one depth point each `step` ms (half a bar): the highest counts of the samples in it,
// at the last one's time. A line that zigzags more often than a bar is wide draws over the whole
// bar and hides it (the hour's samples come every 10 s, six to a bar of a few pixels).
export function thinned(depth, step) {
  const out = [];
  let bin = null;
  for (const d of depth) {
    const b = Math.floor(d.at / step);
    const last = out[out.length - 1];
    if (last && b === bin) {
      out[out.length - 1] = {at: d.at, ready: Math.max(last.ready || 0, d.ready || 0),
                             running: Math.max(last.running || 0, d.running || 0)};
    } else {
      out.push(d);
      bin = b;
    }
  }
  return out;
}

export function drawChart(canvas, stats) {
  const dpr = window.devicePixelRatio || 1;
  const w = canvas.clientWidth;
  const h = canvas.clientHeight;
  if (!w || !h) return;
  canvas.width = Math.round(w * dpr);
  canvas.height = Math.round(h * dpr);
  // A canvas in memory, not on the GPU (willReadFrequently): at this size it draws as fast, and
  // it is never lost with the GPU's context (a busy or reset GPU process blanks an accelerated
  // canvas until it is drawn again).
  const ctx = canvas.getContext('2d', {willReadFrequently: true});
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, w, h);
  const c = colors();
  const pad = {l: 28, r: 28, t: 8, b: 18};
  const pw = w - pad.l - pad.r;
  const ph = h - pad.t - pad.b;
  const from = stats.from;
  const to = stats.to;
  const throughput = (stats.throughput || []).filter((b) => b.at + stats.bucket_ms > from && b.at <= to);
  const depth = thinned((stats.depth || []).filter((d) => d.at >= from && d.at <= to), stats.bucket_ms / 2);
  // The axis runs to the end of the current bucket, not to now: a bucket that began a moment ago
  // gets its whole width, where ending at now would leave its bar a sliver or nothing.
  const end = Math.max(to, ...throughput.map((b) => b.at + stats.bucket_ms));
  const span = Math.max(1, end - from);
  const x = (t) => pad.l + ((t - from) / span) * pw;
  // The depth holds from its last sample until now.
  if (depth.length) depth.push(Object.assign({}, depth[depth.length - 1], {at: to}));
  const maxT = niceCeil(Math.max(0, ...throughput.map((b) => (b.done || 0) + (b.failed || 0))));
  const maxD = niceCeil(Math.max(0, ...depth.map((d) => Math.max(d.ready || 0, d.running || 0))));
  const yT = (v) => pad.t + ph - (v / maxT) * ph;
  const yD = (v) => pad.t + ph - (v / maxD) * ph;

  ctx.font = '10.5px system-ui, sans-serif';
  ctx.lineWidth = 1;
  ctx.strokeStyle = c.line;
  ctx.fillStyle = c.fg;
  for (let i = 0; i <= 2; i++) {
    const y = Math.round(pad.t + (ph * i) / 2) + 0.5;
    ctx.beginPath();
    ctx.moveTo(pad.l, y);
    ctx.lineTo(pad.l + pw, y);
    ctx.stroke();
  }
  ctx.textAlign = 'right';
  ctx.textBaseline = 'middle';
  ctx.fillText(String(maxT), pad.l - 4, pad.t + 4);
  ctx.fillText('0', pad.l - 4, pad.t + ph);
  ctx.textAlign = 'left';
  ctx.fillText(String(maxD), pad.l + pw + 4, pad.t + 4);
  ctx.fillText('0', pad.l + pw + 4, pad.t + ph);
  ctx.textAlign = 'center';
  ctx.textBaseline = 'top';
  const tick = ticksOf(to - from);
  for (let back = 0; back <= to - from + 1000; back += tick.step) {
    const label = back === 0 ? 'now' : '-' + Math.round(back / tick.unit) + tick.suffix;
    ctx.fillText(label, Math.min(Math.max(x(to - back), pad.l + 10), pad.l + pw - 10), pad.t + ph + 4);
  }

  let points = 0;
  const bw = Math.max(1, (stats.bucket_ms / span) * pw - 1);
  for (const b of throughput) {
    const done = b.done || 0;
    const failed = b.failed || 0;
    if (!done && !failed) continue;
    points++;
    const left = Math.max(pad.l, x(b.at));
    const width = Math.min(bw, pad.l + pw - left);
    ctx.fillStyle = c.done;
    ctx.fillRect(left, yT(done), width, pad.t + ph - yT(done));
    ctx.fillStyle = c.failed;
    ctx.fillRect(left, yT(done + failed), width, yT(done) - yT(done + failed));
  }
  ctx.lineWidth = 1.75;
  ctx.lineJoin = 'round';
  for (const key of ['ready', 'running']) {
    if (!depth.length) continue;
    ctx.strokeStyle = c[key];
    ctx.beginPath();
    depth.forEach((d, i) => {
      const px = x(d.at);
      const py = yD(d[key] || 0);
      if (i === 0) ctx.moveTo(px, py);
      else ctx.lineTo(px, py);
      if (d[key]) points++;
    });
    ctx.stroke();
  }
  canvas.dataset.range = stats.range || '1h';
  canvas.dataset.bucket = String(stats.bucket_ms);
  canvas.dataset.points = String(points);
  canvas.dataset.done = String(throughput.reduce((n, b) => n + (b.done || 0), 0));
  canvas.dataset.maxThroughput = String(maxT);
}
