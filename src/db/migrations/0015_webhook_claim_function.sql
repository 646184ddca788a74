-- The dispatcher's claim as one statement (one round trip instead of four: BEGIN, the planner settings, the claim,
-- COMMIT). The settings are the function's own (SET clauses): the due index is read in its order whatever the
-- statistics say; after a burst of events they count few pending rows, and a bitmap scan would read and sort every
-- due delivery on each claim.
CREATE OR REPLACE FUNCTION webhook_claim_due(p_owner text, p_now timestamptz, p_limit int, p_lease_ms int)
RETURNS TABLE (id uuid, "eventId" uuid, "endpointId" uuid, attempts int, type text, "dataJson" text,
  "createdAt" timestamptz, url text, enabled boolean, secret text, "previousSecret" text)
LANGUAGE sql
SET enable_seqscan = off
SET enable_bitmapscan = off
AS $$
  WITH due AS (
    SELECT d.id FROM webhook_deliveries d
    WHERE d.status = 'pending' AND d.next_attempt_at <= p_now AND (d.lease_until IS NULL OR d.lease_until < now())
    ORDER BY d.next_attempt_at
    LIMIT p_limit
    FOR UPDATE SKIP LOCKED
  ), claimed AS (
    UPDATE webhook_deliveries d SET lease_owner = p_owner,
      lease_until = now() + p_lease_ms * interval '1 millisecond',
      next_attempt_at = p_now + p_lease_ms * interval '1 millisecond'
    FROM due WHERE d.id = due.id
    RETURNING d.id, d.event_id, d.endpoint_id, d.attempts
  )
  SELECT c.id, c.event_id, c.endpoint_id, c.attempts, ev.type,
    ev.data::text, ev.created_at, ep.url, ep.enabled,
    ep.secret_encrypted,
    CASE WHEN ep.previous_secret_expires_at > p_now THEN ep.previous_secret_encrypted END
  FROM claimed c
  JOIN webhook_events ev ON ev.id = c.event_id
  JOIN webhook_endpoints ep ON ep.id = c.endpoint_id
  ORDER BY c.event_id
$$;
