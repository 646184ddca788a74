/**
 * `npm run demo-site`: a small, made-up member directory on 127.0.0.1 for the README's walk-through,
 * so a first crawl works without internet. Plain node:http, no dependencies.
 *
 *   /                   home page, links to the directory
 *   /members?page=N     three pages of members (li.member: .name, .title, .company, a.email, a.phone; a.next)
 *   /robots.txt         allows everything
 *
 * DEMO_SITE_PORT (default 3001) and DEMO_SITE_HOST (default 127.0.0.1) choose where it listens.
 */
import http from 'node:http';

export interface Member {
  name: string;
  title: string;
  company: string;
  email: string;
  phone: string;
}

// name, title, company, email; the phone number follows from the position.
const PAGES: [string, string, string, string][][] = [
  [
    ['Maren Holt', 'Managing Director', 'Holt Precision Castings', 'maren.holt@holt-castings.example'],
    ['Tobias Achterberg', 'Head of Procurement', 'Achterberg Fasteners', 't.achterberg@achterberg.example'],
    ['Priya Raman', 'Operations Manager', 'Lakeside Polymers', 'priya.raman@lakeside-polymers.example'],
    ['Dónal Byrne', 'Chief Engineer', 'Byrne & Sons Tooling', 'donal@byrne-tooling.example'],
  ],
  [
    ['Ingrid Solberg', 'Sales Director', 'Nordvik Hydraulics', 'ingrid.solberg@nordvik.example'],
    ['Kwame Mensah', 'Plant Manager', 'Riverside Extrusions', 'k.mensah@riverside-extrusions.example'],
    ['Lucía Ortega', 'Quality Lead', 'Ortega Surface Coatings', 'lucia@ortega-coatings.example'],
    ['Hamish Reid', 'Founder', 'Reid Laser Works', 'hamish@reidlaser.example'],
  ],
  [
    ['Aiko Tanaka', 'Supply Chain Manager', 'Kestrel Motion Systems', 'aiko.tanaka@kestrel-motion.example'],
    ['Samuel Okafor', 'Technical Director', 'Okafor Industrial Controls', 's.okafor@okafor-controls.example'],
  ],
];
let position = 0;
/** The members, page by page. */
export const MEMBERS: Member[][] = PAGES.map((page) =>
  page.map(([name, title, company, email]) => {
    const phone = `+44 161 496 0${String(++position).padStart(3, '0')}`;
    return { name, title, company, email, phone };
  }),
);

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' };
const escapeHtml = (text: string) => text.replace(/[&<>"]/g, (c) => ENTITIES[c] ?? c);

function layout(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>${escapeHtml(title)} · Lakeside Manufacturers' Guild</title></head>
<body>
<header><a href="/">Lakeside Manufacturers' Guild</a> · <a href="/members">Member directory</a></header>
<main>
${body}
</main>
<footer><p>A made-up directory served by Quarry's <code>npm run demo-site</code>.
Every name and address is fictional.</p></footer>
</body>
</html>
`;
}

function memberHtml(m: Member): string {
  return `  <li class="member">
    <h3 class="name">${escapeHtml(m.name)}</h3>
    <p><span class="title">${escapeHtml(m.title)}</span>, <span class="company">${escapeHtml(m.company)}</span></p>
    <p><a class="email" href="mailto:${escapeHtml(m.email)}">${escapeHtml(m.email)}</a> ·
      <a class="phone" href="tel:${m.phone.replace(/ /g, '')}">${m.phone}</a></p>
  </li>`;
}

function membersPage(page: number, members: Member[]): string {
  const prev = page > 1 ? `<a class="prev" href="/members?page=${page - 1}">Previous</a>` : '';
  const next = page < MEMBERS.length ? `<a class="next" href="/members?page=${page + 1}">Next page</a>` : '';
  return layout(
    `Members, page ${page}`,
    `<h1>Member directory</h1>
<p>Page ${page} of ${MEMBERS.length}. Members listed with their consent for business enquiries.</p>
<ul class="members">
${members.map(memberHtml).join('\n')}
</ul>
<nav>${prev} ${next}</nav>`,
  );
}

const home = layout(
  'Welcome',
  `<h1>Lakeside Manufacturers' Guild</h1>
<p>Forty years of small manufacturers helping each other. Meet our <a href="/members">members</a>.</p>`,
);

/** The directory as a node:http server; `npm run demo-site` listens with it, tests too. */
export function createDemoSite(): http.Server {
  return http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://demo.invalid');
    const send = (status: number, type: string, body: string) =>
      res
        .writeHead(status, { 'content-type': `${type}; charset=utf-8`, 'content-length': Buffer.byteLength(body) })
        .end(body);
    if (url.pathname === '/robots.txt') return send(200, 'text/plain', 'User-agent: *\nAllow: /\n');
    if (url.pathname === '/') return send(200, 'text/html', home);
    if (url.pathname === '/members') {
      const page = Number(url.searchParams.get('page') ?? '1');
      const members = Number.isInteger(page) ? MEMBERS[page - 1] : undefined;
      if (members) return send(200, 'text/html', membersPage(page, members));
    }
    send(404, 'text/html', layout('Not found', '<h1>Not found</h1>'));
  });
}

if (import.meta.main) {
  const port = Number(process.env.DEMO_SITE_PORT ?? 3001);
  const host = process.env.DEMO_SITE_HOST ?? '127.0.0.1';
  createDemoSite().listen(port, host, () => {
    const count = MEMBERS.flat().length;
    console.log(`demo site: http://${host}:${port}/members (${count} members, ${MEMBERS.length} pages); Ctrl-C stops`);
  });
}
