import type { Db, Tx } from '../../db/client.ts';
import { matchingRuleTypes } from '../../db/schema/index.ts';
import type { AppDeps } from '../../deps.ts';
import { AppError, notFound, validationError } from '../../shared/errors.ts';
import { findOwned, isUuid, storedId } from '../../shared/ids.ts';
import { decodeCursor, pageOf } from '../../shared/pagination.ts';
import { insertMatchingRules } from '../matching/index.ts';
import { createProposer } from '../source-discovery/index.ts';
import { insertSources } from '../sources/index.ts';
import { rankAccounts } from './deal-campaigns.ranking.ts';
import {
  type CampaignRuleLink,
  type CampaignTarget,
  type DealCampaignRow,
  dealCampaignRepository,
  type RuleLinkInput,
} from './deal-campaigns.repository.ts';
import type {
  CreateDealCampaignInput,
  DealCampaignView,
  DiscoverSourcesInput,
  ListDealCampaignsQuery,
  RankedAccountsQuery,
  SuggestMatchingInput,
  SuggestMatchingView,
  TargetInput,
  UpdateDealCampaignInput,
} from './deal-campaigns.schemas.ts';
import { suggestRules } from './deal-campaigns.suggest.ts';

/** The stored target: every key present, lists de-duplicated (case-insensitively), an empty size range as null. */
export function normalizeTarget(input: TargetInput | undefined, base?: CampaignTarget): CampaignTarget {
  const list = (value: string[] | undefined, fallback: string[] = []) => {
    if (value === undefined) return fallback;
    const seen = new Set<string>();
    return value.filter((v) => !seen.has(v.toLowerCase()) && seen.add(v.toLowerCase()));
  };
  let companySize = base?.companySize ?? null;
  if (input?.companySize !== undefined) {
    const min = input.companySize?.min ?? null;
    const max = input.companySize?.max ?? null;
    if (min !== null && max !== null && min > max)
      throw validationError('target.companySize', 'min must not be greater than max');
    companySize = min === null && max === null ? null : { min, max };
  }
  return {
    industries: list(input?.industries, base?.industries),
    locations: list(input?.locations, base?.locations),
    companySize,
    titles: list(input?.titles, base?.titles),
    keywords: list(input?.keywords, base?.keywords),
  };
}

const lower = (id: string) => id.toLowerCase();

export const toDealCampaignView = (
  row: DealCampaignRow,
  sourceIds: string[],
  rules: CampaignRuleLink[],
): DealCampaignView => ({
  id: row.id,
  name: row.name,
  description: row.description,
  status: row.status,
  target: row.target,
  projectId: row.projectId,
  profileTypeId: row.profileTypeId,
  sourceIds,
  rules: rules.map(({ ruleId, name, type, weight }) => ({ ruleId, name, type, weight })),
  createdAt: row.createdAt.toISOString(),
  updatedAt: row.updatedAt.toISOString(),
});

export type DealCampaignService = ReturnType<typeof createDealCampaignService>;

/** The id of the user's deal campaign with this id, if any (a bounce report may name one). */
export async function ownedDealCampaignId(db: Db | Tx, userId: string, id: string): Promise<string | undefined> {
  return (await dealCampaignRepository(db).find(userId, id))?.id;
}

