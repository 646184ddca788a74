CREATE TABLE "credit_balances" (
	"user_id" uuid PRIMARY KEY NOT NULL,
	"balance" integer NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "credit_balances_not_negative" CHECK ("credit_balances"."balance" >= 0)
);
--> statement-breakpoint
CREATE TABLE "credit_checkouts" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"session_id" text,
	"tier_id" text NOT NULL,
	"credits" integer NOT NULL,
	"amount" integer NOT NULL,
	"currency" text NOT NULL,
	"status" text DEFAULT 'open' NOT NULL,
	"completed_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "credit_transactions" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"kind" text NOT NULL,
	"amount" integer NOT NULL,
	"balance_after" integer NOT NULL,
	"feature" text,
	"units" integer,
	"reason" text,
	"actor" text,
	"reference" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "inbound_webhook_events" (
	"id" uuid PRIMARY KEY NOT NULL,
	"provider" text NOT NULL,
	"event_id" text NOT NULL,
	"type" text,
	"payload" jsonb NOT NULL,
	"received_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "credit_balances" ADD CONSTRAINT "credit_balances_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "credit_checkouts" ADD CONSTRAINT "credit_checkouts_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "credit_transactions" ADD CONSTRAINT "credit_transactions_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "credit_checkouts_session_key" ON "credit_checkouts" USING btree ("session_id");--> statement-breakpoint
CREATE INDEX "credit_checkouts_user_idx" ON "credit_checkouts" USING btree ("user_id");--> statement-breakpoint
CREATE INDEX "credit_transactions_user_idx" ON "credit_transactions" USING btree ("user_id","id");--> statement-breakpoint
CREATE INDEX "credit_transactions_usage_idx" ON "credit_transactions" USING btree ("user_id","kind","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "credit_transactions_reference_key" ON "credit_transactions" USING btree ("kind","reference") WHERE "credit_transactions"."reference" IS NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "inbound_webhook_events_event_key" ON "inbound_webhook_events" USING btree ("provider","event_id");--> statement-breakpoint
-- Added by hand (drizzle-kit cannot express triggers): the credit ledger is append-only (README
-- "Credits"); rows leave only with their user (ON DELETE CASCADE), never change.
CREATE FUNCTION "credit_transactions_append_only"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'credit_transactions is append-only';
END $$;
--> statement-breakpoint
CREATE TRIGGER "credit_transactions_no_update" BEFORE UPDATE ON "credit_transactions"
  FOR EACH ROW EXECUTE FUNCTION "credit_transactions_append_only"();
