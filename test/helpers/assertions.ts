import assert from 'node:assert/strict';

interface Answer {
  statusCode: number;
  json(): any;
}

/** The answer is the error envelope with this status and code. */
export function assertError(res: Answer, status: number, code: string): void {
  assert.equal(res.statusCode, status, JSON.stringify(res.json()));
  const body = res.json();
  assert.equal(body.success, false);
  assert.equal(body.error.code, code);
}

/** The answer is a 400 VALIDATION_ERROR whose details name `field`. */
export function assertValidation(res: Answer, field: string): void {
  assertError(res, 400, 'VALIDATION_ERROR');
  const details = res.json().error.details as Array<{ field: string }>;
  assert.ok(
    details.some((d) => d.field === field),
    `expected ${field} in ${JSON.stringify(details)}`,
  );
}
