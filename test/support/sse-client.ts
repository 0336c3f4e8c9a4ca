// A raw SSE client over Node's fetch for end-to-end tests: it keeps the exact
// bytes received (to compare replays byte for byte), parses frames with
// eventsource-parser, and disconnects by aborting, which closes the socket.
import { createParser, type EventSourceMessage } from "eventsource-parser";

export class RawSseClient {
  readonly events: EventSourceMessage[] = [];
  raw = "";
  status = 0;
  headers = new Headers();
  #abort = new AbortController();
  #done: Promise<void> | undefined;
  #waiters: { count: number; resolve: () => void }[] = [];
  ended = false;

  static async open(url: string, headers: Record<string, string>): Promise<RawSseClient> {
    const client = new RawSseClient();
    await client.#start(url, headers);
    return client;
  }

  async #start(url: string, headers: Record<string, string>): Promise<void> {
    const res = await fetch(url, { headers: { accept: "text/event-stream", ...headers }, signal: this.#abort.signal });
    this.status = res.status;
    this.headers = res.headers;
    if (!res.body || res.status !== 200) {
      this.ended = true;
      this.raw = await res.text();
      return;
    }
    const parser = createParser({ onEvent: (e) => this.events.push(e) });
    const decoder = new TextDecoder();
    const reader = res.body.getReader();
    this.#done = (async () => {
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          const text = decoder.decode(value, { stream: true });
          this.raw += text;
          parser.feed(text);
          this.#wake();
        }
      } catch (err) {
        if (!this.#abort.signal.aborted) throw err;
      } finally {
        this.ended = true;
        this.#wake(true);
      }
    })();
  }

  #wake(all = false): void {
    this.#waiters = this.#waiters.filter((w) => {
      if (all || this.events.length >= w.count) {
        w.resolve();
        return false;
      }
      return true;
    });
  }

  /** Resolves once `count` events arrived in total or the stream ended. */
  waitFor(count: number, timeoutMs = 20_000): Promise<EventSourceMessage[]> {
    if (this.events.length >= count || this.ended) return Promise.resolve(this.events);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out waiting for ${count} events; have ${this.events.length}`)), timeoutMs);
      this.#waiters.push({ count, resolve: () => (clearTimeout(timer), resolve(this.events)) });
    });
  }

  async toEnd(timeoutMs = 20_000): Promise<EventSourceMessage[]> {
    await this.waitFor(Number.MAX_SAFE_INTEGER, timeoutMs);
    return this.events;
  }

  /** Disconnects like a client going away: the socket is closed. */
  async close(): Promise<void> {
    this.#abort.abort();
    await this.#done?.catch(() => {});
  }
}

export const eventTypes = (events: EventSourceMessage[]) => events.map((e) => e.event);
export const eventIds = (events: EventSourceMessage[]) => events.map((e) => Number(e.id));
