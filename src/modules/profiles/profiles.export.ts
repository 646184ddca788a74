import { Readable } from 'node:stream';
import type { AppDeps } from '../../deps.ts';
import { csvRow } from '../../shared/csv.ts';
import { notFound, validationError } from '../../shared/errors.ts';
import { findMatchingRule } from '../matching/index.ts';
import type { ProfileTypeRow } from '../profile-types/index.ts';
import { createProfileTypeService } from '../profile-types/index.ts';
import { type ProfileRow, profileRepository } from './profiles.repository.ts';
import type { ExportProfilesQuery } from './profiles.schemas.ts';

export const EXPORT_PAGE_SIZE = 1000;
const BASE_COLUMNS = ['id', 'profileType', 'status', 'sourceUrl', 'createdAt'] as const;

/** Cell text of a data value: arrays joined with "; ", objects as JSON, the rest as csvRow writes it. */
const cell = (v: unknown): unknown =>
  Array.isArray(v) ? v.map((x) => (x !== null && typeof x === 'object' ? JSON.stringify(x) : String(x))).join('; ') : v;

/** Field names of the given types in order, each once (first type that declares it wins). */
function fieldColumns(types: readonly ProfileTypeRow[]): string[] {
  const seen = new Set<string>();
  for (const t of types) for (const f of t.fields) seen.add(f.name);
  return [...seen];
}

/**
 * CSV export of the caller's profiles, streamed: header, then pages of 1000 rows read by keyset
 * (id DESC, newest first), so memory stays flat whatever the number of profiles. Columns: id,
 * profileType (the type's slug), status, sourceUrl, createdAt, then one column per field of the
 * type (with `profileTypeId`) or the union of the fields of all the caller's types. With `ruleId`:
 * the rule's type, only the profiles its stored results say matched (all evaluated ones with
 * `includeUnmatched`, plus a `matched` column), and `matchScore`, `aiReasoning` columns.
 */
export function createProfileExporter(deps: Pick<AppDeps, 'db' | 'clock'>) {
  const repo = profileRepository(deps.db);
  const types = createProfileTypeService(deps);

  /** With `ruleId`: the caller's rule (404 naming ruleId), whose type is the export's type. */
  async function ruleOf(userId: string, query: ExportProfilesQuery) {
    if (!query.ruleId) return undefined;
    const rule = await findMatchingRule(deps.db, userId, query.ruleId.toLowerCase());
    if (!rule) throw notFound('Matching rule', 'ruleId');
    if (query.profileTypeId && query.profileTypeId.toLowerCase() !== rule.profileTypeId) {
      throw validationError('profileTypeId', "is not the matching rule's profile type (leave it out with ruleId)");
    }
    return { id: rule.id, profileTypeId: rule.profileTypeId, includeUnmatched: query.includeUnmatched ?? false };
  }

  return async function exportCsv(userId: string, query: ExportProfilesQuery, pageSize = EXPORT_PAGE_SIZE) {
    // Resolved before the first byte, so an unknown type or rule is a JSON 404, not a broken download.
    const rule = await ruleOf(userId, query);
    const typeId = rule?.profileTypeId ?? query.profileTypeId;
    const selected = typeId ? [await types.get(userId, typeId, 'profileTypeId')] : await types.all(userId);
    const slugs = new Map(selected.map((t) => [t.id, t.slug]));
    const fields = fieldColumns(selected);
    const filter = { profileTypeId: typeId, status: query.status };
    const ruleColumns = rule ? [...(rule.includeUnmatched ? ['matched'] : []), 'matchScore', 'aiReasoning'] : [];

    const row = (p: ProfileRow, extra: unknown[]) => {
      const base = [p.id, slugs.get(p.profileTypeId) ?? '', p.status, p.sourceUrl, p.createdAt.toISOString()];
      return csvRow([...base, ...fields.map((f) => cell(Object.hasOwn(p.data, f) ? p.data[f] : null)), ...extra]);
    };

    async function* lines(): AsyncGenerator<string> {
      yield csvRow([...BASE_COLUMNS, ...fields, ...ruleColumns]);
      let before: string | undefined;
      for (;;) {
        let chunk = '';
        let last: string | undefined;
        let count: number;
        if (rule) {
          const rows = await repo.exportPageWithResults(userId, filter, rule, pageSize, before);
          for (const r of rows)
            chunk += row(r.profile, [...(rule.includeUnmatched ? [r.matched] : []), r.matchScore, r.aiReasoning]);
          count = rows.length;
          last = rows[rows.length - 1]?.profile.id;
        } else {
          const rows = await repo.exportPage(userId, filter, pageSize, before);
          for (const p of rows) chunk += row(p, []);
          count = rows.length;
          last = rows[rows.length - 1]?.id;
        }
        if (chunk) yield chunk;
        if (count < pageSize || !last) return;
        before = last;
      }
    }

    const day = deps.clock.now().toISOString().slice(0, 10);
    const filename = `profiles-${typeId ? selected[0]!.slug : 'all'}${rule ? '-matched' : ''}-${day}.csv`;
    return { filename, stream: Readable.from(lines(), { objectMode: false }) };
  };
}
