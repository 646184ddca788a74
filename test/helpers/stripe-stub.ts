import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A loopback server speaking Stripe's documented wire format for `POST /v1/checkout/sessions`: a
 * form-encoded body (`line_items[0][price_data][unit_amount]=…`), `Authorization: Bearer sk_…` (401
 * with Stripe's error shape otherwise), and a JSON Checkout Session in answer. Point the service at it
 * with STRIPE_API_BASE.
 */

export interface StripeRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The form-encoded body as Stripe's bracketed keys → values. */
  form: Record<string, string>;
}

export interface StripeStub {
  /** STRIPE_API_BASE, e.g. `http://127.0.0.1:41234`. */
  url: string;
  secretKey: string;
  requests: StripeRequest[];
  /** Sessions created so far, as answered. */
  sessions: Array<Record<string, unknown>>;
  /** The next `times` session creations answer this status with Stripe's error shape. */
  fail(status: number, times?: number): void;
  close(): Promise<void>;
}

/** `metadata[userId]` → metadata.userId, from the form fields under `prefix`. */
const under = (form: Record<string, string>, prefix: string) =>
  Object.fromEntries(
    Object.entries(form)
      .filter(([k]) => k.startsWith(`${prefix}[`))
      .map(([k, v]) => [k.slice(prefix.length + 1, -1), v]),
  );

export async function startStripeStub(secretKey = 'sk_test_quarry_stub'): Promise<StripeStub> {
  const requests: StripeRequest[] = [];
  const sessions: Array<Record<string, unknown>> = [];
  const failures: number[] = [];

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const send = (status: number, body: unknown) => {
        res.writeHead(status, {
          'content-type': 'application/json',
          'request-id': `req_${randomBytes(6).toString('hex')}`,
        });
        res.end(JSON.stringify(body));
      };
      const error = (status: number, type: string, message: string) => send(status, { error: { type, message } });
      const url = new URL(req.url ?? '/', 'http://stub');
      const form = Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8')));
      requests.push({ method: req.method ?? '', path: url.pathname, headers: req.headers, form });
      if (req.headers.authorization !== `Bearer ${secretKey}`)
        return error(401, 'invalid_request_error', 'Invalid API Key provided');
      if (req.method !== 'POST' || url.pathname !== '/v1/checkout/sessions')
        return error(404, 'invalid_request_error', `Unrecognized request URL (${req.method}: ${url.pathname})`);
      if (!req.headers['content-type']?.startsWith('application/x-www-form-urlencoded'))
        return error(400, 'invalid_request_error', 'Invalid request: expected a form-encoded body');
      const failure = failures.shift();
      if (failure) return error(failure, 'api_error', 'Something went wrong on the stub');
      if (!form.success_url) return error(400, 'invalid_request_error', 'Missing required param: success_url.');
      const id = `cs_test_${randomBytes(12).toString('hex')}`;
      const amount = Number(form['line_items[0][price_data][unit_amount]']) * Number(form['line_items[0][quantity]']);
      const session = {
        id,
        object: 'checkout.session',
        amount_subtotal: amount,
        amount_total: amount,
        cancel_url: form.cancel_url ?? null,
        client_reference_id: form.client_reference_id ?? null,
        created: Math.floor(Date.now() / 1000),
        currency: form['line_items[0][price_data][currency]'],
        livemode: false,
        metadata: under(form, 'metadata'),
        mode: form.mode,
        payment_status: 'unpaid',
        status: 'open',
        success_url: form.success_url,
        url: `https://checkout.stripe.com/c/pay/${id}`,
      };
      sessions.push(session);
      send(200, session);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    secretKey,
    requests,
    sessions,
    fail(status, times = 1) {
      for (let i = 0; i < times; i++) failures.push(status);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
