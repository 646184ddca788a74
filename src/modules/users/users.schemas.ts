import { z } from 'zod';

export const emailInput = z
  .email()
  .max(254)
  .transform((v) => v.trim().toLowerCase());

export const password = z.string().min(8, 'must be at least 8 characters').max(1024);

export const userView = z
  .object({
    id: z.string(),
    email: z.string(),
    name: z.string().nullable(),
    createdAt: z.string(),
  })
  .meta({ id: 'User' });

export const userStats = z
  .object({ sources: z.number().int(), jobs: z.number().int(), leads: z.number().int() })
  .meta({ id: 'UserStats' });

export const changePasswordBody = z.object({ currentPassword: z.string().min(1).max(1024), newPassword: password });

export const toUserView = (u: { id: string; email: string | null; name: string | null; createdAt: Date }) => ({
  id: u.id,
  // A person always has an email (users_person_credentials); only organization accounts have none.
  email: u.email ?? '',
  name: u.name,
  createdAt: u.createdAt.toISOString(),
});
