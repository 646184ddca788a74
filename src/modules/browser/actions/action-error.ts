import { AppError } from '../../../shared/errors.ts';

/** 422 ACTION_FAILED naming the step (`click`, `steps.2.click`) and why the page refused it. */
export const actionFailed = (step: string, reason: string) =>
  new AppError('ACTION_FAILED', `${step} failed: ${reason}`, { details: [{ field: step, message: reason }] });

/**
 * Runs one step on the page; anything the page or Playwright throws (a selector not found within the timeout, a
 * navigation error, a script that throws) becomes ACTION_FAILED, never a 500. Playwright's messages carry a call log
 * after the first line: the first line is the reason.
 */
export async function runStep<T>(step: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof AppError) throw error;
    const message = error instanceof Error ? error.message : String(error);
    const reason =
      message
        .split('\n')[0]
        .replace(/^\w+\.\w+: /, '')
        .trim() || 'failed';
    throw actionFailed(step, reason.slice(0, 500));
  }
}
