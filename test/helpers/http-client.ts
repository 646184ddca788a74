/** A tiny JSON client for tests that talk to a service process over real HTTP. */
export interface ApiClient {
  base: string;
  headers: Record<string, string>;
  call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
}

export function apiClient(base: string, apiKey?: string): ApiClient {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}),
  };
  return {
    base,
    headers,
    async call(method, path, body) {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: body === undefined ? { authorization: headers.authorization ?? '' } : headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : undefined };
    },
  };
}

/** Signs a user up on a running service and returns a client holding their key. */
export async function signedUpClient(base: string, email: string): Promise<ApiClient> {
  const res = await apiClient(base).call('POST', '/api/auth/signup', {
    email,
    password: 'long enough pw',
    termsAccepted: true,
    privacyAccepted: true,
  });
  if (res.status !== 201) throw new Error(`signup failed: ${res.status} ${JSON.stringify(res.body)}`);
  return apiClient(base, res.body.data.apiKey);
}

/** Creates and activates a source; returns its id. */
export async function activeSourceVia(client: ApiClient, body: Record<string, unknown>): Promise<string> {
  const created = await client.call('POST', '/api/sources', { name: 'Fixture', scrapeType: 'STATIC', ...body });
  if (created.status !== 201) throw new Error(`source: ${created.status} ${JSON.stringify(created.body)}`);
  const id = created.body.data.source.id as string;
  const activated = await client.call('POST', `/api/sources/${id}/activate`);
  if (activated.status !== 200) throw new Error(`activate: ${activated.status}`);
  return id;
}
