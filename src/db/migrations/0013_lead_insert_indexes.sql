DROP INDEX "leads_user_job_idx";--> statement-breakpoint
DROP INDEX "leads_job_idx";--> statement-breakpoint
DROP INDEX "leads_tags_idx";--> statement-breakpoint
CREATE INDEX "leads_job_idx" ON "leads" USING btree ("job_id","id");--> statement-breakpoint
CREATE INDEX "leads_tags_idx" ON "leads" USING gin ("tags") WHERE "leads"."tags" <> '{}'::text[];--> statement-breakpoint
-- Written by hand: the account key as an expression PostgreSQL inlines (no sub-select, IMMUTABLE), the free-mail
-- lookup left to the caller. account_key_of's sub-select keeps it from being inlined: called once per row it ran
-- a function executor per lead, about a fifth of the scraped-lead INSERT, which now calls this one instead.
CREATE FUNCTION "account_key_from"(email text, company text, free_mail boolean) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE
    WHEN email LIKE '%_@_%._%' AND NOT free_mail THEN 'domain:' || lower(split_part(email, '@', 2))
    ELSE 'company:' || nullif(btrim(left(normalized_company(company), 120)), '')
  END
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION "account_key_of"(email text, company text) RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT account_key_from(email, company,
    EXISTS (SELECT 1 FROM free_email_domains f WHERE f.domain = lower(split_part(email, '@', 2))))
$$;
