// History routing: links inside the console change the page without a reload; the server answers the same shell
// for every console path (console-sections.ts).
import { useEffect, useState } from './html.js';

const listeners = new Set();
const notify = () => {
  for (const listener of listeners) listener();
};

export function navigate(to, { replace = false } = {}) {
  if (replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  notify();
  if (!replace) window.scrollTo(0, 0);
}

window.addEventListener('popstate', notify);

/** Same-origin links to console pages are followed in place (API, docs and downloads load normally). */
document.addEventListener('click', (event) => {
  if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey)
    return;
  const link = event.target instanceof Element ? event.target.closest('a[href]') : null;
  if (!link || link.target || link.hasAttribute('download')) return;
  const url = new URL(link.href, location.href);
  if (url.origin !== location.origin) return;
  if (/^\/(api|docs|console|mcp)(\/|$)/.test(url.pathname)) return;
  event.preventDefault();
  navigate(url.pathname + url.search);
});

/** The current path and query; re-renders the caller when they change. */
export function useLocation() {
  const read = () => ({ path: location.pathname, query: new URLSearchParams(location.search) });
  const [current, setCurrent] = useState(read);
  useEffect(() => {
    const listener = () => setCurrent(read());
    listeners.add(listener);
    return () => listeners.delete(listener);
  }, []);
  return current;
}

/** A `next` address that stays on this site: a path, never `//host` or `/\\host`. */
export const safeNext = (value) => (value && /^\/(?![/\\])/.test(value) ? value : undefined);

/** Replaces some query parameters of the current page (empty values removed), keeping its history entry. */
export function setQuery(changes) {
  const search = new URLSearchParams(location.search);
  for (const [key, value] of Object.entries(changes)) {
    if (value === undefined || value === null || value === '') search.delete(key);
    else search.set(key, String(value));
  }
  const text = search.toString();
  navigate(`${location.pathname}${text ? `?${text}` : ''}`, { replace: true });
}

/** The route whose pattern (`/leads/:id`) matches `path`, with its parameters. */
export function matchRoute(routes, path) {
  const parts = path.replace(/\/+$/, '').split('/').filter(Boolean);
  for (const route of routes) {
    const pattern = route.path.split('/').filter(Boolean);
    if (pattern.length !== parts.length) continue;
    const params = {};
    let matched = true;
    for (let i = 0; i < pattern.length; i++) {
      // Kept as the path has it (percent-encoded): pages put parameters into API paths, where a decoded `../x`
      // would name another route.
      if (pattern[i].startsWith(':')) params[pattern[i].slice(1)] = parts[i];
      else if (pattern[i] !== parts[i]) {
        matched = false;
        break;
      }
    }
    if (matched) return { route, params };
  }
  return undefined;
}
