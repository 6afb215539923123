/** Where the service under test is: set by tests/clients/typescript (the real `hitl-bridge
 * serve`, a person in the fake Slack answering each request as its words ask). */

import { HitlClient, type HitlClientOptions } from "../src/index.js";

function setting(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: these tests run from tests/clients/typescript`);
  return value;
}

export const URL = setting("HITL_URL");
export const TOKEN = setting("HITL_TOKEN");
export const TO = setting("HITL_TO");
export const WEBHOOK_SECRET = setting("HITL_WEBHOOK_SECRET");

// What the person does (tests/clients/typescript/node.py): these words in a request change it.
export const LEFT_ALONE = "nobody answers";
export const DECLINE = "decline";
export const ANSWER = "Blue, please";
export const DECLINED = "not on a Friday";

export const WAIT = 20_000; // ms any one test may take; only a broken one reaches it

export function client(options: Partial<HitlClientOptions> = {}): HitlClient {
  return new HitlClient({ baseUrl: URL, token: TOKEN, ...options });
}
