CREATE TABLE "admin_audit_events" (
	"id" uuid PRIMARY KEY NOT NULL,
	"actor_id" uuid,
	"target_user_id" uuid,
	"action" text NOT NULL,
	"before" jsonb NOT NULL,
	"after" jsonb NOT NULL,
	"reason" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "lead_stat_deltas" (
	"user_id" uuid NOT NULL,
	"source_id" uuid,
	"day" date NOT NULL,
	"kind" text NOT NULL,
	"value" text NOT NULL,
	"n" integer NOT NULL,
	"compacted" boolean DEFAULT false NOT NULL
);
--> statement-breakpoint
ALTER TABLE "admin_audit_events" ADD CONSTRAINT "admin_audit_events_actor_id_users_id_fk" FOREIGN KEY ("actor_id") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "admin_audit_events" ADD CONSTRAINT "admin_audit_events_target_user_id_users_id_fk" FOREIGN KEY ("target_user_id") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "lead_stat_deltas" ADD CONSTRAINT "lead_stat_deltas_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "admin_audit_events_target_idx" ON "admin_audit_events" USING btree ("target_user_id","created_at");--> statement-breakpoint
CREATE INDEX "admin_audit_events_actor_idx" ON "admin_audit_events" USING btree ("actor_id");--> statement-breakpoint
CREATE INDEX "lead_stat_deltas_user_idx" ON "lead_stat_deltas" USING btree ("user_id","kind","day");--> statement-breakpoint
CREATE INDEX "lead_stat_deltas_pending_idx" ON "lead_stat_deltas" USING btree ("user_id") WHERE NOT "lead_stat_deltas"."compacted";--> statement-breakpoint
-- Written by hand (drizzle-kit cannot express functions and triggers): the lead counts analytics read
-- (README "Analytics"; src/db/schema/analytics.ts). The figures one lead counts in: its creation day
-- with its status, its validation result and whether it has an email; the day of its latest validation.
CREATE FUNCTION "lead_stat_facts"(created_at timestamptz, status text, email text, validation jsonb,
                                  validated_at timestamptz)
  RETURNS TABLE (day date, kind text, value text) LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT f.day, f.kind, f.value FROM (VALUES
    ((created_at AT TIME ZONE 'UTC')::date, 'status', status),
    ((created_at AT TIME ZONE 'UTC')::date, 'validation', validation->>'status'),
    ((created_at AT TIME ZONE 'UTC')::date, 'email', CASE WHEN email IS NOT NULL THEN '' END),
    ((validated_at AT TIME ZONE 'UTC')::date, 'validated', validation->>'status')
  ) AS f(day, kind, value)
  WHERE f.value IS NOT NULL AND f.day IS NOT NULL
$$;
--> statement-breakpoint
-- One signed row per (user, source, day, figure) a statement changed: +1 for new rows, -1 for old ones;
-- an update that changes no figure writes nothing. A deleted user's rows are skipped (they go with it).
CREATE FUNCTION "lead_stats_record"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO lead_stat_deltas (user_id, source_id, day, kind, value, n)
      SELECT l.user_id, l.source_id, f.day, f.kind, f.value, count(*)::int
      FROM new_leads l, LATERAL lead_stat_facts(l.created_at, l.status, l.email, l.email_validation, l.validated_at) f
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
--> statement-breakpoint
CREATE TRIGGER "leads_stats_on_insert" AFTER INSERT ON "leads"
  REFERENCING NEW TABLE AS new_leads FOR EACH STATEMENT EXECUTE FUNCTION "lead_stats_record"();
--> statement-breakpoint
CREATE TRIGGER "leads_stats_on_update" AFTER UPDATE ON "leads"
  REFERENCING OLD TABLE AS old_leads NEW TABLE AS new_leads FOR EACH STATEMENT EXECUTE FUNCTION "lead_stats_record"();
--> statement-breakpoint
CREATE TRIGGER "leads_stats_on_delete" AFTER DELETE ON "leads"
  REFERENCING OLD TABLE AS old_leads FOR EACH STATEMENT EXECUTE FUNCTION "lead_stats_record"();
--> statement-breakpoint
-- The leads that exist already, as compacted rows.
INSERT INTO lead_stat_deltas (user_id, source_id, day, kind, value, n, compacted)
  SELECT l.user_id, l.source_id, f.day, f.kind, f.value, count(*)::int, true
  FROM leads l, LATERAL lead_stat_facts(l.created_at, l.status, l.email, l.email_validation, l.validated_at) f
  GROUP BY 1, 2, 3, 4, 5;
