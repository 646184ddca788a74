CREATE TABLE "email_bounces" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"email" text NOT NULL,
	"recipient_domain" text NOT NULL,
	"type" text NOT NULL,
	"status" text NOT NULL,
	"smtp_code" integer,
	"diagnostic" text,
	"action" text,
	"reporting_mta" text,
	"sender_domain" text,
	"campaign_id" uuid,
	"format" text NOT NULL,
	"dedupe_key" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "suppressions" ADD COLUMN "source" text DEFAULT 'manual' NOT NULL;--> statement-breakpoint
ALTER TABLE "suppressions" ADD COLUMN "updated_at" timestamp with time zone DEFAULT now() NOT NULL;--> statement-breakpoint
ALTER TABLE "email_bounces" ADD CONSTRAINT "email_bounces_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "email_bounces" ADD CONSTRAINT "email_bounces_campaign_id_campaigns_id_fk" FOREIGN KEY ("campaign_id") REFERENCES "public"."campaigns"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "email_bounces_user_key" ON "email_bounces" USING btree ("user_id","dedupe_key");--> statement-breakpoint
CREATE INDEX "email_bounces_user_idx" ON "email_bounces" USING btree ("user_id","id");--> statement-breakpoint
CREATE INDEX "email_bounces_user_email_idx" ON "email_bounces" USING btree ("user_id","email");--> statement-breakpoint
CREATE INDEX "email_bounces_user_domain_idx" ON "email_bounces" USING btree ("user_id","recipient_domain","id");--> statement-breakpoint
CREATE INDEX "email_bounces_user_campaign_idx" ON "email_bounces" USING btree ("user_id","campaign_id","id");--> statement-breakpoint
CREATE INDEX "suppressions_user_id_idx" ON "suppressions" USING btree ("user_id","id");