import { SELF } from "cloudflare:test";
import { expect, it } from "vitest";

it("triggers a run and reads its summary", async () => {
  const res = await SELF.fetch("https://x/api/trigger", {
    method: "POST",
    headers: { authorization: "Bearer test-token", "content-type": "application/json" },
    body: JSON.stringify({ message: "hi" }),
  });
  const body = await res.json<any>();
  expect(res.status).toBe(202);
  const sum = await SELF.fetch(`https://x/api/runs/${body.run_id}`, { headers: { authorization: "Bearer test-token" } });
  expect(await sum.json()).toMatchObject({ status: "completed", last_sequence: 3 });
  const ev = await SELF.fetch(`https://x/api/runs/${body.run_id}/events`, { headers: { authorization: "Bearer test-token" } });
  console.log(await ev.text());
});
