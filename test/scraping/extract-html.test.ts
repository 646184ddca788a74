import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { load } from 'cheerio';
import { extractFromCheerio, extractFromHtml } from '../../src/modules/scraping/extract-html.ts';
import { CrawlError } from '../../src/modules/scraping/scraping.types.ts';
import { parseSelectors } from '../../src/modules/scraping/selectors.ts';
import { BOARD_SELECTORS, PEOPLE_PAGE, PEOPLE_SELECTORS, PEOPLE_URL } from '../fixtures/extract-pages.ts';

const extract = (
  html: string,
  map: Record<string, string>,
  url = 'https://site.example/dir/page.html',
  collectText = false,
) => extractFromHtml(html, parseSelectors(map, 'STATIC'), url, { collectText });
const fieldsOf = (html: string, map: Record<string, string>) => extract(html, map).items.map((i) => i.fields);

describe('extractFromHtml: the directory fixture', () => {
  const result = extract(PEOPLE_PAGE, PEOPLE_SELECTORS, PEOPLE_URL);

  test('one item per container, values cleaned, fullName split, URLs resolved for custom href/src fields', () => {
    assert.deepEqual(result.items[0].fields, {
      firstName: 'Jane',
      lastName: 'Q. Doe',
      jobTitle: 'Chief Executive Officer',
      company: 'Acme Corp',
      email: 'jane.doe@acme.test',
      phone: '+1 555 0100',
      profileUrl: 'https://directory.example/people/jane',
      avatar: 'https://directory.example/img/jane.png',
      memberId: '1',
    });
    assert.deepEqual(result.items[1].fields, {
      firstName: 'Bob',
      company: 'Bobco',
      email: 'bob@bobco.test',
      memberId: '2',
    });
    assert.deepEqual(
      result.items.map((i) => i.fields.memberId),
      ['1', '2', '3', '4', '5'],
    );
  });

  test('matchedSelectors name the raw selector of each field (fullName for the split parts)', () => {
    assert.deepEqual(result.items[0].matchedSelectors, {
      firstName: 'h3.name',
      lastName: 'h3.name',
      jobTitle: './/span[@class="title"]',
      company: 'span.company',
      email: 'a.mail@href',
      phone: './/a[@class="tel"]/@href',
      profileUrl: 'a.profile@href',
      avatar: './/img@src',
      memberId: '@data-id',
    });
  });

  test('visibility from markup: inline display:none is hidden; a stylesheet class is not seen by STATIC', () => {
    assert.deepEqual(
      result.items.map((i) => [i.fields.email ?? null, i.visible]),
      [
        ['jane.doe@acme.test', true],
        ['bob@bobco.test', true],
        ['inline-trap@acme.test', false],
        ['class-trap@acme.test', true],
        [null, true],
      ],
    );
  });

  test('nextPage: the link href, resolved, without fragment', () => {
    assert.deepEqual(result.nextPageUrls, ['https://directory.example/members?page=2']);
    assert.equal(result.text, undefined);
  });

  test('XPath relative to the item (./, .//), @href through /@href, absolute XPath inside an item', () => {
    assert.deepEqual(fieldsOf(PEOPLE_PAGE, BOARD_SELECTORS), [
      {
        jobTitle: 'Chair',
        firstName: 'Ann',
        lastName: 'Chair',
        email: 'chair@acme.test',
        orgContact: 'info@acme.test',
      },
      {
        jobTitle: 'Treasurer',
        firstName: 'Tom',
        lastName: 'Money',
        email: 'treasurer@acme.test',
        orgContact: 'info@acme.test',
      },
    ]);
  });

  test('without item the whole page is one item', () => {
    const r = extract(PEOPLE_PAGE, {
      email: '#contact@href',
      phone: 'footer a[href^="tel:"]@href',
      heading: '//h1',
      firstTitle: 'span.title',
    });
    assert.equal(r.items.length, 1);
    assert.deepEqual(r.items[0].fields, {
      email: 'info@acme.test',
      phone: '+44-20-7946-0000',
      heading: 'Members',
      firstTitle: 'Chief Executive Officer',
    });
    assert.equal(r.items[0].visible, true);
  });

  test('collectText: page text without script/style, whitespace collapsed; item text per item', () => {
    const r = extract(PEOPLE_PAGE, PEOPLE_SELECTORS, PEOPLE_URL, true);
    assert.ok(
      r.text?.startsWith(
        'Members Our members, listed. Jane Q. Doe Chief Executive Officer Acme Corp Write ' +
          'to Jane Call Profile Bob Bobco',
      ),
    );
    assert.doesNotMatch(r.text ?? '', /tracking|offscreen-trap|Members directory/);
    assert.ok(r.text?.endsWith('Contact: info@acme.test · +44 20 7946 0000 Top Next »'), r.text);
    assert.equal(r.items[0].text, 'Jane Q. Doe Chief Executive Officer Acme Corp Write to Jane Call Profile');
  });

  test('extractFromCheerio on an already parsed $ gives the same result', () => {
    const $ = load(PEOPLE_PAGE, { _useHtmlParser2: true } as Parameters<typeof load>[1]);
    assert.deepEqual(extractFromCheerio($, parseSelectors(PEOPLE_SELECTORS, 'STATIC'), PEOPLE_URL), result);
  });
});

