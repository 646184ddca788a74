import { asc, eq, getTableColumns } from 'drizzle-orm';
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core';
import { strToU8, zipSync } from 'fflate';
import type { Db } from '../../db/client.ts';
import {
  apiKeys,
  consentEvents,
  creditTransactions,
  emailBounces,
  jobs,
  leads,
  profiles,
  profileTypes,
  projects,
  sources,
  suppressions,
  users,
} from '../../db/schema/index.ts';
import { toCsv } from '../../shared/csv.ts';
import type { ExportFormat } from './data-export.schemas.ts';

type Columns = Record<string, PgColumn>;

/**
 * What an export holds: one section per table the user owns. Columns are listed explicitly where
 * a table holds secrets (password hash, key hashes): those never leave the database.
 */
const sections: Array<{ name: string; table: PgTable & { userId: PgColumn }; columns: Columns; orderBy: PgColumn }> = [
  {
    name: 'consent_history',
    table: consentEvents,
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
  { name: 'projects', table: projects, columns: getTableColumns(projects), orderBy: projects.id },
  { name: 'sources', table: sources, columns: getTableColumns(sources), orderBy: sources.id },
  { name: 'jobs', table: jobs, columns: getTableColumns(jobs), orderBy: jobs.id },
  { name: 'leads', table: leads, columns: getTableColumns(leads), orderBy: leads.id },
  { name: 'profile_types', table: profileTypes, columns: getTableColumns(profileTypes), orderBy: profileTypes.id },
  { name: 'profiles', table: profiles, columns: getTableColumns(profiles), orderBy: profiles.id },
  { name: 'suppressions', table: suppressions, columns: getTableColumns(suppressions), orderBy: suppressions.id },
  { name: 'email_bounces', table: emailBounces, columns: getTableColumns(emailBounces), orderBy: emailBounces.id },
  {
    name: 'credit_transactions',
    table: creditTransactions,
    columns: getTableColumns(creditTransactions),
    orderBy: creditTransactions.id,
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
      .where(eq(s.table.userId, userId))
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
