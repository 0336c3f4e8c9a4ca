// The console's halt banner (contract section 23): shown while a halt is
// active, naming it; none without; the Halt control for approver or admin only.
import { describe, expect, it } from "vitest";
import { haltBannerText, mayEngageHalt } from "../../src/console/app/halt-banner-text";

const halt = (over: Partial<{ halt_id: string; scope: string; reason: string; status: "active" | "released" }> = {}) => ({
  halt_id: "halt_01",
  scope: "server:demo",
  reason: "dashboards look wrong",
  status: "active" as const,
  ...over,
});

describe("the console's halt banner", () => {
  it("names every active halt, its scope and reason; no banner without an active halt", () => {
    const text = haltBannerText([halt(), halt({ halt_id: "halt_02", scope: "all", reason: "incident" })]);
    expect(text).toContain("halted");
    for (const part of ["halt_01", "server:demo", "dashboards look wrong", "halt_02", "all", "incident"]) expect(text).toContain(part);
    expect(haltBannerText([])).toBeNull();
    expect(haltBannerText(undefined)).toBeNull();
    expect(haltBannerText([halt({ status: "released" })])).toBeNull();
  });

  it("offers the Halt control to an approver or admin, not to a viewer or requester", () => {
    expect(mayEngageHalt(["approver"])).toBe(true);
    expect(mayEngageHalt(["admin"])).toBe(true);
    expect(mayEngageHalt(["viewer"])).toBe(false);
    expect(mayEngageHalt(["requester"])).toBe(false);
    expect(mayEngageHalt(undefined)).toBe(false);
  });
});
