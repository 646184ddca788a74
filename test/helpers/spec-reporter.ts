/**
 * `npm test`'s reporter: node:test's spec reporter without its per-file coverage table (hundreds of lines); the
 * coverage goes to an lcov file instead and test/run.ts prints it per folder.
 */
import { Readable } from 'node:stream';
import { spec } from 'node:test/reporters';

export default async function* specWithoutCoverageTable(source: AsyncIterable<{ type: string }>) {
  const reporter = new spec();
  const events = async function* () {
    for await (const event of source) if (event.type !== 'test:coverage') yield event;
  };
  Readable.from(events()).pipe(reporter);
  for await (const chunk of reporter) yield chunk;
}
