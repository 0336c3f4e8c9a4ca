// The shared deadline and backoff helper (src/schedule/deadline.ts): backoff
// arithmetic, a race against a short deadline, and a sleep the signal ends.
import { describe, expect, it } from "vitest";
import { backoffMs, DEADLINE_PASSED, deadline, raceDeadline, sleep } from "../../src/schedule/deadline";

describe("backoffMs", () => {
  it("doubles from the base up to the cap, without jitter", () => {
    const policy = { baseMs: 100, capMs: 1_000 };
    expect([0, 1, 2, 3, 4, 50].map((i) => backoffMs(policy, i))).toEqual([100, 200, 400, 800, 1_000, 1_000]);
    expect(backoffMs(policy, -3)).toBe(100);
  });

  it("with jitter, waits between half and all of the step (equal jitter)", () => {
    const policy = { baseMs: 100, capMs: 10_000 };
    expect(backoffMs(policy, 2, () => 0)).toBe(200);
    expect(backoffMs(policy, 2, () => 1)).toBe(400);
    expect(backoffMs(policy, 2, () => 0.5)).toBe(300);
  });
});

describe("deadlines", () => {
  it("a race answers the work's value in time, the fallback after the deadline", async () => {
    expect(await raceDeadline(1_000, Promise.resolve("done"), () => "late")).toBe("done");
    const never = new Promise<string>(() => undefined);
    expect(await raceDeadline(5, never, () => "late")).toBe("late");
    await expect(raceDeadline(1_000, Promise.reject(new Error("boom")), () => "late")).rejects.toThrow("boom");
  });

  it("a deadline passes once, and counts down", async () => {
    const bound = deadline(5);
    expect(bound.remainingMs()).toBeLessThanOrEqual(5);
    expect(await bound.passed).toBe(DEADLINE_PASSED);
    expect(bound.remainingMs()).toBe(0);
    bound.clear();
  });

  it("a sleep ends with the signal's reason as soon as it fires", async () => {
    const controller = new AbortController();
    const started = Date.now();
    const slept = sleep(10_000, controller.signal);
    controller.abort(new Error("cancelled"));
    await expect(slept).rejects.toThrow("cancelled");
    expect(Date.now() - started).toBeLessThan(1_000);
    await expect(sleep(1, AbortSignal.abort(new Error("already")))).rejects.toThrow("already");
    await expect(sleep(1)).resolves.toBeUndefined();
  });
});
