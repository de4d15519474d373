// Talking to the tx HTTP API: the token, requests, and errors in the API's shape
// ({"error": {"code", "message"}}). Every failure becomes an ApiError with a message fit to show.

const TOKEN_KEY = 'tx.token';

export function token() {
  return localStorage.getItem(TOKEN_KEY) || '';
}

export function setToken(value) {
  const t = (value || '').trim();
  if (t) localStorage.setItem(TOKEN_KEY, t);
  else localStorage.removeItem(TOKEN_KEY);
  window.dispatchEvent(new CustomEvent('tx:token'));
}

// A token handed in the address (/?access_token=T) is kept, and taken out of the address bar.
export function adoptTokenFromUrl() {
  const url = new URL(location.href);
  const t = url.searchParams.get('access_token');
  if (!t) return;
  setToken(t);
  url.searchParams.delete('access_token');
  history.replaceState(null, '', url.pathname + url.search + url.hash);
}

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
  // The server has no such route (an older tx): the page hides what needs it.
  get noRoute() {
    return (this.status === 404 && /^no route /.test(this.message)) || this.status === 405;
  }
}

function headers(extra) {
  const h = Object.assign({}, extra);
  const t = token();
  if (t) h.Authorization = 'Bearer ' + t;
  return h;
}

async function errorOf(res) {
  let code = 'http_' + res.status;
  let message = res.statusText || 'request failed';
  try {
    const body = await res.json();
    if (body && body.error) {
      code = body.error.code || code;
      message = body.error.message || message;
    }
  } catch (_) {
    // not JSON: keep the status line
  }
  if (res.status === 401) {
    window.dispatchEvent(new CustomEvent('tx:unauthorized', {detail: message}));
  }
  return new ApiError(res.status, code, message);
}

// fetch with the token; resolves to the Response when it is 2xx, throws ApiError otherwise.
export async function request(method, path, {body, signal, accept} = {}) {
  const extra = {};
  if (body !== undefined) extra['Content-Type'] = 'application/json';
  if (accept) extra.Accept = accept;
  let res;
  try {
    res = await fetch(path, {
      method,
      headers: headers(extra),
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
      cache: 'no-store',
    });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, 'unavailable', 'cannot reach the tx server (' + e.message + ')');
  }
  if (!res.ok) throw await errorOf(res);
  return res;
}

export async function getJson(path, opts) {
  return (await request('GET', path, opts)).json();
}

export async function send(method, path, body) {
  const res = await request(method, path, {body});
  const text = await res.text();
  return text ? JSON.parse(text) : {};
}

export async function getText(path, opts) {
  return (await request('GET', path, opts)).text();
}

// Path segments are ids the server gave us, but they are still escaped.
export function seg(id) {
  return encodeURIComponent(String(id));
}
