CREATE TABLE "proxy_profiles" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"name" text,
	"type" text NOT NULL,
	"host" text NOT NULL,
	"port" integer NOT NULL,
	"username" text,
	"password_sealed" text,
	"rotation" jsonb,
	"checked_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "sources" ADD COLUMN "proxy_profile_id" uuid;--> statement-breakpoint
ALTER TABLE "proxy_profiles" ADD CONSTRAINT "proxy_profiles_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "proxy_profiles_user_idx" ON "proxy_profiles" USING btree ("user_id","id");--> statement-breakpoint
ALTER TABLE "sources" ADD CONSTRAINT "sources_proxy_profile_id_proxy_profiles_id_fk" FOREIGN KEY ("proxy_profile_id") REFERENCES "public"."proxy_profiles"("id") ON DELETE restrict ON UPDATE no action;