import { z } from 'zod';

export const exportFormats = ['JSON', 'CSV'] as const;
export type ExportFormat = (typeof exportFormats)[number];

/** The body is optional: no body at all means `{format: 'JSON'}`. */
export const createExportBody = z.preprocess(
  (body) => body ?? {},
  z.object({
    format: z.enum(exportFormats).default('JSON').describe('JSON (one document) or CSV (a ZIP with one CSV per table)'),
  }),
);

export const downloadQuery = z.object({
  requestId: z
    .string({ error: 'is required' })
    .min(1, 'is required')
    .max(200)
    .describe('The requestId answered by POST /api/users/export'),
});

export const exportView = z
  .object({
    requestId: z.string(),
    status: z.enum(['PENDING', 'PROCESSING', 'COMPLETED', 'FAILED']),
    format: z.enum(exportFormats),
    createdAt: z.string(),
    downloadExpiry: z.string().nullable().describe('Set on completion: the file can be downloaded until then (7 days)'),
  })
  .meta({ id: 'DataExport' });

export const toExportView = (row: {
  id: string;
  status: z.infer<typeof exportView>['status'];
  format: ExportFormat;
  createdAt: Date;
  downloadExpiry: Date | null;
}) => ({
  requestId: row.id,
  status: row.status,
  format: row.format,
  createdAt: row.createdAt.toISOString(),
  downloadExpiry: row.downloadExpiry?.toISOString() ?? null,
});
