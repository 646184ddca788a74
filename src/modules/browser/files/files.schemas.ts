import { z } from 'zod';
import { sessionParams } from '../tabs/route-parts.ts';

/** What every files route answers for one file. */
export const fileView = z
  .object({
    id: z.string(),
    name: z.string().describe('Sanitized: no path, no control characters, at most 200 bytes'),
    size: z.number().int().describe('Bytes'),
    mimeType: z.string().optional().describe('As the upload declared it; absent for downloads'),
    source: z.enum(['upload', 'download']).describe('Uploaded through the API, or downloaded by a page'),
    createdAt: z.string(),
  })
  .meta({ id: 'BrowserFile' });

export const fileParams = sessionParams.extend({ fileId: z.string().min(1).max(100) });

/** The upload's body as the OpenAPI document shows it; the parts themselves are read as they stream. */
export const uploadBody = z
  .object({
    file: z.string().meta({ format: 'binary' }).optional().describe("The file; its name is the part's filename"),
  })
  .nullish();

export const attachBody = z.object({
  selector: z.string().min(1).max(2000).describe('A Playwright selector of an `input[type=file]`'),
  fileIds: z
    .array(z.string().min(1).max(100))
    .min(1)
    .max(20)
    .describe('Files of this session; several only where the input is `multiple`'),
  tabId: z.string().min(1).max(100).optional().describe('A tab of the session; the active tab by default'),
  timeoutMs: z.number().int().min(0).max(120_000).optional().describe('How long to wait for the input; 10,000 ms'),
});
export type AttachBody = z.infer<typeof attachBody>;

export const attachResult = z.object({ tabId: z.string(), files: z.array(fileView) });
