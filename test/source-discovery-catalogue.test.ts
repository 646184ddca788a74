import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { validateSelectors } from '../src/modules/scraping/selectors.ts';
import { extractRequirements } from '../src/modules/source-discovery/source-discovery.heuristics.ts';
import {
  fillTemplate,
  rankCatalogue,
  stem,
  tokenize,
} from '../src/modules/source-discovery/source-discovery.matching.ts';
import { catalogue } from '../src/modules/sources/templates/directory-catalogue.ts';

describe('catalogue', () => {
  test('ids are unique; every template yields an https URL with the query in it', () => {
    assert.equal(new Set(catalogue.map((e) => e.id)).size, catalogue.length);
    assert.ok(catalogue.length >= 10, 'discover may ask for 10');
    for (const entry of catalogue) {
      const url = new URL(fillTemplate(entry.urlTemplate, 'dental clinics & co', 'dental'));
      assert.equal(url.protocol, 'https:', entry.id);
      assert.ok(!url.href.includes('{'), `${entry.id}: unfilled placeholder`);
      assert.ok(/dental/.test(decodeURIComponent(url.href)), `${entry.id}: query missing from ${url.href}`);
    }
  });

  test('selectors of API entries follow the selector convention', () => {
    const withSelectors = catalogue.filter((e) => e.selectors);
    assert.ok(withSelectors.length >= 3);
    for (const entry of withSelectors) {
      assert.equal(entry.scrapeType, 'API', entry.id);
      assert.deepEqual(validateSelectors(entry.selectors, 'API'), [], entry.id);
    }
  });

  test('docs/source-catalogue.md lists every entry with its URL template', () => {
    const doc = fs.readFileSync(path.join(import.meta.dirname, '../docs/source-catalogue.md'), 'utf8');
    for (const entry of catalogue) {
      const row = doc.split('\n').find((line) => line.startsWith(`| \`${entry.id}\` |`));
      assert.ok(row, `${entry.id} missing from the docs`);
      assert.ok(
        row.includes(`\`${entry.urlTemplate}\``) && row.includes(`| ${entry.scrapeType} | ${entry.estimatedLeads} |`),
        `${entry.id}: docs row out of date`,
      );
    }
  });

  test('fillTemplate encodes the query and slugs it', () => {
    assert.equal(
      fillTemplate('https://x.test/s?q={query}', 'a&b=c ?é', ''),
      'https://x.test/s?q=a%26b%3Dc%20%3F%C3%A9',
    );
    assert.equal(
      fillTemplate('https://x.test/c/{slug}.html', '  Pumps & Valves, Inc. ', ''),
      'https://x.test/c/pumps-valves-inc.html',
    );
    assert.equal(fillTemplate('https://x.test/t={term}', 'whole query', 'dentists'), 'https://x.test/t=dentists');
  });
});

describe('matching', () => {
  test('stem makes words singular and lower-case', () => {
    assert.deepEqual(['Dentists', 'companies', 'businesses', 'clinics', 'US', 'Café', "lawyer's"].map(stem), [
      'dentist',
      'company',
      'business',
      'clinic',
      'us',
      'cafe',
      'lawyer',
    ]);
  });

  test('tokenize drops stopwords and one-letter words', () => {
    assert.deepEqual(
      tokenize('Find the dentists in Austin, TX a').map((t) => t.word),
      ['dentists', 'Austin', 'TX'],
    );
  });

  test('ranks by keyword overlap; phrases count more; count is honoured', () => {
    const ranked = rankCatalogue({ matchText: 'law firms and attorneys' }, 4);
    assert.equal(ranked.length, 4);
    assert.equal(ranked[0]!.entry.id, 'avvo');
    assert.deepEqual(ranked[0]!.matchedKeywords.sort(), ['attorneys', 'law firms']);
    assert.equal(ranked[0]!.score, 5);
    const uk = rankCatalogue({ matchText: 'software companies in London' }, 3).map((m) => m.entry.id);
    assert.ok(uk.includes('companies-house'), uk.join());
  });

  test('nothing matched: general directories first, each saying so', () => {
    const ranked = rankCatalogue({ matchText: 'qwxz' }, catalogue.length);
    const generals = catalogue.filter((e) => e.general).length;
    assert.ok(ranked.slice(0, generals).every((m) => m.entry.general && m.score === 0));
    assert.match(ranked[0]!.reasoning, /No word of the query matched a more specific directory kind/);
    assert.match(ranked.at(-1)!.reasoning, /listed only to reach the requested count/);
  });

  test('urlQuery fills the URL while matchText decides the ranking', () => {
    const [first] = rankCatalogue({ matchText: 'nonprofit charity foundations', urlQuery: 'animal shelters' }, 1);
    assert.equal(first!.entry.id, 'propublica-nonprofits');
    assert.equal(new URL(first!.url).searchParams.get('q'), 'animal shelters');
  });
});

describe('analyze heuristics', () => {
  test('labelled values win; the reasoning names each rule', () => {
    const r = extractRequirements(
      'Target audience: HR directors at logistics firms\nRegion: Benelux\nFreight, ' +
        'shipping and warehouse software for logistics.',
    );
    assert.equal(r.targetAudience, 'HR directors at logistics firms');
    assert.equal(r.location, 'Benelux');
    assert.equal(r.industry, 'Logistics & transport');
    assert.match(r.reasoning, /target audience: labelled in the text/);
    assert.match(r.reasoning, /location: labelled in the text/);
    assert.match(r.reasoning, /industry: most keyword occurrences \(.*freight ×1/);
  });

  test('phrases and place names when nothing is labelled', () => {
    const r = extractRequirements(
      'Our CRM is built for independent insurance brokers. Most customers are in Ohio; a ' +
        'few in Ohio and Texas. Insurance and finance teams love it.',
    );
    assert.equal(r.targetAudience, 'independent insurance brokers');
    assert.equal(r.location, 'Ohio');
    assert.equal(r.industry, 'Financial services');
  });

  test('nothing stated: nulls, and the pronoun "us" is not the United States', () => {
    const r = extractRequirements('Tell us what you think about it.');
    assert.deepEqual([r.targetAudience, r.industry, r.location], [null, null, null]);
    assert.match(r.reasoning, /no industry had at least 2 keyword occurrences/);
  });
});
