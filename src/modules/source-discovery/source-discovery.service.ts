import type { AppDeps } from '../../deps.ts';
import { findOwned } from '../../shared/ids.ts';
import { createSourceService, ownedProjectExists } from '../sources/index.ts';
import { createProposer } from './source-discovery.ai.ts';
import { extractRequirements } from './source-discovery.heuristics.ts';
import { type CatalogueMatch, rankCatalogue, tokenize } from './source-discovery.matching.ts';
import {
  type DiscoveredSource,
  type DiscoverInput,
  type DiscoveryMethod,
  type GeneratedSource,
  type GenerateInput,
  modelRequirements,
} from './source-discovery.schemas.ts';

/**
 * discover / generate / analyze: the AI layer when it is configured (with web search when that is
 * too), else honest rule-based answers from the built-in catalogue and keyword heuristics.
 */

/** Characters of a document the model reads (about 6,000 tokens). */
const MAX_DOCUMENT_CHARS = 24_000;
const ANALYZE_SUGGESTIONS = 5;

const fromCatalogue = (m: CatalogueMatch): DiscoveredSource => ({
  name: m.entry.name,
  url: m.url,
  category: m.entry.category,
  estimatedLeads: m.entry.estimatedLeads,
  scrapeType: m.entry.scrapeType,
  description: m.entry.description,
  reasoning: m.reasoning,
});

/** The first few meaningful words of a text: a search-box query for catalogue URLs. */
const conciseQuery = (text: string, words = 5) =>
  tokenize(text)
    .slice(0, words)
    .map((t) => t.word)
    .join(' ');

const lines = (pairs: Array<[string, string | null | undefined]>) =>
  pairs
    .filter(([, v]) => v)
    .map(([k, v]) => `${k}: ${v}`)
    .join('\n');

export type SourceDiscoveryService = ReturnType<typeof createSourceDiscoveryService>;

