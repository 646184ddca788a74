/** Wakes everyone waiting, once; a new wait waits for the next call. */
function notifier() {
  let waiting: Array<() => void> = [];
  return {
    wait: () => new Promise<void>((resolve) => waiting.push(resolve)),
    notify() {
      const woken = waiting;
      waiting = [];
      for (const wake of woken) wake();
    },
  };
}

/**
 * A producer and `workers` consumers (docs/outreach.md "Outreach", Sequencer: intents are recorded a chunk at a time while the
 * chunk before sends). The producer waits for `room` (fewer than `limit` items handed over and not yet consumed)
 * before it prepares what it then `put`s, so at most `limit` plus one chunk are ever prepared and not done. Resolves
 * when the producer has finished and every item is consumed; the first error of either is thrown then.
 */
export async function boundedPipeline<T>(options: {
  workers: number;
  limit: number;
  produce(pipe: { room(): Promise<void>; put(items: T[]): void }): Promise<void>;
  consume(item: T): Promise<void>;
}): Promise<void> {
  const queue: T[] = [];
  let pending = 0;
  let produced = false;
  let failure: { error: unknown } | undefined;
  const itemsReady = notifier();
  const spaceFree = notifier();

  async function worker() {
    for (;;) {
      if (queue.length) {
        const item = queue.shift()!;
        try {
          await options.consume(item);
        } catch (error) {
          failure ??= { error };
        } finally {
          pending--;
          spaceFree.notify();
        }
      } else if (produced) return;
      else await itemsReady.wait();
    }
  }

  const workers = Array.from({ length: options.workers }, worker);
  try {
    await options.produce({
      async room() {
        while (pending >= options.limit) await spaceFree.wait();
      },
      put(items) {
        queue.push(...items);
        pending += items.length;
        itemsReady.notify();
      },
    });
  } catch (error) {
    failure ??= { error };
  } finally {
    produced = true;
    itemsReady.notify();
    await Promise.all(workers);
  }
  if (failure) throw failure.error;
}
