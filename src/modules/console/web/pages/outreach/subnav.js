// The outreach area's own links (campaigns, inbox, mailboxes, suppressions): a second navigation landmark, named
// "Outreach" so it is told apart from the main one.
import { html } from '../../lib/html.js';
import { useLocation } from '../../lib/router.js';

const LINKS = [
  { href: '/outreach', label: 'Campaigns' },
  { href: '/inbox', label: 'Inbox' },
  { href: '/mailboxes', label: 'Mailboxes' },
  { href: '/suppressions', label: 'Suppressions' },
];

export function OutreachNav() {
  const { path } = useLocation();
  const current = (href) => path === href || path.startsWith(`${href}/`);
  return html`<nav class="subnav" aria-label="Outreach">
    <ul>
      ${LINKS.map(
        (l) => html`<li><a href=${l.href} aria-current=${current(l.href) ? 'page' : undefined}>${l.label}</a></li>`,
      )}
    </ul>
  </nav>`;
}

/** A number as a share of sent mail, or a dash before the first mail. */
export function percent(rate) {
  return rate === null || rate === undefined ? '—' : `${(rate * 100).toFixed(1)} %`;
}

export const WEEKDAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];

/** "Mon–Fri 09:00–17:00 (UTC)" */
export function describeWindow(w) {
  if (!w) return '—';
  const days = w.days.map((d) => WEEKDAYS[d - 1]).join(', ');
  const hour = (h) => `${String(h).padStart(2, '0')}:00`;
  return `${days}, ${hour(w.startHour)}–${hour(w.endHour)} (${w.timezone})`;
}
