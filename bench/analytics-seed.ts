/**
 * One user's pipeline for the analytics bench, inserted set-based: projects, sources, finished and
 * pending jobs, and leads spread over 60 days across ten statuses, 40% of them email-validated.
 */
import type pg from 'pg';

export const SEED_PROJECTS = 4;
export const SOURCES_PER_PROJECT = 10;
export const JOBS_PER_SOURCE = 50;

/** UUIDv7-shaped ids from a number, so they sort by creation like real ones. */
const v7 = (expr: string, epochMs: number) =>
  `(lpad(to_hex(${epochMs} + ${expr}), 12, '0') || '7' || substr(md5(${expr}::text), 1, 3) || '8'
    || substr(md5(${expr}::text), 4, 15))::uuid`;

export interface SeededPipeline {
  projectIds: string[];
  sourceIds: string[];
}

export async function seedPipeline(pool: pg.Pool, userId: string, leads: number): Promise<SeededPipeline> {
  const projectIds = (
    await pool.query(
      `INSERT INTO projects (id, user_id, name)
       SELECT ${v7('g', 1_600_000_000_000)}, $1, 'Project ' || g FROM generate_series(1, $2::int) g RETURNING id`,
      [userId, SEED_PROJECTS],
    )
  ).rows.map((r) => r.id as string);
  const sourceIds = (
    await pool.query(
      `INSERT INTO sources (id, user_id, project_id, name, url, scrape_type, status, schedule_type, next_run_at)
       SELECT ${v7('g', 1_600_100_000_000)}, $1, ($2::uuid[])[1 + g % $3], 'Source ' || g,
              'https://example.com/s' || g, 'STATIC', CASE WHEN g % 5 = 0 THEN 'DRAFT' ELSE 'ACTIVE' END,
              (ARRAY['MANUAL', 'HOURLY', 'DAILY', 'WEEKLY'])[1 + g % 4],
              CASE WHEN g % 4 = 0 OR g % 5 = 0 THEN NULL ELSE now() + (g % 90) * interval '1 minute' END
       FROM generate_series(1, $4::int) g ORDER BY g RETURNING id`,
      [userId, projectIds, SEED_PROJECTS, SEED_PROJECTS * SOURCES_PER_PROJECT],
    )
  ).rows.map((r) => r.id as string);
  // Jobs: the last of each source is PENDING; the others finished over the last 30 days (80% COMPLETED,
  // 15% FAILED, 5% CANCELLED), each running 1–10 minutes.
  const jobIds = (
    await pool.query(
      `INSERT INTO jobs (id, user_id, source_id, name, status, progress, leads_found, pages_visited,
                         started_at, finished_at, created_at, updated_at)
       SELECT ${v7('g', 1_600_200_000_000)}, $1, ($2::uuid[])[1 + g / $3], 'Run ' || g, st, 100,
              CASE WHEN st = 'PENDING' THEN 0 ELSE 50 + g % 400 END,
              CASE WHEN st = 'PENDING' THEN 0 ELSE 5 + g % 40 END,
              CASE WHEN st = 'PENDING' THEN NULL ELSE t END,
              CASE WHEN st = 'PENDING' THEN NULL ELSE t + (60 + g % 540) * interval '1 second' END, t, t
       FROM generate_series(0, $4::int - 1) g,
            LATERAL (SELECT CASE WHEN g % $3 = $3 - 1 THEN 'PENDING' WHEN g % 20 = 0 THEN 'CANCELLED'
                                 WHEN g % 20 < 4 THEN 'FAILED' ELSE 'COMPLETED' END AS st,
                            now() - (g % 30) * interval '1 day' - (g % 1440) * interval '1 minute' AS t) x
       ORDER BY g RETURNING id`,
      [userId, sourceIds, JOBS_PER_SOURCE, sourceIds.length * JOBS_PER_SOURCE],
    )
  ).rows.map((r) => r.id as string);
  const batch = 200_000;
  for (let start = 1; start <= leads; start += batch) {
    await pool.query(
      `INSERT INTO leads (id, user_id, source_id, job_id, first_name, last_name, email, company, job_title,
                          status, email_validation, validated_at, created_at, updated_at)
       SELECT ${v7('g', 1_700_000_000_000)}, $1, ($2::uuid[])[1 + s], ($3::uuid[])[1 + s * $4 + (g / 41) % ($4 - 1)],
              'First' || g, 'Last' || g, 'person' || g || '@company' || (g % 5000) || '.com',
              'Company ' || (g % 5000), 'Engineer',
              CASE WHEN p < 20 THEN 'NEW' WHEN p < 45 THEN 'VALID' WHEN p < 50 THEN 'INVALID' WHEN p < 55 THEN 'RISKY'
                   WHEN p < 75 THEN 'CONTACTED' WHEN p < 85 THEN 'REPLIED' WHEN p < 91 THEN 'QUALIFIED'
                   WHEN p < 95 THEN 'DISQUALIFIED' WHEN p < 98 THEN 'CONVERTED' ELSE 'UNSUBSCRIBED' END,
              CASE WHEN g % 5 < 2 THEN jsonb_build_object(
                'status', (ARRAY['valid', 'valid', 'valid', 'risky', 'invalid', 'unknown', 'valid'])[1 + g % 7],
                'tier', 'domain', 'errors', '[]'::jsonb, 'flags', '[]'::jsonb, 'checkedAt', t) END,
              CASE WHEN g % 5 < 2 THEN t + interval '1 hour' END, t, t
       FROM generate_series($5::int, $6::int) g,
            LATERAL (SELECT g % $7 AS s, (g * 37) % 100 AS p,
                            now() - ((g / 7) % 60) * interval '1 day' - (g % 86400) * interval '1 second' AS t) x`,
      [userId, sourceIds, jobIds, JOBS_PER_SOURCE, start, Math.min(start + batch - 1, leads), sourceIds.length],
    );
  }
  await pool.query('VACUUM ANALYZE leads');
  await pool.query('ANALYZE jobs');
  await pool.query('ANALYZE sources');
  return { projectIds, sourceIds };
}
