import { z } from 'zod';

const httpUrl = z
  .url({ protocol: /^https?$/, error: 'must be an http(s) URL' })
  .max(8192)
  .describe('http(s) only; what the browser may reach is decided by the session proxy');
const selector = z.string().min(1).max(2000).describe('A Playwright selector: CSS, `xpath=…`, `text=…`');
const timeoutMs = z.number().int().min(0).max(120_000).optional().describe('Default 10,000 ms');
const coordinate = z.number().min(0).max(100_000);
const point = z.object({ x: coordinate, y: coordinate });
const onePoint = z.union([z.object({ selector }), point]);

export const navigateBody = z
  .object({
    url: httpUrl.optional(),
    action: z.enum(['back', 'forward', 'reload']).optional().describe('Instead of `url`'),
    waitUntil: z.enum(['load', 'domcontentloaded', 'networkidle', 'commit']).optional().describe('Default load'),
    timeoutMs,
  })
  .refine((b) => (b.url === undefined) !== (b.action === undefined), {
    path: ['url'],
    message: 'give either url or action (back, forward, reload)',
  });

export const clickBody = z
  .object({
    selector: selector.optional(),
    x: coordinate.optional(),
    y: coordinate.optional(),
    button: z.enum(['left', 'right', 'middle']).optional(),
    clickCount: z.number().int().min(1).max(3).optional(),
    timeoutMs,
  })
  .refine((b) => b.selector !== undefined || (b.x !== undefined && b.y !== undefined), {
    path: ['selector'],
    message: 'give a selector or both x and y',
  });

export const typeBody = z.object({
  selector,
  text: z.string().max(100_000),
  delay: z.number().int().min(0).max(1000).optional().describe('Milliseconds between keystrokes'),
  clear: z.boolean().optional().describe('Empty the field first'),
  timeoutMs,
});

export const pressBody = z.object({
  key: z.string().min(1).max(100).describe('A key or chord: `Enter`, `Control+A`, `Shift+ArrowDown`'),
  selector: selector.optional().describe('Focus this element first; the focused element otherwise'),
  timeoutMs,
});

export const scrollBody = z
  .object({
    selector: selector.optional().describe('Scroll this element; the page otherwise'),
    x: z.number().min(-1_000_000).max(1_000_000).optional().describe('Pixels to scroll by, horizontally'),
    y: z.number().min(-1_000_000).max(1_000_000).optional().describe('Pixels to scroll by, vertically'),
    to: z.enum(['top', 'bottom']).optional().describe('Instead of x/y'),
    timeoutMs,
  })
  .refine((b) => b.to !== undefined || b.x !== undefined || b.y !== undefined, {
    path: ['y'],
    message: 'give x and/or y, or to (top, bottom)',
  });

export const dragBody = z.object({
  from: onePoint.describe('`{ selector }` or `{ x, y }`'),
  to: onePoint.describe('`{ selector }` or `{ x, y }`'),
  timeoutMs,
});

export const waitBody = z
  .object({
    selector: selector.optional(),
    state: z.enum(['attached', 'detached', 'visible', 'hidden']).optional().describe('With selector; default visible'),
    url: z.string().min(1).max(8192).optional().describe('A glob (`**/done*`) the URL must match'),
    loadState: z.enum(['load', 'domcontentloaded', 'networkidle']).optional(),
    ms: z.number().int().min(0).max(60_000).optional().describe('Just wait'),
    timeoutMs,
  })
  .refine((b) => [b.selector, b.url, b.loadState, b.ms].filter((v) => v !== undefined).length === 1, {
    path: ['selector'],
    message: 'give exactly one of selector, url, loadState, ms',
  });

export const evaluateBody = z
  .object({
    expression: z.string().min(1).max(100_000).optional().describe('A JavaScript expression; promises are awaited'),
    function: z
      .string()
      .min(1)
      .max(100_000)
      .optional()
      .describe('A function body run as `async (...args) => { body }`; `return` the result'),
    args: z.array(z.unknown()).max(100).optional().describe('JSON arguments of `function`'),
    timeoutMs,
  })
  .refine((b) => (b.expression === undefined) !== (b.function === undefined), {
    path: ['expression'],
    message: 'give either expression or function',
  });

export const ACTION_BODIES = {
  navigate: navigateBody,
  click: clickBody,
  type: typeBody,
  press: pressBody,
  scroll: scrollBody,
  drag: dragBody,
  wait: waitBody,
  evaluate: evaluateBody,
} as const;
export type ActionName = keyof typeof ACTION_BODIES;
export type ActionInput<A extends ActionName> = z.infer<(typeof ACTION_BODIES)[A]>;

export const ACTION_NAMES = Object.keys(ACTION_BODIES) as ActionName[];
/** Each step is `{ action, …that action's body }`; the bodies are checked one by one, naming `steps.<i>.<field>`. */
export const batchBody = z.object({
  steps: z
    .array(z.looseObject({ action: z.enum(ACTION_NAMES as [ActionName, ...ActionName[]]) }))
    .min(1)
    .max(100)
    .describe('Run in order; the first failure stops the batch (422 ACTION_FAILED naming `steps.<i>`)'),
});

// Any JSON value (z.json() is recursive, which the OpenAPI document cannot reference).
const jsonResult = z.unknown().describe("The action's result, any JSON value").optional();

/** What every action answers: where the active tab is afterwards, and the action's own result. */
export const actionResultView = z
  .object({
    tabId: z.string(),
    url: z.string(),
    result: jsonResult,
  })
  .meta({ id: 'BrowserActionResult' });

export const batchResultView = z.object({
  tabId: z.string(),
  url: z.string(),
  steps: z.array(z.object({ action: z.string(), result: jsonResult })),
});
