/**
 * Profile URL validation (a public read of the page's metadata) and the commonalities of a set of leads
 * (docs/professional-network.md).
 */
import { z } from 'zod';
import type { AppDeps } from '../../deps.ts';
import { cleanTraits, compactForPrompt, isEmptyValue, linesWithin, traitSchema } from '../../shared/ai/traits.ts';
import { AppError, notFound, validationError } from '../../shared/errors.ts';
import { createOutboundClient, OutboundError, outboundSettings } from '../../shared/outbound-http.ts';
import { createLeadService } from '../leads/index.ts';
import type { NetworkCommonalitiesView, ValidateView } from './network.schemas.ts';
import { profileUrlOf, readProfile, verdictOf } from './profile-page.ts';

const MAX_TRAITS = 10;
const MAX_PROMPT_CHARS = 12_000;
const MIN_SHARED = 2;

const answerSchema = z.object({
  summary: z.string().describe('Two or three sentences on what these people have in common'),
  traits: z.array(traitSchema).describe(`At most ${MAX_TRAITS}, most widely shared first`),
});

const SYSTEM =
  'You compare people a sales team wants to reach, read from their professional profiles. From their job titles, ' +
  'companies, locations, headlines and custom fields, name the traits they share, with the evidence and how many ' +
  'people share each; do not invent data that is not given.';

/** Words of a title that say seniority or department: what the heuristic groups titles by. */
const TITLE_GROUPS: Array<[string, RegExp]> = [
  ['C-level or founder', /\b(chief|ceo|cto|cfo|coo|cmo|founder|co-founder|owner|president)\b/i],
  ['Vice president', /\b(vp|vice president|svp|evp)\b/i],
  ['Director or head of a team', /\b(director|head of)\b/i],
  ['Manager or lead', /\b(manager|lead|leader)\b/i],
  ['Senior individual contributor', /\b(senior|sr\.?|staff|principal)\b/i],
  ['Engineering', /\b(engineer\w*|developer|software|devops|cto)\b/i],
  ['Sales', /\b(sales|account executive|business development|bdr|sdr)\b/i],
  ['Marketing', /\b(marketing|growth|brand|cmo)\b/i],
  ['Product or design', /\b(product|design\w*|ux)\b/i],
  ['Finance', /\b(finance|financial|accounting|cfo|controller)\b/i],
  ['Operations', /\b(operations|ops|coo)\b/i],
  ['People and HR', /\b(hr|human resources|people|talent|recruit\w*)\b/i],
];

interface Person {
  jobTitle: string | null;
  company: string | null;
  location: string | null;
  customFields: Record<string, unknown>;
}

/** Shared values counted, no model: what is said is exactly what was counted. */
function heuristicTraits(people: Person[]) {
  const counts = new Map<string, { evidence: Set<string>; leads: Set<number> }>();
  const add = (trait: string, evidence: string, lead: number) => {
    const entry = counts.get(trait) ?? { evidence: new Set(), leads: new Set() };
    entry.evidence.add(evidence);
    entry.leads.add(lead);
    counts.set(trait, entry);
  };
  people.forEach((p, i) => {
    if (p.jobTitle) {
      add(`Job title: ${p.jobTitle.toLowerCase()}`, p.jobTitle, i);
      for (const [group, pattern] of TITLE_GROUPS) if (pattern.test(p.jobTitle)) add(group, p.jobTitle, i);
    }
    if (p.company) add(`Company: ${p.company.toLowerCase()}`, p.company, i);
    if (p.location) add(`Location: ${p.location.toLowerCase()}`, p.location, i);
  });
  return [...counts]
    .filter(([, c]) => c.leads.size >= MIN_SHARED)
    .sort((a, b) => b[1].leads.size - a[1].leads.size || a[0].localeCompare(b[0]))
    .slice(0, MAX_TRAITS)
    .map(([trait, c]) => ({
      trait,
      evidence: `shared by ${c.leads.size} of ${people.length}: ${[...c.evidence].slice(0, 5).join('; ')}`,
      leadCount: c.leads.size,
    }));
}

