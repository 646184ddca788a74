import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RouteModule } from '../../route-module.ts';
import { ok } from '../../shared/http.ts';
import { CONSOLE_SECTIONS } from './console-sections.ts';

/**
 * The web console (docs/console.md): a page application over the documented API, served by the same process with
 * no build step. Its modules are plain browser ES modules in `web/`; Preact, htm and uPlot are served from
 * node_modules under /console/vendor/. Every page answers the same shell; the page's router picks the view.
 */

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

const WEB_DIR = path.join(import.meta.dirname, 'web');
const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.html': 'text/html; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

/**
 * No request leaves the machine and no script but the console's own runs: styles may be inline (uPlot sets them),
 * images may be data or blob URLs (screenshots), frames are the service's own (the live viewer).
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "frame-src 'self'",
  "frame-ancestors 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "object-src 'none'",
].join('; ');

const require = createRequire(import.meta.url);
/** A package's folder, from its main entry (some packages do not export their package.json). */
const packageDir = (name: string) => {
  const entry = require.resolve(name);
  const marker = `${path.sep}node_modules${path.sep}${name}${path.sep}`;
  return entry.slice(0, entry.lastIndexOf(marker) + marker.length - 1);
};

/** The vendor modules, with bare imports rewritten to their served paths (no import map, so no inline script). */
function vendorFiles(): Map<string, string> {
  const preact = packageDir('preact');
  const rewrite = (text: string) => text.replace(/from\s*["']preact["']/g, 'from"/console/vendor/preact.mjs"');
  return new Map([
    ['vendor/preact.mjs', fs.readFileSync(path.join(preact, 'dist/preact.mjs'), 'utf8')],
    ['vendor/hooks.mjs', rewrite(fs.readFileSync(path.join(preact, 'hooks/dist/hooks.mjs'), 'utf8'))],
    ['vendor/htm.mjs', fs.readFileSync(path.join(packageDir('htm'), 'dist/htm.mjs'), 'utf8')],
    ['vendor/uplot.mjs', fs.readFileSync(path.join(packageDir('uplot'), 'dist/uPlot.esm.js'), 'utf8')],
    ['vendor/uplot.css', fs.readFileSync(path.join(packageDir('uplot'), 'dist/uPlot.min.css'), 'utf8')],
  ]);
}

function asset(name: string, body: Buffer): Asset {
  return {
    body,
    type: TYPES[path.extname(name)] ?? 'application/octet-stream',
    etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
  };
}

/** Every file the console serves, read once on first use: a start does not pay for a page few requests need. */
function loadAssets(): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  for (const entry of fs.readdirSync(WEB_DIR, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const full = path.join(entry.parentPath, entry.name);
    const name = path.relative(WEB_DIR, full).split(path.sep).join('/');
    assets.set(name, asset(name, fs.readFileSync(full)));
  }
  for (const [name, text] of vendorFiles()) assets.set(name, asset(name, Buffer.from(text)));
  return assets;
}

export const consoleRoutes: RouteModule = (app) => {
  let assets: Map<string, Asset> | undefined;
  const assetsNow = () => {
    assets ??= loadAssets();
    return assets;
  };

  const send = (request: FastifyRequest, reply: FastifyReply, file: Asset, cache: string) => {
    reply.header('cache-control', cache).header('etag', file.etag).header('x-content-type-options', 'nosniff');
    if (request.headers['if-none-match'] === file.etag) return reply.code(304).send();
    return reply.type(file.type).send(file.body);
  };

  const shell = async (request: FastifyRequest, reply: FastifyReply) => {
    reply.header('content-security-policy', CONTENT_SECURITY_POLICY).header('referrer-policy', 'same-origin');
    return send(request, reply, assetsNow().get('index.html')!, 'no-cache');
  };

  // The front door: a browser gets the console; curl sees where things are (and the API reference at /docs).
  app.get('/', { config: { public: true }, schema: { hide: true } }, async (request, reply) => {
    reply.header('vary', 'Accept');
    if (request.headers.accept?.includes('text/html')) return shell(request, reply);
    return reply
      .code(302)
      .header('location', '/docs')
      .send(ok({ docs: '/docs', openapi: '/api/openapi.json', health: '/api/health' }));
  });
  for (const section of CONSOLE_SECTIONS) {
    app.get(`/${section}`, { config: { public: true }, schema: { hide: true } }, shell);
    app.get(`/${section}/*`, { config: { public: true }, schema: { hide: true } }, shell);
  }

  app.get('/console/*', { config: { public: true }, schema: { hide: true } }, async (request, reply) => {
    const name = (request.params as { '*': string })['*'];
    const file = name === 'index.html' ? undefined : assetsNow().get(name);
    if (!file) return reply.code(404).send({ success: false, error: { code: 'NOT_FOUND', message: 'No such file' } });
    // Modules are revalidated (cheap 304s) so a new release is picked up at once; vendor files change with npm only.
    return send(request, reply, file, name.startsWith('vendor/') ? 'public, max-age=86400' : 'no-cache');
  });
};
