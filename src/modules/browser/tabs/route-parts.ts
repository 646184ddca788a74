import { z } from 'zod';

/** What every operation route shares: the section's tag and the session id in the path. */
export const browserTags = ['Cloud Browser'];
export const sessionParams = z.object({ id: z.string().min(1) });
export const sessionPath = (rest: string) => `/api/browser/sessions/:id/${rest}`;
export const readScope = { scope: 'browser:read' } as const;
export const writeScope = { scope: 'browser:write' } as const;
