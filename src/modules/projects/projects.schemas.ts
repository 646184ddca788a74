import { z } from 'zod';
import { paginationQuery } from '../../shared/pagination.ts';

/** `#RGB` or `#RRGGBB`, stored as lower-case `#rrggbb`. */
export const hexColor = z
  .string()
  .trim()
  .regex(/^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/, 'must be a hex colour such as #1e90ff or #09f')
  .transform((v) => {
    const hex = v.slice(1).toLowerCase();
    return `#${hex.length === 3 ? [...hex].map((c) => c + c).join('') : hex}`;
  })
  .describe('Hex colour `#rrggbb` (`#rgb` accepted); answered as lower-case `#rrggbb`');

const name = z.string().trim().min(1).max(200);
const description = z.string().trim().max(5000);

export const createProjectBody = z.object({
  name,
  description: description.nullable().optional(),
  color: hexColor.nullable().optional(),
});

export const updateProjectBody = z
  .object({
    name: name.optional(),
    description: description.nullable().optional().describe('null (or an empty string) clears it'),
    color: hexColor.nullable().optional().describe('null clears it'),
  })
  .describe('Every attribute is optional; an empty body changes nothing and answers the project.');

export const projectView = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    color: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Project' });

export const listProjectsQuery = paginationQuery;

export type CreateProjectInput = z.infer<typeof createProjectBody>;
export type UpdateProjectInput = z.infer<typeof updateProjectBody>;
