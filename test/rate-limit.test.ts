import assert from 'node:assert/strict';
import { test } from 'node:test';
import { humanDuration, rateLimitError } from '../src/shared/rate-limit.ts';

test('a wait reads as days and hours, hours and minutes, minutes or seconds, rounded up', () => {
  const cases: Array<[number, string]> = [
    [0.2, '1 second'],
    [1, '1 second'],
    [59, '59 seconds'],
    [60, '1 minute'],
    [61, '2 minutes'],
    [3_599, '1 hour'],
    [3_601, '1 hour 1 minute'],
    [2 * 3_600 + 30 * 60, '2 hours 30 minutes'],
    [86_399, '1 day'],
    [86_400 + 3_600, '1 day 1 hour'],
    [6 * 86_400 + 22 * 3_600 + 1, '6 days 23 hours'],
    [604_784, '7 days'],
  ];
  for (const [seconds, said] of cases) assert.equal(humanDuration(seconds), said, String(seconds));
});

test('the 429 says the wait in words and keeps the exact seconds in Retry-After', () => {
  const err = rateLimitError(604_784_000);
  assert.equal(err.message, 'Too many requests; retry in 7 days');
  assert.deepEqual(err.headers, { 'retry-after': '604784' });
});
