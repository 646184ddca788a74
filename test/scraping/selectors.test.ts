import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseSelector, parseSelectors, validateSelectors } from '../../src/modules/scraping/selectors.ts';

describe('parseSelector: HTML sources', () => {
  const cases: Array<[string, { kind: string; expr: string; attr?: string }]> = [
    ['h3.name', { kind: 'css', expr: 'h3.name' }],
    ['.name', { kind: 'css', expr: '.name' }],
    ['a.mail@href', { kind: 'css', expr: 'a.mail', attr: 'href' }],
    ['a[href^="mailto:"]', { kind: 'css', expr: 'a[href^="mailto:"]' }],
    ['a[href*="@"]@href', { kind: 'css', expr: 'a[href*="@"]', attr: 'href' }],
    ['a[data-x=foo@bar]', { kind: 'css', expr: 'a[data-x=foo@bar]' }],
    ["span:not([title='a@b'])", { kind: 'css', expr: "span:not([title='a@b'])" }],
    ['@data-id', { kind: 'css', expr: '', attr: 'data-id' }],
    ['//h3', { kind: 'xpath', expr: '//h3' }],
    ['/html/body/h1', { kind: 'xpath', expr: '/html/body/h1' }],
    ['./td[1]', { kind: 'xpath', expr: './td[1]' }],
    ['../h2', { kind: 'xpath', expr: '../h2' }],
    ['(//h3)[2]', { kind: 'xpath', expr: '(//h3)[2]' }],
    ['//a/@href', { kind: 'xpath', expr: '//a', attr: 'href' }],
    ['//a@href', { kind: 'xpath', expr: '//a', attr: 'href' }],
    ['.//span@data-x', { kind: 'xpath', expr: './/span', attr: 'data-x' }],
    ['//a[@class="x"]', { kind: 'xpath', expr: '//a[@class="x"]' }],
    ['//a[@class="x"]/@href', { kind: 'xpath', expr: '//a[@class="x"]', attr: 'href' }],
    ['//a[contains(@href, "@")]', { kind: 'xpath', expr: '//a[contains(@href, "@")]' }],
    ['//@href', { kind: 'xpath', expr: '//*[@href]', attr: 'href' }],
    ['.//@data-x', { kind: 'xpath', expr: './/*[@data-x]', attr: 'data-x' }],
  ];
  for (const [raw, want] of cases) {
    test(`${raw}`, () => {
      for (const type of ['STATIC', 'DYNAMIC'] as const) assert.deepEqual(parseSelector(raw, type), { raw, ...want });
    });
  }
});

describe('parseSelectors', () => {
  test('sorts control keys, lead fields and custom fields; waitFor only for DYNAMIC', () => {
    const map = {
      item: 'div.p',
      email: 'a@href',
      nextPage: 'a.next',
      waitFor: '#list',
      linkedin: 'a.li@href',
      fullName: 'h3',
    };
    const dynamic = parseSelectors(map, 'DYNAMIC');
    assert.equal(dynamic.item?.expr, 'div.p');
    assert.equal(dynamic.nextPage?.expr, 'a.next');
    assert.equal(dynamic.waitFor?.expr, '#list');
    assert.deepEqual(
      dynamic.fields.map((f) => [f.key, f.sel.kind, f.sel.expr, f.sel.attr]),
      [
        ['email', 'css', 'a', 'href'],
        ['linkedin', 'css', 'a.li', 'href'],
        ['fullName', 'css', 'h3', undefined],
      ],
    );
    assert.equal(parseSelectors(map, 'STATIC').waitFor, undefined);
  });

  test('API: item/nextPage JSONPath, fields dotted paths or JSONPath, no @attr', () => {
    const parsed = parseSelectors(
      {
        item: '$.data.people[*]',
        email: 'contact.email',
        first: '$.name.first',
        handle: 'a@b',
        nextPage: '$.links.next',
      },
      'API',
    );
    assert.deepEqual(parsed.item, { raw: '$.data.people[*]', kind: 'jsonpath', expr: '$.data.people[*]' });
    assert.deepEqual(parsed.nextPage, { raw: '$.links.next', kind: 'jsonpath', expr: '$.links.next' });
    assert.deepEqual(
      parsed.fields.map((f) => [f.key, f.sel.kind, f.sel.expr, f.sel.attr]),
      [
        ['email', 'path', 'contact.email', undefined],
        ['first', 'jsonpath', '$.name.first', undefined],
        ['handle', 'path', 'a@b', undefined],
      ],
    );
  });

  test('skips reserved keys and non-string values', () => {
    const map = JSON.parse('{"__proto__": "h1", "email": "a@href", "n": 5}') as Record<string, string>;
    assert.deepEqual(
      parseSelectors(map, 'STATIC').fields.map((f) => f.key),
      ['email'],
    );
  });
});

