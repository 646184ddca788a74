import { z } from 'zod';
import type { AppDeps } from '../../deps.ts';
import type { SearchResult } from '../../shared/ai/search.ts';
import { cleanTraits, compactForPrompt, isEmptyValue, linesWithin, traitSchema } from '../../shared/ai/traits.ts';
import { AppError, notFound } from '../../shared/errors.ts';
import { accountIdOf, accountKeyOf, describeAccountKey } from './account-key.ts';
import { type AccountSampleRow, accountRepository } from './accounts.repository.ts';
import type { AccountView, CommonalitiesView } from './accounts.schemas.ts';
import { toAccountView } from './accounts.service.ts';

/** Leads read for the prompt (most recently updated first), and how much of them the prompt may hold. */
const SAMPLE_LEADS = 200;
const MAX_LEADS_PROMPT_CHARS = 12_000;
const SEARCH_RESULTS = 5;
const MAX_TRAITS = 10;
const MAX_FACTS = 10;

/** What the model answers (strict-mode friendly: every key required). */
const answerSchema = z.object({
  summary: z.string().describe('Two or three sentences on what the leads have in common'),
  traits: z.array(traitSchema).describe(`At most ${MAX_TRAITS}, most widely shared first`),
  companyFacts: z
    .array(
      z.object({
        fact: z.string().describe('A fact about the company read from a web search result'),
        sourceUrl: z.string().describe('The URL of the search result it comes from, exactly as given'),
      }),
    )
    .describe('Only facts stated by the given web search results; empty when they say nothing about this company'),
});

const SYSTEM =
  'You analyse the leads (people) a sales team has collected at one company, the "account". From their job titles, ' +
  'statuses, ' +
  'custom fields and profile data, name the traits they share, with the evidence and how many leads share each; do ' +
  'not invent ' +
  'data that is not given. From the web search results, state facts about the company, each citing the URL of the ' +
  'result it ' +
  'comes from exactly as given; never cite any other URL, and give no fact the results do not support.';

/** One lead as a prompt line: what describes the person's role, no name, email or phone. */
function leadLine(row: AccountSampleRow): string {
  const line: Record<string, unknown> = { jobTitle: row.job_title?.trim() || null, status: row.status };
  if (row.company?.trim()) line.company = row.company.trim();
  if (!isEmptyValue(row.custom_fields)) line.customFields = compactForPrompt(row.custom_fields);
  if (row.profiles?.length) line.profiles = compactForPrompt(row.profiles);
  return JSON.stringify(line);
}

function buildPrompt(account: AccountView, sample: AccountSampleRow[], results: SearchResult[], query: string): string {
  const statuses = Object.entries(account.statuses)
    .filter(([, n]) => n > 0)
    .map(([s, n]) => `${s} ${n}`)
    .join(', ');
  const lines = linesWithin(sample.map(leadLine), MAX_LEADS_PROMPT_CHARS);
  const omitted = account.leadCount - lines.length;
  const searchText = results.length
    ? results.map((r, i) => `[${i + 1}] ${r.title}\nURL: ${r.url}\n${r.description}`).join('\n\n')
    : '(no results)';
  return [
    `Account: ${account.name}${account.domain ? ` (email domain ${account.domain})` : ' (grouped by company name)'}`,
    `Leads: ${account.leadCount}. Statuses: ${statuses}.`,
    `Most common job titles: ${account.titles.join('; ') || '(none)'}`,
    '',
    `Leads (most recently updated first, one JSON object per line${omitted > 0 ? `; ${omitted} more not shown` : ''}):`,
    ...lines,
    '',
    `Web search results for ${query}:`,
    searchText,
  ].join('\n');
}

/** URL in a canonical spelling (so `https://acme.com` cites `https://acme.com/`), or the text itself. */
function canonicalUrl(url: string): string {
  try {
    return new URL(url.trim()).href;
  } catch {
    return url.trim();
  }
}

/**
 * GET /api/accounts/{id}/commonalities: the model names what the account's leads share and, from a web
 * search for the company, facts about it. Facts citing anything but a search result are dropped.
 */
export function createAccountCommonalities(deps: Pick<AppDeps, 'db' | 'ai' | 'search'>) {
  const repo = accountRepository(deps.db);

  return {
    async analyze(userId: string, id: string, signal?: AbortSignal): Promise<CommonalitiesView> {
      const key = accountKeyOf(id);
      if (!key) throw notFound('Account');
      // Both providers are checked before anything is read or sent.
      if (!deps.search.configured) {
        throw new AppError(
          'SEARCH_NOT_CONFIGURED',
          'Account commonalities need a web search provider: set SEARCH_API_KEY',
        );
      }
      if (!deps.ai.configured) {
        throw new AppError(
          'AI_NOT_CONFIGURED',
          'Account commonalities need an AI provider: set AI_BASE_URL and AI_MODEL',
        );
      }
      const row = await repo.find(userId, key);
      if (!row) throw notFound('Account');
      await deps.ai.assertCredits(userId);
      const account = toAccountView(row);
      const sample = await repo.sample(userId, key, SAMPLE_LEADS);

      const { kind, value } = describeAccountKey(key);
      const quoted = `"${account.name.replace(/"/g, ' ').trim()}"`;
      const query = kind === 'domain' ? `${quoted} ${value}` : quoted;
      const results = (await deps.search.search(query, { count: SEARCH_RESULTS, signal })).slice(0, SEARCH_RESULTS);

      const answer = await deps.ai.generateObject({
        userId,
        feature: 'accounts.commonalities',
        schema: answerSchema,
        schemaName: 'account_commonalities',
        system: SYSTEM,
        prompt: buildPrompt(account, sample, results, query),
        signal,
      });

      const cited = new Map(results.map((r) => [canonicalUrl(r.url), r.url]));
      const traits = cleanTraits(answer.traits, account.leadCount, MAX_TRAITS);
      const companyFacts = answer.companyFacts
        .map((f) => ({ fact: f.fact.trim(), sourceUrl: cited.get(canonicalUrl(f.sourceUrl)) }))
        .filter((f): f is { fact: string; sourceUrl: string } => Boolean(f.fact && f.sourceUrl))
        .slice(0, MAX_FACTS);
      return {
        accountId: accountIdOf(key),
        summary: answer.summary.trim(),
        traits,
        companyFacts,
        sources: results,
        leadCount: account.leadCount,
        method: 'ai',
        model: deps.ai.modelId ?? 'unknown',
      };
    },
  };
}
