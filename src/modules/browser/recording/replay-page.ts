import { rrwebBundles } from './bundles.ts';
import type { RecordedEvent } from './recording-store.ts';

/**
 * The replay page's own code is inline; the recorded page's images, fonts and stylesheets may load from where they
 * were (the replay shows them), nothing may connect anywhere, and the replayed DOM (its scripts are removed by rrweb,
 * and its iframe is sandboxed) cannot run code even if an event smuggled some in.
 */
export const REPLAY_CSP = [
  "default-src 'none'",
  "script-src 'unsafe-inline'",
  "style-src 'unsafe-inline' *",
  'img-src * data: blob:',
  'font-src * data:',
  'media-src * data: blob:',
  'worker-src blob:',
  "connect-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');

/** JSON safe inside a <script> element: no `</script>`, no `<!--`. */
const scriptJson = (value: unknown) =>
  JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);

/**
 * A self-contained replay page: rrweb-player's script and style inlined from node_modules, the events embedded as
 * JSON. It loads nothing by itself (the replayed page's own images may, from their recorded addresses).
 */
export function replayPage(title: string, events: RecordedEvent[]): string {
  const { player, playerCss } = rrwebBundles();
  return `<!doctype html>
<html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${playerCss.replace(/<\/style/gi, '<\\/style')}
body{margin:0;font-family:system-ui,sans-serif;background:#f4f4f5}#player{display:flex;justify-content:center;padding:16px}
#empty{padding:32px;text-align:center;color:#52525b}</style>
</head><body><div id="player"></div>
<script type="application/json" id="events">${scriptJson(events)}</script>
<script>${player}</script>
<script>
(() => {
  const events = JSON.parse(document.getElementById('events').textContent);
  const target = document.getElementById('player');
  if (events.filter((e) => e.type === 2).length === 0) {
    target.id = 'empty';
    target.textContent = 'Nothing was recorded on this page.';
    return;
  }
  const width = Math.min(1024, window.innerWidth - 32);
  new rrwebPlayer.Player({ target, props: { events, width, height: Math.round(width * 0.5625), autoPlay: false } });
})();
</script></body></html>`;
}
