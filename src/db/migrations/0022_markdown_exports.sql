CREATE TABLE "markdown_export_pages" (
	"id" uuid PRIMARY KEY NOT NULL,
	"export_id" uuid NOT NULL,
	"user_id" uuid NOT NULL,
	"url" text NOT NULL,
	"status" text NOT NULL,
	"title" text,
	"markdown" text,
	"depth" integer DEFAULT 0 NOT NULL,
	"error" text,
	"fetched_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "markdown_exports" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"start_url" text NOT NULL,
	"scrape_type" text DEFAULT 'STATIC' NOT NULL,
	"options" jsonb NOT NULL,
	"proxy_profile_id" uuid,
	"status" text DEFAULT 'PENDING' NOT NULL,
	"retry_failed_only" boolean DEFAULT false NOT NULL,
	"progress" integer DEFAULT 0 NOT NULL,
	"pages_done" integer DEFAULT 0 NOT NULL,
	"pages_failed" integer DEFAULT 0 NOT NULL,
	"error" text,
	"attempts" integer DEFAULT 0 NOT NULL,
	"worker_id" text,
	"heartbeat_at" timestamp with time zone,
	"started_at" timestamp with time zone,
	"finished_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "markdown_export_pages" ADD CONSTRAINT "markdown_export_pages_export_id_markdown_exports_id_fk" FOREIGN KEY ("export_id") REFERENCES "public"."markdown_exports"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "markdown_export_pages" ADD CONSTRAINT "markdown_export_pages_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "markdown_exports" ADD CONSTRAINT "markdown_exports_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "markdown_export_pages_url_idx" ON "markdown_export_pages" USING btree ("export_id","url");--> statement-breakpoint
CREATE INDEX "markdown_export_pages_export_idx" ON "markdown_export_pages" USING btree ("export_id","id");--> statement-breakpoint
CREATE INDEX "markdown_exports_user_idx" ON "markdown_exports" USING btree ("user_id","id");--> statement-breakpoint
CREATE INDEX "markdown_exports_running_heartbeat_idx" ON "markdown_exports" USING btree ("heartbeat_at") WHERE "markdown_exports"."status" = 'RUNNING';