import { stem, tokenize } from './source-discovery.matching.ts';

/**
 * analyze without AI: documented keyword heuristics (docs/source-catalogue.md) that read the
 * target audience, industry and location out of a document's text. They find what the text states
 * plainly and answer null otherwise; the answer says which rule found each value.
 */

/** Industry → words that signal it; the industry with the most occurrences (at least 2) wins. */
export const INDUSTRY_KEYWORDS: ReadonlyArray<readonly [string, readonly string[]]> = [
  [
    'Healthcare',
    [
      'health',
      'healthcare',
      'medical',
      'clinic',
      'hospital',
      'patient',
      'doctor',
      'physician',
      'dentist',
      'dental',
      'nurse',
      'pharmacy',
      'therapist',
      'orthodontist',
    ],
  ],
  ['Legal', ['law', 'legal', 'lawyer', 'attorney', 'litigation', 'solicitor', 'paralegal']],
  [
    'Software & technology',
    ['software', 'saas', 'cloud', 'developer', 'api', 'platform', 'technology', 'tech', 'startup', 'devops'],
  ],
  [
    'Financial services',
    [
      'finance',
      'financial',
      'bank',
      'banking',
      'fintech',
      'investment',
      'investor',
      'fund',
      'lending',
      'loan',
      'accounting',
      'accountant',
      'insurance',
    ],
  ],
  ['Real estate', ['real estate', 'property', 'realtor', 'mortgage', 'housing', 'landlord', 'rental', 'brokerage']],
  [
    'Construction & home services',
    [
      'construction',
      'contractor',
      'builder',
      'roofing',
      'plumbing',
      'plumber',
      'electrician',
      'hvac',
      'renovation',
      'remodeling',
    ],
  ],
  ['Hospitality & travel', ['hotel', 'restaurant', 'hospitality', 'travel', 'tourism', 'catering', 'cafe', 'resort']],
  ['Retail & e-commerce', ['retail', 'retailer', 'store', 'shop', 'ecommerce', 'merchant', 'consumer']],
  [
    'Manufacturing & industrial',
    ['manufacturing', 'manufacturer', 'factory', 'industrial', 'supplier', 'wholesale', 'distributor', 'machinery'],
  ],
  ['Nonprofit', ['nonprofit', 'charity', 'foundation', 'ngo', 'donor', 'volunteer', 'fundraising']],
  ['Education', ['education', 'school', 'university', 'college', 'teacher', 'student', 'edtech', 'tutoring']],
  ['Marketing & advertising', ['marketing', 'advertising', 'agency', 'seo', 'campaign', 'branding']],
  ['Automotive', ['automotive', 'car', 'vehicle', 'dealership', 'dealer', 'mechanic', 'garage']],
  ['Logistics & transport', ['logistics', 'shipping', 'freight', 'transport', 'trucking', 'warehouse', 'fleet']],
  ['Energy', ['energy', 'solar', 'renewable', 'utility', 'oil', 'power']],
  ['Agriculture & food', ['agriculture', 'farm', 'farming', 'farmer', 'food', 'beverage', 'organic']],
  ['Beauty & wellness', ['beauty', 'salon', 'spa', 'wellness', 'fitness', 'gym', 'cosmetic']],
];

