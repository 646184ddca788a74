/**
 * The MCP tools: each stands on one route (by operationId), so its arguments are the route's path, query and body
 * fields and its answer is the route's `data`. Names are verbs first. The annotations tell a client the truth about
 * the route: it reads only (`readOnlyHint`), it may destroy (`destructiveHint`), calling it twice with the same
 * arguments does nothing more (`idempotentHint`), it reaches sites or mail servers outside Quarry (`openWorldHint`).
 */
export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

export interface RouteTool {
  name: string;
  title: string;
  operationId: string;
  /** What a model should know beyond the route's summary (when to use it, what to pass). */
  hint?: string;
  annotations: ToolAnnotations;
  /** Arguments the tool sets itself and hides from its input (`format: 'markdown'`). */
  fixed?: Record<string, unknown>;
  /** The route answers an image (a screenshot): the tool answers an MCP image block. */
  image?: boolean;
}

const read: ToolAnnotations = {
  readOnlyHint: true,
  destructiveHint: false,
  idempotentHint: true,
  openWorldHint: false,
};
/** Reads that reach outside Quarry (a search engine, the AI provider, a live page). */
const readOutside: ToolAnnotations = { ...read, openWorldHint: true };
const create: ToolAnnotations = {
  readOnlyHint: false,
  destructiveHint: false,
  idempotentHint: false,
  openWorldHint: false,
};
const update: ToolAnnotations = { ...create, idempotentHint: true };
/** Starts work that fetches sites or sends mail. */
const createOutside: ToolAnnotations = { ...create, openWorldHint: true };

