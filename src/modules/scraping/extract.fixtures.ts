/**
 * Test fixtures shared by extract-html.test.ts and extract-browser.test.ts: the same page must
 * give the same items in STATIC and DYNAMIC. Well-formed on purpose (explicit `<tbody>`), since
 * STATIC keeps the source's tree and browsers repair it.
 */

/** A directory page: four people (one hidden inline, one hidden by a stylesheet class), a table, pagination. */
export const PEOPLE_PAGE = `<!doctype html>
<html lang="en">
<head>
  <title>Members directory</title>
  <style>.offscreen-trap { display: none; }</style>
  <script>window.tracking = "not text";</script>
</head>
<body>
  <header><h1>Members</h1><p>Our   members,
    listed.</p></header>
  <section id="people">
    <div class="person" data-id="1">
      <h3 class="name">  Jane   Q.  Doe </h3>
      <span class="title">Chief <b>Executive</b> Officer</span>
      <span class="company">Acme&nbsp;Corp</span>
      <a class="mail" href="mailto:jane.doe@acme.test?subject=Hello%20there">Write to Jane</a>
      <a class="tel" href="tel:+1%20555%200100">Call</a>
      <a class="profile" href="/people/jane">Profile</a>
      <img class="avatar" src="img/jane.png" alt="">
    </div>
    <div class="person" data-id="2">
      <h3 class="name">Bob</h3>
      <span class="company">Bobco</span>
      <a class="mail" href="MAILTO:bob@bobco.test">bob@bobco.test</a>
      <span class="title"></span>
    </div>
    <div class="person" data-id="3" style="display:none">
      <h3 class="name">Hidden Inline</h3>
      <a class="mail" href="mailto:inline-trap@acme.test">x</a>
    </div>
    <div class="person offscreen-trap" data-id="4">
      <h3 class="name">Class Trap</h3>
      <a class="mail" href="mailto:class-trap@acme.test">x</a>
    </div>
    <div class="person" data-id="5"><span class="note">   </span></div>
  </section>
  <table id="board"><tbody>
    <tr><td class="role">Chair</td><td><a href="mailto:chair@acme.test">Ann Chair</a></td></tr>
    <tr><td class="role">Treasurer</td><td><a href="mailto:treasurer@acme.test">Tom Money</a></td></tr>
  </tbody></table>
  <footer>
    <p>Contact: <a id="contact" href="mailto:info@acme.test">info@acme.test</a> · <a href="tel:+44-20-7946-0000">+44 20 7946 0000</a></p>
    <nav class="pager"><a href="#top">Top</a> <a class="next" href="?page=2#list">Next &raquo;</a></nav>
  </footer>
</body>
</html>`;

export const PEOPLE_URL = 'https://directory.example/members?page=1';

/** The selector map used for the STATIC/DYNAMIC parity check: CSS, XPath, @attr, custom fields. */
export const PEOPLE_SELECTORS: Record<string, string> = {
  item: '//section[@id="people"]/div[contains(@class, "person")]',
  fullName: 'h3.name',
  jobTitle: './/span[@class="title"]',
  company: 'span.company',
  email: 'a.mail@href',
  phone: './/a[@class="tel"]/@href',
  profileUrl: 'a.profile@href',
  avatar: './/img@src',
  memberId: '@data-id',
  nextPage: 'nav.pager a.next',
};

/** The board table, as rows: XPath relative to the item, and absolute XPath inside an item. */
export const BOARD_SELECTORS: Record<string, string> = {
  item: '//table[@id="board"]//tr',
  jobTitle: './td[@class="role"]',
  fullName: './/a',
  email: './/a/@href',
  orgContact: '//a[@id="contact"]/@href',
};
