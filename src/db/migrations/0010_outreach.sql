CREATE TABLE "outreach_campaigns" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"connection_id" uuid NOT NULL,
	"name" text NOT NULL,
	"status" text DEFAULT 'DRAFT' NOT NULL,
	"steps" jsonb NOT NULL,
	"window" jsonb NOT NULL,
	"daily_limit" integer NOT NULL,
	"mailbox_ids" uuid[] NOT NULL,
	"stop_on_reply" boolean DEFAULT true NOT NULL,
	"min_gap_seconds" integer NOT NULL,
	"max_gap_seconds" integer NOT NULL,
	"track_opens" boolean DEFAULT false NOT NULL,
	"external_id" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "outreach_connections" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"provider" text NOT NULL,
	"name" text NOT NULL,
	"api_key_encrypted" text,
	"api_key_hint" text,
	"account_label" text,
	"verified_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "outreach_enrollments" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"campaign_id" uuid NOT NULL,
	"lead_id" uuid NOT NULL,
	"email" text NOT NULL,
	"status" text DEFAULT 'ACTIVE' NOT NULL,
	"next_step" integer DEFAULT 0 NOT NULL,
	"next_send_at" timestamp with time zone,
	"mailbox_id" uuid,
	"external_id" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "outreach_mailboxes" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"connection_id" uuid NOT NULL,
	"email" text NOT NULL,
	"from_name" text,
	"daily_limit" integer NOT NULL,
	"smtp_url_encrypted" text,
	"imap_url_encrypted" text,
	"smtp_host" text,
	"smtp_port" integer,
	"imap_host" text,
	"imap_port" integer,
	"username" text,
	"external_id" text,
	"warmup_domain_id" uuid,
	"imap_uid_validity" text,
	"imap_last_uid" integer DEFAULT 0 NOT NULL,
	"imap_checked_at" timestamp with time zone,
	"imap_error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "outreach_messages" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"mailbox_id" uuid,
	"campaign_id" uuid,
	"enrollment_id" uuid,
	"lead_id" uuid,
	"step" integer,
	"direction" text NOT NULL,
	"status" text NOT NULL,
	"kind" text,
	"message_id" text NOT NULL,
	"in_reply_to" text,
	"references" text[] DEFAULT '{}'::text[] NOT NULL,
	"thread_id" text NOT NULL,
	"from_email" text NOT NULL,
	"to_email" text NOT NULL,
	"subject" text NOT NULL,
	"body_text" text NOT NULL,
	"sent_at" timestamp with time zone,
	"received_at" timestamp with time zone,
	"opened_at" timestamp with time zone,
	"open_count" integer DEFAULT 0 NOT NULL,
	"error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "outreach_unsubscribes" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"message_id" uuid NOT NULL,
	"campaign_id" uuid,
	"email" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "email_bounces" ADD COLUMN "outreach_message_id" uuid;--> statement-breakpoint
