/**
 * One screencast per live session, fanned out to every viewer of it: CDP `Page.startScreencast` on the session's
 * active tab over the service's own Playwright connection, following the active tab when it changes. Frames reach
 * the viewers at most `maxFps` times a second: each frame is acknowledged as it comes (so Chromium sends the next
 * one it paints), and while the pace holds frames back only the newest waits for its slot, so what viewers see is
 * fresh, the last picture is never lost, and nothing queues. A viewer whose socket holds more than
 * `maxBufferedBytes` unsent is dropped, not buffered for.
 */
import type { CDPSession, Page } from 'playwright-core';
import type { SessionOperations } from '../tabs/session-browser.ts';
import type { LiveMode, ViewerInput } from './live.schemas.ts';

/** A viewer's socket as the hub sees it. */
export interface Viewer {
  viewId: string;
  mode: LiveMode;
  send(text: string): void;
  readonly bufferedAmount: number;
  /** Closes the socket (the hub then forgets it). */
  close(code: number, reason: string): void;
}

interface Cast {
  tabId: string;
  page: Page;
  cdp: CDPSession;
}

interface ScreencastFrame {
  data: string;
  metadata: object;
  sessionId: number;
}

export interface HubOptions {
  maxFps: number;
  maxBufferedBytes: number;
  /** How often the hub looks whether the active tab changed. */
  followEveryMs?: number;
}

/** Mouse buttons a drag holds, as CDP's `buttons` bit field wants them. */
const BUTTON_BITS = { none: 0, left: 1, right: 2, middle: 4 } as const;

export class LiveHub {
  readonly viewers = new Set<Viewer>();
  /** Page.startScreencast calls made (one per active tab followed, never one per viewer). */
  screencastsStarted = 0;
  framesReceived = 0;
  framesSent = 0;
  /** Input of view-only viewers, dropped. */
  inputsDropped = 0;
  #ops: SessionOperations;
  #options: HubOptions;
  #cast?: Cast;
  #chain: Promise<void> = Promise.resolve();
  #follower?: NodeJS.Timeout;
  #last?: string;
  #lastSentAt = 0;
  #held?: { cast: Cast; frame: ScreencastFrame };
  #heldTimer?: NodeJS.Timeout;
  #buttons = 0;
  #ended = false;

