/** The demo site's page frame, shared by the directory (site.ts) and the demo mail pages (mail.ts). */
import { escapeHtml } from '../src/shared/text.ts';

export function layout(title: string, body: string): string {
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
