CREATE TABLE "network_credentials" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"name" text,
	"cookie_name" text NOT NULL,
	"cookie_sealed" text NOT NULL,
	"cookie_hint" text NOT NULL,
	"daily_limit" integer NOT NULL,
	"requests_day" text,
	"requests_today" integer DEFAULT 0 NOT NULL,
	"soft_banned_at" timestamp with time zone,
	"invalid_at" timestamp with time zone,
	"status_reason" text,
	"last_used_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "network_enrich_jobs" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"credential_id" uuid,
	"status" text DEFAULT 'PENDING' NOT NULL,
	"lead_ids" uuid[] NOT NULL,
	"processed" integer DEFAULT 0 NOT NULL,
	"enriched" integer DEFAULT 0 NOT NULL,
	"failed" integer DEFAULT 0 NOT NULL,
	"results" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"stop_reason" text,
	"started_at" timestamp with time zone,
	"finished_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "network_credentials" ADD CONSTRAINT "network_credentials_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "network_enrich_jobs" ADD CONSTRAINT "network_enrich_jobs_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "network_enrich_jobs" ADD CONSTRAINT "network_enrich_jobs_credential_id_network_credentials_id_fk" FOREIGN KEY ("credential_id") REFERENCES "public"."network_credentials"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "network_credentials_user_idx" ON "network_credentials" USING btree ("user_id","id");--> statement-breakpoint
CREATE INDEX "network_enrich_jobs_user_idx" ON "network_enrich_jobs" USING btree ("user_id","id");