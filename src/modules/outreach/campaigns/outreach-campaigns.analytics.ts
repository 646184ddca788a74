import { sql } from 'drizzle-orm';
import { type Db, queryRows } from '../../../db/client.ts';

interface FigureRow {
  key: string | null;
  sent: number;
  unconfirmed: number;
  opened: number;
  replied: number;
  bounced: number;
  unsubscribed: number;
}

/**
 * A campaign's figures in SQL (docs/outreach.md "Outreach", Analytics), grouped by `groupBy` (the sequence step, the mailbox,
 * or nothing): sent (outbound mails the server accepted), unconfirmed (their answer was lost: they may not have
 * arrived), opened (first open seen), replied (leads that
 * answered, auto-replies not counted), bounced (bounces traced to one of its mails), unsubscribed (through its
 * mails' links). Each figure is attributed to the mail it concerns.
 */
export function campaignFigures(db: Db, campaignId: string, groupBy: 'step' | 'mailbox' | 'none') {
  const key =
    groupBy === 'step' ? sql`m.step::text` : groupBy === 'mailbox' ? sql`m.mailbox_id::text` : sql`NULL::text`;
  return queryRows<FigureRow>(
    db,
    sql`WITH out AS (
          SELECT m.id, ${key} AS key, m.opened_at, m.status FROM outreach_messages m
          WHERE m.campaign_id = ${campaignId} AND m.direction = 'outbound'
        )
        SELECT k.key,
          (SELECT count(*) FROM out WHERE out.key IS NOT DISTINCT FROM k.key AND out.status = 'SENT')::int AS sent,
          (SELECT count(*) FROM out WHERE out.key IS NOT DISTINCT FROM k.key AND out.status = 'UNCONFIRMED')::int
             AS unconfirmed,
          (SELECT count(*) FROM out WHERE out.key IS NOT DISTINCT FROM k.key AND out.opened_at IS NOT NULL)::int
             AS opened,
          (SELECT count(DISTINCT m.enrollment_id) FROM outreach_messages m
             WHERE m.campaign_id = ${campaignId} AND m.direction = 'inbound' AND m.kind = 'reply'
               AND ${key} IS NOT DISTINCT FROM k.key)::int AS replied,
          (SELECT count(*) FROM email_bounces b JOIN outreach_messages m ON m.id = b.outreach_message_id
             WHERE b.outreach_campaign_id = ${campaignId} AND ${key} IS NOT DISTINCT FROM k.key)::int AS bounced,
          (SELECT count(*) FROM outreach_unsubscribes u JOIN outreach_messages m ON m.id = u.message_id
             WHERE u.campaign_id = ${campaignId} AND ${key} IS NOT DISTINCT FROM k.key)::int AS unsubscribed
        FROM (SELECT DISTINCT key FROM out) k
        ORDER BY k.key`,
  );
}
