CREATE TABLE "browser_sessions" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"client_ref" text,
	"status" text NOT NULL,
	"end_reason" text,
	"viewport_width" integer NOT NULL,
	"viewport_height" integer NOT NULL,
	"profile_id" text,
	"persist_profile" boolean DEFAULT false NOT NULL,
	"proxy_profile_id" text,
	"timeout_ms" integer NOT NULL,
	"idle_timeout_ms" integer NOT NULL,
	"keep_alive" boolean DEFAULT false NOT NULL,
	"record" boolean DEFAULT false NOT NULL,
	"extension_ids" text[] DEFAULT '{}' NOT NULL,
	"metadata" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"host_id" text NOT NULL,
	"host_address" text,
	"expires_at" timestamp with time zone NOT NULL,
	"ended_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "browser_sessions" ADD CONSTRAINT "browser_sessions_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "browser_sessions_user_idx" ON "browser_sessions" USING btree ("user_id","id");--> statement-breakpoint
CREATE INDEX "browser_sessions_user_ref_idx" ON "browser_sessions" USING btree ("user_id","client_ref","id");--> statement-breakpoint
CREATE INDEX "browser_sessions_host_status_idx" ON "browser_sessions" USING btree ("host_id","status");