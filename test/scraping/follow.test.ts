/**
 * The link rules of a site crawl (markdown exports): path globs, same site, depth, sitemap entries, and links
 * read from HTML without a DOM; plus the file names of an export's ZIP.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { zipPathOf } from '../../src/modules/markdown-exports/markdown-download.ts';
import { linksOfHtml } from '../../src/modules/scraping/crawl-static.ts';
import { compileGlob, linkPolicy, sitemapLocations } from '../../src/modules/scraping/follow.ts';

const rules = { maxDepth: 2, includePaths: [], excludePaths: [], sameSiteOnly: true, sitemap: false };

describe('path globs', () => {
  test('* stays within a segment, ** crosses them, the rest is literal', () => {
    assert.ok(compileGlob('/docs/*').test('/docs/install'));
    assert.ok(!compileGlob('/docs/*').test('/docs/a/b'));
    assert.ok(compileGlob('/docs/**').test('/docs/a/b'));
    assert.ok(!compileGlob('/docs/**').test('/blog/docs/a'));
    assert.ok(compileGlob('/a.(b)+').test('/a.(b)+'));
    assert.ok(!compileGlob('/a.b').test('/aXb'));
  });
});

describe('path globs cost', () => {
  /** The backtracking RegExp the globs used to be: the reference for their meaning on short inputs. */
  const reference = (glob: string) =>
    new RegExp(
      `^${glob
        .split(/(\*\*|\*)/)
        .map((p) => (p === '**' ? '.*' : p === '*' ? '[^/]*' : p.replace(/[.+?^${}()|[\]\\]/g, '\\$&')))
        .join('')}$`,
    );

  test('a glob of many ** answers on a long path in milliseconds (it took seconds on 80 characters)', () => {
    const glob = compileGlob('/**a**a**a**a**a**a**b');
    for (const path of [`/${'a'.repeat(80)}`, `/${'a'.repeat(160)}`, `/${'a/'.repeat(5000)}`]) {
      const started = performance.now();
      assert.equal(glob.test(path), false);
      assert.ok(performance.now() - started < 100, `${performance.now() - started} ms`);
    }
    assert.ok(glob.test(`/${'a'.repeat(160)}b`));
    const long = compileGlob(`/${'*a'.repeat(150)}`);
    const started = performance.now();
    assert.equal(long.test(`/${'a'.repeat(10_000)}/`), false);
    assert.ok(performance.now() - started < 500, `${performance.now() - started} ms`);
  });

  test('matches as the RegExp did on every small glob and path', () => {
    const alphabet = ['a', 'b', '/', '*', '**', '.'];
    let seed = 7;
    const pick = <T>(xs: T[]) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return xs[seed % xs.length]!;
    };
    for (let n = 0; n < 3000; n++) {
      const glob = `/${Array.from({ length: 1 + (n % 6) }, () => pick(alphabet)).join('')}`;
      const path = `/${Array.from({ length: n % 9 }, () => pick(['a', 'b', '/', '.'])).join('')}`;
      assert.equal(compileGlob(glob).test(path), reference(glob).test(path), `${glob} on ${path}`);
    }
  });
});

describe('linkPolicy', () => {
  const start = new URL('https://www.example.com/');
  test('same site ignores www. and the scheme, refuses other hosts', () => {
    const p = linkPolicy(start, rules);
    assert.ok(p.follows(new URL('https://example.com/a'), 0));
    assert.ok(p.follows(new URL('http://www.example.com/a'), 0));
    assert.ok(!p.follows(new URL('https://docs.example.com/a'), 0));
    assert.ok(linkPolicy(start, { ...rules, sameSiteOnly: false }).follows(new URL('https://other.test/'), 0));
    assert.ok(!p.follows(new URL('mailto:a@example.com'), 0));
  });
  test('depth: a link found at depth d is at d + 1', () => {
    const p = linkPolicy(start, rules);
    assert.ok(p.follows(new URL('https://example.com/a'), 1));
    assert.ok(!p.follows(new URL('https://example.com/a'), 2));
  });
  test('an exclude wins over an include; no include takes every path', () => {
    const p = linkPolicy(start, { ...rules, includePaths: ['/docs/**'], excludePaths: ['/docs/old/**'] });
    assert.ok(p.takes(new URL('https://example.com/docs/new/x')));
    assert.ok(!p.takes(new URL('https://example.com/docs/old/x')));
    assert.ok(!p.takes(new URL('https://example.com/blog')));
  });
});

