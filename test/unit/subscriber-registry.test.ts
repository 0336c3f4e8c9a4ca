import { describe, expect, it } from "vitest";
import { SubscriberRegistry } from "../../src/stream/subscriber-registry";

describe("SubscriberRegistry", () => {
  it("releases idempotently", () => {
    const registry = new SubscriberRegistry<string>();
    registry.attach({ id: "s1", clientKey: undefined, sink: "a" });
    expect(registry.size).toBe(1);
    expect(registry.release("s1")).toBe(true);
    expect(registry.release("s1")).toBe(false);
    expect(registry.size).toBe(0);
  });

  it("supersedes the older subscriber of a client key, whose later release leaves the newer one attached", () => {
    const registry = new SubscriberRegistry<string>();
    registry.attach({ id: "old", clientKey: "k", sink: "old-sink" });
    const superseded = registry.attach({ id: "new", clientKey: "k", sink: "new-sink" });
    expect(superseded?.id).toBe("old");
    expect(registry.release("old")).toBe(false);
    expect(registry.get("new")?.sink).toBe("new-sink");
    // A third subscriber under the same key still supersedes "new": the key index was not damaged.
    expect(registry.attach({ id: "third", clientKey: "k", sink: "t" })?.id).toBe("new");
    expect([...registry.values()].map((e) => e.id)).toEqual(["third"]);
  });

  it("keeps subscribers without a client key independent", () => {
    const registry = new SubscriberRegistry<number>();
    registry.attach({ id: "a", clientKey: undefined, sink: 1 });
    expect(registry.attach({ id: "b", clientKey: undefined, sink: 2 })).toBeUndefined();
    expect(registry.size).toBe(2);
  });
});
