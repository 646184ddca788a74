import { STATUS_CODES } from 'node:http';
import fastifySwagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import type { Config } from '../config.ts';
import { openApiWebhooks } from './event-payloads.ts';
import { operationIds } from './operation-ids.ts';
import { serveReferencePage } from './reference-page.ts';

/**
 * The OpenAPI document at `/api/openapi.json` (and the `/docs` page reading it), built from the route
 * schemas. Users generate clients from it, so what a generator keys on is fixed here: an operationId
 * per route, tags with descriptions, servers, and named components (zod schemas given `.meta({ id })`)
 * emitted as `$ref`s. `npm run lint:openapi` keeps it clean under Redocly's recommended rules.
 */

/** One entry per route section, in the order the reference shows them; every route's tag is one of these. */
export const openApiTags = [
  { name: 'Infrastructure', description: 'Liveness and readiness of the service and what it depends on.' },
  { name: 'Authentication', description: 'Sign up and log in; both answer an API key (`Authorization: Bearer …`).' },
  {
    name: 'Web console',
    description:
      'Signing in to the web console at `/`: a session in an HttpOnly cookie; cookie-authenticated requests need the ' +
      'CSRF token on unsafe methods and are refused from other origins (docs/console.md).',
  },
  { name: 'API keys', description: 'Scoped, optionally expiring keys: mint, list, rotate (24-hour overlap), revoke.' },
  {
    name: 'Organizations',
    description: 'Teams: an organization is an account; members act for it with organization keys, within their role.',
  },
  { name: 'Users', description: 'The current user: profile, counts, password.' },
  { name: 'Consent', description: 'Marketing consent and the audit trail of every consent change.' },
  { name: 'Data export', description: 'A copy of all your data (GDPR art. 15/20), generated in the background.' },
  { name: 'Account deletion', description: 'Erasing the account: an emailed token, then a 30-day grace period.' },
  { name: 'Projects', description: 'Projects group sources, jobs and leads.' },
  { name: 'Sources', description: 'Where leads come from: a start URL, a scrape type and selectors; found with AI.' },
  { name: 'Jobs', description: 'Scraping runs of a source, with live progress as Server-Sent Events.' },
  { name: 'Profile Types & Profiles', description: 'Structured records extracted by scraping, shaped by their type.' },
  { name: 'Leads', description: 'People found by scraping or added by hand: status, tags, email validation.' },
  { name: 'Chat', description: 'An assistant working on your data through tool calls; writes wait for approval.' },
  { name: 'Accounts', description: 'Companies computed from your leads (email domain or company name), with notes.' },
  { name: 'Deal Campaigns', description: 'An ideal-customer target tying sources, a profile type and matching rules.' },
  { name: 'Matching Engine', description: 'Rules (FILTER, SCORED or AI) qualifying the profiles of one type.' },
  // ---- credits, webhooks (outbound and inbound) ----
  { name: 'Credits', description: 'The balance and its ledger, prices of metered work, buying credits (Stripe).' },
  {
    name: 'Webhooks',
    description:
      'Signed event deliveries to your endpoints (Standard Webhooks), retried with backoff; the events and their ' +
      'payloads are listed under `webhooks`. Inbound events from providers, verified by signature.',
  },
  {
    name: 'Professional Network',
    description:
      'Session cookies of the professional network (encrypted, rate-limited per day), profile URL checks, lead ' +
      'enrichment from profile pages through a cloud browser, and the commonalities of a set of leads. Automated ' +
      "access breaks the network's terms of service (docs/professional-network.md).",
  },
  // ---- deliverability ----
  {
    name: 'Warmup Domains',
    description:
      'Sending domains warmed up over 5 weeks through their mailbox, checked in DNS, auto-paused on bad rates.',
  },
  {
    name: 'Outreach',
    description:
      'Email sequences to your leads from your own mailboxes (SMTP to send, IMAP to read replies and bounces): ' +
      'connections, campaigns, enrollment behind suppression and validation gates, the sequencer, the inbox.',
  },
  // ---- analytics and admin ----
  { name: 'Analytics', description: 'Figures over your pipeline, sources, capacity and credits, computed in SQL.' },
  { name: 'Admin', description: 'Operators only (ADMIN_EMAILS or role admin): platform figures, users, audit.' },
  // ---- deliverability ----
  {
    name: 'Suppressions',
    description: 'Addresses and domains never to contact; checked by validation. Bounces add to it by themselves.',
  },
  {
    name: 'Email verification',
    description: 'Bounce ingestion (RFC 3464 DSNs or JSON), bounce figures, and the spam-trap risk of addresses.',
  },
  // ---- cloud browser ----
  {
    name: 'Cloud Browser',
    description:
      'Chromium sessions that Playwright and Puppeteer connect to (`cdpUrl`, WS /api/browser/sessions/{id}/cdp) or ' +
      'drive over REST (actions, page output, tabs, cookies and storage, logs), with idle and hard timeouts, ' +
      'capacity limits and X-Client-Ref tenancy.',
  },
  // ---- data out ----
  {
    name: 'Markdown exports',
    description:
      'A website crawled into markdown (one document per page, front matter, tables and code kept): pages, a ZIP ' +
      'or one llms-full.txt-style file, live progress, retry of failed pages.',
  },
  // ---- enterprise ----
  {
    name: 'Source templates',
    description:
      'Saved source configurations with URL variables: built-ins for the directory kinds of the catalogue and your ' +
      'own; `POST /api/sources` `{templateId, variables}` makes a source from one.',
  },
  {
    name: 'Proxy profiles',
    description:
      'Proxies (http, https, socks5) your crawls, markdown exports and browser sessions go out through: checked on ' +
      'create, credentials encrypted and masked, rotation over several endpoints.',
  },
  {
    name: 'Destinations',
    description:
      'Where leads are pushed: a signed webhook, a table of another PostgreSQL database (append or upsert on ' +
      'email), or S3 objects (CSV or JSONL). Pushes run in the background, with progress, and resume after a crash.',
  },
];