/** Places looked up by name (case-sensitive, whole words). */
const PLACES = [
  // Regions
  'Europe',
  'North America',
  'South America',
  'Latin America',
  'Asia',
  'Africa',
  'Middle East',
  'Scandinavia',
  'Nordics',
  'DACH',
  'EMEA',
  'APAC',
  'Benelux',
  // Countries
  'United States',
  'USA',
  'US',
  'Canada',
  'Mexico',
  'Brazil',
  'Argentina',
  'Chile',
  'Colombia',
  'United Kingdom',
  'UK',
  'England',
  'Scotland',
  'Wales',
  'Ireland',
  'France',
  'Germany',
  'Austria',
  'Switzerland',
  'Italy',
  'Spain',
  'Portugal',
  'Netherlands',
  'Belgium',
  'Luxembourg',
  'Denmark',
  'Sweden',
  'Norway',
  'Finland',
  'Iceland',
  'Poland',
  'Czech Republic',
  'Czechia',
  'Slovakia',
  'Hungary',
  'Romania',
  'Bulgaria',
  'Greece',
  'Turkey',
  'Ukraine',
  'Estonia',
  'Latvia',
  'Lithuania',
  'Croatia',
  'Slovenia',
  'Serbia',
  'Israel',
  'United Arab Emirates',
  'UAE',
  'Saudi Arabia',
  'Qatar',
  'Egypt',
  'Morocco',
  'Nigeria',
  'Kenya',
  'South Africa',
  'India',
  'Pakistan',
  'Bangladesh',
  'China',
  'Hong Kong',
  'Taiwan',
  'Japan',
  'South Korea',
  'Korea',
  'Singapore',
  'Malaysia',
  'Indonesia',
  'Thailand',
  'Vietnam',
  'Philippines',
  'Australia',
  'New Zealand',
  // US states
  'Alabama',
  'Alaska',
  'Arizona',
  'Arkansas',
  'California',
  'Colorado',
  'Connecticut',
  'Delaware',
  'Florida',
  'Georgia',
  'Hawaii',
  'Idaho',
  'Illinois',
  'Indiana',
  'Iowa',
  'Kansas',
  'Kentucky',
  'Louisiana',
  'Maine',
  'Maryland',
  'Massachusetts',
  'Michigan',
  'Minnesota',
  'Mississippi',
  'Missouri',
  'Montana',
  'Nebraska',
  'Nevada',
  'New Hampshire',
  'New Jersey',
  'New Mexico',
  'New York',
  'North Carolina',
  'North Dakota',
  'Ohio',
  'Oklahoma',
  'Oregon',
  'Pennsylvania',
  'Rhode Island',
  'South Carolina',
  'South Dakota',
  'Tennessee',
  'Texas',
  'Utah',
  'Vermont',
  'Virginia',
  'Washington',
  'West Virginia',
  'Wisconsin',
  'Wyoming',
  // Large cities
  'London',
  'Paris',
  'Berlin',
  'Munich',
  'Hamburg',
  'Madrid',
  'Barcelona',
  'Rome',
  'Milan',
  'Amsterdam',
  'Brussels',
  'Vienna',
  'Zurich',
  'Stockholm',
  'Copenhagen',
  'Oslo',
  'Helsinki',
  'Dublin',
  'Lisbon',
  'Warsaw',
  'Prague',
  'Toronto',
  'Vancouver',
  'Montreal',
  'Chicago',
  'Los Angeles',
  'San Francisco',
  'Seattle',
  'Boston',
  'Austin',
  'Dallas',
  'Houston',
  'Miami',
  'Atlanta',
  'Denver',
  'Sydney',
  'Melbourne',
  'Tokyo',
  'Dubai',
  'Mumbai',
  'Bangalore',
];

/** Words that end a plural audience ("dental practice owners", "B2B SaaS founders"). */
const AUDIENCE_HEADS =
  'owners|founders|managers|directors|teams|companies|businesses|firms|practices|agencies|professionals|clinics|' +
  'startups|retailers|restaurants|dentists|lawyers|attorneys|doctors|physicians|developers|engineers|marketers|' +
  'recruiters|brokers|agents|landlords|contractors|ceos|ctos|cfos|cmos|executives|buyers|shops|stores|schools|' +
  'hospitals|nonprofits|manufacturers|distributors|consultants|accountants|realtors|investors|hotels|gyms|salons';

const LABELLED_AUDIENCE = new RegExp(
  /(?:target audience|target market|target customers?|ideal customer(?: profile)?|icp|audience|who we serve)/.source +
    /\s*[:\-–—]\s*([^\n.;]{3,160})/.source,
  'i',
);
const PHRASED_AUDIENCE = new RegExp(
  '\\b(?:targeting|targets|aimed at|designed for|built for|made for|serving|serves|selling to|sell to|sells to|' +
    `helps|helping|help)\\s+((?:[\\p{L}\\p{N}&/-]+\\s+){0,4}?(?:${AUDIENCE_HEADS}))\\b`,
  'iu',
);
const LABELLED_LOCATION = /(?:location|region|territory|geography|headquarters)\s*[:\-–—]\s*([^\n.;]{2,80})/i;
// Capitalised words after "based in …", on one line and within one sentence ("Austin, Texas", "San Francisco Bay
// Area").
const PHRASED_LOCATION = new RegExp(
  /\b(?:based|located|headquartered|operating|active|offices?)\s+in\s+/u.source +
    /((?:[A-Z][\p{L}'-]+)(?:(?:,[ \t]*|[ \t]+)(?:[A-Z][\p{L}'-]+)){0,3})/u.source,
  'u',
);

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const placePattern = new RegExp(
  `(?<![\\p{L}\\p{N}])(${[...PLACES]
    .sort((a, b) => b.length - a.length)
    .map(escapeRegExp)
    .join('|')})(?![\\p{L}\\p{N}])`,
  'gu',
);

