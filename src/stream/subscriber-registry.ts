// The set of open subscribers of one run. Each open response is one
// subscriber with its own subscription id; an optional client key lets a
// client that reconnects replace its earlier response. Release is by
// subscription id and idempotent, and the client-key index only forgets a key
// while it still points at the subscriber being released, so an old
// response's late cleanup can never detach a newer subscriber.
export interface SubscriberEntry<Sink> {
  readonly id: string;
  readonly clientKey: string | undefined;
  readonly sink: Sink;
}

export class SubscriberRegistry<Sink> {
  readonly #byId = new Map<string, SubscriberEntry<Sink>>();
  readonly #byClientKey = new Map<string, string>();

  get size(): number {
    return this.#byId.size;
  }

  /**
   * Adds a subscriber. Returns the subscriber it superseded (same client key),
   * already released here; the caller closes that one's response.
   */
  attach(entry: SubscriberEntry<Sink>): SubscriberEntry<Sink> | undefined {
    let superseded: SubscriberEntry<Sink> | undefined;
    if (entry.clientKey !== undefined) {
      const previousId = this.#byClientKey.get(entry.clientKey);
      if (previousId !== undefined) {
        superseded = this.#byId.get(previousId);
        this.release(previousId);
      }
      this.#byClientKey.set(entry.clientKey, entry.id);
    }
    this.#byId.set(entry.id, entry);
    return superseded;
  }

  /** Removes a subscriber; true only the first time for a given id. */
  release(id: string): boolean {
    const entry = this.#byId.get(id);
    if (!entry) return false;
    this.#byId.delete(id);
    if (entry.clientKey !== undefined && this.#byClientKey.get(entry.clientKey) === id) {
      this.#byClientKey.delete(entry.clientKey);
    }
    return true;
  }

  get(id: string): SubscriberEntry<Sink> | undefined {
    return this.#byId.get(id);
  }

  values(): IterableIterator<SubscriberEntry<Sink>> {
    return this.#byId.values();
  }
}
