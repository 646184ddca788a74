/**
 * The console's top-level paths: each answers the console's shell, whose router (web/app.js `ROUTES`) shows the
 * page. A path added there is added here.
 */
export const CONSOLE_SECTIONS = [
  'sign-in',
  'sign-up',
  'projects',
  'sources',
  'jobs',
  'leads',
  'qualification',
  'campaigns',
  'outreach',
  'inbox',
  'mailboxes',
  'suppressions',
  'webhooks',
  'credits',
  'analytics',
  'organizations',
  'settings',
  'admin',
  'browsers',
] as const;
