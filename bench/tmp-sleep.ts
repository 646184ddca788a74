import { startBrowserService, startFixturePage } from './browser-parts.ts';
import { benchSleep } from './browser-sleep.ts';
import { printTable } from './lib.ts';
const fixture = await startFixturePage();
const service = await startBrowserService({ BROWSER_MAX_SESSIONS: '4' });
try { printTable('sleep', await benchSleep(service, fixture.url)); } finally { await service.stop(); await fixture.close(); }
