import { z } from 'zod';
import { suppressionSources, suppressionTypes } from '../../db/schema/index.ts';
import { nextCursor, paginationQuery } from '../../shared/pagination.ts';

export const MAX_SUPPRESSIONS_PER_REQUEST = 1000;

export const suppressionView = z
  .object({
    id: z.string(),
    type: z.enum(suppressionTypes),
    value: z.string().describe('Normalized: trimmed, lower-cased, the domain in punycode'),
    reason: z.string().nullable(),
    source: z.enum(suppressionSources).describe('manual, or the event that added it by itself'),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Suppression' });

export const listSuppressionsQuery = paginationQuery.extend({
  q: z.string().max(320).optional().describe('Part of the value (case-insensitive)'),
  type: z.enum(suppressionTypes).optional(),
  source: z.enum(suppressionSources).optional(),
  value: z
    .string()
    .min(1)
    .max(320)
    .optional()
    .describe(
      'Check one address or domain: `match` is the entry suppressing it (an address by its own entry, or by ' +
        'its domain or a parent domain), or null. Other filters and pagination are ignored then.',
    ),
});
export type ListSuppressionsQuery = z.infer<typeof listSuppressionsQuery>;

export const suppressionList = z.object({
  suppressions: z.array(suppressionView),
  nextCursor,
  match: suppressionView.nullable().optional().describe('With `?value=` only'),
});

export const addSuppressionsBody = z.object({
  items: z
    .array(
      z.object({
        type: z.enum(suppressionTypes),
        value: z.string().min(1).max(320).describe('An address (type email) or a domain (type domain)'),
        reason: z.string().max(500).nullable().optional(),
      }),
    )
    .min(1)
    .max(MAX_SUPPRESSIONS_PER_REQUEST),
});
export type AddSuppressionsBody = z.infer<typeof addSuppressionsBody>;

export const addSuppressionsResult = z.object({
  added: z.number().int().describe('New entries'),
  merged: z.number().int().describe('Items merged into an entry that existed or was given twice'),
  suppressions: z.array(suppressionView),
});
