-- Edited by hand: the column is added nullable and backfilled before it joins the primary key (existing rows were
-- made by their account's own person, or stay an organization's for at most 24 h), which drizzle-kit cannot order.
ALTER TABLE "idempotency_keys" ADD COLUMN "actor_id" uuid;--> statement-breakpoint
UPDATE "idempotency_keys" SET "actor_id" = "user_id";--> statement-breakpoint
ALTER TABLE "idempotency_keys" ALTER COLUMN "actor_id" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "idempotency_keys" DROP CONSTRAINT "idempotency_keys_user_id_key_pk";--> statement-breakpoint
ALTER TABLE "idempotency_keys" ADD CONSTRAINT "idempotency_keys_user_id_actor_id_key_pk" PRIMARY KEY("user_id","actor_id","key");--> statement-breakpoint
ALTER TABLE "idempotency_keys" ADD CONSTRAINT "idempotency_keys_actor_id_users_id_fk" FOREIGN KEY ("actor_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;
