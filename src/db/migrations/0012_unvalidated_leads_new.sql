-- Custom (data only): leads got VALID from a syntax check when they were stored. VALID means validated
-- (README, Leads): a VALID lead that email validation never saw starts over as NEW. One statement, so the
-- leads triggers (account and analytics roll-ups) see the change like any other write.
UPDATE "leads" SET "status" = 'NEW' WHERE "status" = 'VALID' AND "validated_at" IS NULL;