export const routeTools: RouteTool[] = [
  // ---- projects and sources ----
  {
    name: 'list_projects',
    title: 'List projects',
    operationId: 'listProjects',
    hint: 'Projects group sources, jobs and leads; a source may name one (projectId).',
    annotations: read,
  },
  { name: 'create_project', title: 'Create a project', operationId: 'createProject', annotations: create },
  {
    name: 'discover_sources',
    title: 'Discover sources',
    operationId: 'discoverSources',
    hint: 'Describe who you look for ("dentists in Ohio"); the answer lists public pages to scrape, each with its reasoning. Nothing is saved: create_source saves one. With an AI provider it asks the model (and a search engine): it needs sources:write.',
    annotations: createOutside,
  },
  { name: 'list_sources', title: 'List sources', operationId: 'listSources', annotations: read },
  {
    name: 'create_source',
    title: 'Create a source',
    operationId: 'createSource',
    hint: 'A start URL, STATIC or DYNAMIC, and CSS selectors (item, name, email, company…; see selectors in docs/selectors.md). It starts DRAFT: activate_source before start_job.',
    annotations: create,
  },
  { name: 'activate_source', title: 'Activate a source', operationId: 'activateSource', annotations: update },
  // ---- jobs ----
  {
    name: 'start_job',
    title: 'Start a scraping job',
    operationId: 'createJob',
    hint: 'Crawls an ACTIVE source in the background; follow it with wait_for_job or get_job.',
    annotations: createOutside,
  },
  {
    name: 'get_job',
    title: 'Get a job',
    operationId: 'getJob',
    hint: 'Its status (PENDING, RUNNING, COMPLETED, FAILED, CANCELLED), progress, pages visited and leads found.',
    annotations: read,
  },
  { name: 'list_jobs', title: 'List jobs', operationId: 'listJobs', annotations: read },
  // ---- leads ----
  {
    name: 'search_leads',
    title: 'Search leads',
    operationId: 'listLeads',
    hint: 'Filters combine with AND; pass nextCursor back as cursor for the next page.',
    annotations: read,
  },
  {
    name: 'get_lead',
    title: 'Get a lead',
    operationId: 'getLead',
    hint: 'With provenance: which source, job and page each field came from.',
    annotations: read,
  },
  {
    name: 'update_leads',
    title: 'Update leads in bulk',
    operationId: 'bulkUpdateLeads',
    hint: 'Status and tags of up to 1000 leads at once.',
    annotations: update,
  },
  {
    name: 'validate_email',
    title: "Validate a lead's email now",
    operationId: 'validateLeadEmail',
    hint: 'Answers the verdict at once (VALID, RISKY or INVALID): outreach enrolls only validated addresses.',
    annotations: { ...update, openWorldHint: true },
  },
  {
    name: 'validate_emails',
    title: 'Validate lead emails in bulk',
    operationId: 'bulkValidateLeadEmails',
    hint: 'Queues up to thousands of leads; their status changes as the results come in (search_leads by status).',
    annotations: createOutside,
  },
  // ---- qualification ----
  { name: 'list_matching_rules', title: 'List matching rules', operationId: 'listMatchingRules', annotations: read },
  {
    name: 'run_matching_rule',
    title: 'Run a matching rule',
    operationId: 'executeMatchingRule',
    hint: 'Qualifies the profiles of the rule’s type and stores the results.',
    annotations: update,
  },
  { name: 'list_deal_campaigns', title: 'List deal campaigns', operationId: 'listCampaigns', annotations: read },
  {
    name: 'rank_accounts',
    title: 'Rank accounts for a deal campaign',
    operationId: 'listCampaignRankedAccounts',
    annotations: read,
  },
  // ---- outreach ----
  {
    name: 'list_outreach_campaigns',
    title: 'List outreach campaigns',
    operationId: 'listOutreachCampaigns',
    annotations: read,
  },
  {
    name: 'enroll_leads',
    title: 'Enroll leads in an outreach campaign',
    operationId: 'enrollOutreachLeads',
    hint: 'Suppressed, invalid and already enrolled leads are skipped and counted; the sequencer sends the mail.',
    annotations: { ...update, openWorldHint: true },
  },
  {
    name: 'get_campaign_analytics',
    title: 'Outreach campaign analytics',
    operationId: 'getOutreachCampaignAnalytics',
    annotations: read,
  },
  {
    name: 'list_replies',
    title: 'Replies of a lead',
    operationId: 'listOutreachInbox',
    hint: 'Threads with replies; pass leadId for one lead’s conversation.',
    annotations: read,
  },
  // ---- cloud browser ----
  {
    name: 'create_browser_session',
    title: 'Create a browser session',
    operationId: 'createBrowserSession',
    hint: 'A Chromium session to drive with browser_* tools; release it with release_browser_session.',
    annotations: createOutside,
  },
  { name: 'browser_navigate', title: 'Navigate', operationId: 'browserNavigate', annotations: createOutside },
  {
    name: 'browser_scrape',
    title: 'Scrape the page with selectors',
    operationId: 'scrapeBrowserPage',
    hint: 'Runs the selectors in the live page (it needs browser:write): items with their fields, and next-page links.',
    annotations: { ...update, openWorldHint: true },
  },
  {
    name: 'browser_read_markdown',
    title: 'Read the page as markdown',
    operationId: 'getBrowserPageContent',
    fixed: { format: 'markdown' },
    annotations: readOutside,
  },
  {
    name: 'browser_screenshot',
    title: 'Screenshot the page',
    operationId: 'getBrowserScreenshot',
    image: true,
    annotations: readOutside,
  },
  {
    name: 'release_browser_session',
    title: 'Release a browser session',
    operationId: 'releaseBrowserSession',
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  },
  // ---- markdown exports ----
  {
    name: 'start_markdown_export',
    title: 'Export a site as markdown',
    operationId: 'createMarkdownExport',
    annotations: createOutside,
  },
  {
    name: 'get_markdown_export',
    title: 'Get a markdown export',
    operationId: 'getMarkdownExport',
    hint: 'Its status and counts of pages done and failed; list_markdown_pages reads the markdown itself.',
    annotations: read,
  },
  {
    name: 'list_markdown_pages',
    title: 'Pages of a markdown export',
    operationId: 'listMarkdownExportPages',
    annotations: read,
  },
];
