import type { LeadToSend } from '../../leads/index.ts';

/**
 * Mail templates of outreach sequences (docs/outreach.md "Outreach", Templates):
 * - `{{firstName}}` a variable; `{{firstName|there}}` with a fallback used when the lead has no value;
 * - `{{custom.key}}` a custom field of the lead (personalization stores `custom.personalizedFirstLine`, …);
 * - `{Hi|Hello|Hey}` spintax: one option at random per mail; options may hold variables and nested spintax;
 * - `\{` and `\}` are literal braces.
 * Templates are checked when a campaign is saved, so a mail never goes out with a broken placeholder.
 */

/** Variables every template may use: the lead's fields and the sending mailbox's. */
export const TEMPLATE_VARIABLES = [
  'firstName',
  'lastName',
  'fullName',
  'company',
  'jobTitle',
  'email',
  'phone',
  'senderName',
  'senderEmail',
] as const;
const KNOWN = new Set<string>(TEMPLATE_VARIABLES);
const CUSTOM = /^custom\.[A-Za-z0-9_-]{1,64}$/;
const NAME = /^[A-Za-z][A-Za-z0-9_.-]*$/;

export type TemplateVars = Record<string, string | null | undefined>;

type Node =
  | { kind: 'text'; value: string }
  | { kind: 'var'; name: string; fallback: string | undefined; position: number }
  | { kind: 'spin'; options: Node[][]; position: number };

export interface TemplateError {
  /** 0-based offset in the template. */
  position: number;
  message: string;
}

class Parser {
  private i = 0;
  readonly errors: TemplateError[] = [];
  private readonly src: string;
  constructor(src: string) {
    this.src = src;
  }

  private where(position: number): string {
    const before = this.src.slice(0, position);
    const line = before.split('\n').length;
    const column = position - before.lastIndexOf('\n');
    return `line ${line}, column ${column}`;
  }

  private fail(position: number, message: string) {
    this.errors.push({ position, message: `${message} at ${this.where(position)}` });
  }

  /** A sequence of nodes up to the end, or (inside spintax) up to `|` or `}`. */
  parse(inSpin = false): Node[] {
    const nodes: Node[] = [];
    let text = '';
    const flush = () => {
      if (text) nodes.push({ kind: 'text', value: text });
      text = '';
    };
    while (this.i < this.src.length) {
      const c = this.src[this.i]!;
      if (c === '\\' && (this.src[this.i + 1] === '{' || this.src[this.i + 1] === '}')) {
        text += this.src[this.i + 1];
        this.i += 2;
      } else if (c === '{' && this.src[this.i + 1] === '{') {
        flush();
        const node = this.variable();
        if (node) nodes.push(node);
      } else if (c === '{') {
        flush();
        nodes.push(this.spin());
      } else if (inSpin && (c === '|' || c === '}')) {
        break;
      } else if (c === '}') {
        this.fail(this.i, 'unbalanced "}"');
        this.i++;
      } else {
        text += c;
        this.i++;
      }
    }
    flush();
    return nodes;
  }

  private variable(): Node | undefined {
    const start = this.i;
    const end = this.src.indexOf('}}', start + 2);
    const nextOpen = this.src.indexOf('{', start + 2);
    if (end < 0 || (nextOpen >= 0 && nextOpen < end)) {
      this.fail(start, 'unclosed "{{"');
      this.i = start + 2;
      return undefined;
    }
    this.i = end + 2;
    const inner = this.src.slice(start + 2, end);
    const bar = inner.indexOf('|');
    const name = (bar < 0 ? inner : inner.slice(0, bar)).trim();
    const fallback = bar < 0 ? undefined : inner.slice(bar + 1).trim();
    if (!name) {
      this.fail(start, 'empty variable "{{}}"');
      return undefined;
    }
    if (!NAME.test(name) || (!KNOWN.has(name) && !CUSTOM.test(name))) {
      this.fail(start, `unknown variable "${name}" (known: ${TEMPLATE_VARIABLES.join(', ')}, or custom.<field>)`);
      return undefined;
    }
    return { kind: 'var', name, fallback, position: start };
  }

  private spin(): Node {
    const start = this.i;
    this.i++; // `{`
    const options: Node[][] = [this.parse(true)];
    while (this.src[this.i] === '|') {
      this.i++;
      options.push(this.parse(true));
    }
    if (this.src[this.i] === '}') this.i++;
    else this.fail(start, 'unclosed "{"');
    return { kind: 'spin', options, position: start };
  }
}

function parseTemplate(source: string): { nodes: Node[]; errors: TemplateError[] } {
  const parser = new Parser(source);
  const nodes = parser.parse();
  return { nodes, errors: parser.errors };
}

/** What is wrong with a template (unknown variables, unbalanced braces), each with its position; empty when fine. */
export const templateErrors = (source: string): TemplateError[] => parseTemplate(source).errors;

/** Variables the template uses without a fallback: a lead without a value for one of them cannot be sent. */
export function requiredVariables(source: string): string[] {
  const required = new Set<string>();
  const walk = (nodes: Node[]) => {
    for (const n of nodes) {
      if (n.kind === 'var' && n.fallback === undefined) required.add(n.name);
      else if (n.kind === 'spin') for (const o of n.options) walk(o);
    }
  };
  walk(parseTemplate(source).nodes);
  return [...required];
}

const present = (v: string | null | undefined): v is string => typeof v === 'string' && v.trim() !== '';

/** Templates parsed lately: the sequencer renders the same few steps for every mail of a batch. */
const parsed = new Map<string, ReturnType<typeof parseTemplate>>();
function parsedTemplate(source: string) {
  let template = parsed.get(source);
  if (!template) {
    if (parsed.size >= 500) parsed.clear();
    template = parseTemplate(source);
    parsed.set(source, template);
  }
  return template;
}

/** The template with values filled in and one option of each spintax picked with `random` (0 ≤ r < 1). */
export function renderTemplate(source: string, vars: TemplateVars, random: () => number = Math.random): string {
  const { nodes, errors } = parsedTemplate(source);
  if (errors.length) throw new Error(`invalid template: ${errors[0]!.message}`);
  const render = (list: Node[]): string =>
    list
      .map((n) => {
        if (n.kind === 'text') return n.value;
        if (n.kind === 'var') {
          const value = vars[n.name];
          return present(value) ? value.trim() : (n.fallback ?? '');
        }
        const pick = n.options[Math.min(n.options.length - 1, Math.floor(random() * n.options.length))]!;
        return render(pick);
      })
      .join('');
  return render(nodes);
}

/** A lead's template values: its fields and its custom fields (strings, numbers and booleans) as `custom.<key>`. */
export function leadTemplateVars(lead: LeadToSend): TemplateVars {
  const vars: TemplateVars = {
    firstName: lead.firstName,
    lastName: lead.lastName,
    fullName: [lead.firstName, lead.lastName].filter(present).join(' ') || null,
    company: lead.company,
    jobTitle: lead.jobTitle,
    email: lead.email,
    phone: lead.phone,
  };
  for (const [key, value] of Object.entries(lead.customFields ?? {})) {
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
      vars[`custom.${key}`] = String(value);
    }
  }
  return vars;
}
