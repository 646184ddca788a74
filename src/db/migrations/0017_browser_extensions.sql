CREATE TABLE "browser_extensions" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"name" text NOT NULL,
	"version" text NOT NULL,
	"manifest_version" integer NOT NULL,
	"size_bytes" integer NOT NULL,
	"zip" "bytea" NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "browser_hosts" ADD COLUMN "free_memory_mb" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "browser_extensions" ADD CONSTRAINT "browser_extensions_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "browser_extensions_user_idx" ON "browser_extensions" USING btree ("user_id","id");