describe('extractFromHtml: values', () => {
  test('mailto: with query and percent-encoding, tel:, case-insensitive schemes', () => {
    const html =
      `<a class="m" href="mailto:j%2Bdoe@x.test?cc=a@b.test&subject=Hi">m</a><a class="t" href="TEL:+49 ` +
      `30 1234">t</a><p class="e"> mailto:raw@x.test </p>`;
    assert.deepEqual(fieldsOf(html, { email: 'a.m@href', phone: 'a.t@href', other: 'p.e' }), [
      { email: 'j+doe@x.test', phone: '+49 30 1234', other: 'raw@x.test' },
    ]);
  });

  test('custom fields from href/src are resolved; lead fields and text are not', () => {
    const html =
      `<a class="w" href="../team/ann">Ann</a><img src="//cdn.example/a.png"><span ` +
      `class="u">/not/resolved</span><a class="c" href="/acme">Acme</a><a class="j" href="javascript:void(0)">x</a>`;
    assert.deepEqual(
      fieldsOf(html, { site: 'a.w@href', img: 'img@src', path: 'span.u', company: 'a.c@href', js: 'a.j@href' }),
      [
        {
          site: 'https://site.example/team/ann',
          img: 'https://cdn.example/a.png',
          path: '/not/resolved',
          company: '/acme',
          js: 'javascript:void(0)',
        },
      ],
    );
  });

  test('fullName: split into first/rest; one token gives firstName; explicit firstName wins; fullName not kept', () => {
    const html = `<div class="p"><b>Madonna</b></div><div class="p"><b>Mary Ann de la Cruz</b><i>Maria</i></div>`;
    assert.deepEqual(fieldsOf(html, { item: 'div.p', fullName: 'b', firstName: 'i' }), [
      { firstName: 'Madonna' },
      { firstName: 'Maria', lastName: 'Ann de la Cruz' },
    ]);
  });

  test('the first non-blank match wins; blank values are omitted; items without fields are dropped', () => {
    const html =
      `<ul><li><span class="n"> </span><span class="n">Second</span></li><li><span ` +
      `class="n"></span></li><li><em>x</em></li></ul>`;
    const r = extract(html, { item: 'li', name: 'span.n' });
    assert.deepEqual(
      r.items.map((i) => i.fields),
      [{ name: 'Second' }],
    );
  });

  test('text: words separated at block boundaries and <br>, inline tags joined, entities decoded', () => {
    const html = `<div class="c"><p>Jane&nbsp;Doe<br>CEO</p><p>Acme &amp; Co</p><span>in</span><span>line</span></div>`;
    assert.deepEqual(fieldsOf(html, { card: 'div.c' }), [{ card: 'Jane Doe CEO Acme & Co inline' }]);
  });

  test('a value is capped at 2000 characters', () => {
    const r = fieldsOf(`<p>${'word '.repeat(1000)}</p>`, { long: 'p' });
    assert.equal(r[0].long.length, 2000 - 1);
  });

  test('XPath: text() nodes, positional filters, case-insensitive names, attribute nodes, string results', () => {
    const html = `<ul><li>One</li><li>Two <b>bold</b></li><li data-k="v3">Three</li></ul>`;
    assert.deepEqual(
      fieldsOf(html, {
        second: '(//li)[2]/text()',
        third: '//LI[3]',
        attr: '//li/@data-k',
        count: '(count(//li))',
        last: '//li[last()]@data-k',
      }),
      [{ second: 'Two', third: 'Three', attr: 'v3', count: '3', last: 'v3' }],
    );
  });

  test('an XPath item matching the same element twice gives it once', () => {
    const html = `<div class="p" id="a"><b>A</b></div><div class="p"><b>B</b></div>`;
    assert.deepEqual(fieldsOf(html, { item: '//div[@class="p"] | //div[@id="a"]', name: 'b' }), [
      { name: 'A' },
      { name: 'B' },
    ]);
  });

  test('CSS fields are searched inside the item only', () => {
    const html = `<section><h2>Outer</h2><div class="p"><span>Inner</span></div></section>`;
    assert.deepEqual(fieldsOf(html, { item: 'div.p', title: 'h2', name: 'span' }), [{ name: 'Inner' }]);
  });
});