export function createDealCampaignService(deps: Pick<AppDeps, 'db' | 'clock' | 'ai' | 'search' | 'logger'>) {
  const repo = dealCampaignRepository(deps.db);

  /** The rule links a body asks for (`ruleIds` with weight 1, or `rules`), with the field naming each. */
  function requestedRules(
    input: Pick<CreateDealCampaignInput, 'ruleIds' | 'rules'>,
  ): Array<RuleLinkInput & { field: string }> | undefined {
    if (input.ruleIds !== undefined && input.rules !== undefined)
      throw validationError('rules', 'give either ruleIds or rules, not both');
    if (input.ruleIds !== undefined) {
      const seen = new Set<string>();
      return input.ruleIds
        .map((id, i) => ({ ruleId: id, weight: 1, field: `ruleIds.${i}` }))
        .filter((r) => !seen.has(lower(r.ruleId)) && seen.add(lower(r.ruleId)));
    }
    if (input.rules !== undefined) {
      const seen = new Set<string>();
      return input.rules.map((r, i) => {
        if (seen.has(lower(r.ruleId))) throw validationError(`rules.${i}.ruleId`, 'this rule is listed twice');
        seen.add(lower(r.ruleId));
        return { ruleId: r.ruleId, weight: r.weight, field: `rules.${i}.ruleId` };
      });
    }
    return undefined;
  }

  async function checkProject(tx: Tx, userId: string, projectId: string | null | undefined): Promise<void> {
    if (projectId) await findOwned(projectId, 'Project', (key) => repo.projectOwned(tx, userId, key), 'projectId');
  }

  async function checkProfileType(tx: Tx, userId: string, profileTypeId: string | null | undefined): Promise<void> {
    if (profileTypeId)
      await findOwned(profileTypeId, 'Profile type', (key) => repo.profileType(tx, userId, key), 'profileTypeId');
  }

  async function checkSources(tx: Tx, userId: string, ids: string[] | undefined): Promise<string[] | undefined> {
    if (ids === undefined) return undefined;
    const owned = await repo.sourcesOwned(tx, userId, [...new Set(ids.filter(isUuid).map(lower))]);
    const missing = ids.findIndex((id) => !owned.has(storedId(id) ?? ''));
    if (missing >= 0) throw notFound('Source', `sourceIds.${missing}`);
    return [...new Set(ids.map(lower))];
  }

  /** Every rule must be the caller's (404) and, when the campaign has a profile type, of that type (400). */
  async function checkRules(
    tx: Tx,
    userId: string,
    rules: Array<RuleLinkInput & { field: string }>,
    profileTypeId: string | null,
    typeField?: string,
  ): Promise<RuleLinkInput[]> {
    const owned = await repo.rulesOwned(tx, userId, [
      ...new Set(
        rules
          .map((r) => r.ruleId)
          .filter(isUuid)
          .map(lower),
      ),
    ]);
    for (const r of rules) {
      const ruleType = owned.get(storedId(r.ruleId) ?? '');
      if (!ruleType) throw notFound('Matching rule', r.field);
      if (profileTypeId && ruleType !== profileTypeId) {
        throw validationError(
          typeField ?? r.field,
          typeField
            ? "the campaign's rules are of another profile type: replace `rules` too"
            : "the rule is not of the campaign's profile type",
        );
      }
    }
    return rules.map((r) => ({ ruleId: lower(r.ruleId), weight: r.weight }));
  }

  /** The campaign's rules as they are must fit `profileTypeId` (a 400 naming `profileTypeId` otherwise). */
  async function checkKeptRules(tx: Tx, userId: string, campaignId: string, profileTypeId: string): Promise<void> {
    const kept = (await repo.links(tx).rulesOf([campaignId])).get(campaignId)!;
    await checkRules(
      tx,
      userId,
      kept.map((r) => ({ ...r, field: 'profileTypeId' })),
      profileTypeId,
      'profileTypeId',
    );
  }

  async function view(row: DealCampaignRow, q: Tx | undefined = undefined): Promise<DealCampaignView> {
    const l = q ? repo.links(q) : repo;
    const [sourceIds, rules] = await Promise.all([l.sourceIdsOf([row.id]), l.rulesOf([row.id])]);
    return toDealCampaignView(row, sourceIds.get(row.id)!, rules.get(row.id)!);
  }

  async function owned(userId: string, id: string): Promise<DealCampaignRow> {
    return findOwned(id, 'Campaign', (key) => repo.find(userId, key));
  }

  return {
    owned,
    view,

    async list(userId: string, query: ListDealCampaignsQuery) {
      const rows = await repo.list(
        userId,
        { status: query.status, projectId: query.projectId?.toLowerCase() },
        query.limit,
        decodeCursor(query.cursor),
      );
      const { items, nextCursor } = pageOf(rows, query.limit);
      const ids = items.map((r) => r.id);
      const [sourceIds, rules] = await Promise.all([repo.sourceIdsOf(ids), repo.rulesOf(ids)]);
      return { campaigns: items.map((r) => toDealCampaignView(r, sourceIds.get(r.id)!, rules.get(r.id)!)), nextCursor };
    },

    async get(userId: string, id: string): Promise<DealCampaignView> {
      return view(await owned(userId, id));
    },

    /** All or nothing: the campaign and its links in one transaction, every reference checked first. */
    async create(userId: string, input: CreateDealCampaignInput): Promise<DealCampaignView> {
      const target = normalizeTarget(input.target);
      const rules = requestedRules(input) ?? [];
      const now = deps.clock.now();
      return repo.transaction(async (tx) => {
        await checkProject(tx, userId, input.projectId);
        await checkProfileType(tx, userId, input.profileTypeId);
        const sourceIds = (await checkSources(tx, userId, input.sourceIds)) ?? [];
        const profileTypeId = input.profileTypeId ? lower(input.profileTypeId) : null;
        const links = await checkRules(tx, userId, rules, profileTypeId);
        const row = await repo.insert(tx, {
          userId,
          name: input.name,
          description: input.description || null,
          status: input.status ?? 'DRAFT',
          target,
          projectId: input.projectId ? lower(input.projectId) : null,
          profileTypeId,
          createdAt: now,
          updatedAt: now,
        });
        await repo.replaceSources(tx, row.id, sourceIds);
        await repo.replaceRules(tx, row.id, links);
        return view(row, tx);
      });
    },

    async update(userId: string, id: string, input: UpdateDealCampaignInput): Promise<DealCampaignView> {
      const rules = requestedRules(input);
      return repo.transaction(async (tx) => {
        const current = await findOwned(id, 'Campaign', (key) => repo.find(userId, key, tx, true));
        const target = input.target !== undefined ? normalizeTarget(input.target, current.target) : undefined;
        await checkProject(tx, userId, input.projectId);
        await checkProfileType(tx, userId, input.profileTypeId);
        const sourceIds = await checkSources(tx, userId, input.sourceIds);
        const profileTypeId =
          input.profileTypeId === undefined
            ? current.profileTypeId
            : input.profileTypeId
              ? lower(input.profileTypeId)
              : null;
        let links: RuleLinkInput[] | undefined;
        if (rules !== undefined) {
          links = await checkRules(tx, userId, rules, profileTypeId);
        } else if (profileTypeId && profileTypeId !== current.profileTypeId) {
          // The kept rules must fit the new profile type.
          await checkKeptRules(tx, userId, current.id, profileTypeId);
        }
        const values: Partial<DealCampaignRow> = {};
        if (input.name !== undefined) values.name = input.name;
        if (input.description !== undefined) values.description = input.description || null;
        if (input.status !== undefined) values.status = input.status;
        if (target !== undefined) values.target = target;
        if (input.projectId !== undefined) values.projectId = input.projectId ? lower(input.projectId) : null;
        if (input.profileTypeId !== undefined) values.profileTypeId = profileTypeId;
        const changed = Object.keys(values).length > 0 || sourceIds !== undefined || links !== undefined;
        if (!changed) return view(current, tx);
        const row = await repo.update(tx, userId, current.id, { ...values, updatedAt: deps.clock.now() });
        if (!row) throw notFound('Campaign');
        if (sourceIds !== undefined) await repo.replaceSources(tx, row.id, sourceIds);
        if (links !== undefined) await repo.replaceRules(tx, row.id, links);
        return view(row, tx);
      });
    },

    async remove(userId: string, id: string): Promise<void> {
      await findOwned(id, 'Campaign', (key) => repo.delete(userId, key));
    },

    /** Sources for the campaign's target: the AI picks among web-search results (both providers required). */
    async discoverSources(userId: string, id: string, input: DiscoverSourcesInput, signal?: AbortSignal) {
      const campaign = await owned(userId, id);
      if (!deps.ai.configured)
        throw new AppError(
          'AI_NOT_CONFIGURED',
          'No AI provider is configured: set AI_BASE_URL and AI_MODEL (and AI_API_KEY if the endpoint needs one)',
        );
      if (!deps.search.configured)
        throw new AppError('SEARCH_NOT_CONFIGURED', 'No web search provider is configured: set SEARCH_API_KEY');
      const { brief, searchQuery } = discoveryBrief(campaign);
      const proposed = await createProposer(deps).propose({
        userId,
        feature: 'campaigns.discover-sources',
        brief,
        searchQuery,
        count: input.count,
        signal,
      });
      let found: Array<(typeof proposed.sources)[number] & { id?: string; status?: string }> = proposed.sources;
      if (input.autoSave && found.length) {
        found = await repo.transaction(async (tx) => {
          const locked = await repo.find(userId, campaign.id, tx, true);
          if (!locked) throw notFound('Campaign');
          const projectId =
            locked.projectId && (await repo.projectOwned(tx, userId, locked.projectId)) ? locked.projectId : null;
          const profileTypeId =
            locked.profileTypeId && (await repo.profileType(tx, userId, locked.profileTypeId))
              ? locked.profileTypeId
              : null;
          const now = deps.clock.now();
          const saved = await insertSources(
            tx,
            found.map((s) => ({
              userId,
              projectId,
              profileTypeId,
              name: s.name,
              url: s.url,
              scrapeType: s.scrapeType,
              status: 'DRAFT' as const,
              description: s.description || null,
              reasoning: s.reasoning || null,
              selectors: {},
              createdAt: now,
              updatedAt: now,
            })),
          );
          await repo.addSources(
            tx,
            locked.id,
            saved.map((r) => r.id),
          );
          await repo.update(tx, userId, locked.id, { updatedAt: now });
          return found.map((s, i) => ({ ...s, id: saved[i]!.id, status: saved[i]!.status }));
        });
      }
      return { sources: found, method: proposed.method as 'ai+search' | 'ai', query: searchQuery };
    },

    /** FILTER / SCORED / AI rule proposals for the campaign's target; with `save` they are created and linked. */
    async suggestMatching(
      userId: string,
      id: string,
      input: SuggestMatchingInput,
      signal?: AbortSignal,
    ): Promise<SuggestMatchingView> {
      const campaign = await owned(userId, id);
      const given = input.profileTypeId;
      if (given && campaign.profileTypeId && lower(given) !== campaign.profileTypeId) {
        throw validationError('profileTypeId', 'the campaign already has another profile type');
      }
      const profileTypeId = campaign.profileTypeId ?? (given ? lower(given) : null);
      if (!profileTypeId) throw needsProfileType();
      const type = await findOwned(
        profileTypeId,
        'Profile type',
        (key) => repo.profileType(deps.db, userId, key),
        'profileTypeId',
      );
      const types = [...new Set(input.types ?? matchingRuleTypes)];
      const ctx = {
        campaignName: campaign.name,
        description: campaign.description,
        target: campaign.target,
        fields: type.fields,
      };
      const outcome = await suggestRules(deps, userId, ctx, types, signal);
      if (!input.save || !outcome.rules.length) return outcome;
      const ids = await repo.transaction(async (tx) => {
        const locked = await repo.find(userId, campaign.id, tx, true);
        if (!locked) throw notFound('Campaign');
        if (locked.profileTypeId && locked.profileTypeId !== profileTypeId)
          throw validationError('profileTypeId', 'the campaign already has another profile type');
        if (!locked.profileTypeId) {
          await checkKeptRules(tx, userId, locked.id, profileTypeId);
        }
        const now = deps.clock.now();
        const created = await insertMatchingRules(
          tx,
          outcome.rules.map((r) => ({
            userId,
            profileTypeId,
            name: r.name,
            description: r.description || null,
            type: r.type,
            conditions: r.conditions ?? null,
            criteria: r.criteria ?? null,
            threshold: r.threshold ?? null,
            aiPrompt: r.aiPrompt ?? null,
            createdAt: now,
            updatedAt: now,
          })),
        );
        await repo.addRules(
          tx,
          locked.id,
          created.map((c) => ({ ruleId: c.id, weight: 1 })),
        );
        await repo.update(tx, userId, locked.id, { profileTypeId, updatedAt: now });
        return created.map((c) => c.id);
      });
      return { ...outcome, rules: outcome.rules.map((r, i) => ({ id: ids[i]!, ...r })) };
    },

    async rankedAccounts(userId: string, id: string, query: RankedAccountsQuery) {
      const campaign = await owned(userId, id);
      const sourceIds = (await repo.sourceIdsOf([campaign.id])).get(campaign.id)!;
      return rankAccounts(deps.db, userId, { id: campaign.id, sourceIds }, query);
    },
  };
}

