CREATE TABLE "warmup_days" (
	"id" uuid PRIMARY KEY NOT NULL,
	"domain_id" uuid NOT NULL,
	"day" integer NOT NULL,
	"date" text NOT NULL,
	"target" integer NOT NULL,
	"sent" integer DEFAULT 0 NOT NULL,
	"failed" integer DEFAULT 0 NOT NULL,
	"error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "warmup_domains" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"domain" text NOT NULL,
	"dkim_selector" text NOT NULL,
	"from_address" text NOT NULL,
	"smtp_url_encrypted" text NOT NULL,
	"smtp_host" text NOT NULL,
	"smtp_port" integer NOT NULL,
	"smtp_username" text NOT NULL,
	"status" text DEFAULT 'DRAFT' NOT NULL,
	"dns_verified_for" text,
	"status_reason" text,
	"started_at" timestamp with time zone,
	"paused_at" timestamp with time zone,
	"completed_at" timestamp with time zone,
	"paused_days" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "warmup_metrics" (
	"id" uuid PRIMARY KEY NOT NULL,
	"domain_id" uuid NOT NULL,
	"open_rate" double precision,
	"reply_rate" double precision,
	"bounce_rate" double precision,
	"spam_rate" double precision,
	"recorded_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "warmup_days" ADD CONSTRAINT "warmup_days_domain_id_warmup_domains_id_fk" FOREIGN KEY ("domain_id") REFERENCES "public"."warmup_domains"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "warmup_domains" ADD CONSTRAINT "warmup_domains_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "warmup_metrics" ADD CONSTRAINT "warmup_metrics_domain_id_warmup_domains_id_fk" FOREIGN KEY ("domain_id") REFERENCES "public"."warmup_domains"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "warmup_days_domain_day_idx" ON "warmup_days" USING btree ("domain_id","day");--> statement-breakpoint
CREATE UNIQUE INDEX "warmup_domains_user_domain_idx" ON "warmup_domains" USING btree ("user_id","domain");--> statement-breakpoint
CREATE INDEX "warmup_domains_user_idx" ON "warmup_domains" USING btree ("user_id","id");--> statement-breakpoint
CREATE INDEX "warmup_domains_status_idx" ON "warmup_domains" USING btree ("status");--> statement-breakpoint
CREATE INDEX "warmup_metrics_domain_idx" ON "warmup_metrics" USING btree ("domain_id","recorded_at");