// The one way pages talk to the service: the documented /api routes, authenticated by the session cookie, with the
// CSRF token on every unsafe method (docs/console.md).

let csrfToken = '';
let onSignedOut = () => {};

export function setCsrfToken(token) {
  csrfToken = token;
}

/** Called when the session is gone (401): the app shows the sign-in page. */
export function whenSignedOut(handler) {
  onSignedOut = handler;
}

/** A refused request: the service's error code, message and per-field details. */
export class ApiError extends Error {
  constructor(status, error) {
    super(error?.message ?? `HTTP ${status}`);
    this.status = status;
    this.code = error?.code ?? `HTTP_${status}`;
    this.details = error?.details ?? [];
  }
  /** The message for one form field, if the service named it. */
  fieldMessage(field) {
    return this.details.find((d) => d.field === field)?.message;
  }
}

/** Calls an API route; answers its `data` (or the whole body when it has none), throws ApiError otherwise. */
export async function api(method, path, body, { signal, raw = false } = {}) {
  const headers = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && method !== 'HEAD') headers['x-csrf-token'] = csrfToken;
  const res = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'same-origin',
    signal,
  });
  if (raw && res.ok) return res;
  const text = await res.text();
  let json = {};
  try {
    json = text ? JSON.parse(text) : {};
  } catch {
    json = { error: { code: `HTTP_${res.status}`, message: text.slice(0, 200) } };
  }
  if (!res.ok) {
    if (res.status === 401 && !path.startsWith('/api/console/')) onSignedOut();
    throw new ApiError(res.status, json.error);
  }
  return json.data !== undefined ? json.data : json;
}

export const get = (path, options) => api('GET', path, undefined, options);
export const post = (path, body, options) => api('POST', path, body ?? {}, options);
export const patch = (path, body, options) => api('PATCH', path, body, options);
export const put = (path, body, options) => api('PUT', path, body, options);
export const del = (path, options) => api('DELETE', path, undefined, options);

/** A query string from an object, leaving out empty values. */
export function query(params) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined || value === null || value === '') continue;
    if (Array.isArray(value)) for (const v of value) search.append(key, v);
    else search.set(key, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}
