/**
 * Global setup of the runtime project: the Cloudflare Access team-domain
 * stand-in (test/support/jwks-server.ts) on loopback. Its origin reaches the
 * workers as the ACCESS_TEST_TEAM_DOMAIN binding; the Access tests set
 * ACCESS_TEAM_DOMAIN to it on their own env.
 */
import type { TestProject } from "vitest/node";
import { type JwksServer, startJwksServer } from "../support/jwks-server";

let server: JwksServer | undefined;

export async function setup(project: TestProject): Promise<void> {
  server = await startJwksServer();
  project.provide("jwksUrl", server.url);
}

export async function teardown(): Promise<void> {
  await server?.stop();
}

declare module "vitest" {
  export interface ProvidedContext {
    jwksUrl: string;
  }
}
