/** Resources a key's scopes can name (`resource:read`, `resource:write`, `resource:*`, or `*`). */
export const scopeResources = [
  'users',
  'api-keys',
  'projects',
  'sources',
  'jobs',
  'leads',
  'profiles',
  'matching',
  'accounts',
  'campaigns',
  'chat',
  'email',
  'warmup',
  'outreach',
  'credits',
  'exports',
  'analytics',
  'webhooks',
  'orgs',
  'enterprise',
  'linkedin',
  'browser',
  'markdown',
  'destinations',
  'admin',
] as const;

export const SCOPE_PATTERN = new RegExp(`^(\\*|(${scopeResources.join('|')}):(read|write|\\*))$`);

/** `x:write` includes `x:read`; `x:*` and `*` include everything below them. */
export function hasScope(granted: readonly string[], required: string): boolean {
  if (granted.includes('*') || granted.includes(required)) return true;
  const [resource, action] = required.split(':');
  if (granted.includes(`${resource}:*`)) return true;
  return action === 'read' && granted.includes(`${resource}:write`);
}

/** True when every scope of `wanted` is covered by `granted` (no escalation when minting keys). */
export const coversScopes = (granted: readonly string[], wanted: readonly string[]): boolean =>
  wanted.every((scope) => {
    if (scope === '*') return granted.includes('*');
    const action = scope.split(':')[1];
    if (action === '*') return granted.includes('*') || granted.includes(scope);
    return hasScope(granted, scope);
  });
