ALTER TABLE "credit_checkouts" ADD COLUMN "payment_intent_id" text;--> statement-breakpoint
ALTER TABLE "credit_checkouts" ADD COLUMN "refunded_amount" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "credit_checkouts_payment_intent_key" ON "credit_checkouts" USING btree ("payment_intent_id");