/**
 * A fixture site (test/fixtures/sites.ts) in its own process for the scraping benchmark: the server
 * must not share the crawler's event loop. Options come as JSON in argv[2]; prints `{"origin": …}`
 * once listening and exits when its stdin closes (the parent died or is done).
 */
import { type FixtureSiteOptions, startFixtureSite } from '../test/fixtures/sites.ts';

const options = JSON.parse(process.argv[2] ?? '{}') as FixtureSiteOptions;
const site = await startFixtureSite({ ...options, log: false });
process.stdout.write(`${JSON.stringify({ origin: site.origin })}\n`);
process.stdin.resume();
process.stdin.on('end', () => void site.close().then(() => process.exit(0)));
process.stdin.on('close', () => process.exit(0));