/**
 * The web-search query and the model's brief, from the campaign's target (its name and description when the target is
 * empty).
 */
export function discoveryBrief(campaign: Pick<DealCampaignRow, 'name' | 'description' | 'target'>): {
  brief: string;
  searchQuery: string;
} {
  const t = campaign.target;
  const first = (list: string[], n: number) => list.slice(0, n).join(' ');
  const focus = [first(t.industries, 2), first(t.titles, 1), first(t.keywords, 2), first(t.locations, 2)]
    .filter(Boolean)
    .join(' ');
  const topic = (focus || `${campaign.name} ${campaign.description ?? ''}`).replace(/\s+/g, ' ').trim().slice(0, 300);
  const searchQuery = `${topic} directory list`;
  const size = t.companySize ? `${t.companySize.min ?? 'any'}–${t.companySize.max ?? 'any'} employees` : null;
  const brief = [
    `Find sources of leads for the deal campaign "${campaign.name}".`,
    campaign.description ? `Campaign: ${campaign.description}` : null,
    t.industries.length ? `Industries: ${t.industries.join(', ')}` : null,
    t.locations.length ? `Locations: ${t.locations.join(', ')}` : null,
    size ? `Company size: ${size}` : null,
    t.titles.length ? `People with titles: ${t.titles.join(', ')}` : null,
    t.keywords.length ? `Keywords: ${t.keywords.join(', ')}` : null,
  ]
    .filter(Boolean)
    .join('\n');
  return { brief, searchQuery };
}

/** 400 when an operation needs a profile type the campaign does not have. */
export const needsProfileType = () =>
  new AppError(
    'VALIDATION_ERROR',
    'profileTypeId: the campaign has no profile type; set one on the campaign or give profileTypeId',
    {
      details: [
        {
          field: 'profileTypeId',
          message: 'the campaign has no profile type; set one on the campaign or give profileTypeId',
        },
      ],
    },
  );
