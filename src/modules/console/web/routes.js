// Every console page: its path (matched by lib/router.js) and its module under pages/. The server answers the shell
// for each top-level segment listed in console-sections.ts; keep the two lists in step.
export const ROUTES = [
  { path: '/projects', page: 'projects.js' },
  { path: '/projects/:id', page: 'project.js' },
  { path: '/sources/new', page: 'source-new.js' },
  { path: '/sources/:id', page: 'source.js' },
  { path: '/jobs', page: 'jobs.js' },
  { path: '/jobs/:id', page: 'job.js' },
  { path: '/leads', page: 'leads.js' },
  { path: '/leads/:id', page: 'lead.js' },
  { path: '/qualification', page: 'qualification.js' },
  { path: '/campaigns', page: 'campaigns.js' },
  { path: '/campaigns/:id', page: 'campaign.js' },
  { path: '/outreach', page: 'outreach.js' },
  { path: '/outreach/:id', page: 'outreach-campaign.js' },
  { path: '/inbox', page: 'inbox.js' },
  { path: '/mailboxes', page: 'mailboxes.js' },
  { path: '/suppressions', page: 'suppressions.js' },
  { path: '/webhooks', page: 'webhooks.js' },
  { path: '/webhooks/:id', page: 'webhook.js' },
  { path: '/credits', page: 'credits.js' },
  { path: '/analytics', page: 'analytics.js' },
  { path: '/organizations', page: 'organizations.js' },
  { path: '/organizations/:id', page: 'organization.js' },
  { path: '/settings/api-keys', page: 'api-keys.js' },
  { path: '/admin', page: 'admin.js' },
  { path: '/browsers', page: 'browsers.js' },
  { path: '/browsers/:id', page: 'browser.js' },
];

/**
 * The navigation landmark's links, in order (names are the accessibility contract: docs/console.md); `also` are the
 * other paths a link is current on.
 */
export const NAV = [
  { href: '/projects', label: 'Projects', also: ['/sources', '/jobs'] },
  { href: '/leads', label: 'Leads' },
  { href: '/qualification', label: 'Qualification', also: ['/campaigns'] },
  { href: '/outreach', label: 'Outreach', also: ['/inbox', '/mailboxes', '/suppressions'] },
  { href: '/analytics', label: 'Analytics' },
  { href: '/credits', label: 'Credits' },
  { href: '/webhooks', label: 'Webhooks' },
  { href: '/browsers', label: 'Browsers' },
  { href: '/organizations', label: 'Organizations' },
  { href: '/settings/api-keys', label: 'API keys' },
];
