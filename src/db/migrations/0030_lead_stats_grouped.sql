-- Custom (hand-written: drizzle-kit does not express functions). The analytics trigger of an INSERT into leads
-- (migration 0006) took lead_stat_facts once per new lead and grouped the facts; a statement's new leads differ
-- in few of the things a fact depends on (a scrape batch: one user, one source, one day, one status), so they are
-- grouped first and the facts taken once per group, weighted by its count: the same rows in lead_stat_deltas,
-- about a tenth of the scraped-lead INSERT's trigger work (bench/NOTES-ingest.md). UPDATE and DELETE unchanged.
CREATE OR REPLACE FUNCTION "lead_stats_record"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO lead_stat_deltas (user_id, source_id, day, kind, value, n)
      SELECT g.user_id, g.source_id, f.day, f.kind, f.value, sum(g.n)::int
      FROM (
        SELECT l.user_id, l.source_id, (l.created_at AT TIME ZONE 'UTC')::date AS created_day, l.status,
          l.email IS NOT NULL AS has_email, l.email_validation->>'status' AS validation,
          (l.validated_at AT TIME ZONE 'UTC')::date AS validated_day, count(*) AS n
        FROM new_leads l
        GROUP BY 1, 2, 3, 4, 5, 6, 7
      ) g,
      -- The group's values as lead_stat_facts reads them: a day as its UTC midnight, an email as '', the
      -- validation as {"status": …}.
      LATERAL lead_stat_facts(g.created_day::timestamp AT TIME ZONE 'UTC', g.status,
        CASE WHEN g.has_email THEN '' END, jsonb_build_object('status', g.validation),
        g.validated_day::timestamp AT TIME ZONE 'UTC') f
      GROUP BY 1, 2, 3, 4, 5;
  ELSIF TG_OP = 'UPDATE' THEN
    INSERT INTO lead_stat_deltas (user_id, source_id, day, kind, value, n)
      SELECT c.user_id, c.source_id, c.day, c.kind, c.value, sum(c.n)::int
      FROM (
        SELECT l.user_id, l.source_id, f.day, f.kind, f.value, -1 AS n
        FROM old_leads l, LATERAL lead_stat_facts(l.created_at, l.status, l.email, l.email_validation, l.validated_at) f
        UNION ALL
        SELECT l.user_id, l.source_id, f.day, f.kind, f.value, 1 AS n
        FROM new_leads l, LATERAL lead_stat_facts(l.created_at, l.status, l.email, l.email_validation, l.validated_at) f
      ) c
      WHERE EXISTS (SELECT 1 FROM users u WHERE u.id = c.user_id)
      GROUP BY 1, 2, 3, 4, 5
      HAVING sum(c.n) <> 0;
  ELSE
    INSERT INTO lead_stat_deltas (user_id, source_id, day, kind, value, n)
      SELECT l.user_id, l.source_id, f.day, f.kind, f.value, -count(*)::int
      FROM old_leads l, LATERAL lead_stat_facts(l.created_at, l.status, l.email, l.email_validation, l.validated_at) f
      WHERE EXISTS (SELECT 1 FROM users u WHERE u.id = l.user_id)
      GROUP BY 1, 2, 3, 4, 5;
  END IF;
  RETURN NULL;
END $$;