  constructor(ops: SessionOperations, options: HubOptions) {
    this.#ops = ops;
    this.#options = options;
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** The tab shown now. */
  get tabId(): string | undefined {
    return this.#cast?.tabId;
  }

  add(viewer: Viewer): void {
    if (this.#ended) {
      viewer.close(1001, 'the session ended');
      return;
    }
    this.viewers.add(viewer);
    if (this.#last) this.#deliver(viewer, this.#last);
    if (!this.#follower) {
      this.#follow();
      this.#follower = setInterval(() => this.#follow(), this.#options.followEveryMs ?? 200);
      this.#follower.unref();
    }
  }

  remove(viewer: Viewer): void {
    // The last viewer gone, the screencast stops; the next one starts it again.
    if (this.viewers.delete(viewer) && this.viewers.size === 0) this.#stop();
  }

  /** Closes every viewer (the session ended, or the view was revoked: `viewId`). */
  close(code: number, reason: string, viewId?: string): void {
    for (const viewer of [...this.viewers])
      if (viewId === undefined || viewer.viewId === viewId) viewer.close(code, reason);
  }

  end(reason: string): void {
    if (this.#ended) return;
    this.#ended = true;
    this.close(1001, reason);
    this.#stop();
  }

  /** Tells every viewer something (a control hand-off). */
  broadcast(message: object): void {
    const text = JSON.stringify(message);
    for (const viewer of this.viewers) this.#deliver(viewer, text);
  }

  /** Applies an interact viewer's input to the active tab (nothing when no tab is shown). */
  async input(message: ViewerInput): Promise<void> {
    const cast = this.#cast;
    if (!cast) return;
    this.#ops.touch();
    if (message.type === 'mouse') {
      const bit = BUTTON_BITS[message.button];
      if (message.event === 'mousePressed') this.#buttons |= bit;
      if (message.event === 'mouseReleased') this.#buttons &= ~bit;
      await cast.cdp.send('Input.dispatchMouseEvent', {
        type: message.event,
        x: message.x,
        y: message.y,
        button: message.button,
        buttons: this.#buttons,
        clickCount: message.clickCount,
        modifiers: message.modifiers,
      });
    } else if (message.type === 'wheel') {
      await cast.cdp.send('Input.dispatchMouseEvent', {
        type: 'mouseWheel',
        x: message.x,
        y: message.y,
        deltaX: message.deltaX,
        deltaY: message.deltaY,
        modifiers: message.modifiers,
      });
    } else {
      await cast.cdp.send('Input.dispatchKeyEvent', {
        type: message.event,
        key: message.key,
        code: message.code,
        text: message.event === 'keyUp' ? undefined : message.text,
        windowsVirtualKeyCode: message.keyCode,
        modifiers: message.modifiers,
      });
    }
  }

  /** Starts or moves the screencast to the active tab; one change at a time. */
  #follow(): void {
    this.#chain = this.#chain.then(async () => {
      if (this.#ended || this.viewers.size === 0) return;
      const active = this.#ops.tabs.current();
      if (active?.page === this.#cast?.page && !this.#cast?.page.isClosed()) return;
      await this.#stopCast();
      if (active) await this.#startCast(active.id, active.page);
    });
    this.#chain.catch(() => {});
  }

  async #startCast(tabId: string, page: Page): Promise<void> {
    let cdp: CDPSession;
    try {
      cdp = await page.context().newCDPSession(page);
    } catch {
      return; // closed meanwhile: the next look follows whatever is active then
    }
    const cast: Cast = { tabId, page, cdp };
    this.#cast = cast;
    cdp.on('Page.screencastFrame', (frame) => this.#onFrame(cast, frame));
    try {
      await cdp.send('Page.startScreencast', { format: 'jpeg', quality: 70, everyNthFrame: 1 });
      this.screencastsStarted++;
    } catch {
      if (this.#cast === cast) this.#cast = undefined;
      await cdp.detach().catch(() => {});
    }
  }

  async #stopCast(): Promise<void> {
    const cast = this.#cast;
    this.#cast = undefined;
    this.#buttons = 0;
    clearTimeout(this.#heldTimer);
    // Unset too: a timer cleared but still set would keep `??=` from scheduling the next tab's first held frame.
    this.#heldTimer = undefined;
    this.#held = undefined;
    if (!cast) return;
    await cast.cdp.send('Page.stopScreencast').catch(() => {});
    await cast.cdp.detach().catch(() => {});
  }

  #stop(): void {
    clearInterval(this.#follower);
    this.#follower = undefined;
    this.#last = undefined;
    this.#chain = this.#chain.then(() => this.#stopCast());
    this.#chain.catch(() => {});
  }

  #onFrame(cast: Cast, frame: ScreencastFrame): void {
    void cast.cdp.send('Page.screencastFrameAck', { sessionId: frame.sessionId }).catch(() => {});
    if (cast !== this.#cast) return;
    this.framesReceived++;
    this.#held = { cast, frame };
    const wait = this.#lastSentAt + 1000 / this.#options.maxFps - performance.now();
    if (wait <= 0) this.#release();
    else this.#heldTimer ??= setTimeout(() => this.#release(), wait);
  }

  /** Sends the newest frame held back for its slot. */
  #release(): void {
    this.#heldTimer = undefined;
    const held = this.#held;
    this.#held = undefined;
    if (!held || held.cast !== this.#cast) return;
    this.#lastSentAt = performance.now();
    const { cast, frame } = held;
    const text = JSON.stringify({ type: 'frame', tabId: cast.tabId, metadata: frame.metadata, data: frame.data });
    this.#last = text;
    this.framesSent++;
    for (const viewer of this.viewers) this.#deliver(viewer, text);
  }

  #deliver(viewer: Viewer, text: string): void {
    if (viewer.bufferedAmount > this.#options.maxBufferedBytes) {
      viewer.close(1013, 'the viewer does not read fast enough');
      return;
    }
    viewer.send(text);
  }
}
