/**
 * Live viewer figures (issue 22, "Benchmark"): frames per second delivered to each viewer and frame latency p50
 * (receive time − the frame's CDP metadata timestamp, on loopback), with 1 and 5 viewers of a page that repaints
 * every frame; and that 5 viewers cost 1 screencast, not 5 (the hub's Page.startScreencast count). The baseline, in
 * the same run: the same page's screencast read straight off CDP by Playwright (every frame, acked at once).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium } from 'playwright-core';
import WebSocket from 'ws';
import { liveViewsOf } from '../src/modules/browser/live/live.service.ts';
import { type BenchBrowserService, CHROMIUM } from './browser-parts.ts';
import { percentile, type Row } from './lib.ts';

const SECONDS = Number(process.env.BENCH_LIVE_SECONDS ?? 5);
const S = '/api/browser/sessions';
/** A clock repainted on every animation frame: Chromium always has a new frame to send. */
const CLOCK =
  '<!doctype html><title>clock</title><p id="t" style="font:64px monospace"></p><script>' +
  'const t=document.getElementById("t");const f=()=>{t.textContent=performance.now().toFixed(1);' +
  'requestAnimationFrame(f)};f()</script>';

interface ViewerFigures {
  frames: number;
  latencies: number[];
}

/** One viewer reading the stream for `ms`: frames received and each frame's latency. */
function watch(url: string, ms: number): Promise<ViewerFigures> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { perMessageDeflate: false });
    const figures: ViewerFigures = { frames: 0, latencies: [] };
    let started = false;
    ws.on('message', (data) => {
      const received = Date.now();
      const message = JSON.parse(String(data)) as { type: string; metadata?: { timestamp?: number } };
      if (message.type !== 'frame') return;
      // The first frame may be the last one of the screencast, sent again at once: counted from the next on.
      if (!started) {
        started = true;
        setTimeout(() => ws.close(), ms);
        return;
      }
      figures.frames++;
      if (message.metadata?.timestamp) figures.latencies.push(received - message.metadata.timestamp * 1000);
    });
    ws.once('close', () => resolve(figures));
    ws.once('error', reject);
  });
}

/** Latency of Chromium's own screencast frames as a CDP client receives them (no service, no cap). */
async function rawScreencastLatency(url: string, ms: number): Promise<{ p50: number; fps: number }> {
  const browser = await chromium.launch({ executablePath: CHROMIUM });
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 577 } });
    await page.goto(url);
    const cdp = await page.context().newCDPSession(page);
    const latencies: number[] = [];
    cdp.on('Page.screencastFrame', (frame) => {
      const received = Date.now();
      if (frame.metadata.timestamp) latencies.push(received - frame.metadata.timestamp * 1000);
      void cdp.send('Page.screencastFrameAck', { sessionId: frame.sessionId }).catch(() => {});
    });
    await cdp.send('Page.startScreencast', { format: 'jpeg', quality: 70 });
    await new Promise((resolve) => setTimeout(resolve, ms));
    await cdp.send('Page.stopScreencast');
    return {
      p50: percentile(
        latencies.sort((a, b) => a - b),
        50,
      ),
      fps: latencies.length / (ms / 1000),
    };
  } finally {
    await browser.close();
  }
}

export async function liveViewer(service: BenchBrowserService): Promise<Row[]> {
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(CLOCK);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const created = await service.call('POST', S, { keepAlive: true });
  const session = created.json.data.session as { id: string };
  const maxFps = service.runtime.deps.config.BROWSER_LIVE_MAX_FPS;
  const rows: Row[] = [];
  try {
    const clock = `http://127.0.0.1:${(server.address() as AddressInfo).port}/clock`;
    await service.call('POST', `${S}/${session.id}/actions/navigate`, { url: clock });
    const view = await service.call('POST', `${S}/${session.id}/live-views`, { mode: 'view' });
    const stream = `${(view.json.data.url as string).replace(/^http/, 'ws')}/stream`;
    const views = liveViewsOf(service.runtime.deps);
    const raw = await rawScreencastLatency(clock, SECONDS * 1000);
    rows.push({
      name: `baseline: Chromium's own screencast read over CDP (${raw.fps.toFixed(0)} fps), frame latency p50`,
      value: `${raw.p50.toFixed(0)} ms`,
      target: '',
      pass: null,
    });
    for (const viewers of [1, 5]) {
      const before = await views.hubStats(session.id);
      const figures = await Promise.all(Array.from({ length: viewers }, () => watch(stream, SECONDS * 1000)));
      const after = await views.hubStats(session.id);
      const started = (after?.screencastsStarted ?? 0) - (before?.screencastsStarted ?? 0);
      const painted = ((after?.framesReceived ?? 0) - (before?.framesReceived ?? 0)) / SECONDS;
      const fps = figures.map((f) => f.frames / SECONDS);
      const latencies = figures.flatMap((f) => f.latencies).sort((a, b) => a - b);
      const low = Math.min(...fps);
      console.log(`live ${viewers} viewer(s): fps ${fps.map((f) => f.toFixed(1)).join(' ')}; screencasts ${started}`);
      rows.push(
        {
          name: `live viewer, ${viewers} viewer(s): frames per second each (lowest), BROWSER_LIVE_MAX_FPS=${maxFps}`,
          value: low.toFixed(1),
          target: `${(maxFps * 0.7).toFixed(0)}–${maxFps}`,
          pass: low >= maxFps * 0.7 && Math.max(...fps) <= maxFps * 1.05,
        },
        {
          name: `live viewer, ${viewers} viewer(s): frame latency p50 (CDP frame timestamp → received)`,
          value: `${percentile(latencies, 50).toFixed(0)} ms`,
          target: '< 100 ms',
          pass: percentile(latencies, 50) < 100,
        },
        {
          name: `live viewer, ${viewers} viewer(s): frames Chromium sent the service per second (one screencast)`,
          value: painted.toFixed(1),
          target: '',
          pass: null,
        },
        {
          name: `live viewer, ${viewers} viewer(s): screencasts started`,
          value: String(started),
          target: '1',
          pass: started === 1,
        },
      );
    }
  } finally {
    await service.call('DELETE', `${S}/${session.id}`);
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
  return rows;
}
