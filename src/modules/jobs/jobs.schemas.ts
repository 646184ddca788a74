import { z } from 'zod';
import { jobStatuses } from '../../db/schema/index.ts';
import { isUuid } from '../../shared/ids.ts';
import { paginationQuery } from '../../shared/pagination.ts';

export const createJobBody = z.object({
  name: z.string().trim().min(1).max(200),
  sourceId: z.string().refine(isUuid, 'must be a UUID').describe('An ACTIVE source of yours'),
});

export const listJobsQuery = paginationQuery.extend({
  status: z.enum(jobStatuses).optional(),
  sourceId: z.string().refine(isUuid, 'must be a UUID').optional(),
});

export const jobView = z
  .object({
    id: z.string(),
    name: z.string(),
    sourceId: z.string(),
    status: z.enum(jobStatuses),
    progress: z.number().int().min(0).max(100),
    leadsFound: z.number().int().describe('Leads this job saved (duplicates of earlier runs are not counted)'),
    pagesVisited: z.number().int(),
    pagesFailed: z.number().int().describe('Pages that failed after their retries'),
    error: z.string().nullable().describe('Why the job FAILED'),
    trigger: z.enum(['manual', 'schedule', 'retry']),
    attempts: z
      .number()
      .int()
      .describe("How many times a worker started it (a crashed worker's job is picked up again)"),
    startedAt: z.string().nullable(),
    finishedAt: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Job' });

export type CreateJobInput = z.infer<typeof createJobBody>;
export type ListJobsQuery = z.infer<typeof listJobsQuery>;
export type JobView = z.infer<typeof jobView>;