test('sitemapLocations reads pages of a urlset and sitemaps of an index, entities decoded', () => {
  assert.deepEqual(
    sitemapLocations(
      '<urlset><url><loc> https://e.test/a?x=1&amp;y=2 </loc></url><url><loc>https://e.test/b</loc></url></urlset>',
    ),
    { pages: ['https://e.test/a?x=1&y=2', 'https://e.test/b'], sitemaps: [] },
  );
  assert.deepEqual(
    sitemapLocations('<sitemapindex><sitemap><loc>https://e.test/s1.xml</loc></sitemap></sitemapindex>'),
    {
      pages: [],
      sitemaps: ['https://e.test/s1.xml'],
    },
  );
});

test('linksOfHtml resolves every <a href> against the page (or its <base>), quoted or not', () => {
  const html =
    '<a href="/x">x</a><A class=c HREF=\'y?a=1&amp;b=2\'>y</A><a data-x="1" href=z>z</a><a name="n">no</a>' +
    '<area href="/not-a-link">';
  assert.deepEqual(linksOfHtml(html, 'https://e.test/dir/page'), [
    'https://e.test/x',
    'https://e.test/dir/y?a=1&b=2',
    'https://e.test/dir/z',
  ]);
  assert.deepEqual(linksOfHtml('<base href="https://cdn.test/root/"><a href="p">p</a>', 'https://e.test/'), [
    'https://cdn.test/root/p',
  ]);
});

describe('linksOfHtml cost', () => {
  /** The RegExps links were read with (quadratic on hostile pages): the reference for what is found. */
  const ANCHOR = /<a\s[^>]*?\bhref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))/gi;
  const BASE = /<base\s[^>]*?\bhref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))/i;
  const reference = (html: string, url: string) => {
    const b = BASE.exec(html);
    const baseHref = b ? (b[1] ?? b[2] ?? b[3] ?? '').replace(/&amp;/g, '&').trim() : '';
    const base = baseHref && URL.canParse(baseHref, url) ? new URL(baseHref, url).href : url;
    return [...html.matchAll(ANCHOR)]
      .map((m) => (m[1] ?? m[2] ?? m[3] ?? '').replace(/&amp;/g, '&').trim())
      .filter((h) => h && URL.canParse(h, base))
      .map((h) => new URL(h, base).href);
  };

  test('a 1 MB page of unclosed tags reads in well under a second (the RegExps took 2 s on 120 KB)', () => {
    // 120 KB first: the RegExps fail it in seconds rather than the 1 MB case in minutes.
    for (const size of [120_000, 1_000_000])
      for (const unit of ['<a ', '<a x', '<base ', '<a href ', "<a href='x' ", '<a data-href=x ', '<a href=">']) {
        const html = unit.repeat(Math.ceil(size / unit.length));
        const started = performance.now();
        linksOfHtml(html, 'https://e.test/');
        const ms = performance.now() - started;
        assert.ok(ms < 1000, `${JSON.stringify(unit)} × ${size} bytes: ${ms} ms`);
      }
  });

  test('finds what the RegExps found on every small page', () => {
    const parts = [
      '<a ',
      '<A\n',
      '<base ',
      '<abbr ',
      'href',
      ' href',
      'data-href',
      '=',
      ' = ',
      '"',
      "'",
      '>',
      ' ',
      'x',
      '/y',
    ];
    let seed = 11;
    const pick = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return parts[seed % parts.length]!;
    };
    for (let n = 0; n < 5000; n++) {
      const html = Array.from({ length: 4 + (n % 20) }, pick).join('');
      assert.deepEqual(linksOfHtml(html, 'https://e.test/d/p'), reference(html, 'https://e.test/d/p'), html);
    }
  });
});

test('zipPathOf: host and path, index for folders, the query in the name, unique', () => {
  const taken = new Set<string>();
  assert.equal(zipPathOf('http://127.0.0.1:8080/', taken), '127.0.0.1_8080/index.md');
  assert.equal(zipPathOf('https://e.test/docs/install.html', taken), 'e.test/docs/install.md');
  assert.equal(zipPathOf('https://e.test/docs/install', taken), 'e.test/docs/install-2.md');
  assert.equal(zipPathOf('https://e.test/a?b=c&d', taken), 'e.test/a_b_c_d.md');
  assert.equal(zipPathOf('https://e.test/../../etc/passwd', taken), 'e.test/etc/passwd.md');
});
