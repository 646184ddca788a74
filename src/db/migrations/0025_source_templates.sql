CREATE TABLE "source_templates" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"name" text NOT NULL,
	"description" text,
	"scrape_type" text NOT NULL,
	"url_pattern" text NOT NULL,
	"selectors" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"schedule_type" text DEFAULT 'MANUAL' NOT NULL,
	"options" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "sources" ADD COLUMN "template_id" text;--> statement-breakpoint
ALTER TABLE "source_templates" ADD CONSTRAINT "source_templates_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "source_templates_user_idx" ON "source_templates" USING btree ("user_id","id");