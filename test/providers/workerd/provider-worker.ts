// A tiny Worker for test/providers/workerd.test.ts: it runs the real model
// providers inside workerd (wrangler dev, nodejs_compat, the project's
// compatibility date) so the test can show they work there, not only in Node.
// POST /next {provider, settings, request} → {turn} or {error}.
import { createModelProvider, ModelError, type ModelRequest, type ProviderSettings } from "../../../src/providers/model-provider";

interface NextBody {
  provider: "anthropic" | "openai";
  settings: Omit<ProviderSettings, "fetch">;
  request: ModelRequest;
}

export default {
  async fetch(req: Request): Promise<Response> {
    if (req.method !== "POST") return new Response("ok");
    const body = (await req.json()) as NextBody;
    try {
      const turn = await createModelProvider(body.provider, body.settings).next(body.request);
      return Response.json({ turn });
    } catch (error) {
      const e = error as ModelError;
      return Response.json({
        error: { isModelError: error instanceof ModelError, message: e.message, code: e.code, status: e.status, attempts: e.attempts },
      });
    }
  },
};
