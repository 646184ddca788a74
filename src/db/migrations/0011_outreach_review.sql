CREATE TABLE "outreach_sequencer_lease" (
	"name" text PRIMARY KEY NOT NULL,
	"holder" text NOT NULL,
	"lease_until" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "outreach_mailboxes" ALTER COLUMN "imap_last_uid" SET DATA TYPE bigint;--> statement-breakpoint
ALTER TABLE "outreach_messages" ADD COLUMN "external_id" text;