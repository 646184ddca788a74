import { Readable } from 'node:stream';
import type { AppDeps } from '../../deps.ts';
import { csvRow } from '../../shared/csv.ts';
import { createProfileTypeService } from '../profile-types/profile-types.service.ts';
import type { ProfileTypeRow } from '../profile-types/profile-types.repository.ts';
import { profileRepository } from './profiles.repository.ts';
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
 * type (with `profileTypeId`) or the union of the fields of all the caller's types.
 */
export function createProfileExporter(deps: Pick<AppDeps, 'db' | 'clock'>) {
  const repo = profileRepository(deps.db);
  const types = createProfileTypeService(deps);

  return async function exportCsv(userId: string, query: ExportProfilesQuery, pageSize = EXPORT_PAGE_SIZE) {
    // Resolved before the first byte, so an unknown type is a JSON 404, not a broken download.
    const selected = query.profileTypeId ? [await types.get(userId, query.profileTypeId, 'profileTypeId')] : await types.all(userId);
    const slugs = new Map(selected.map((t) => [t.id, t.slug]));
    const fields = fieldColumns(selected);
    const filter = { profileTypeId: query.profileTypeId, status: query.status };

    async function* lines(): AsyncGenerator<string> {
      yield csvRow([...BASE_COLUMNS, ...fields]);
      let before: string | undefined;
      for (;;) {
        const rows = await repo.exportPage(userId, filter, pageSize, before);
        if (!rows.length) return;
        let chunk = '';
        for (const p of rows) {
          const base = [p.id, slugs.get(p.profileTypeId) ?? '', p.status, p.sourceUrl, p.createdAt.toISOString()];
          chunk += csvRow([...base, ...fields.map((f) => cell(Object.hasOwn(p.data, f) ? p.data[f] : null))]);
        }
        yield chunk;
        if (rows.length < pageSize) return;
        before = rows[rows.length - 1]!.id;
      }
    }

    const day = deps.clock.now().toISOString().slice(0, 10);
    const filename = `profiles-${query.profileTypeId ? selected[0]!.slug : 'all'}-${day}.csv`;
    return { filename, stream: Readable.from(lines(), { objectMode: false }) };
  };
}
