CREATE TABLE "ai_usage" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"feature" text NOT NULL,
	"model" text NOT NULL,
	"input_tokens" integer DEFAULT 0 NOT NULL,
	"output_tokens" integer DEFAULT 0 NOT NULL,
	"total_tokens" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "pages_failed" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "worker_id" text;--> statement-breakpoint
ALTER TABLE "sources" ADD COLUMN "next_run_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "ai_usage" ADD CONSTRAINT "ai_usage_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "ai_usage_user_idx" ON "ai_usage" USING btree ("user_id","created_at");--> statement-breakpoint
CREATE INDEX "jobs_running_heartbeat_idx" ON "jobs" USING btree ("heartbeat_at") WHERE "jobs"."status" = 'RUNNING';--> statement-breakpoint
CREATE INDEX "sources_user_status_idx" ON "sources" USING btree ("user_id","status","id");--> statement-breakpoint
CREATE INDEX "sources_next_run_idx" ON "sources" USING btree ("next_run_at") WHERE "sources"."next_run_at" IS NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "profiles_type_lead_key" ON "profiles" USING btree ("profile_type_id","lead_id") WHERE "profiles"."lead_id" IS NOT NULL;