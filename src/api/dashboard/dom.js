// Small DOM and formatting helpers. Text from the server is only ever set as text, never as HTML.

export function $(selector, root = document) {
  return root.querySelector(selector);
}

// el('a', {class: 'x', dataset: {id: 1}, onclick}, 'text', child, ...)
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') node.className = v;
    else if (k === 'dataset') Object.assign(node.dataset, v);
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else if (k === 'text') node.textContent = v;
    else node.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

export function pill(status, text) {
  return el('span', {class: 'pill', dataset: {status: status || 'unknown'}}, text || status || '?');
}

// 850 ms, 4.2 s, 3 m 12 s, 2 h 5 m
export function fmtAge(ms) {
  if (ms === null || ms === undefined || !isFinite(ms)) return '–';
  if (ms < 0) ms = 0;
  if (ms < 1000) return Math.round(ms) + ' ms';
  const s = ms / 1000;
  if (s < 60) return s.toFixed(s < 10 ? 1 : 0) + ' s';
  const m = Math.floor(s / 60);
  if (m < 60) return m + ' m ' + Math.floor(s % 60) + ' s';
  const h = Math.floor(m / 60);
  if (h < 48) return h + ' h ' + (m % 60) + ' m';
  return Math.floor(h / 24) + ' d';
}

// A time the API sent (ISO-8601 or ms since the epoch) as ms since the epoch, or null.
export function toMs(t) {
  if (t === null || t === undefined || t === '' || t === 0) return null;
  if (typeof t === 'number') return t;
  const v = Date.parse(t);
  return isNaN(v) ? null : v;
}

export function ago(t) {
  const ms = toMs(t);
  if (ms === null) return '–';
  const d = fmtShort(Date.now() - ms);
  return d === 'now' ? d : d + ' ago';
}

// $0.4200 under a dollar, $12.50 above.
export function dollars(v) {
  return '$' + (v > 0 && v < 0.995 ? v.toFixed(4) : v.toFixed(2));
}

// now, 12s, 3m, 2h, 4d
export function fmtShort(ms) {
  if (ms < 1000) return 'now';
  const s = Math.floor(ms / 1000);
  if (s < 60) return s + 's';
  if (s < 3600) return Math.floor(s / 60) + 'm';
  if (s < 172800) return Math.floor(s / 3600) + 'h';
  return Math.floor(s / 86400) + 'd';
}

export function clock(t) {
  const ms = toMs(t);
  if (ms === null) return '–';
  return new Date(ms).toLocaleTimeString([], {hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false});
}

export function stamp(t) {
  const ms = toMs(t);
  if (ms === null) return '–';
  const d = new Date(ms);
  return d.toLocaleDateString([], {month: 'short', day: 'numeric'}) + ' ' + clock(ms);
}

export function toast(message, kind = 'ok') {
  const box = $('#toasts');
  const t = el('div', {class: 'toast ' + kind, role: kind === 'error' ? 'alert' : 'status'}, message);
  box.append(t);
  while (box.children.length > 4) box.firstChild.remove();
  setTimeout(() => t.remove(), kind === 'error' ? 8000 : 3500);
}

// A destructive button asks twice: the first click arms it ("Sure?") for a few seconds, the
// second acts. Returns true when this click should act.
export function armed(button) {
  if (button.classList.contains('armed')) {
    disarm(button);
    return true;
  }
  button.dataset.label = button.textContent;
  button.textContent = 'Sure? ' + button.textContent;
  button.classList.add('armed');
  button._disarm = setTimeout(() => disarm(button), 4000);
  return false;
}

function disarm(button) {
  clearTimeout(button._disarm);
  button.classList.remove('armed');
  if (button.dataset.label) button.textContent = button.dataset.label;
}

// Runs `fn` after `ms` of quiet; calls during the wait push it back no further than `max` ms.
export function debounce(fn, ms, max = ms * 4) {
  let timer = null;
  let first = 0;
  return () => {
    const now = Date.now();
    if (!timer) first = now;
    clearTimeout(timer);
    const wait = Math.max(0, Math.min(ms, first + max - now));
    timer = setTimeout(() => {
      timer = null;
      fn();
    }, wait);
  };
}

// Updates a keyed list of children in place: make(item) returns {key, view, build, attrs,
// heartbeat}; a child is rebuilt (build()) only when its view changed, so buttons under the
// pointer survive a refresh. attrs() makes the (empty) child; its dataset is copied on change.
export function patchList(box, items, make) {
  const old = new Map([...box.children].map((c) => [c.dataset.key, c]));
  let i = 0;
  for (const item of items) {
    const {key, view, build, attrs, heartbeat} = make(item);
    let node = old.get(key);
    old.delete(key);
    const sig = JSON.stringify(view);
    if (!node) node = attrs();
    if (node._sig !== sig) {
      node._sig = sig;
      const fresh = attrs();
      for (const [k, v] of Object.entries(fresh.dataset)) node.dataset[k] = v;
      node.replaceChildren(...build().flat().filter((c) => c !== null && c !== undefined && c !== false));
    } else if (heartbeat) {
      // Unchanged but for the heartbeat: the ticking age restarts from the new reading.
      const hb = node.querySelector('.hb');
      if (hb) Object.assign(hb.dataset, {hbBase: heartbeat.age ?? '', hbAt: heartbeat.at});
    }
    if (box.children[i] !== node) box.insertBefore(node, box.children[i] || null);
    i++;
  }
  for (const n of old.values()) n.remove();
}
