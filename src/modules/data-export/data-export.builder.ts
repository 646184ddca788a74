import { asc, eq, getTableColumns, type SQL, sql } from 'drizzle-orm';
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core';
import { strToU8, zipSync } from 'fflate';
import type { Db } from '../../db/client.ts';
import {
  accountMetadata,
  adminAuditEvents,
  aiUsage,
  apiKeys,
  campaigns,
  chatApprovals,
  chatConversations,
  chatMessages,
  consentEvents,
  creditCheckouts,
  creditTransactions,
  destinationPushes,
  destinations,
  emailBounces,
  jobs,
  leads,
  markdownExportPages,
  markdownExports,
  matchingRules,
  matchingRuns,
  networkCredentials,
  networkEnrichJobs,
  organizationMembers,
  organizations,
  outreachCampaigns,
  outreachConnections,
  outreachEnrollments,
  outreachMailboxes,
  outreachMessages,
  outreachUnsubscribes,
  profiles,
  profileTypes,
  projects,
  proxyProfiles,
  sources,
  sourceTemplates,
  suppressions,
  users,
  warmupDomains,
  webhookEndpoints,
  webhookEvents,
} from '../../db/schema/index.ts';
import { toCsv } from '../../shared/csv.ts';
import type { ExportFormat } from './data-export.schemas.ts';

type Columns = Record<string, PgColumn | SQL.Aliased | SQL>;

/** Every column of a table but the named ones (secrets). */
function columnsWithout<T extends PgTable>(table: T, ...secret: Array<keyof T['_']['columns']>): Columns {
  const columns: Columns = { ...getTableColumns(table) };
  for (const name of secret) delete columns[name as string];
  return columns;
}

/** A table whose rows belong to the user by `userId`, all columns. */
const owned = (name: string, table: PgTable & { userId: PgColumn; id: PgColumn }) => ({
  name,
  table,
  owner: table.userId,
  columns: getTableColumns(table) as Columns,
  orderBy: table.id,
});

/**
 * What an export holds: one section per table the user owns, and the admin changes made to their account.
 * Columns are listed explicitly where a table holds secrets (password hash, key hashes, signing secrets):
 * those never leave the database. Figures the database derives from other rows (account rollups, lead
 * statistics, matching results) and delivery bookkeeping are left out: the rows they come from are here.
 */
const sections: Array<{ name: string; table: PgTable; owner: PgColumn; columns: Columns; orderBy: PgColumn }> = [
  {
    name: 'consent_history',
    table: consentEvents,
    owner: consentEvents.userId,
    columns: {
      consentType: consentEvents.consentType,
      granted: consentEvents.granted,
      ipAddress: consentEvents.ipAddress,
      changedAt: consentEvents.changedAt,
    },
    orderBy: consentEvents.id,
  },
  {
    name: 'api_keys',
    table: apiKeys,
    owner: apiKeys.userId,
    columns: {
      id: apiKeys.id,
      name: apiKeys.name,
      prefix: apiKeys.prefix,
      scopes: apiKeys.scopes,
      expiresAt: apiKeys.expiresAt,
      lastUsedAt: apiKeys.lastUsedAt,
      revokedAt: apiKeys.revokedAt,
      createdAt: apiKeys.createdAt,
    },
    orderBy: apiKeys.id,
  },
  owned('projects', projects),
  owned('sources', sources),
  owned('source_templates', sourceTemplates),
  owned('jobs', jobs),
  owned('leads', leads),
  owned('profile_types', profileTypes),
  owned('profiles', profiles),
  owned('suppressions', suppressions),
  owned('email_bounces', emailBounces),
  owned('credit_transactions', creditTransactions),
  owned('credit_checkouts', creditCheckouts),
  owned('ai_usage', aiUsage),
  owned('account_notes', accountMetadata),
  owned('matching_rules', matchingRules),
  owned('matching_runs', matchingRuns),
  owned('campaigns', campaigns),
  owned('chat_conversations', chatConversations),
  owned('chat_messages', chatMessages),
  owned('chat_approvals', chatApprovals),
  owned('markdown_exports', markdownExports),
  owned('markdown_export_pages', markdownExportPages),
  {
    name: 'webhooks',
    table: webhookEndpoints,
    owner: webhookEndpoints.userId,
    columns: columnsWithout(webhookEndpoints, 'secretEncrypted', 'previousSecretEncrypted'),
    orderBy: webhookEndpoints.id,
  },
  owned('webhook_events', webhookEvents),
  {
    name: 'warmup_domains',
    table: warmupDomains,
    owner: warmupDomains.userId,
    columns: columnsWithout(warmupDomains, 'smtpUrlEncrypted'),
    orderBy: warmupDomains.id,
  },
  {
    name: 'outreach_connections',
    table: outreachConnections,
    owner: outreachConnections.userId,
    columns: columnsWithout(outreachConnections, 'apiKeyEncrypted'),
    orderBy: outreachConnections.id,
  },
  {
    name: 'outreach_mailboxes',
    table: outreachMailboxes,
    owner: outreachMailboxes.userId,
    columns: columnsWithout(outreachMailboxes, 'smtpUrlEncrypted', 'imapUrlEncrypted'),
    orderBy: outreachMailboxes.id,
  },
  {
    name: 'network_credentials',
    table: networkCredentials,
    owner: networkCredentials.userId,
    columns: columnsWithout(networkCredentials, 'cookieSealed', 'cookieHint'),
    orderBy: networkCredentials.id,
  },
  owned('network_enrich_jobs', networkEnrichJobs),
  {
    name: 'proxy_profiles',
    table: proxyProfiles,
    owner: proxyProfiles.userId,
    columns: columnsWithout(proxyProfiles, 'passwordSealed'),
    orderBy: proxyProfiles.id,
  },
  {
    name: 'destinations',
    table: destinations,
    owner: destinations.userId,
    columns: columnsWithout(destinations, 'secrets'),
    orderBy: destinations.id,
  },
  owned('destination_pushes', destinationPushes),
  owned('outreach_campaigns', outreachCampaigns),
  owned('outreach_enrollments', outreachEnrollments),
  owned('outreach_messages', outreachMessages),
  owned('outreach_unsubscribes', outreachUnsubscribes),
  {
    // The person's memberships, not the organizations' resources: those are the organization's (docs/organizations.md).
    name: 'organization_memberships',
    table: organizationMembers,
    owner: organizationMembers.userId,
    columns: {
      orgId: organizationMembers.orgId,
      organization: sql<string>`(SELECT ${organizations.name} FROM ${organizations}
                                 WHERE ${organizations.id} = ${organizationMembers.orgId})`,
      role: organizationMembers.role,
      joinedAt: organizationMembers.createdAt,
    },
    orderBy: organizationMembers.id,
  },
  {
    name: 'admin_changes',
    table: adminAuditEvents,
    owner: adminAuditEvents.targetUserId,
    // What was changed, when and why; not which admin did it.
    columns: columnsWithout(adminAuditEvents, 'targetUserId', 'actorId'),
    orderBy: adminAuditEvents.id,
  },
];