describe('validateSelectors', () => {
  const messages = (map: unknown, type: 'STATIC' | 'DYNAMIC' | 'API') =>
    Object.fromEntries(validateSelectors(map, type).map((p) => [p.field, p.message]));

  test('valid maps answer no problems', () => {
    assert.deepEqual(
      validateSelectors(
        {
          item: '//div[@class="p"]',
          email: 'a[href^="mailto:"]@href',
          phone: './/a/@href',
          nextPage: 'a.next',
          waitFor: '#x',
          memberId: '@data-id',
        },
        'STATIC',
      ),
      [],
    );
    assert.deepEqual(
      validateSelectors({ item: 'li:has(> a)', name: ':scope > h3', x: 'a:contains(Mail)' }, 'STATIC'),
      [],
    );
    assert.deepEqual(
      validateSelectors(
        {
          item: '$.data.people[?(@.active && @.age > 18)]',
          email: 'contact.emails[0]',
          first: '$.name.first',
          nextPage: '$.links.next',
        },
        'API',
      ),
      [],
    );
    assert.deepEqual(validateSelectors(undefined, 'STATIC'), []);
    assert.deepEqual(validateSelectors({}, 'DYNAMIC'), []);
  });

  test('CSS and XPath that do not parse name the field', () => {
    const m = messages(
      { email: 'a[', phone: 'div >', company: '> span', item: '//div[', jobTitle: '//a]', other: ':nope' },
      'STATIC',
    );
    assert.match(m['selectors.email'], /^invalid CSS selector/);
    assert.match(m['selectors.phone'], /ends with a combinator/);
    assert.match(m['selectors.company'], /starts with a combinator.*:scope/);
    assert.equal(m['selectors.item'], 'invalid XPath expression');
    assert.equal(m['selectors.jobTitle'], 'invalid XPath expression');
    assert.match(m['selectors.other'], /invalid CSS selector: .*nope/i);
    assert.equal(Object.keys(m).length, 6);
  });

  test('XPath that parses but fails on every page: 2.0 functions, variables, namespace prefixes', () => {
    const m = messages(
      { a: '//a[matches(@href, "x")]', b: '(lower-case(//h1))', c: '//a[@x=$v]', d: '//svg:svg', e: '(//a)[1]/@href' },
      'STATIC',
    );
    assert.equal(m['selectors.a'], 'matches() is not an XPath 1.0 function');
    assert.equal(m['selectors.b'], 'lower-case() is not an XPath 1.0 function');
    assert.match(m['selectors.c'], /variables/);
    assert.match(m['selectors.d'], /namespace prefixes/);
    assert.equal(m['selectors.e'], undefined);
    const fine = {
      f: '//div[@a and (@b or @c)]',
      g: '//li[position() mod 2 = 0]/text()',
      h: '//a[contains(@title, "x:y(z) $1")]',
      i: './/ancestor::div[1]',
      j: '(count(//li))',
    };
    assert.deepEqual(validateSelectors(fine, 'DYNAMIC'), []);
  });

  test('css-select extensions are refused for DYNAMIC only (the browser rejects them)', () => {
    assert.match(
      messages({ email: 'a:contains(Mail)' }, 'DYNAMIC')['selectors.email'],
      /:contains is not supported by browsers/,
    );
    assert.deepEqual(validateSelectors({ email: 'a[title=":contains(x)"]' }, 'DYNAMIC'), []);
    assert.deepEqual(validateSelectors({ email: 'li:first-child a' }, 'DYNAMIC'), []);
  });

  test('a bare @attribute needs an item, and item/nextPage need an element selector', () => {
    assert.match(messages({ memberId: '@data-id' }, 'STATIC')['selectors.memberId'], /set an item selector/);
    assert.match(messages({ item: '@data-id' }, 'STATIC')['selectors.item'], /needs an element selector/);
    assert.match(
      messages({ item: 'li', nextPage: '@href' }, 'DYNAMIC')['selectors.nextPage'],
      /needs an element selector/,
    );
  });

  test('JSONPath and dotted paths for API sources', () => {
    const m = messages(
      { item: '$.data[', nextPage: 'links..next', email: '$..[?(@.a >)]', phone: 'data.people', company: '$.x.' },
      'API',
    );
    assert.equal(m['selectors.item'], 'invalid JSONPath expression');
    assert.match(m['selectors.nextPage'], /^invalid path/);
    assert.match(m['selectors.email'], /^invalid JSONPath filter/);
    assert.equal(m['selectors.company'], 'invalid JSONPath expression');
    assert.equal(m['selectors.phone'], undefined);
  });

  test('waitFor: ignored for API, checked for STATIC and DYNAMIC', () => {
    assert.deepEqual(validateSelectors({ waitFor: 'div[' }, 'API'), []);
    assert.match(messages({ waitFor: 'div[' }, 'STATIC')['selectors.waitFor'], /invalid CSS/);
    assert.match(messages({ waitFor: '//div[' }, 'DYNAMIC')['selectors.waitFor'], /invalid XPath/);
  });

  test('shape: keys, types, sizes', () => {
    const map = JSON.parse('{"__proto__": "h1"}') as Record<string, unknown>;
    Object.assign(map, {
      'bad key': 'h1',
      '1st': 'h1',
      num: 5,
      nil: null,
      blank: '  ',
      long: 'a'.repeat(1001),
      ['k'.repeat(65)]: 'h1',
    });
    const m = messages(map, 'STATIC');
    assert.match(m['selectors.__proto__'], /reserved/);
    assert.match(m['selectors.bad key'], /^invalid key/);
    assert.match(m['selectors.1st'], /^invalid key/);
    assert.match(m[`selectors.${'k'.repeat(65)}`], /^invalid key/);
    assert.equal(m['selectors.num'], 'must be a selector string');
    assert.equal(m['selectors.nil'], 'must be a selector string');
    assert.equal(m['selectors.blank'], 'must not be empty');
    assert.equal(m['selectors.long'], 'at most 1000 characters');
    assert.deepEqual(validateSelectors({ long: 'a'.repeat(1000) }, 'STATIC'), []);
  });

  test('more than 50 keys, and a map that is not an object', () => {
    const many = Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`f${i}`, 'span']));
    assert.deepEqual(validateSelectors(many, 'STATIC'), [{ field: 'selectors', message: 'at most 50 selectors' }]);
    assert.deepEqual(validateSelectors(Object.fromEntries(Object.entries(many).slice(0, 50)), 'STATIC'), []);
    assert.equal(validateSelectors(['h1'], 'STATIC')[0].field, 'selectors');
    assert.equal(validateSelectors('h1', 'API')[0].field, 'selectors');
  });
});
