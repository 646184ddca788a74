/**
 * The live-view page: self-contained (inline script and style, nothing loaded from anywhere), shown in an iframe of
 * another site. It draws the frames of `WS ./{token}/stream` on a canvas and, for interact views, sends the mouse,
 * wheel and keyboard in the page's own coordinates (CSS pixels of the viewport, from each frame's metadata).
 */
import type { LiveMode } from './live.schemas.ts';

/** Only its inline code runs, it connects only to its own origin (the stream), and frames are data: images. */
export function livePageCsp(frameAncestors: string): string {
  return [
    "default-src 'none'",
    "script-src 'unsafe-inline'",
    "style-src 'unsafe-inline'",
    'img-src data:',
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    `frame-ancestors ${frameAncestors}`,
  ].join('; ');
}

export function livePage(mode: LiveMode): string {
  return `<!doctype html>
<html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Live browser</title>
<style>
html,body{margin:0;height:100%;background:#18181b;color:#e4e4e7;font:13px system-ui,sans-serif;overflow:hidden}
#screen{display:block;width:100%;height:100%;object-fit:contain;outline:none}
#bar{position:fixed;top:8px;right:8px;display:flex;gap:8px;align-items:center}
#status{background:#27272aCC;padding:4px 8px;border-radius:4px}
#control{display:none;padding:4px 10px;border:0;border-radius:4px;background:#2563eb;color:#fff;cursor:pointer}
body.interact #control{display:block}body.controlling #control{background:#dc2626}
</style></head><body class="${mode}">
<canvas id="screen" tabindex="0" width="0" height="0"></canvas>
<div id="bar"><span id="status">connecting…</span><button id="control" type="button">Take control</button></div>
<script>
(() => {
  const interact = ${JSON.stringify(mode === 'interact')};
  const canvas = document.getElementById('screen');
  const g = canvas.getContext('2d');
  const status = document.getElementById('status');
  const control = document.getElementById('control');
  const live = (window.__live = { frames: 0, width: 0, height: 0, closed: null, controlling: false });
  let meta = null;
  let drawing = false;
  let next = null;
  const url = location.href.split(/[?#]/)[0].replace(/\\/+$/, '').replace(/^http/, 'ws') + '/stream';
  const ws = new WebSocket(url);
  const draw = (frame) => {
    if (drawing) { next = frame; return; }
    drawing = true;
    const image = new Image();
    image.onload = () => {
      if (canvas.width !== image.naturalWidth || canvas.height !== image.naturalHeight) {
        canvas.width = image.naturalWidth;
        canvas.height = image.naturalHeight;
      }
      g.drawImage(image, 0, 0);
      meta = frame.metadata;
      live.frames++;
      live.width = image.naturalWidth;
      live.height = image.naturalHeight;
      live.lastTimestamp = meta.timestamp;
      drawing = false;
      if (next) { const f = next; next = null; draw(f); }
    };
    image.onerror = () => { drawing = false; };
    image.src = 'data:image/jpeg;base64,' + frame.data;
  };
  ws.onopen = () => { status.textContent = interact ? 'live' : 'live (view only)'; };
  ws.onmessage = (event) => {
    const message = JSON.parse(event.data);
    if (message.type === 'frame') draw(message);
    else if (message.type === 'control') status.textContent = message.action === 'take' ? 'controlled by a viewer' : 'live';
  };
  ws.onclose = (event) => {
    live.closed = { code: event.code, reason: event.reason };
    status.textContent = 'ended' + (event.reason ? ': ' + event.reason : '');
  };
  const send = (message) => { if (ws.readyState === 1) ws.send(JSON.stringify(message)); };
  if (!interact) return;
  control.onclick = () => {
    live.controlling = !live.controlling;
    document.body.classList.toggle('controlling', live.controlling);
    control.textContent = live.controlling ? 'Release control' : 'Take control';
    send({ type: 'control', action: live.controlling ? 'take' : 'release' });
    canvas.focus();
  };
  // Where a point of the canvas is on the page (CSS pixels), with object-fit: contain's letterboxing.
  const at = (event) => {
    if (!meta) return null;
    const box = canvas.getBoundingClientRect();
    const scale = Math.min(box.width / meta.deviceWidth, box.height / meta.deviceHeight);
    const left = box.left + (box.width - meta.deviceWidth * scale) / 2;
    const top = box.top + (box.height - meta.deviceHeight * scale) / 2;
    const x = (event.clientX - left) / scale;
    const y = (event.clientY - top) / scale;
    return x < 0 || y < 0 || x > meta.deviceWidth || y > meta.deviceHeight ? null : { x, y };
  };
  const mods = (e) => (e.altKey ? 1 : 0) | (e.ctrlKey ? 2 : 0) | (e.metaKey ? 4 : 0) | (e.shiftKey ? 8 : 0);
  const buttons = ['left', 'middle', 'right'];
  const mouse = (type) => (e) => {
    const p = at(e);
    if (!p) return;
    e.preventDefault();
    if (type === 'mousePressed') canvas.focus();
    send({ type: 'mouse', event: type, x: p.x, y: p.y, button: type === 'mouseMoved' ? 'none' : buttons[e.button] || 'none', clickCount: type === 'mouseMoved' ? 0 : e.detail || 1, modifiers: mods(e) });
  };
  let moved = null;
  canvas.addEventListener('mousedown', mouse('mousePressed'));
  canvas.addEventListener('mouseup', mouse('mouseReleased'));
  canvas.addEventListener('mousemove', (e) => {
    if (!moved) requestAnimationFrame(() => { mouse('mouseMoved')(moved); moved = null; });
    moved = e;
  });
  canvas.addEventListener('contextmenu', (e) => e.preventDefault());
  canvas.addEventListener('wheel', (e) => {
    const p = at(e);
    if (!p) return;
    e.preventDefault();
    send({ type: 'wheel', x: p.x, y: p.y, deltaX: e.deltaX, deltaY: e.deltaY, modifiers: mods(e) });
  }, { passive: false });
  const key = (type) => (e) => {
    e.preventDefault();
    const text = type === 'keyDown' && e.key.length === 1 ? e.key : e.key === 'Enter' && type === 'keyDown' ? '\\r' : undefined;
    send({ type: 'key', event: text === undefined && type === 'keyDown' ? 'rawKeyDown' : type, key: e.key.slice(0, 32), code: e.code.slice(0, 32), text, keyCode: e.keyCode & 255, modifiers: mods(e) });
  };
  canvas.addEventListener('keydown', key('keyDown'));
  canvas.addEventListener('keyup', key('keyUp'));
})();
</script></body></html>`;
}