const profileColumns = {
  id: users.id,
  email: users.email,
  name: users.name,
  status: users.status,
  role: users.role,
  termsAcceptedAt: users.termsAcceptedAt,
  privacyAcceptedAt: users.privacyAcceptedAt,
  marketingConsent: users.marketingConsent,
  consentUpdatedAt: users.consentUpdatedAt,
  createdAt: users.createdAt,
  updatedAt: users.updatedAt,
};

type Row = Record<string, unknown>;
export interface UserData {
  exportedAt: string;
  profile: Row;
  [section: string]: unknown;
}

/** Reads everything the user owns (no secrets). */
export async function collectUserData(
  db: Db,
  userId: string,
  at: Date,
): Promise<{ data: UserData; tables: Array<{ name: string; columns: string[]; rows: Row[] }> }> {
  const [profile] = await db.select(profileColumns).from(users).where(eq(users.id, userId)).limit(1);
  if (!profile) throw new Error(`user ${userId} not found`);
  const tables = [{ name: 'profile', columns: Object.keys(profileColumns), rows: [profile as Row] }];
  for (const s of sections) {
    const rows = (await db
      .select(s.columns)
      .from(s.table as never)
      .where(eq(s.owner, userId))
      .orderBy(asc(s.orderBy))) as Row[];
    tables.push({ name: s.name, columns: Object.keys(s.columns), rows });
  }
  const data: UserData = { exportedAt: at.toISOString(), profile: profile as Row };
  for (const t of tables.slice(1)) data[camel(t.name)] = t.rows;
  return { data, tables };
}

const camel = (name: string) => name.replace(/_(\w)/g, (_, c: string) => c.toUpperCase());

/** The file for a format: a JSON document, or a ZIP with one CSV per table. */
export async function buildExportFile(db: Db, userId: string, format: ExportFormat, at: Date) {
  const { data, tables } = await collectUserData(db, userId, at);
  const stamp = at.toISOString().slice(0, 10);
  if (format === 'JSON') {
    return {
      content: Buffer.from(JSON.stringify({ format: 'quarry-export/1', ...data }, null, 2), 'utf8'),
      contentType: 'application/json; charset=utf-8',
      fileName: `quarry-export-${stamp}.json`,
    };
  }
  const files: Record<string, Uint8Array> = {};
  for (const t of tables) files[`${t.name}.csv`] = strToU8(toCsv(t.columns, t.rows));
  return {
    content: Buffer.from(zipSync(files, { level: 6, mtime: at })),
    contentType: 'application/zip',
    fileName: `quarry-export-${stamp}.zip`,
  };
}