export function createSourceDiscoveryService(deps: AppDeps) {
  const { ai } = deps;
  const proposer = createProposer(deps);
  const sources = createSourceService(deps);

  /**
   * A body `projectId` must name one of the caller's projects: 404 naming it otherwise (checked before any AI call).
   */
  async function checkProject(userId: string, projectId: string | undefined): Promise<string | undefined> {
    if (projectId === undefined) return undefined;
    const id = projectId.toLowerCase();
    await findOwned(id, 'Project', (key) => ownedProjectExists(deps.db, userId, key), 'projectId');
    return id;
  }

  return {
    async discover(
      userId: string,
      input: DiscoverInput,
      signal?: AbortSignal,
    ): Promise<{ sources: DiscoveredSource[]; method: DiscoveryMethod }> {
      if (!ai.configured)
        return {
          sources: rankCatalogue({ matchText: input.query }, input.count).map(fromCatalogue),
          method: 'catalogue',
        };
      return proposer.propose({
        userId,
        feature: 'sources.discover',
        brief: `Find sources of leads for: ${input.query}`,
        searchQuery: `${input.query} directory list`,
        count: input.count,
        signal,
      });
    },

    async generate(
      userId: string,
      input: GenerateInput,
      signal?: AbortSignal,
    ): Promise<{ sources: GeneratedSource[]; method: DiscoveryMethod }> {
      const projectId = await checkProject(userId, input.projectId);
      let method: DiscoveryMethod;
      let generated: GeneratedSource[];
      if (!ai.configured) {
        const focus = [input.targetAudience ?? input.industry, input.location].filter(Boolean).join(' ');
        const matches = rankCatalogue(
          {
            matchText: [input.industry, input.targetAudience, input.location, input.projectDescription]
              .filter(Boolean)
              .join(' '),
            urlQuery: focus || conciseQuery(input.projectDescription),
          },
          input.count,
        );
        method = 'catalogue';
        generated = matches.map((m) => ({
          name: m.entry.name,
          url: m.url,
          description: m.entry.description,
          scrapeType: m.entry.scrapeType,
          reasoning: m.reasoning,
          ...(m.entry.selectors ? { selectors: { ...m.entry.selectors } } : {}),
        }));
      } else {
        const brief = lines([
          ['Project', input.projectDescription],
          ['Target audience', input.targetAudience],
          ['Industry', input.industry],
          ['Location', input.location],
        ]);
        const focus =
          [input.targetAudience, input.industry, input.location].filter(Boolean).join(' ') ||
          conciseQuery(input.projectDescription, 8);
        const proposed = await proposer.propose({
          userId,
          feature: 'sources.generate',
          brief,
          searchQuery: `${focus} directory list`,
          count: input.count,
          signal,
        });
        method = proposed.method;
        generated = proposed.sources.map(({ name, url, description, scrapeType, reasoning }) => ({
          name,
          url,
          description,
          scrapeType,
          reasoning,
        }));
      }
      if (input.autoSave && generated.length) {
        const saved = await sources.createMany(
          userId,
          generated.map((g) => ({
            name: g.name,
            url: g.url,
            scrapeType: g.scrapeType,
            description: g.description,
            reasoning: g.reasoning,
            selectors: g.selectors ?? {},
          })),
          projectId,
        );
        generated = generated.map((g, i) => ({ ...g, id: saved[i]!.id, status: saved[i]!.status }));
      }
      return { sources: generated, method };
    },

    /** Requirements read from a document's text, and sources that fit them. */
    async analyze(userId: string, text: string, signal?: AbortSignal) {
      if (!ai.configured) {
        const found = extractRequirements(text);
        const focus = [found.targetAudience ?? found.industry, found.location].filter(Boolean).join(' ');
        const matches = rankCatalogue(
          { matchText: found.keyTerms.join(' '), urlQuery: focus || found.keyTerms.slice(0, 3).join(' ') },
          ANALYZE_SUGGESTIONS,
        );
        return {
          requirements: {
            targetAudience: found.targetAudience,
            industry: found.industry,
            location: found.location,
            suggestedSources: matches.map(fromCatalogue),
            reasoning: found.reasoning,
          },
          method: 'heuristic' as const,
        };
      }
      const document = text.length > MAX_DOCUMENT_CHARS ? `${text.slice(0, MAX_DOCUMENT_CHARS)}\n[…truncated]` : text;
      const req = await ai.generateObject({
        userId,
        feature: 'sources.analyze',
        schema: modelRequirements,
        schemaName: 'lead_requirements',
        system:
          'You read a document (a brief, a product page, a pitch deck) and state who its leads would be: the target ' +
          'audience, the industry, the location. Answer null for what the document does not say; never guess. ' +
          'searchQuery: a short web-search query that would find directories listing such leads.',
        prompt: `Document:\n${document}`,
        signal,
      });
      const brief = lines([
        ['Target audience', req.targetAudience],
        ['Industry', req.industry],
        ['Location', req.location],
      ]);
      const proposed = await proposer.propose({
        userId,
        feature: 'sources.analyze',
        brief: brief || 'Leads described by the analysed document.',
        searchQuery:
          req.searchQuery.trim() ||
          `${[req.targetAudience, req.industry, req.location].filter(Boolean).join(' ')} directory`,
        count: ANALYZE_SUGGESTIONS,
        signal,
      });
      const sourcesBy =
        proposed.method === 'ai+search' ? 'chosen by the model among web-search results' : 'proposed by the model';
      return {
        requirements: {
          targetAudience: req.targetAudience?.trim() || null,
          industry: req.industry?.trim() || null,
          location: req.location?.trim() || null,
          suggestedSources: proposed.sources,
          reasoning:
            `Requirements read from the document by the AI model (${ai.modelId ?? 'configured model'}); ` +
            `sources ${sourcesBy}.`,
        },
        method: proposed.method,
      };
    },
  };
}
