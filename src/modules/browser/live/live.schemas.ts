import { z } from 'zod';
import { isoDate } from '../../../shared/http.ts';

export const LIVE_MODES = ['view', 'interact'] as const;
export type LiveMode = (typeof LIVE_MODES)[number];

export const LIVE_VIEW_DEFAULT_TTL_MS = 3_600_000;
export const LIVE_VIEW_MAX_TTL_MS = 86_400_000;

export const createLiveViewBody = z.object({
  mode: z
    .enum(LIVE_MODES)
    .describe('view: the viewer sees the active tab; interact: it may also use the mouse, wheel and keyboard'),
  expiresInMs: z
    .int()
    .min(1000)
    .max(LIVE_VIEW_MAX_TTL_MS)
    .default(LIVE_VIEW_DEFAULT_TTL_MS)
    .describe('How long the URL works (default 1 hour, at most 24 hours); open viewers are closed then'),
});
export type CreateLiveViewBody = z.infer<typeof createLiveViewBody>;

export const liveViewView = z
  .object({
    id: z.string(),
    url: z.string().describe('The embeddable page: put it in an iframe (its token is the credential)'),
    expiresAt: isoDate,
    mode: z.enum(LIVE_MODES),
  })
  .meta({ id: 'BrowserLiveView' });
export type LiveViewView = z.infer<typeof liveViewView>;

export const liveViewParams = z.object({ id: z.string().min(1), viewId: z.string().min(1) });
export const liveTokenParams = z.object({ token: z.string().min(1).max(200) });

// ---- What a viewer's page sends over the stream (interact tokens only; a view token's input is dropped) ----

const coordinate = z.number().min(0).max(100_000);
const delta = z.number().min(-100_000).max(100_000);
/** CDP's bit field: Alt 1, Ctrl 2, Meta 4, Shift 8. */
const modifiers = z.int().min(0).max(15).default(0);

export const viewerMessage = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('mouse'),
    event: z.enum(['mousePressed', 'mouseReleased', 'mouseMoved']),
    x: coordinate,
    y: coordinate,
    button: z.enum(['none', 'left', 'middle', 'right']).default('none'),
    clickCount: z.int().min(0).max(3).default(0),
    modifiers,
  }),
  z.object({ type: z.literal('wheel'), x: coordinate, y: coordinate, deltaX: delta, deltaY: delta, modifiers }),
  z.object({
    type: z.literal('key'),
    event: z.enum(['keyDown', 'keyUp', 'rawKeyDown', 'char']),
    key: z.string().min(1).max(32),
    code: z.string().max(32).optional(),
    text: z.string().max(4).optional(),
    keyCode: z.int().min(0).max(255).optional(),
    modifiers,
  }),
  z.object({ type: z.literal('control'), action: z.enum(['take', 'release']) }),
]);
export type ViewerMessage = z.infer<typeof viewerMessage>;
export type ViewerInput = Exclude<ViewerMessage, { type: 'control' }>;