export { operationIds };

/** `/api/leads/:id` → `/api/leads/{id}` (the document's form of a path). */
export const openApiPath = (url: string): string => url.replace(/:(\w+)/g, '{$1}');

const capitalize = (word: string) => word.charAt(0).toUpperCase() + word.slice(1);

/** A deterministic id for a route missing from `operationIds`: `GET /api/foo-bars/{id}` → `getFooBarsById`. */
export function derivedOperationId(method: string, path: string): string {
  const words = path
    .split('/')
    .filter((segment) => segment && segment !== 'api')
    .flatMap((segment) => (segment.startsWith('{') ? ['by', segment.slice(1, -1)] : segment.split(/[-_.]/)));
  return method.toLowerCase() + words.map(capitalize).join('');
}

export const operationIdOf = (method: string, path: string): string =>
  operationIds[`${method.toUpperCase()} ${path}`] ?? derivedOperationId(method, path);

type JsonObject = Record<string, unknown>;
const isObject = (value: unknown): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
/** Keywords whose values are data, not schemas: never rewritten. */
const dataKeywords = new Set(['const', 'default', 'enum', 'example', 'examples']);

/**
 * Rewrites, in place, shapes zod emits that generators and linters read badly, into equivalent ones:
 * - `anyOf` with an empty branch (`z.unknown().nullable()` → `anyOf: [{}, {type: null}]`) accepts anything: `{}`;
 * - a one-member `anyOf`/`oneOf` (a discriminated union of one) is that member;
 * - `z.record(z.enum([...]), v)` (every key required) → named `properties`, so clients get the keys as fields.
 */
