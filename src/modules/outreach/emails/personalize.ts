import { z } from 'zod';
import type { AppDeps } from '../../../deps.ts';
import { AppError } from '../../../shared/errors.ts';
import { storedId } from '../../../shared/ids.ts';
import { leadsForOutreach, mergeLeadCustomFields } from '../../leads/index.ts';
import { profilesOfLeads } from '../../profiles/index.ts';

type Deps = Pick<AppDeps, 'db' | 'clock' | 'ai' | 'logger'>;

export const MAX_PERSONALIZE = 100;

export const personalizeBody = z.object({
  leadIds: z.array(z.string().max(100)).min(1).max(MAX_PERSONALIZE),
  dryRun: z.boolean().default(false).describe('Answer without storing anything on the leads'),
  instructions: z
    .string()
    .trim()
    .max(2000)
    .optional()
    .describe('What you offer and the tone, e.g. "We sell bookkeeping to dental practices; friendly, brief"'),
});

export const personalizeResult = z.object({
  dryRun: z.boolean(),
  results: z.array(
    z.object({
      leadId: z.string(),
      subject: z.string().nullable(),
      firstLine: z.string().nullable(),
      stored: z.boolean().describe('Saved as the custom fields personalizedSubject and personalizedFirstLine'),
      error: z.string().nullable().describe('not_found, or why the model gave no answer for this lead'),
    }),
  ),
});

const answer = z.object({
  subject: z.string().describe('A subject line of at most 8 words, no clickbait, no emoji'),
  firstLine: z.string().describe('One opening sentence that shows the email was written for this person'),
});

const SYSTEM =
  'You write the first touch of a B2B cold email. From what is known about the recipient, write a short, specific ' +
  'subject and one opening sentence. Use only the facts given; never invent achievements, numbers or news. ' +
  'Plain text, no placeholders, no greeting.';

/**
 * AI personalization (docs/outreach.md "Outreach", Personalization): per lead, the model writes a subject and a first line
 * from the lead (name, title, company, email domain, custom fields) and its profiles. Stored (unless `dryRun`) as the lead's custom fields
 * `personalizedSubject` and `personalizedFirstLine`, so templates use `{{custom.personalizedFirstLine}}`. The AI
 * layer meters the tokens in credits.
 */
export function createPersonalizer(deps: Deps) {
  return {
    async personalize(userId: string, input: z.infer<typeof personalizeBody>) {
      if (!deps.ai.configured)
        throw new AppError('AI_NOT_CONFIGURED', 'No AI provider is configured (AI_BASE_URL, AI_MODEL)');
      await deps.ai.assertCredits(userId);
      const ids = [...new Set(input.leadIds)];
      const keys = ids.map((id) => storedId(id)).filter((k): k is string => !!k);
      const leads = new Map((await leadsForOutreach(deps.db, userId, keys)).map((l) => [l.id, l]));
      const profiles = await profilesOfLeads(deps.db, userId, [...leads.keys()]);
      const results = await Promise.all(
        ids.map(async (raw) => {
          const lead = leads.get(storedId(raw) ?? '');
          if (!lead) return { leadId: raw, subject: null, firstLine: null, stored: false, error: 'not_found' };
          const facts = {
            name: [lead.firstName, lead.lastName].filter(Boolean).join(' ') || null,
            jobTitle: lead.jobTitle,
            company: lead.company,
            emailDomain: lead.email?.split('@')[1] ?? null,
            customFields: lead.customFields,
            profiles: profiles.get(lead.id) ?? [],
          };
          try {
            const out = await deps.ai.generateObject({
              userId,
              feature: 'outreach.personalize',
              schema: answer,
              schemaName: 'personalization',
              system: SYSTEM,
              prompt:
                `${input.instructions ? `About the sender: ${input.instructions}\n\n` : ''}` +
                `The recipient (JSON):\n${JSON.stringify(facts).slice(0, 8000)}`,
            });
            return {
              leadId: lead.id,
              subject: out.subject.trim().slice(0, 200),
              firstLine: out.firstLine.trim().slice(0, 1000),
              stored: false,
              error: null,
            };
          } catch (err) {
            if (err instanceof AppError && err.code === 'INSUFFICIENT_CREDITS') throw err;
            deps.logger.warn({ err, leadId: lead.id }, 'personalization failed');
            return { leadId: lead.id, subject: null, firstLine: null, stored: false, error: (err as Error).message };
          }
        }),
      );
      if (!input.dryRun) {
        const done = results.filter((r) => r.subject !== null && r.firstLine !== null);
        await mergeLeadCustomFields(
          deps.db,
          userId,
          done.map((r) => ({
            id: r.leadId,
            fields: { personalizedSubject: r.subject!, personalizedFirstLine: r.firstLine! },
          })),
          deps.clock.now(),
        );
        for (const r of done) r.stored = true;
      }
      return { dryRun: input.dryRun, results };
    },
  };
}