describe('extractFromHtml: visibility', () => {
  const cases: Array<[string, string, boolean]> = [
    ['hidden attribute on an ancestor', '<div hidden><p><a class="m" href="mailto:a@x.test">a</a></p></div>', false],
    ['aria-hidden="true"', '<div aria-hidden="true"><a class="m" href="mailto:a@x.test">a</a></div>', false],
    ['aria-hidden="false"', '<div aria-hidden="false"><a class="m" href="mailto:a@x.test">a</a></div>', true],
    [
      'inline visibility:hidden',
      '<span style="color:red; visibility : hidden"><a class="m" href="mailto:a@x.test">a</a></span>',
      false,
    ],
    ['inline opacity:0', '<a class="m" style="opacity: 0.0 !important" href="mailto:a@x.test">a</a>', false],
    ['inline opacity:0.5', '<a class="m" style="opacity:0.5" href="mailto:a@x.test">a</a>', true],
    ['DISPLAY:NONE in upper case', '<a class="m" style="DISPLAY:NONE" href="mailto:a@x.test">a</a>', false],
    ['visible', '<a class="m" style="display:block" href="mailto:a@x.test">a</a>', true],
  ];
  for (const [name, body, visible] of cases) {
    test(name, () => {
      const r = extract(`<div class="p">${body}</div>`, { item: 'div.p', email: 'a.m@href' });
      assert.equal(r.items[0].fields.email, 'a@x.test');
      assert.equal(r.items[0].visible, visible);
    });
  }

  test('without email, the item element decides', () => {
    const r = extract('<div class="p" style="display:none"><b>A</b></div><div class="p"><b>B</b></div>', {
      item: 'div.p',
      name: 'b',
    });
    assert.deepEqual(
      r.items.map((i) => i.visible),
      [false, true],
    );
  });

  test('a visible email in a hidden-looking sibling does not matter: the email element decides', () => {
    const r = extract('<div class="p"><b style="display:none">A</b><a class="m" href="mailto:a@x.test">a</a></div>', {
      item: 'div.p',
      name: 'b',
      email: 'a.m@href',
    });
    assert.equal(r.items[0].visible, true);
  });
});

describe('extractFromHtml: nextPage', () => {
  test(
    '<a> gives its href; other elements their text or @attr; only http(s), deduplicated, never the page ' + 'itself',
    () => {
      const html =
        `<a class="n" href="p2">2</a><a class="n" href="p2#x">2 again</a><a class="n" href="#">same ` +
        `page</a><a class="n" href="mailto:x@y.test">m</a><span class="n">https://other.example/p3</span><button ` +
        `class="more" data-next="/api?page=4">More</button>`;
      const url = 'https://site.example/dir/page.html';
      assert.deepEqual(extract(html, { nextPage: '.n', name: 'a' }, url).nextPageUrls, [
        'https://site.example/dir/p2',
        'https://other.example/p3',
      ]);
      assert.deepEqual(extract(html, { nextPage: 'button.more@data-next', name: 'a' }, url).nextPageUrls, [
        'https://site.example/api?page=4',
      ]);
      assert.deepEqual(extract(html, { nextPage: '//a[@class="n"][1]', name: 'a' }, url).nextPageUrls, [
        'https://site.example/dir/p2',
      ]);
      assert.deepEqual(extract(html, { name: 'a' }, url).nextPageUrls, []);
    },
  );
});

describe('extractFromHtml: pathological pages', () => {
  test('elements nested 20,000 deep (unclosed tags) are extracted, with CSS, XPath and text', () => {
    const open = '<div>'.repeat(20_000);
    const close = '</div>'.repeat(20_000);
    const html = `<body>${open}<a class="m" href="mailto:deep@x.test">deep</a>${close}</body>`;
    const r = extract(html, { email: 'a.m@href', viaXPath: '//a[@class="m"]/@href', all: 'body' }, undefined, true);
    assert.deepEqual(r.items[0].fields, { email: 'deep@x.test', viaXPath: 'deep@x.test', all: 'deep' });
    assert.equal(r.text, 'deep');
  });
});

describe('extractFromHtml: errors', () => {
  test('a selector that does not compile throws CrawlError(invalid_selector) naming the key', () => {
    assert.throws(
      () => extract('<p>x</p>', { email: 'a[' }),
      (err: unknown) =>
        err instanceof CrawlError && err.kind === 'invalid_selector' && err.message.startsWith('selectors.email: '),
    );
    assert.throws(
      () => extract('<p>x</p>', { item: '//div[', email: 'a' }),
      (err: unknown) => err instanceof CrawlError && err.message.startsWith('selectors.item: '),
    );
  });
});
