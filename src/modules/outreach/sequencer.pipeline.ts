import type { Db } from '../../db/client.ts';
import { type IntentInsert, sequencerRepository } from './sequencer.repository.ts';

/**
 * Intents are recorded before their mail is sent; sends running at once share one INSERT (group commit): a send
 * waits for the statement that recorded its intent, and learns whether it was recorded (false: the step has a
 * mail already, or the enrollment or campaign stopped meanwhile).
 */
export function intentWriter(db: Db) {
  let queue: Array<{ values: IntentInsert; resolve(recorded: boolean): void; reject(e: unknown): void }> = [];
  let flushing = false;
  async function flush() {
    flushing = true;
    while (queue.length) {
      const items = queue;
      queue = [];
      try {
        const recorded = await sequencerRepository(db).insertIntents(items.map((i) => i.values));
        for (const item of items) item.resolve(recorded.has(item.values.id));
      } catch (err) {
        for (const item of items) item.reject(err);
      }
    }
    flushing = false;
  }
  return {
    add(values: IntentInsert): Promise<boolean> {
      return new Promise((resolve, reject) => {
        queue.push({ values, resolve, reject });
        if (!flushing) queueMicrotask(() => void (flushing || flush()));
      });
    },
  };
}

/** At most `size` holders at once; the others wait in order. */
export function semaphore(size: number) {
  let free = size;
  const waiting: Array<() => void> = [];
  return {
    async acquire(): Promise<void> {
      if (free > 0) {
        free--;
        return;
      }
      await new Promise<void>((resolve) => waiting.push(resolve));
    },
    release(): void {
      const wake = waiting.shift();
      if (wake) wake();
      else free++;
    },
  };
}
