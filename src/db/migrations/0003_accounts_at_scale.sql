CREATE TABLE "account_rollup_marks" (
	"user_id" uuid NOT NULL,
	"account_key" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "account_rollups" (
	"user_id" uuid NOT NULL,
	"account_key" text NOT NULL,
	"name" text NOT NULL,
	"sort_name" text NOT NULL,
	"lead_count" integer NOT NULL,
	"source_count" integer NOT NULL,
	"status_counts" integer[] NOT NULL,
	"titles" text[] NOT NULL,
	"last_activity_at" timestamp with time zone NOT NULL,
	"last_activity_us" bigint NOT NULL,
	"first_seen_at" timestamp with time zone NOT NULL,
	CONSTRAINT "account_rollups_user_id_account_key_pk" PRIMARY KEY("user_id","account_key")
);
--> statement-breakpoint
ALTER TABLE "leads" ADD COLUMN "account_key" text;--> statement-breakpoint
ALTER TABLE "account_rollups" ADD CONSTRAINT "account_rollups_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "account_rollup_marks_user_idx" ON "account_rollup_marks" USING btree ("user_id");--> statement-breakpoint
CREATE INDEX "account_rollups_lead_count_idx" ON "account_rollups" USING btree ("user_id","lead_count" DESC NULLS LAST,"account_key" COLLATE "C");--> statement-breakpoint
CREATE INDEX "account_rollups_activity_idx" ON "account_rollups" USING btree ("user_id","last_activity_us" DESC NULLS LAST,"account_key" COLLATE "C");--> statement-breakpoint
CREATE INDEX "account_rollups_name_idx" ON "account_rollups" USING btree ("user_id","sort_name","account_key" COLLATE "C");--> statement-breakpoint
-- Written by hand (drizzle-kit cannot express functions and triggers): the account key of a lead, kept
-- on the lead by the database, and the marks that tell which account rollups to recompute.
-- The company name normalized: lower case, punctuation and spaces collapsed, trailing legal suffixes
-- (Inc, LLC, GmbH, S.A. …) removed. They are stripped from the reversed name with a `^`-anchored
-- pattern: PostgreSQL's regex engine tries a `$`-anchored one at every position (twice the cost).
CREATE FUNCTION "normalized_company"(name text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT btrim(reverse(regexp_replace(
    reverse(btrim(regexp_replace(lower(coalesce(name, '')), '[[:punct:][:space:]]+', ' ', 'g'))),
    '^((cni|detaroprocni|cll|c l l|dtl|detimil|hbmg|proc|noitaroproc|oc|ynapmoc|clp|as|sas|ga|vb|vn|lrs|lras|aps|yo|ba|sa|ytp|etp|gk|pl|pll|a s|s a s|v b|v n|l r s|a p s|p l|p l l|c l p) )+',
    '')))
$$;
--> statement-breakpoint
-- `domain:<email domain>` when the email has a domain that is not free mail, else `company:<normalized
-- name>` cut to 120 characters (every account id then fits a path segment), else NULL.
CREATE FUNCTION "account_key_of"(email text, company text) RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT CASE
    WHEN email LIKE '%_@_%._%'
      AND NOT EXISTS (SELECT 1 FROM free_email_domains f WHERE f.domain = lower(split_part(email, '@', 2)))
    THEN 'domain:' || lower(split_part(email, '@', 2))
    ELSE 'company:' || nullif(btrim(left(normalized_company(company), 120)), '')
  END
$$;
--> statement-breakpoint
CREATE FUNCTION "leads_set_account_key"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.account_key := account_key_of(NEW.email, NEW.company);
  RETURN NEW;
END $$;
--> statement-breakpoint
-- The scraped-lead writer computes the key in its INSERT (cheaper than a row trigger); any other
-- insert leaves it NULL and gets it here.
CREATE TRIGGER "leads_account_key_on_insert" BEFORE INSERT ON "leads"
  FOR EACH ROW WHEN (NEW.account_key IS NULL) EXECUTE FUNCTION "leads_set_account_key"();
--> statement-breakpoint
CREATE TRIGGER "leads_account_key_on_update" BEFORE UPDATE OF email, company ON "leads"
  FOR EACH ROW EXECUTE FUNCTION "leads_set_account_key"();
--> statement-breakpoint
UPDATE leads SET account_key = account_key_of(email, company);
--> statement-breakpoint
-- Moved here from drizzle-kit's place above: built once after the backfill, not maintained row by row.
CREATE INDEX "leads_user_account_idx" ON "leads" USING btree ("user_id","account_key","updated_at","id");
--> statement-breakpoint
-- One mark per account a statement touched (old and new keys of an update); a deleted user's marks
-- are skipped (that user's rollups go with the user).
CREATE FUNCTION "account_rollups_mark"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO account_rollup_marks (user_id, account_key)
      SELECT DISTINCT user_id, account_key FROM new_leads WHERE account_key IS NOT NULL;
  ELSIF TG_OP = 'UPDATE' THEN
    INSERT INTO account_rollup_marks (user_id, account_key)
      SELECT k.user_id, k.account_key FROM (
        SELECT user_id, account_key FROM old_leads WHERE account_key IS NOT NULL
        UNION SELECT user_id, account_key FROM new_leads WHERE account_key IS NOT NULL
      ) k WHERE EXISTS (SELECT 1 FROM users u WHERE u.id = k.user_id);
  ELSE
    INSERT INTO account_rollup_marks (user_id, account_key)
      SELECT k.user_id, k.account_key
      FROM (SELECT DISTINCT user_id, account_key FROM old_leads WHERE account_key IS NOT NULL) k
      WHERE EXISTS (SELECT 1 FROM users u WHERE u.id = k.user_id);
  END IF;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "leads_mark_accounts_on_insert" AFTER INSERT ON "leads"
  REFERENCING NEW TABLE AS new_leads FOR EACH STATEMENT EXECUTE FUNCTION "account_rollups_mark"();
--> statement-breakpoint
CREATE TRIGGER "leads_mark_accounts_on_update" AFTER UPDATE ON "leads"
  REFERENCING OLD TABLE AS old_leads NEW TABLE AS new_leads FOR EACH STATEMENT EXECUTE FUNCTION "account_rollups_mark"();
--> statement-breakpoint
CREATE TRIGGER "leads_mark_accounts_on_delete" AFTER DELETE ON "leads"
  REFERENCING OLD TABLE AS old_leads FOR EACH STATEMENT EXECUTE FUNCTION "account_rollups_mark"();
--> statement-breakpoint
INSERT INTO account_rollup_marks (user_id, account_key)
  SELECT DISTINCT user_id, account_key FROM leads WHERE account_key IS NOT NULL;
