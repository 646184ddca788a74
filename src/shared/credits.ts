import type { CreditPrices } from '../config.ts';
import type { Db, Tx } from '../db/client.ts';
import type { PipelineStep } from '../db/pipeline.ts';
import type { CreditTransactionKind } from '../db/schema/index.ts';

/**
 * The port of credits (the implementation is `createCredits` in src/modules/credits/): what shared code (the AI
 * layer) and every service see of `deps.credits`.
 *
 * Credits in one call from any service, inside the caller's transaction (docs/webhooks-and-credits.md "Credits"). Every
 * change locks the user's balance row, writes the new balance and appends one ledger row; the balance
 * never goes below zero (and a CHECK constraint refuses it should code ever try).
 */

/** What is metered, each with its unit: a page crawled, an email validated, an AI token. */
export const METERED_FEATURES = [
  'pages',
  'email_validations',
  'ai_tokens',
  'emails_sent',
  'browser_minutes',
  'markdown_pages',
] as const;
export type MeteredFeature = (typeof METERED_FEATURES)[number];

/** AI tokens are priced per block of this many (a call's tokens are rounded up to whole blocks). */
export const AI_TOKENS_PER_PRICE_UNIT = 1_000;

export const meteredUnit: Record<MeteredFeature, string> = {
  pages: 'page crawled',
  email_validations: 'email validated',
  emails_sent: 'outreach email sent',
  browser_minutes: 'minute of a browser session (started minutes)',
  markdown_pages: 'page exported as markdown',
  ai_tokens: `${AI_TOKENS_PER_PRICE_UNIT.toLocaleString('en')} AI tokens (input + output, rounded up per call)`,
};

export interface SpendOptions {
  /**
   * Work already done (pages stored, tokens used): take what the balance has, down to zero, instead of
   * refusing. `paidUnits` then says how many units were paid for.
   */
  partial?: boolean;
  /** Shown on the ledger row: `job …`, `lead …`, the AI feature. */
  reason?: string;
}

export interface SpendResult {
  /** Credits taken. */
  charged: number;
  /** Units paid for: all of them unless a partial spend ran out. */
  paidUnits: number;
  /** The balance after; null when metering is off. */
  balance: number | null;
}

type Conn = Db | Tx;

export interface Credits {
  /** CREDITS_ENABLED: false turns metering (assert/spend) into no-ops. */
  readonly enabled: boolean;
  readonly prices: CreditPrices;
  /**
   * Opens the user's account with the signup grant (CREDITS_SIGNUP_GRANT), or with `grant` (an organization's
   * account opens at 0: docs/organizations.md "Credits"); does nothing when it exists.
   */
  openAccount(db: Conn, userId: string, grant?: number): Promise<void>;
  /** The balance (opening the account with the grant on first use). */
  balance(db: Conn, userId: string): Promise<number>;
  /** 402 INSUFFICIENT_CREDITS unless the balance pays for `units` of `feature`; nothing is taken. */
  assert(db: Conn, userId: string, feature: MeteredFeature, units?: number): Promise<void>;
  /** Takes the cost of `units` of `feature`: all of it or 402 (default), or what there is (`partial`). */
  spend(db: Conn, userId: string, feature: MeteredFeature, units: number, options?: SpendOptions): Promise<SpendResult>;
  /**
   * `spend` of all `units` as one statement of a pipelined transaction (src/db/pipeline.ts), which answers a row only
   * when it charged: not when the balance is short, the account is not open yet or a `credits.low` alert may be due
   * (the caller then runs `spend`); undefined when nothing is charged (metering off, no cost).
   */
  spendStatement(
    db: Conn,
    userId: string,
    feature: MeteredFeature,
    units: number,
    options?: Pick<SpendOptions, 'reason'>,
  ): PipelineStep | undefined;
  /**
   * Gives back what `units` of `feature` cost, for metered work that was charged before it ran and then did not
   * happen (a mail the server refused): a `refund` row naming the feature with negative units, so usage by feature
   * nets it out. Nothing when metering is off.
   */
  giveBack(db: Conn, userId: string, feature: MeteredFeature, units: number, reason: string): Promise<void>;
  /** An admin's change, either sign; a debit beyond the balance is a 400 naming `amount`. */
  adjust(
    db: Conn,
    userId: string,
    amount: number,
    reason: string,
    actor: string,
    kind?: Extract<CreditTransactionKind, 'adjustment' | 'refund'>,
  ): Promise<{ balance: number }>;
  /** Credits a purchase once per `reference` (a Checkout Session id). */
  purchase(db: Conn, userId: string, amount: number, reference: string): Promise<{ balance: number }>;
  /**
   * Takes back up to `credits` for refunded money (a `refund` row, once per `reference`): what was already spent
   * cannot be taken back, so the balance stops at zero and `taken` says how much was.
   */
  takeBack(
    db: Conn,
    userId: string,
    credits: number,
    reason: string,
    reference: string,
  ): Promise<{ taken: number; balance: number }>;
}
