import { type CatalogueEntry, catalogue } from '../sources/index.ts';

/**
 * Rule-based matching of a query against the built-in catalogue: words are lower-cased, stripped of
 * accents and made singular; a catalogue keyword (or phrase) matches when its words appear in the
 * query in that order. Score: 2 per matched keyword (3 for a phrase), 1 per matched industry; ties
 * keep catalogue order. Entries nothing matched fill the answer up to `count`, general-purpose
 * directories first. See docs/source-catalogue.md.
 */

const STOPWORDS = new Set(
  (
    'a an and are as at be by for from has have in into is it its of on or our that the their them they this to we ' +
    'with who what where which find list lists get want need looking look leads lead source sources contact contacts ' +
    'data people like such other all any some more most you your my me can will would should could about also than ' +
    'then there these those very just only over under'
  ).split(' '),
);

/** Lower-case, accent-free, singular form of a word ("Dentists" → "dentist", "companies" → "company"). */
export function stem(word: string): string {
  let w = word
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/'s$/, '');
  if (w.length > 4 && w.endsWith('ies')) w = `${w.slice(0, -3)}y`;
  else if (w.length > 4 && /(ss|x|ch|sh)es$/.test(w)) w = w.slice(0, -2);
  else if (w.length > 3 && w.endsWith('s') && !/(ss|us|is)$/.test(w)) w = w.slice(0, -1);
  return w;
}

export interface Token {
  /** As written in the query. */
  word: string;
  stem: string;
}

/** The query's meaningful words (stopwords and one-letter words dropped). */
export function tokenize(text: string): Token[] {
  return text
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w.length > 1 && !STOPWORDS.has(w.toLowerCase()))
    .map((word) => ({ word, stem: stem(word) }));
}

const phraseStems = (phrase: string) =>
  phrase
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean)
    .map(stem);

/** Index in `tokens` where `phrase` starts (its words consecutive), or -1. */
function findPhrase(tokens: readonly Token[], phrase: string): number {
  const words = phraseStems(phrase);
  if (!words.length) return -1;
  outer: for (let i = 0; i + words.length <= tokens.length; i++) {
    for (let j = 0; j < words.length; j++) if (tokens[i + j]!.stem !== words[j]) continue outer;
    return i;
  }
  return -1;
}

export interface CatalogueMatch {
  entry: CatalogueEntry;
  score: number;
  /** The query's words (as written) that matched the entry's keywords. */
  matchedKeywords: string[];
  matchedIndustries: string[];
  /** The entry's URL with the query filled in. */
  url: string;
  reasoning: string;
}

export interface RankInput {
  /** Text whose words are matched against the catalogue (the query, or an analysed document's key terms). */
  matchText: string;
  /** What goes into the site's search URL (default: matchText). */
  urlQuery?: string;
}

const RULE_BASED =
  "Rule-based suggestion from Quarry's built-in catalogue of public directories (no AI provider is configured).";
const quoteList = (words: string[]) => words.map((w) => `"${w}"`).join(', ');

/** Fills a catalogue URL template (see the catalogue's placeholders). */
export function fillTemplate(template: string, query: string, term: string): string {
  const slug =
    query
      .toLowerCase()
      .normalize('NFKD')
      .replace(/[\u0300-\u036f]/g, '')
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '') || 'companies';
  return template
    .replaceAll('{query}', encodeURIComponent(query.trim()))
    .replaceAll('{term}', encodeURIComponent(term.trim()))
    .replaceAll('{slug}', slug);
}

function matchEntry(entry: CatalogueEntry, tokens: readonly Token[], urlQuery: string): CatalogueMatch {
  const matchedKeywords: string[] = [];
  const matchedIndustries: string[] = [];
  // Each query word counts once: an industry word inside an already matched keyword phrase adds nothing.
  const used = new Set<number>();
  const take = (phrase: string): string | undefined => {
    const at = findPhrase(tokens, phrase);
    const length = phraseStems(phrase).length;
    if (at < 0 || Array.from({ length }, (_, k) => at + k).some((i) => used.has(i))) return undefined;
    for (let k = 0; k < length; k++) used.add(at + k);
    return tokens
      .slice(at, at + length)
      .map((t) => t.word)
      .join(' ');
  };
  let score = 0;
  for (const keyword of entry.keywords) {
    const written = take(keyword);
    if (!written) continue;
    matchedKeywords.push(written);
    score += written.includes(' ') ? 3 : 2;
  }
  for (const industry of entry.industries) {
    const written = take(industry);
    if (!written) continue;
    matchedIndustries.push(written);
    score += 1;
  }
  const term = matchedKeywords[0] ?? urlQuery;
  let why: string;
  if (score > 0) {
    const parts = [];
    if (matchedKeywords.length)
      parts.push(`the query's ${quoteList(matchedKeywords)} matched keywords of this ${entry.category}`);
    if (matchedIndustries.length)
      parts.push(`it serves the industry the query names (${quoteList(matchedIndustries)})`);
    why = `${RULE_BASED} Why it matched: ${parts.join('; ')}.`;
  } else if (entry.general) {
    why =
      `${RULE_BASED} No word of the query matched a more specific directory kind; ` +
      `this ${entry.category} lists businesses of every field.`;
  } else {
    why = `${RULE_BASED} No word of the query matched this entry; it is listed only to reach the requested count.`;
  }
  return {
    entry,
    score,
    matchedKeywords,
    matchedIndustries,
    url: fillTemplate(entry.urlTemplate, urlQuery, term),
    reasoning: why,
  };
}

/** The `count` best catalogue entries for the input (always `count` of them while the catalogue has enough). */
export function rankCatalogue(
  input: RankInput,
  count: number,
  entries: readonly CatalogueEntry[] = catalogue,
): CatalogueMatch[] {
  const tokens = tokenize(input.matchText);
  const urlQuery = (input.urlQuery ?? input.matchText).trim();
  const matches = entries.map((entry, order) => ({ order, match: matchEntry(entry, tokens, urlQuery) }));
  const tier = (m: CatalogueMatch) => (m.score > 0 ? 0 : m.entry.general ? 1 : 2);
  matches.sort((a, b) => tier(a.match) - tier(b.match) || b.match.score - a.match.score || a.order - b.order);
  return matches.slice(0, count).map((m) => m.match);
}
