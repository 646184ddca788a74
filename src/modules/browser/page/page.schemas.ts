import { z } from 'zod';

const flag = z
  .enum(['true', 'false'])
  .transform((v) => v === 'true')
  .optional();
const selector = z.string().min(1).max(2000);
const tabId = z.string().min(1).max(100).optional().describe('A tab of the session; the active tab by default');

export const screenshotQuery = z.object({
  tabId,
  format: z.enum(['png', 'jpeg']).optional().describe('Default png'),
  quality: z.coerce.number().int().min(0).max(100).optional().describe('jpeg only'),
  fullPage: flag.describe('The whole scrollable page, not just the viewport'),
  clip: z
    .string()
    .regex(/^\d+(\.\d+)?(,\d+(\.\d+)?){3}$/, 'x,y,width,height in pixels')
    .optional()
    .describe('`x,y,width,height`'),
  selector: selector.optional().describe('Only this element'),
  timeoutMs: z.coerce.number().int().min(0).max(120_000).optional().describe('Default 30,000 ms'),
});

export const pdfBody = z.object({
  tabId,
  format: z.enum(['Letter', 'Legal', 'Tabloid', 'Ledger', 'A0', 'A1', 'A2', 'A3', 'A4', 'A5', 'A6']).optional(),
  landscape: z.boolean().optional(),
  printBackground: z.boolean().optional(),
  scale: z.number().min(0.1).max(2).optional(),
  pageRanges: z.string().max(200).optional().describe('`1-5, 8`'),
  margin: z
    .object({
      top: z.string().max(20).optional(),
      right: z.string().max(20).optional(),
      bottom: z.string().max(20).optional(),
      left: z.string().max(20).optional(),
    })
    .optional()
    .describe('CSS lengths: `1cm`, `10px`'),
});

export const contentQuery = z.object({
  tabId,
  format: z.enum(['html', 'text', 'markdown']).optional().describe('Default html'),
});

export const contentView = z.object({
  tabId: z.string(),
  url: z.string(),
  title: z.string(),
  format: z.enum(['html', 'text', 'markdown']),
  content: z.string(),
});

export const scrapeBody = z.object({
  tabId,
  selectors: z
    .record(z.string(), z.string())
    .describe('The selector convention of sources: CSS, XPath, `@attr`, and `item` for a list of items'),
});

export const scrapeView = z.object({
  tabId: z.string(),
  url: z.string(),
  items: z.array(z.object({ fields: z.record(z.string(), z.string()), visible: z.boolean() })),
  nextPageUrls: z.array(z.string()),
});

export const accessibilityQuery = z.object({ tabId, selector: selector.optional().describe('Default body') });

export const accessibilityView = z.object({
  tabId: z.string(),
  url: z.string(),
  snapshot: z.string().describe("Playwright's ARIA snapshot (YAML)"),
});
