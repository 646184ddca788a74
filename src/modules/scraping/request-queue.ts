/**
 * A crawl's own request queue: Crawlee's `IRequestManager` over plain arrays and a Set, given to the
 * crawler as `requestManager`. Crawlee's RequestQueue on its memory storage validates every call with
 * ow/shapeshift and scans the whole queue to find its head (`listAndLockHead`, linear in the queue
 * size); measured on a 10,000-page STATIC crawl it took about 30 % of the CPU. A crawl is one process
 * and one queue, so none of that locking is needed: FIFO order, dedup by Crawlee's uniqueKey (its
 * URL normalisation), nothing written anywhere. Handled requests are dropped, only their keys are kept.
 */
import {
  type AddRequestsBatchedOptions,
  type AddRequestsBatchedResult,
  type IRequestManager,
  Request,
  type RequestOptions,
  type RequestQueueOperationInfo,
  type RequestQueueOperationOptions,
  type RequestsLike,
  type Source,
} from '@crawlee/core';

export class InMemoryRequestQueue implements IRequestManager {
  readonly #pending: Request[] = [];
  /** Index of the head in #pending (shift() is linear; the array is compacted now and then). */
  #head = 0;
  readonly #inProgress = new Set<Request>();
  readonly #seen = new Set<string>();
  #handled = 0;
  /** Set by BasicCrawler on whatever queue it is given; unused here. */
  internalTimeoutMillis = 0;
  requestLockSecs = 0;

  async isFinished(): Promise<boolean> {
    return this.getPendingCount() === 0 && this.#inProgress.size === 0;
  }

  async isEmpty(): Promise<boolean> {
    return this.getPendingCount() === 0;
  }

  async handledCount(): Promise<number> {
    return this.#handled;
  }

  getTotalCount(): number {
    return this.#seen.size;
  }

  getPendingCount(): number {
    return this.#pending.length - this.#head;
  }

  async fetchNextRequest<T extends Record<string, unknown> = Record<string, unknown>>(): Promise<Request<T> | null> {
    if (this.#head >= this.#pending.length) return null;
    const request = this.#pending[this.#head]!;
    this.#pending[this.#head++] = undefined as never;
    if (this.#head > 1024 && this.#head * 2 > this.#pending.length) {
      this.#pending.splice(0, this.#head);
      this.#head = 0;
    }
    this.#inProgress.add(request);
    return request as unknown as Request<T>;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Request> {
    for (;;) {
      const request = await this.fetchNextRequest();
      if (!request) return;
      yield request;
    }
  }

  #info(request: Request, wasAlreadyPresent: boolean, wasAlreadyHandled = false): RequestQueueOperationInfo {
    return {
      requestId: request.id ?? request.uniqueKey,
      uniqueKey: request.uniqueKey,
      wasAlreadyPresent,
      wasAlreadyHandled,
      forefront: false,
    };
  }

  async markRequestHandled(request: Request): Promise<RequestQueueOperationInfo> {
    this.#inProgress.delete(request);
    this.#handled++;
    request.handledAt = new Date().toISOString();
    return this.#info(request, true, true);
  }

  async reclaimRequest(request: Request, options?: RequestQueueOperationOptions): Promise<RequestQueueOperationInfo> {
    this.#inProgress.delete(request);
    if (options?.forefront && this.#head > 0) this.#pending[--this.#head] = request;
    else this.#pending.push(request);
    return this.#info(request, true);
  }

  async addRequest(requestLike: Source, options?: RequestQueueOperationOptions): Promise<RequestQueueOperationInfo> {
    const request =
      requestLike instanceof Request
        ? requestLike
        : new Request(typeof requestLike === 'string' ? { url: requestLike } : (requestLike as RequestOptions));
    request.id ??= request.uniqueKey;
    if (this.#seen.has(request.uniqueKey)) return this.#info(request, true);
    this.#seen.add(request.uniqueKey);
    if (options?.forefront && this.#head > 0) this.#pending[--this.#head] = request;
    else this.#pending.push(request);
    return this.#info(request, false);
  }

  async addRequestsBatched(
    requests: RequestsLike,
    _options?: AddRequestsBatchedOptions,
  ): Promise<AddRequestsBatchedResult> {
    const processedRequests: RequestQueueOperationInfo[] = [];
    for await (const r of requests as AsyncIterable<Source | string> | Iterable<Source | string>)
      processedRequests.push(await this.addRequest(r as Source));
    return {
      addedRequests: processedRequests,
      waitForAllRequestsToBeAdded: Promise.resolve([]),
    } as unknown as AddRequestsBatchedResult;
  }
}
