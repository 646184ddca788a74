import { createHash } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { type Db, queryRows } from './client.ts';
import { freeMailDomains } from './free-mail-domains.ts';

/**
 * Keeps `free_email_domains` equal to `freeMailDomains()` (the `email-providers` list this install ships), so
 * SQL can tell a company domain from a free-mail one with a join. Idempotent, and one read when already in sync.
 */
export async function syncFreeEmailDomains(db: Db): Promise<void> {
  const domains = [...freeMailDomains()];
  // The table's digest against the list's (both in byte order), so an update that swaps domains
  // without changing their number is picked up too.
  const sorted = [...domains].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  const digest = createHash('md5').update(sorted.join('\n')).digest('hex');
  const [row] = await queryRows<{ digest: string }>(
    db,
    sql`SELECT md5(coalesce(string_agg(domain, E'\n' ORDER BY domain COLLATE "C"), '')) AS digest
        FROM free_email_domains`,
  );
  if (row?.digest === digest) return;
  // One JSON parameter: the same on both drivers (drizzle would expand a JS array into 8,000 parameters).
  const list = JSON.stringify(domains);
  await db.transaction(async (tx) => {
    const removed = await queryRows<{ domain: string }>(
      tx,
      sql`DELETE FROM free_email_domains WHERE domain NOT IN (SELECT jsonb_array_elements_text(${list}::jsonb))
        RETURNING domain`,
    );
    const added = await queryRows<{ domain: string }>(
      tx,
      sql`INSERT INTO free_email_domains (domain) SELECT jsonb_array_elements_text(${list}::jsonb)
        ON CONFLICT DO NOTHING RETURNING domain`,
    );
    // Leads at a domain that changed sides get their account key again (a stored key follows the list).
    const changed = JSON.stringify([...removed, ...added].map((r) => r.domain));
    if (changed === '[]') return;
    // No lead may be written meanwhile with a key from the old list (it would never be re-keyed);
    // the list changes only when an upgrade ships a new one.
    await tx.execute(sql`LOCK TABLE leads IN SHARE ROW EXCLUSIVE MODE`);
    await tx.execute(
      sql`UPDATE leads SET account_key = account_key_of(email, company)
        WHERE email LIKE '%@%'
          AND lower(split_part(email, '@', 2)) IN (SELECT jsonb_array_elements_text(${changed}::jsonb))
          AND account_key IS DISTINCT FROM account_key_of(email, company)`,
    );
  });
}
