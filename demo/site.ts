/**
 * `npm run demo-site`: a small, made-up member directory on 127.0.0.1 for the README's walk-through,
 * so a first crawl works without internet.
 *
 *   /                   home page, links to the directory
 *   /members?page=N     three pages of members (li.member: .name, .title, .company, a.email, a.phone; a.next)
 *   /robots.txt         allows everything
 *
 *   /mail               mail the demo SMTP server delivered to the members; /mail/<id>, POST /mail/<id>/reply
 *
 * DEMO_SITE_PORT (default 3001) and DEMO_SITE_HOST (default 127.0.0.1) choose where it listens. For the outreach
 * walk-through (docs/outreach.md, "Try it offline") it also runs a demo mailbox on 127.0.0.1: SMTP on
 * DEMO_SMTP_PORT (2525), IMAP on DEMO_IMAP_PORT (2143) and a DNS server for the demo domains on DEMO_DNS_PORT
 * (2053, UDP); its password is DEMO_MAIL_PASSWORD, or a random one printed at start.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type net from 'node:net';
import { escapeHtml } from '../src/shared/text.ts';
import { startDemoDns } from './dns.ts';
import { layout } from './html.ts';
import { createDemoMail, type DemoMail } from './mail.ts';

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

/**
 * The directory as a node:http server; `npm run demo-site` listens with it, tests too. With `mail`, it also
 * serves the demo mail pages (`/mail`, see mail.ts).
 */
export function createDemoSite(mail?: DemoMail): http.Server {
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
    if (mail)
      return void mail.handle(req, res, url).then(
        (handled) => handled || send(404, 'text/html', layout('Not found', '<h1>Not found</h1>')),
        (err: Error) => (res.headersSent ? res.destroy() : send(500, 'text/plain', `${err.message}\n`)),
      );
    send(404, 'text/html', layout('Not found', '<h1>Not found</h1>'));
  });
}

/** The sending mailbox of the demo and its domain (the DNS answers for it). */
export const DEMO_MAILBOX = 'you@quarry-demo.example';
export const DEMO_MAIL_HOST = 'mail.quarry-demo.example';

const listen = (server: http.Server | net.Server, port: number, host: string) =>
  new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });

/**
 * `npm run demo-site`: the directory and, for the outreach walk-through, the demo mail side (SMTP, IMAP, DNS on
 * 127.0.0.1). A mail port that is taken is reported and the directory keeps running: the scraping walk-through
 * does not need mail.
 */
async function main(env: NodeJS.ProcessEnv) {
  const port = Number(env.DEMO_SITE_PORT ?? 3001);
  const host = env.DEMO_SITE_HOST ?? '127.0.0.1';
  const ports = {
    smtp: Number(env.DEMO_SMTP_PORT ?? 2525),
    imap: Number(env.DEMO_IMAP_PORT ?? 2143),
    dns: Number(env.DEMO_DNS_PORT ?? 2053),
  };
  const password = env.DEMO_MAIL_PASSWORD || randomBytes(12).toString('base64url');
  const members = MEMBERS.flat();
  const mail = createDemoMail({
    user: DEMO_MAILBOX,
    password,
    recipients: members.map((m) => ({ email: m.email, name: m.name })),
  });
  const site = `http://${host}:${port}`;
  await listen(createDemoSite(mail), port, host);
  console.log(`demo site: ${site}/members (${members.length} members, ${MEMBERS.length} pages); Ctrl-C stops`);
  // Started in turn; if one cannot start, those that did are closed, so no half of the mail side holds a port.
  const started: Array<() => Promise<unknown>> = [];
  try {
    await listen(mail.smtp.server, ports.smtp, '127.0.0.1');
    started.push(() => new Promise((resolve) => mail.smtp.close(() => resolve(undefined))));
    await listen(mail.imap, ports.imap, '127.0.0.1');
    started.push(() => new Promise((resolve) => mail.imap.close(resolve)));
    await startDemoDns({
      host: '127.0.0.1',
      port: ports.dns,
      leadDomains: [...new Set(members.map((m) => m.email.split('@')[1]!))],
      sendingDomain: DEMO_MAILBOX.split('@')[1]!,
      mailHost: DEMO_MAIL_HOST,
    });
  } catch (err) {
    await Promise.all(started.map((close) => close().catch(() => {})));
    console.error(
      `demo mail is off: ${(err as Error).message}. Choose other ports with DEMO_SMTP_PORT, DEMO_IMAP_PORT, ` +
        'DEMO_DNS_PORT to try outreach offline.',
    );
    return;
  }
  const walkthroughEnv = [
    ...(port !== 3001 || host !== '127.0.0.1' ? [`DEMO_URL=${site}`] : []),
    ...(ports.smtp !== 2525 ? [`DEMO_SMTP_PORT=${ports.smtp}`] : []),
    ...(ports.imap !== 2143 ? [`DEMO_IMAP_PORT=${ports.imap}`] : []),
    `DEMO_MAIL_PASSWORD=${password}`,
  ];
  console.log(
    [
      `demo mail: mailbox ${DEMO_MAILBOX}, password ${password}`,
      `  SMTP smtp://${DEMO_MAIL_HOST}:${ports.smtp}, IMAP imap://${DEMO_MAIL_HOST}:${ports.imap}, ` +
        'both logging in as the mailbox',
      `  DNS 127.0.0.1:${ports.dns} (udp) answers for the demo domains; mail to the members: ${site}/mail (same login)`,
      `  start Quarry with: ALLOW_PRIVATE_NETWORK=true DNS_SERVERS=127.0.0.1:${ports.dns} npm start`,
      `  then: ${walkthroughEnv.join(' ')} bash docs/walkthroughs/outreach.sh`,
    ].join('\n'),
  );
}

if (import.meta.main) {
  main(process.env).catch((err: Error) => {
    console.error(`demo site: ${err.message}`);
    process.exit(1);
  });
}
