import { z } from 'zod';

const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).max(8192);

export const cookieView = z
  .object({
    name: z.string(),
    value: z.string(),
    domain: z.string(),
    path: z.string(),
    expires: z.number().describe('Unix seconds; -1 for a session cookie'),
    httpOnly: z.boolean(),
    secure: z.boolean(),
    sameSite: z.enum(['Strict', 'Lax', 'None']),
  })
  .meta({ id: 'BrowserCookie' });

export const cookieFilter = z.object({
  url: httpUrl.optional().describe('Only cookies sent to this URL'),
  name: z.string().min(1).max(4096).optional(),
});

const cookieInput = z
  .object({
    name: z.string().min(1).max(4096),
    value: z.string().max(4096),
    url: httpUrl.optional().describe('Sets domain and path from the URL; or give domain (and path)'),
    domain: z.string().min(1).max(253).optional(),
    path: z.string().min(1).max(4096).optional(),
    expires: z.number().optional().describe('Unix seconds; a session cookie when absent'),
    httpOnly: z.boolean().optional(),
    secure: z.boolean().optional(),
    sameSite: z.enum(['Strict', 'Lax', 'None']).optional(),
  })
  .refine((c) => (c.url === undefined) !== (c.domain === undefined), {
    path: ['url'],
    message: 'give either url or domain',
  });

export const setCookiesBody = z.object({ cookies: z.array(cookieInput).min(1).max(500) });

export const storageQuery = z.object({ origin: httpUrl.describe('`https://example.com`; any path is ignored') });

const storageMap = z.record(z.string().max(10_000), z.string().max(5_000_000));
export const storageView = z
  .object({ origin: z.string(), localStorage: storageMap, sessionStorage: storageMap })
  .meta({ id: 'BrowserStorage' });

export const putStorageBody = z.object({
  origin: httpUrl,
  localStorage: storageMap.optional(),
  sessionStorage: storageMap.optional().describe("Per tab: written to the session's tabs at that origin only"),
  clear: z.boolean().optional().describe('Empty the storage areas given before writing them'),
});
