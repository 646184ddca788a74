import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { extractFromJson } from '../../src/modules/scraping/extract-json.ts';
import { parseSelectors } from '../../src/modules/scraping/selectors.ts';

const URL_ = 'https://api.example/v1/people?page=1';
const extract = (body: unknown, map: Record<string, string>) => extractFromJson(body, parseSelectors(map, 'API'), URL_);

const BODY = {
  data: {
    people: [
      {
        name: { first: 'Jane', last: 'Doe' },
        fullName: 'Jane Q. Doe',
        contact: { emails: ['jane@acme.test', 'j.doe@acme.test'], phone: 15550100 },
        company: { name: 'Acme' },
        active: true,
        tags: ['vip', 'board', 3],
        score: 0,
        profile: { url: '/people/jane' },
      },
      {
        name: { first: 'Bob' },
        contact: { emails: [], phone: null },
        company: 'Bobco',
        active: false,
        tags: [{ x: 1 }],
      },
      { unrelated: true },
      'not an object',
    ],
  },
  links: { next: '/v1/people?page=2', self: URL_ },
};

describe('extractFromJson', () => {
  test('JSONPath item, dotted fields (name.first, emails.0, emails[0]), JSONPath fields relative to the item', () => {
    const r = extract(BODY, {
      item: '$.data.people[*]',
      firstName: 'name.first',
      lastName: 'name.last',
      email: 'contact.emails.0',
      second: 'contact.emails[1]',
      company: '$.company.name',
      profileUrl: 'profile.url',
    });
    assert.deepEqual(
      r.items.map((i) => i.fields),
      [
        {
          firstName: 'Jane',
          lastName: 'Doe',
          email: 'jane@acme.test',
          second: 'j.doe@acme.test',
          company: 'Acme',
          profileUrl: '/people/jane',
        },
        { firstName: 'Bob' },
      ],
    );
    assert.deepEqual(r.items[0].matchedSelectors, {
      firstName: 'name.first',
      lastName: 'name.last',
      email: 'contact.emails.0',
      second: 'contact.emails[1]',
      company: '$.company.name',
      profileUrl: 'profile.url',
    });
    assert.ok(r.items.every((i) => i.visible));
  });

  test(
    'scalars stringified, arrays of scalars joined, objects and nulls skipped, several JSONPath results ' + 'joined',
    () => {
      const r = extract(BODY, {
        item: '$.data.people[*]',
        phone: 'contact.phone',
        active: 'active',
        score: 'score',
        emails: 'contact.emails',
        tags: 'tags',
        companyObj: 'company',
        allEmails: '$.contact.emails[*]',
      });
      assert.deepEqual(r.items[0].fields, {
        phone: '15550100',
        active: 'true',
        score: '0',
        emails: 'jane@acme.test, j.doe@acme.test',
        tags: 'vip, board, 3',
        allEmails: 'jane@acme.test, j.doe@acme.test',
      });
      assert.deepEqual(r.items[1].fields, { active: 'false', companyObj: 'Bobco' });
    },
  );

  test('fullName is split as for HTML', () => {
    const r = extract(BODY, { item: '$.data.people[0]', fullName: 'fullName' });
    assert.deepEqual(r.items[0].fields, { firstName: 'Jane', lastName: 'Q. Doe' });
  });

  test('JSONPath filter in item', () => {
    const r = extract(BODY, { item: '$.data.people[?(@.active === true)]', firstName: 'name.first' });
    assert.deepEqual(
      r.items.map((i) => i.fields),
      [{ firstName: 'Jane' }],
    );
  });

  test('an item path yielding one array (no [*]) takes its elements; dotted item paths work', () => {
    assert.equal(extract(BODY, { item: '$.data.people', firstName: 'name.first' }).items.length, 2);
    assert.equal(extract(BODY, { item: 'data.people', firstName: 'name.first' }).items.length, 2);
  });

  test('without item the whole body is one item', () => {
    const r = extract(
      { org: { name: 'Acme', email: 'info@acme.test' } },
      { company: 'org.name', email: '$.org.email' },
    );
    assert.deepEqual(
      r.items.map((i) => i.fields),
      [{ company: 'Acme', email: 'info@acme.test' }],
    );
  });

  test('nextPage: JSONPath or dotted path to a URL, relative ones resolved against the page URL', () => {
    assert.deepEqual(extract(BODY, { item: '$.data.people[*]', nextPage: '$.links.next' }).nextPageUrls, [
      'https://api.example/v1/people?page=2',
    ]);
    assert.deepEqual(extract(BODY, { nextPage: 'links.next' }).nextPageUrls, ['https://api.example/v1/people?page=2']);
    assert.deepEqual(extract({ next: 'https://other.example/p/3' }, { nextPage: '$.next' }).nextPageUrls, [
      'https://other.example/p/3',
    ]);
    // The page itself, nulls and non-http URLs are not next pages.
    assert.deepEqual(
      extract({ links: { self: URL_, n: null, f: 'ftp://x.example/' } }, { nextPage: '$.links.*' }).nextPageUrls,
      [],
    );
  });

  test('paths never walk into prototypes; bodies that are not objects give nothing', () => {
    assert.deepEqual(extract({ a: {} }, { ctor: 'a.constructor.name', proto: 'a.__proto__' }).items, []);
    assert.deepEqual(extract('plain text', { item: '$[*]', x: 'a' }).items, []);
    assert.deepEqual(extract(null, { x: 'a' }).items, []);
  });
});
