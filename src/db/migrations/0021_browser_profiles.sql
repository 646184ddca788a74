CREATE TABLE "browser_profiles" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"client_ref" text,
	"name" text NOT NULL,
	"metadata" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"version" integer DEFAULT 0 NOT NULL,
	"state_file" text,
	"size_bytes" integer DEFAULT 0 NOT NULL,
	"saved_at" timestamp with time zone,
	"saved_by_session" uuid,
	"lease_session_id" uuid,
	"lease_expires_at" timestamp with time zone,
	"lease_token" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "browser_profiles" ADD CONSTRAINT "browser_profiles_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "browser_profiles_user_idx" ON "browser_profiles" USING btree ("user_id","id");--> statement-breakpoint
CREATE INDEX "browser_profiles_user_ref_idx" ON "browser_profiles" USING btree ("user_id","client_ref","id");--> statement-breakpoint
CREATE INDEX "browser_profiles_lease_session_idx" ON "browser_profiles" USING btree ("lease_session_id");