export interface HeuristicRequirements {
  targetAudience: string | null;
  industry: string | null;
  location: string | null;
  /** Which rule found each value (or that none did). */
  reasoning: string;
  /** Words for matching the catalogue: the values found and the text's most frequent meaningful words. */
  keyTerms: string[];
}

const clean = (s: string) =>
  s
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/[,:;–—-]+$/, '')
    .trim();

function findIndustry(text: string): { industry: string | null; why: string } {
  const stems = tokenize(text).map((t) => t.stem);
  const joined = ` ${stems.join(' ')} `;
  let best: { name: string; hits: number; seen: string[] } | undefined;
  for (const [name, words] of INDUSTRY_KEYWORDS) {
    let hits = 0;
    const seen: string[] = [];
    for (const word of words) {
      const needle = ` ${word.split(/\s+/).map(stem).join(' ')} `;
      const n = joined.split(needle).length - 1;
      if (n) seen.push(`${word} ×${n}`);
      hits += n;
    }
    if (hits > (best?.hits ?? 0)) best = { name, hits, seen };
  }
  if (!best || best.hits < 2)
    return { industry: null, why: 'industry: no industry had at least 2 keyword occurrences' };
  return { industry: best.name, why: `industry: most keyword occurrences (${best.seen.join(', ')})` };
}

function findLocation(text: string): { location: string | null; why: string } {
  const labelled = LABELLED_LOCATION.exec(text);
  if (labelled)
    return { location: clean(labelled[1]!), why: `location: labelled in the text ("${clean(labelled[0])}")` };
  const phrased = PHRASED_LOCATION.exec(text);
  if (phrased) return { location: clean(phrased[1]!), why: `location: from the phrase "${clean(phrased[0])}"` };
  const counts = new Map<string, number>();
  for (const m of text.matchAll(placePattern)) counts.set(m[1]!, (counts.get(m[1]!) ?? 0) + 1);
  const top = [...counts.entries()].sort((a, b) => b[1] - a[1])[0];
  if (top) return { location: top[0], why: `location: the place named most often (${top[0]} ×${top[1]})` };
  return { location: null, why: 'location: no place name or "based in …" phrase found' };
}

function findAudience(text: string): { targetAudience: string | null; why: string } {
  const labelled = LABELLED_AUDIENCE.exec(text);
  if (labelled)
    return {
      targetAudience: clean(labelled[1]!),
      why: `target audience: labelled in the text ("${clean(labelled[0]).slice(0, 120)}")`,
    };
  const phrased = PHRASED_AUDIENCE.exec(text);
  if (phrased)
    return { targetAudience: clean(phrased[1]!), why: `target audience: from the phrase "${clean(phrased[0])}"` };
  return {
    targetAudience: null,
    why: 'target audience: no "target audience:" label or "for/serving … owners/founders/…" phrase found',
  };
}

/** The text's most frequent meaningful words (singular form, as first written). */
function frequentWords(text: string, limit: number): string[] {
  const counts = new Map<string, { word: string; n: number }>();
  for (const t of tokenize(text)) {
    if (t.stem.length < 4 || /^\d+$/.test(t.stem)) continue;
    const c = counts.get(t.stem);
    if (c) c.n++;
    else counts.set(t.stem, { word: t.word.toLowerCase(), n: 1 });
  }
  return [...counts.values()]
    .sort((a, b) => b.n - a.n)
    .slice(0, limit)
    .map((c) => c.word);
}

export function extractRequirements(text: string): HeuristicRequirements {
  const { industry, why: whyIndustry } = findIndustry(text);
  const { location, why: whyLocation } = findLocation(text);
  const { targetAudience, why: whyAudience } = findAudience(text);
  const keyTerms = [industry, targetAudience, location, ...frequentWords(text, 15)].filter((v): v is string =>
    Boolean(v),
  );
  return {
    targetAudience,
    industry,
    location,
    reasoning:
      'Heuristic extraction with keyword rules (no AI provider is configured): ' +
      `${whyAudience}; ${whyIndustry}; ${whyLocation}.`,
    keyTerms,
  };
}
