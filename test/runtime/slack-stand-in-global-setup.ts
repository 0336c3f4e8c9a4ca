/**
 * Global setup of the runtime project: the local Slack Web API stand-in
 * (test/support/slack-stand-in.ts), a Node server on loopback that the
 * outbox tests inside workerd call and steer over HTTP (/_control, /_calls).
 * Its URL reaches the workers as the SLACK_STAND_IN_URL binding.
 */
import type { TestProject } from "vitest/node";
import { type SlackStandIn, startSlackStandIn } from "../support/slack-stand-in";

let standIn: SlackStandIn | undefined;

export async function setup(project: TestProject): Promise<void> {
  standIn = await startSlackStandIn({ botToken: "xoxb-runtime-test", quiet: true });
  project.provide("slackStandInUrl", standIn.url);
}

export async function teardown(): Promise<void> {
  await standIn?.stop();
}

declare module "vitest" {
  export interface ProvidedContext {
    slackStandInUrl: string;
  }
}
