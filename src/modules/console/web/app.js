// The console's entry: who is signed in, the layout (one navigation landmark, the user's email, Sign out), and the
// page the path names. Pages are loaded on first visit.
import { get, post, setCsrfToken, whenSignedOut } from './lib/api.js';
import { html, render, useEffect, useState } from './lib/html.js';
import { matchRoute, navigate, safeNext, useLocation } from './lib/router.js';
import { ErrorMessage, Page } from './lib/ui.js';
import { NAV, ROUTES } from './routes.js';

const PUBLIC_PAGES = { '/sign-in': 'sign-in.js', '/sign-up': 'sign-up.js' };
const pageCache = new Map();
const loadPage = (file) => {
  if (!pageCache.has(file)) pageCache.set(file, import(`./pages/${file}`));
  return pageCache.get(file);
};

/** The page module for a path, loaded once; renders its default export. */
function RoutedPage({ file, params, query, session, onSession }) {
  const [state, setState] = useState({ file: undefined, Component: undefined, error: undefined });
  useEffect(() => {
    let live = true;
    loadPage(file).then(
      (module) => live && setState({ file, Component: module.default, error: undefined }),
      (error) => live && setState({ file, Component: undefined, error }),
    );
    return () => {
      live = false;
    };
  }, [file]);
  if (state.error)
    return html`<${Page} title="This page did not load"><${ErrorMessage} error=${state.error} /></${Page}>`;
  if (!state.Component || state.file !== file) return html`<p class="loading" aria-live="polite">Loading…</p>`;
  const { Component } = state;
  return html`<${Component} params=${params} query=${query} session=${session} onSession=${onSession} />`;
}

function Layout({ session, path, children }) {
  const signOut = async () => {
    await post('/api/console/sign-out').catch(() => {});
    setCsrfToken('');
    location.assign('/sign-in');
  };
  const under = (href) => path === href || path.startsWith(`${href}/`);
  const current = (item) => under(item.href) || (item.also ?? []).some(under);
  return html`<div class="layout">
    <a class="skip" href="#main">Skip to content</a>
    <header class="topbar">
      <a class="brand" href="/projects">Quarry</a>
      <div class="account">
        <span class="email" title=${session.user.email} data-volatile>${session.user.email}</span>
        <button type="button" onClick=${signOut}>Sign out</button>
      </div>
    </header>
    <nav aria-label="Main">
      <ul>
        ${NAV.map(
          (item) => html`<li>
            <a href=${item.href} aria-current=${current(item) ? 'page' : undefined}>${item.label}</a>
          </li>`,
        )}
        ${session.admin ? html`<li><a href="/admin" aria-current=${under('/admin') ? 'page' : undefined}>Admin</a></li>` : null}
      </ul>
    </nav>
    <main id="main" tabindex="-1">${children}</main>
  </div>`;
}

function NotFound() {
  return html`<${Page} title="Page not found"><p>Nothing lives at this address. <a href="/projects">Go to projects</a>.</p></${Page}>`;
}

function App() {
  const { path, query } = useLocation();
  const [session, setSession] = useState(undefined); // undefined: not known yet; null: signed out
  const onSession = (next) => {
    setCsrfToken(next?.csrfToken ?? '');
    setSession(next ? { ...next, admin: false } : null);
    if (next) {
      // Admin pages only for admins: the admin overview answers them, 403 to anyone else.
      get('/api/admin/stats').then(
        () => setSession((s) => (s ? { ...s, admin: true } : s)),
        () => {},
      );
    }
  };
  useEffect(() => {
    whenSignedOut(() => setSession(null));
    get('/api/console/session').then(onSession, () => onSession(null));
  }, []);

  if (session === undefined) return html`<p class="loading" aria-live="polite">Loading Quarry…</p>`;
  const publicPage = PUBLIC_PAGES[path];
  if (!session) {
    if (!publicPage) {
      const back = path === '/' ? '' : `?next=${encodeURIComponent(path + (query.size ? `?${query}` : ''))}`;
      navigate(`/sign-in${back}`, { replace: true });
      return null;
    }
    return html`<main id="main" class="public"><${RoutedPage} file=${publicPage} query=${query} onSession=${onSession} /></main>`;
  }
  if (publicPage || path === '/') {
    navigate(safeNext(query.get('next')) ?? '/projects', { replace: true });
    return null;
  }
  const found = matchRoute(ROUTES, path);
  return html`<${Layout} session=${session} path=${path}>
    ${
      found
        ? html`<${RoutedPage} file=${found.route.page} params=${found.params} query=${query} session=${session} />`
        : html`<${NotFound} />`
    }
  </${Layout}>`;
}

render(html`<${App} />`, document.getElementById('app'));
