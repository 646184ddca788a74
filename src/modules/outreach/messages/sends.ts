import { sql } from 'drizzle-orm';
import { type Db, queryRows, type Tx } from '../../../db/client.ts';
import { outreachCampaigns } from '../../../db/schema/index.ts';

/**
 * What outreach tells other modules about the mail it sent (docs/outreach.md "Email verification": bounce rates are
 * bounces ÷ these sends). A send is an outbound mail the server accepted, or whose answer was lost (UNCONFIRMED).
 */
interface Window {
  from?: Date;
  to?: Date;
}
const range = (w: Window) =>
  sql`${w.from ? sql` AND coalesce(sent_at, created_at) >= ${w.from.toISOString()}` : sql``}${
    w.to ? sql` AND coalesce(sent_at, created_at) < ${w.to.toISOString()}` : sql``
  }`;

/** Sends per recipient domain (lower case, punycode as stored). */
export async function sendsByRecipientDomain(db: Db | Tx, userId: string, domains: string[], w: Window = {}) {
  if (!domains.length) return new Map<string, number>();
  const rows = await queryRows<{ domain: string; n: number }>(
    db,
    sql`SELECT split_part(to_email, '@', 2) AS domain, count(*)::int AS n FROM outreach_messages
        WHERE user_id = ${userId} AND direction = 'outbound' AND status IN ('SENT', 'UNCONFIRMED')
          AND split_part(to_email, '@', 2) = ANY(${`{${domains.map((d) => `"${d}"`).join(',')}}`}::text[])${range(w)}
        GROUP BY 1`,
  );
  return new Map(rows.map((r) => [r.domain, r.n]));
}

/** Sends per outreach campaign of the user. */
export async function sendsByCampaign(db: Db | Tx, userId: string, campaignIds: string[], w: Window = {}) {
  if (!campaignIds.length) return new Map<string, number>();
  const rows = await queryRows<{ campaign_id: string; n: number }>(
    db,
    sql`SELECT campaign_id, count(*)::int AS n FROM outreach_messages
        WHERE user_id = ${userId} AND direction = 'outbound' AND status IN ('SENT', 'UNCONFIRMED')
          AND campaign_id = ANY(${`{${campaignIds.join(',')}}`}::uuid[])${range(w)}
        GROUP BY 1`,
  );
  return new Map(rows.map((r) => [r.campaign_id, r.n]));
}

/** The user's outreach campaign with this id, if any (bounce reports may name one). */
export async function ownedOutreachCampaign(db: Db | Tx, userId: string, id: string): Promise<string | undefined> {
  const [row] = await db
    .select({ id: outreachCampaigns.id })
    .from(outreachCampaigns)
    .where(sql`${outreachCampaigns.userId} = ${userId} AND ${outreachCampaigns.id} = ${id}`);
  return row?.id;
}
