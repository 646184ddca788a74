-- IF NOT EXISTS: development databases may hold this table from its first number (0015).
CREATE TABLE IF NOT EXISTS "browser_hosts" (
	"host_id" text PRIMARY KEY NOT NULL,
	"internal_url" text NOT NULL,
	"pid" integer NOT NULL,
	"boot_id" text NOT NULL,
	"max_sessions" integer NOT NULL,
	"live_sessions" integer DEFAULT 0 NOT NULL,
	"started_at" timestamp with time zone NOT NULL,
	"heartbeat_at" timestamp with time zone NOT NULL
);