ALTER TABLE "email_bounces" ADD COLUMN "outreach_campaign_id" uuid;--> statement-breakpoint
ALTER TABLE "outreach_campaigns" ADD CONSTRAINT "outreach_campaigns_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "outreach_campaigns" ADD CONSTRAINT "outreach_campaigns_connection_id_outreach_connections_id_fk" FOREIGN KEY ("connection_id") REFERENCES "public"."outreach_connections"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "outreach_connections" ADD CONSTRAINT "outreach_connections_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "outreach_enrollments" ADD CONSTRAINT "outreach_enrollments_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "outreach_enrollments" ADD CONSTRAINT "outreach_enrollments_campaign_id_outreach_campaigns_id_fk" FOREIGN KEY ("campaign_id") REFERENCES "public"."outreach_campaigns"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "outreach_enrollments" ADD CONSTRAINT "outreach_enrollments_lead_id_leads_id_fk" FOREIGN KEY ("lead_id") REFERENCES "public"."leads"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "outreach_enrollments" ADD CONSTRAINT "outreach_enrollments_mailbox_id_outreach_mailboxes_id_fk" FOREIGN KEY ("mailbox_id") REFERENCES "public"."outreach_mailboxes"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "outreach_mailboxes" ADD CONSTRAINT "outreach_mailboxes_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "outreach_mailboxes" ADD CONSTRAINT "outreach_mailboxes_connection_id_outreach_connections_id_fk" FOREIGN KEY ("connection_id") REFERENCES "public"."outreach_connections"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "outreach_mailboxes" ADD CONSTRAINT "outreach_mailboxes_warmup_domain_id_warmup_domains_id_fk" FOREIGN KEY ("warmup_domain_id") REFERENCES "public"."warmup_domains"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "outreach_messages" ADD CONSTRAINT "outreach_messages_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "outreach_messages" ADD CONSTRAINT "outreach_messages_mailbox_id_outreach_mailboxes_id_fk" FOREIGN KEY ("mailbox_id") REFERENCES "public"."outreach_mailboxes"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "outreach_messages" ADD CONSTRAINT "outreach_messages_campaign_id_outreach_campaigns_id_fk" FOREIGN KEY ("campaign_id") REFERENCES "public"."outreach_campaigns"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "outreach_messages" ADD CONSTRAINT "outreach_messages_enrollment_id_outreach_enrollments_id_fk" FOREIGN KEY ("enrollment_id") REFERENCES "public"."outreach_enrollments"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "outreach_messages" ADD CONSTRAINT "outreach_messages_lead_id_leads_id_fk" FOREIGN KEY ("lead_id") REFERENCES "public"."leads"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "outreach_unsubscribes" ADD CONSTRAINT "outreach_unsubscribes_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "outreach_unsubscribes" ADD CONSTRAINT "outreach_unsubscribes_message_id_outreach_messages_id_fk" FOREIGN KEY ("message_id") REFERENCES "public"."outreach_messages"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "outreach_unsubscribes" ADD CONSTRAINT "outreach_unsubscribes_campaign_id_outreach_campaigns_id_fk" FOREIGN KEY ("campaign_id") REFERENCES "public"."outreach_campaigns"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "outreach_campaigns_user_idx" ON "outreach_campaigns" USING btree ("user_id","id");--> statement-breakpoint
CREATE INDEX "outreach_connections_user_idx" ON "outreach_connections" USING btree ("user_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "outreach_enrollments_campaign_lead_idx" ON "outreach_enrollments" USING btree ("campaign_id","lead_id");--> statement-breakpoint
CREATE INDEX "outreach_enrollments_campaign_idx" ON "outreach_enrollments" USING btree ("campaign_id","id");--> statement-breakpoint
CREATE INDEX "outreach_enrollments_lead_idx" ON "outreach_enrollments" USING btree ("user_id","lead_id");--> statement-breakpoint
CREATE INDEX "outreach_enrollments_due_idx" ON "outreach_enrollments" USING btree ("next_send_at") WHERE "outreach_enrollments"."status" = 'ACTIVE' AND "outreach_enrollments"."next_send_at" IS NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "outreach_mailboxes_connection_email_idx" ON "outreach_mailboxes" USING btree ("connection_id","email");--> statement-breakpoint
CREATE INDEX "outreach_mailboxes_user_idx" ON "outreach_mailboxes" USING btree ("user_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "outreach_messages_message_id_idx" ON "outreach_messages" USING btree ("user_id","message_id");--> statement-breakpoint
CREATE UNIQUE INDEX "outreach_messages_step_idx" ON "outreach_messages" USING btree ("enrollment_id","step") WHERE "outreach_messages"."direction" = 'outbound' AND "outreach_messages"."enrollment_id" IS NOT NULL;--> statement-breakpoint
CREATE INDEX "outreach_messages_user_idx" ON "outreach_messages" USING btree ("user_id","id");--> statement-breakpoint
CREATE INDEX "outreach_messages_campaign_idx" ON "outreach_messages" USING btree ("campaign_id","step");--> statement-breakpoint
CREATE INDEX "outreach_messages_thread_idx" ON "outreach_messages" USING btree ("user_id","thread_id");--> statement-breakpoint
CREATE INDEX "outreach_messages_lead_idx" ON "outreach_messages" USING btree ("user_id","lead_id","id");--> statement-breakpoint
CREATE INDEX "outreach_messages_mailbox_sent_idx" ON "outreach_messages" USING btree ("mailbox_id","created_at") WHERE "outreach_messages"."direction" = 'outbound';--> statement-breakpoint
CREATE INDEX "outreach_messages_pending_idx" ON "outreach_messages" USING btree ("created_at") WHERE "outreach_messages"."status" = 'PENDING';--> statement-breakpoint
CREATE UNIQUE INDEX "outreach_unsubscribes_message_idx" ON "outreach_unsubscribes" USING btree ("message_id");--> statement-breakpoint
CREATE INDEX "outreach_unsubscribes_campaign_idx" ON "outreach_unsubscribes" USING btree ("campaign_id");--> statement-breakpoint
ALTER TABLE "email_bounces" ADD CONSTRAINT "email_bounces_outreach_message_id_outreach_messages_id_fk" FOREIGN KEY ("outreach_message_id") REFERENCES "public"."outreach_messages"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "email_bounces" ADD CONSTRAINT "email_bounces_outreach_campaign_id_outreach_campaigns_id_fk" FOREIGN KEY ("outreach_campaign_id") REFERENCES "public"."outreach_campaigns"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "email_bounces_user_outreach_campaign_idx" ON "email_bounces" USING btree ("user_id","outreach_campaign_id","id");