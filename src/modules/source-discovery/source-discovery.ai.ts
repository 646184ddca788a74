import type { Logger } from 'pino';
import type { AiService } from '../../shared/ai/ai.service.ts';
import type { SearchProvider, SearchResult } from '../../shared/ai/search.ts';
import { AppError } from '../../shared/errors.ts';
import {
  type DiscoveredSource,
  type DiscoveryMethod,
  modelProposals,
  modelSearchPicks,
} from './source-discovery.schemas.ts';

/**
 * Source proposals by the AI layer. With web search configured the model only chooses among real
 * search results (it answers result numbers; the URLs are the search engine's, never the model's);
 * without search, or when search finds nothing, the model proposes URLs itself and they are checked
 * to be http(s) URLs.
 */

const SYSTEM = [
  'You help a lead-generation tool find public web pages that list many businesses or people matching a brief:',
  'directories, association or chamber member lists, government business registries, trade-show exhibitor lists, ' +
    'review and map listings, startup databases.',
  'Prefer pages listing many entries over single-company websites.',
  'scrapeType: STATIC when the list is in the server-rendered HTML, DYNAMIC when it needs JavaScript, API when the ' +
    'URL answers JSON.',
  'estimatedLeads: your rough estimate of how many entries the page (with its pagination) lists.',
  'reasoning: one or two honest sentences on why the page fits the brief.',
].join(' ');

const SEARCH_RULES =
  'Choose only among the numbered search results below and answer each choice with its number in `result`. Never ' +
  'invent URLs. Skip results that are not lists of businesses or people.';

export interface ProposalRequest {
  userId: string;
  feature: string;
  /** The lead-generation brief, in prose. */
  brief: string;
  /** What to search the web for (when search is configured). */
  searchQuery: string;
  count: number;
  signal?: AbortSignal;
}

const MAX = { name: 200, url: 2048, text: 5000, category: 100 };
const cut = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

export function httpUrl(value: string): string | undefined {
  try {
    const u = new URL(value.trim());
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.href.length <= MAX.url ? u.href : undefined;
  } catch {
    return undefined;
  }
}

function tidy(s: Omit<DiscoveredSource, 'url'>, url: string, fallbackName: string): DiscoveredSource {
  return {
    name: cut(s.name.trim() || fallbackName, MAX.name),
    url,
    category: cut(s.category.trim() || 'directory', MAX.category),
    estimatedLeads: Number.isFinite(s.estimatedLeads) ? Math.max(0, Math.round(s.estimatedLeads)) : 0,
    scrapeType: s.scrapeType,
    description: cut(s.description.trim(), MAX.text),
    reasoning: cut(s.reasoning.trim(), MAX.text),
  };
}

export function createProposer(deps: { ai: AiService; search: SearchProvider; logger: Logger }) {
  const { ai, search, logger } = deps;

  async function searchResults(query: string, count: number, signal?: AbortSignal): Promise<SearchResult[]> {
    if (!search.configured) return [];
    try {
      return await search.search(query, { count: Math.min(20, Math.max(10, count * 3)), signal });
    } catch (error) {
      // A search outage degrades to model-only proposals (the answer's `method` says so), not a failure.
      if (error instanceof AppError && error.code === 'SEARCH_PROVIDER_ERROR') {
        logger.warn({ message: error.message }, 'web search failed; proposing sources without it');
        return [];
      }
      throw error;
    }
  }

  return {
    async propose(request: ProposalRequest): Promise<{ method: DiscoveryMethod; sources: DiscoveredSource[] }> {
      const { userId, feature, brief, count, signal } = request;
      // 402 before the web search: the model call after it would be refused.
      await ai.assertCredits(userId);
      const results = await searchResults(request.searchQuery, count, signal);
      if (results.length) {
        const listing = results.map((r, i) => `${i + 1}. ${r.title}\n   ${r.url}\n   ${r.description}`).join('\n');
        const answer = await ai.generateObject({
          userId,
          feature,
          schema: modelSearchPicks,
          schemaName: 'source_choices',
          system: `${SYSTEM} ${SEARCH_RULES}`,
          prompt: `${brief}\n\nChoose up to ${count} sources.\n\nSearch results:\n${listing}`,
          signal,
        });
        const seen = new Set<number>();
        const sources: DiscoveredSource[] = [];
        for (const pick of answer.sources) {
          const index = Math.round(pick.result) - 1;
          const result = results[index];
          if (!result || seen.has(index)) continue;
          seen.add(index);
          sources.push(tidy(pick, result.url, result.title || new URL(result.url).hostname));
        }
        return { method: 'ai+search', sources: sources.slice(0, count) };
      }
      const answer = await ai.generateObject({
        userId,
        feature,
        schema: modelProposals,
        schemaName: 'source_proposals',
        system:
          `${SYSTEM} Give only URLs you are confident exist; ` +
          'a search page of a real directory with the query filled in is fine.',
        prompt: `${brief}\n\nPropose up to ${count} sources.`,
        signal,
      });
      const seen = new Set<string>();
      const sources: DiscoveredSource[] = [];
      for (const proposal of answer.sources) {
        const url = httpUrl(proposal.url);
        if (!url || seen.has(url)) continue;
        seen.add(url);
        sources.push(tidy(proposal, url, new URL(url).hostname));
      }
      return { method: 'ai', sources: sources.slice(0, count) };
    },
  };
}
