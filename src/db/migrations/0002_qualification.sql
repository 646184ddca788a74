CREATE TABLE "matching_results" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"rule_id" uuid NOT NULL,
	"run_id" uuid,
	"profile_id" uuid NOT NULL,
	"matched" boolean NOT NULL,
	"match_score" integer,
	"ai_reasoning" text,
	"details" jsonb,
	"error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "matching_rules" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"profile_type_id" uuid NOT NULL,
	"name" text NOT NULL,
	"description" text,
	"type" text NOT NULL,
	"conditions" jsonb,
	"criteria" jsonb,
	"threshold" integer,
	"ai_prompt" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "matching_runs" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"rule_id" uuid NOT NULL,
	"status" text DEFAULT 'PENDING' NOT NULL,
	"total" integer DEFAULT 0 NOT NULL,
	"processed" integer DEFAULT 0 NOT NULL,
	"matched" integer DEFAULT 0 NOT NULL,
	"failed" integer DEFAULT 0 NOT NULL,
	"error" text,
	"lease_until" timestamp with time zone,
	"lease_owner" text,
	"started_at" timestamp with time zone,
	"finished_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "account_metadata" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"account_key" text NOT NULL,
	"notes" text,
	"tags" text[] DEFAULT '{}'::text[] NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "free_email_domains" (
	"domain" text PRIMARY KEY NOT NULL
);
--> statement-breakpoint
CREATE TABLE "campaign_rules" (
	"campaign_id" uuid NOT NULL,
	"rule_id" uuid NOT NULL,
	"weight" integer DEFAULT 1 NOT NULL,
	CONSTRAINT "campaign_rules_campaign_id_rule_id_pk" PRIMARY KEY("campaign_id","rule_id")
);
--> statement-breakpoint
CREATE TABLE "campaign_sources" (
	"campaign_id" uuid NOT NULL,
	"source_id" uuid NOT NULL,
	CONSTRAINT "campaign_sources_campaign_id_source_id_pk" PRIMARY KEY("campaign_id","source_id")
);
--> statement-breakpoint
CREATE TABLE "campaigns" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"project_id" uuid,
	"profile_type_id" uuid,
	"name" text NOT NULL,
	"description" text,
	"status" text DEFAULT 'DRAFT' NOT NULL,
	"target" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "chat_approvals" (
	"id" uuid PRIMARY KEY NOT NULL,
	"conversation_id" uuid NOT NULL,
	"user_id" uuid NOT NULL,
	"tool_call_id" text NOT NULL,
	"tool_name" text NOT NULL,
	"input" jsonb NOT NULL,
	"status" text DEFAULT 'PENDING' NOT NULL,
	"result" jsonb,
	"error" text,
	"decided_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "chat_conversations" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"title" text,
	"turn_lease_until" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "chat_messages" (
	"id" uuid PRIMARY KEY NOT NULL,
	"conversation_id" uuid NOT NULL,
	"user_id" uuid NOT NULL,
	"role" text NOT NULL,
	"content" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "matching_rules" ADD CONSTRAINT "matching_rules_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "matching_rules" ADD CONSTRAINT "matching_rules_profile_type_id_profile_types_id_fk" FOREIGN KEY ("profile_type_id") REFERENCES "public"."profile_types"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "matching_runs" ADD CONSTRAINT "matching_runs_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "matching_runs" ADD CONSTRAINT "matching_runs_rule_id_matching_rules_id_fk" FOREIGN KEY ("rule_id") REFERENCES "public"."matching_rules"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "account_metadata" ADD CONSTRAINT "account_metadata_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "campaign_rules" ADD CONSTRAINT "campaign_rules_campaign_id_campaigns_id_fk" FOREIGN KEY ("campaign_id") REFERENCES "public"."campaigns"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "campaign_rules" ADD CONSTRAINT "campaign_rules_rule_id_matching_rules_id_fk" FOREIGN KEY ("rule_id") REFERENCES "public"."matching_rules"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "campaign_sources" ADD CONSTRAINT "campaign_sources_campaign_id_campaigns_id_fk" FOREIGN KEY ("campaign_id") REFERENCES "public"."campaigns"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "campaign_sources" ADD CONSTRAINT "campaign_sources_source_id_sources_id_fk" FOREIGN KEY ("source_id") REFERENCES "public"."sources"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "campaigns" ADD CONSTRAINT "campaigns_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "campaigns" ADD CONSTRAINT "campaigns_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "campaigns" ADD CONSTRAINT "campaigns_profile_type_id_profile_types_id_fk" FOREIGN KEY ("profile_type_id") REFERENCES "public"."profile_types"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "chat_approvals" ADD CONSTRAINT "chat_approvals_conversation_id_chat_conversations_id_fk" FOREIGN KEY ("conversation_id") REFERENCES "public"."chat_conversations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "chat_approvals" ADD CONSTRAINT "chat_approvals_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "chat_conversations" ADD CONSTRAINT "chat_conversations_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "chat_messages" ADD CONSTRAINT "chat_messages_conversation_id_chat_conversations_id_fk" FOREIGN KEY ("conversation_id") REFERENCES "public"."chat_conversations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "chat_messages" ADD CONSTRAINT "chat_messages_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "matching_results_profile_rule_key" ON "matching_results" USING btree ("profile_id","rule_id");--> statement-breakpoint
CREATE INDEX "matching_results_rule_score_idx" ON "matching_results" USING btree ("rule_id","match_score" DESC NULLS LAST,"id");--> statement-breakpoint
CREATE INDEX "matching_rules_user_idx" ON "matching_rules" USING btree ("user_id","id");--> statement-breakpoint
CREATE INDEX "matching_rules_type_idx" ON "matching_rules" USING btree ("profile_type_id");--> statement-breakpoint
CREATE INDEX "matching_runs_rule_idx" ON "matching_runs" USING btree ("rule_id","id");--> statement-breakpoint
CREATE INDEX "matching_runs_user_idx" ON "matching_runs" USING btree ("user_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "account_metadata_user_key" ON "account_metadata" USING btree ("user_id","account_key");--> statement-breakpoint
CREATE INDEX "campaign_rules_rule_idx" ON "campaign_rules" USING btree ("rule_id");--> statement-breakpoint
CREATE INDEX "campaign_sources_source_idx" ON "campaign_sources" USING btree ("source_id");--> statement-breakpoint
CREATE INDEX "campaigns_user_idx" ON "campaigns" USING btree ("user_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "chat_approvals_call_key" ON "chat_approvals" USING btree ("conversation_id","tool_call_id");--> statement-breakpoint
CREATE INDEX "chat_approvals_conversation_idx" ON "chat_approvals" USING btree ("conversation_id","status");--> statement-breakpoint
CREATE INDEX "chat_conversations_user_idx" ON "chat_conversations" USING btree ("user_id","id");--> statement-breakpoint
CREATE INDEX "chat_messages_conversation_idx" ON "chat_messages" USING btree ("conversation_id","id");--> statement-breakpoint
-- matching_results has no foreign keys (see src/db/schema/matching.ts): these statement-level
-- triggers are its cascades, one set-based DELETE per deleting statement.
CREATE FUNCTION "matching_results_drop_for_profiles"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM matching_results r USING deleted_profiles d WHERE r.profile_id = d.id;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "profiles_drop_matching_results" AFTER DELETE ON "profiles"
  REFERENCING OLD TABLE AS deleted_profiles FOR EACH STATEMENT EXECUTE FUNCTION "matching_results_drop_for_profiles"();
--> statement-breakpoint
CREATE FUNCTION "matching_results_drop_for_rules"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM matching_results r USING deleted_rules d WHERE r.rule_id = d.id;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "matching_rules_drop_matching_results" AFTER DELETE ON "matching_rules"
  REFERENCING OLD TABLE AS deleted_rules FOR EACH STATEMENT EXECUTE FUNCTION "matching_results_drop_for_rules"();
