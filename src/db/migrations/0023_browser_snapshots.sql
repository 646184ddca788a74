CREATE TABLE "browser_snapshots" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"session_id" uuid NOT NULL,
	"client_ref" text,
	"state" "bytea" NOT NULL,
	"size_bytes" integer NOT NULL,
	"summary" jsonb NOT NULL,
	"remaining_ms" integer NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "browser_sessions" ADD COLUMN "auto_sleep_ms" integer;--> statement-breakpoint
ALTER TABLE "browser_sessions" ADD COLUMN "live_since" timestamp with time zone;--> statement-breakpoint
UPDATE "browser_sessions" SET "live_since" = "created_at";--> statement-breakpoint
ALTER TABLE "browser_sessions" ADD COLUMN "billed_minutes" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "browser_sessions" ADD COLUMN "snapshot_id" uuid;--> statement-breakpoint
ALTER TABLE "browser_snapshots" ADD CONSTRAINT "browser_snapshots_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "browser_snapshots" ADD CONSTRAINT "browser_snapshots_session_id_browser_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."browser_sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "browser_snapshots_session_idx" ON "browser_snapshots" USING btree ("session_id");--> statement-breakpoint
CREATE INDEX "browser_snapshots_user_idx" ON "browser_snapshots" USING btree ("user_id","id");--> statement-breakpoint
CREATE INDEX "browser_snapshots_expires_idx" ON "browser_snapshots" USING btree ("expires_at");