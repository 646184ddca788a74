-- Custom (hand-written: drizzle-kit does not express trigger firing modes). On the embedded database (PGlite: one
-- connection, superuser) the scraped-lead writer locks a batch's three parents (user, source, job) once and inserts
-- with `session_replication_role = replica`, so the per-row foreign-key checks of the batch (one RI query per row and
-- key, a quarter of the INSERT) do not run (leadRepository.insertScraped, bench/NOTES-ingest.md). Every other
-- trigger on leads must still fire then: ENABLE ALWAYS fires a trigger whatever the role. In PostgreSQL's normal
-- mode (`origin`, the only one the service uses there) it would change nothing, but logical replication applies
-- changes as `replica`, and an ALWAYS statement trigger would then count a subscriber's synced leads again: so the
-- triggers are made ALWAYS on PGlite only (its version() names it), and PostgreSQL keeps them as they were. The tables these triggers write
-- (lead_stat_deltas, account_rollup_marks) carry no trigger of their own besides lead_stat_deltas' user key, whose
-- user the writer has locked. test/leads-insert-scraped.test.ts fails if a trigger on leads is not ALWAYS.
DO $$
BEGIN
  IF version() LIKE '%PGlite%' THEN
    ALTER TABLE "leads" ENABLE ALWAYS TRIGGER "leads_account_key_on_insert";
    ALTER TABLE "leads" ENABLE ALWAYS TRIGGER "leads_account_key_on_update";
    ALTER TABLE "leads" ENABLE ALWAYS TRIGGER "leads_mark_accounts_on_insert";
    ALTER TABLE "leads" ENABLE ALWAYS TRIGGER "leads_mark_accounts_on_update";
    ALTER TABLE "leads" ENABLE ALWAYS TRIGGER "leads_mark_accounts_on_delete";
    ALTER TABLE "leads" ENABLE ALWAYS TRIGGER "leads_stats_on_insert";
    ALTER TABLE "leads" ENABLE ALWAYS TRIGGER "leads_stats_on_update";
    ALTER TABLE "leads" ENABLE ALWAYS TRIGGER "leads_stats_on_delete";
  END IF;
END $$;