export function createNetworkService(deps: Pick<AppDeps, 'db' | 'clock' | 'config' | 'ai'>) {
  const outbound = createOutboundClient(outboundSettings(deps.config));
  const leads = createLeadService(deps);
  const base = new URL(deps.config.LINKEDIN_BASE_URL).origin;

  return {
    /** The URL's shape (400 naming `url`), then the page read without any credential: its public metadata. */
    async validate(raw: string, signal?: AbortSignal): Promise<ValidateView> {
      const parsed = profileUrlOf(raw, base);
      if ('error' in parsed) throw validationError('url', parsed.error);
      const unreachable = (reason: string, httpStatus: number | null = null): ValidateView => ({
        ...parsed,
        reachable: false,
        httpStatus,
        reason,
        profile: null,
      });
      let response: Awaited<ReturnType<typeof outbound.request>>;
      try {
        response = await outbound.request({
          url: parsed.url,
          headers: { accept: 'text/html' },
          timeoutMs: 15_000,
          maxBytes: 5 * 1024 * 1024,
          signal,
        });
      } catch (err) {
        if (!(err instanceof OutboundError)) throw err;
        if (err.reason === 'blocked' || err.reason === 'unsupported_url') throw validationError('url', err.message);
        return unreachable(err.message);
      }
      const verdict = verdictOf(response.status, response.url);
      if (verdict.kind !== 'ok') return unreachable(verdict.reason, response.status);
      const profile = readProfile(response.body.toString('utf8'));
      return { ...parsed, reachable: true, httpStatus: response.status, reason: null, profile };
    },

    /** What the leads share: the AI model's analysis, or (no AI provider) the shared values counted. */
    async commonalities(userId: string, leadIds: string[], signal?: AbortSignal): Promise<NetworkCommonalitiesView> {
      const ids = [...new Set(leadIds.map((id) => id.toLowerCase()))];
      const people: Person[] = [];
      for (const id of ids) {
        const lead = await leads.get(userId, id).catch((err: unknown) => {
          throw err instanceof AppError && err.code === 'NOT_FOUND' ? notFound('Lead', 'leadIds') : err;
        });
        const { location, ...customFields } = lead.customFields as Record<string, unknown>;
        people.push({
          jobTitle: lead.jobTitle?.trim() || null,
          company: lead.company?.trim() || null,
          location: typeof location === 'string' && location.trim() ? location.trim() : null,
          customFields,
        });
      }
      if (!deps.ai.configured) {
        const traits = heuristicTraits(people);
        return {
          summary:
            `Heuristic, not an AI analysis (no AI provider is configured): job titles, title words, companies and ` +
            `locations shared by at least ${MIN_SHARED} of the ${people.length} leads, counted. ` +
            (traits.length ? `Most shared: ${traits[0]!.trait} (${traits[0]!.leadCount}).` : 'None is shared.'),
          traits,
          leadCount: people.length,
          method: 'heuristic',
          model: null,
        };
      }
      const lines = linesWithin(
        people.map((p) =>
          JSON.stringify({
            jobTitle: p.jobTitle,
            company: p.company,
            location: p.location,
            ...(isEmptyValue(p.customFields) ? {} : { customFields: compactForPrompt(p.customFields) }),
          }),
        ),
        MAX_PROMPT_CHARS,
      );
      const omitted = people.length - lines.length;
      const answer = await deps.ai.generateObject({
        userId,
        feature: 'linkedin.commonalities',
        schema: answerSchema,
        schemaName: 'network_commonalities',
        system: SYSTEM,
        prompt: [
          `People: ${people.length} (one JSON object per line${omitted > 0 ? `; ${omitted} more not shown` : ''}):`,
          ...lines,
        ].join('\n'),
        signal,
      });
      return {
        summary: answer.summary.trim(),
        traits: cleanTraits(answer.traits, people.length, MAX_TRAITS),
        leadCount: people.length,
        method: 'ai',
        model: deps.ai.modelId ?? 'unknown',
      };
    },
  };
}