export function tidySchemas(node: unknown): void {
  if (Array.isArray(node)) {
    for (const item of node) tidySchemas(item);
    return;
  }
  if (!isObject(node)) return;
  if (Array.isArray(node.anyOf) && node.anyOf.some((branch) => isObject(branch) && Object.keys(branch).length === 0)) {
    delete node.anyOf;
  }
  for (const keyword of ['anyOf', 'oneOf'] as const) {
    const [only, ...others] = Array.isArray(node[keyword]) ? (node[keyword] as unknown[]) : [];
    if (isObject(only) && others.length === 0 && Object.keys(only).every((key) => !(key in node))) {
      delete node[keyword];
      Object.assign(node, only);
    }
  }
  const keys = isObject(node.propertyNames) ? node.propertyNames.enum : undefined;
  if (node.type === 'object' && Array.isArray(keys) && isObject(node.additionalProperties) && !node.properties) {
    const value = node.additionalProperties;
    node.properties = Object.fromEntries(keys.map((key) => [String(key), structuredClone(value)]));
    node.additionalProperties = false;
    delete node.propertyNames;
  }
  for (const [key, value] of Object.entries(node)) {
    // `properties` maps names (any name, `default` included) to schemas.
    if (key === 'properties' && isObject(value)) for (const property of Object.values(value)) tidySchemas(property);
    else if (!dataKeywords.has(key)) tidySchemas(value);
  }
}

const refsIn = (node: unknown, found: Set<string>): Set<string> => {
  if (Array.isArray(node)) for (const item of node) refsIn(item, found);
  else if (isObject(node)) {
    if (typeof node.$ref === 'string') found.add(node.$ref.replace('#/components/schemas/', ''));
    for (const value of Object.values(node)) refsIn(value, found);
  }
  return found;
};

/**
 * Keeps only the component schemas the operations reach (every registered schema comes in an input and an
 * output variant, `XInput` and `X`, and most are used one way only), sorted by name for a stable document.
 */
export function pruneComponents(document: JsonObject): void {
  const components = document.components as { schemas?: Record<string, unknown> } | undefined;
  const schemas = components?.schemas;
  if (!components || !schemas) return;
  const reached = refsIn(document.paths, new Set());
  for (const name of reached) refsIn(schemas[name], reached); // the set grows while it is walked
  components.schemas = Object.fromEntries(
    [...reached]
      .filter((name) => name in schemas)
      .sort()
      .map((name) => [name, schemas[name]]),
  );
}

/** An answer without a description of its own is described by its status ("Not Found", not "Default Response"). */
function describeResponses(responses: unknown): unknown {
  if (!isObject(responses)) return responses;
  return Object.fromEntries(
    Object.entries(responses).map(([status, schema]) =>
      isObject(schema) && !schema.description && STATUS_CODES[status]
        ? [status, { ...schema, 'x-response-description': STATUS_CODES[status] }]
        : [status, schema],
    ),
  );
}

/** Registers the document, `/api/openapi.json` and the `/docs` reference page. */
export async function registerOpenApi(app: FastifyInstance, config: Pick<Config, 'PUBLIC_URL'>): Promise<void> {
  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Quarry API',
        version: '0.1.0',
        description:
          'Self-hostable lead scraping and outreach. Every answer is the envelope `{success, data | error}`; ' +
          'errors carry `error.code` (see the Errors table of docs/api.md) and, for bad input, ' +
          '`error.details[] {field, message}`.',
        license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
      },
      // Paths start at `/api`: the configured public URL, else the root of whatever host serves this document.
      servers: [{ url: config.PUBLIC_URL?.replace(/\/+$/, '') || '/', description: 'This Quarry service' }],
      tags: openApiTags,
      components: {
        securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'An API key `qk_live_…`' } },
      },
      security: [{ bearer: [] }],
      // What Quarry POSTs to webhook endpoints: one entry per event type with its payload.
      webhooks: openApiWebhooks() as Record<string, never>,
    },
    transform: (input) => {
      const { schema, url } = jsonSchemaTransform(input);
      if (!schema || schema.hide) return { schema, url };
      const method = String([input.route.method].flat()[0]);
      const operationId = operationIdOf(method, openApiPath(url));
      return { schema: { ...schema, operationId, response: describeResponses(schema.response) }, url };
    },
    transformObject: (documentObject) => {
      const document = jsonSchemaTransformObject(documentObject) as JsonObject;
      tidySchemas(document);
      pruneComponents(document);
      return document;
    },
  });
  serveReferencePage(app);
  app.get('/api/openapi.json', { config: { public: true }, schema: { hide: true } }, async () => app.swagger());
}
