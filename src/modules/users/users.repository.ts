import { and, eq, sql } from 'drizzle-orm';
import { type Db, queryRows, type Tx } from '../../db/client.ts';
import { jobs, leads, sources, users } from '../../db/schema/index.ts';

export type UserRow = typeof users.$inferSelect;

export function userRepository(db: Db | Tx) {
  return {
    async findById(id: string): Promise<UserRow | undefined> {
      const [row] = await db.select().from(users).where(eq(users.id, id)).limit(1);
      return row;
    },
    async findByEmail(email: string): Promise<UserRow | undefined> {
      // Organization accounts have no email, and never sign in.
      const [row] = await db
        .select()
        .from(users)
        .where(and(eq(users.email, email), eq(users.kind, 'person')))
        .limit(1);
      return row;
    },
    async stats(userId: string): Promise<{ sources: number; jobs: number; leads: number }> {
      const rows = await queryRows<{ sources: number; jobs: number; leads: number }>(
        db,
        sql`
        SELECT (SELECT count(*) FROM ${sources} WHERE user_id = ${userId})::int AS sources,
               (SELECT count(*) FROM ${jobs} WHERE user_id = ${userId})::int AS jobs,
               (SELECT count(*) FROM ${leads} WHERE user_id = ${userId})::int AS leads`,
      );
      const r = rows[0]!;
      return { sources: Number(r.sources), jobs: Number(r.jobs), leads: Number(r.leads) };
    },
    /** The user, row-locked until the caller's transaction ends (an admin's change, docs/operations.md "Admin"). */
    async lockById(id: string): Promise<UserRow | undefined> {
      const [row] = await db.select().from(users).where(eq(users.id, id)).for('update');
      return row;
    },
    async setAccountState(
      id: string,
      values: { status?: UserRow['status']; role?: UserRow['role'] },
      at: Date,
    ): Promise<void> {
      await db
        .update(users)
        .set({ ...values, updatedAt: at })
        .where(eq(users.id, id));
    },
    /** An organization's account: no email, no password (docs/organizations.md); its id is the organization's. */
    async insertOrganization(name: string, at: Date): Promise<UserRow> {
      const [row] = await db
        .insert(users)
        .values({ kind: 'organization', name, createdAt: at, updatedAt: at, consentUpdatedAt: at })
        .returning();
      return row!;
    },
    async updatePassword(id: string, passwordHash: string, at: Date): Promise<void> {
      await db.update(users).set({ passwordHash, updatedAt: at }).where(eq(users.id, id));
    },
  };
}
