ALTER TABLE "network_enrich_jobs" ADD COLUMN "worker_id" text;--> statement-breakpoint
ALTER TABLE "network_enrich_jobs" ADD COLUMN "heartbeat_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "network_enrich_jobs" ADD COLUMN "attempts" integer DEFAULT 0 NOT NULL;