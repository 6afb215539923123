/** verifyWebhook on the table of deliveries the Python client's tests read too
 * (tests/clients/webhook_cases.json), so the two clients cannot drift apart: malformed
 * signatures and timestamps that are no time (nan, inf, 1e400) are refused, never thrown at. */

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { WebhookSignatureError, signature, verifyWebhook } from "../src/index.js";

interface Case {
  name: string;
  timestamp: string | null;
  signature: string | null;
  refused: string | null;
}

// Compiled to clients/typescript/dist/test/: the table is at the repository's tests/clients/.
const TABLE = new URL("../../../../tests/clients/webhook_cases.json", import.meta.url);
const { secret, body, now, tolerance, cases } = JSON.parse(readFileSync(TABLE, "utf8")) as {
  secret: string;
  body: string;
  now: number;
  tolerance: number;
  cases: Case[];
};

/** The headers of `delivery`: {hex}/{HEX} in its signature replaced by the real one. */
function headers(delivery: Case): Record<string, string> {
  const hex = signature(secret, delivery.timestamp ?? "", body).slice("sha256=".length);
  const named: Record<string, string> = {};
  if (delivery.timestamp !== null) named["X-Hitl-Timestamp"] = delivery.timestamp;
  if (delivery.signature !== null) {
    named["X-Hitl-Signature"] = delivery.signature.replace("{hex}", hex).replace("{HEX}", hex.toUpperCase());
  }
  return named;
}

for (const delivery of cases) {
  test(`the shared table: ${delivery.name}`, () => {
    const verify = () => verifyWebhook(secret, headers(delivery), body, { now, tolerance });
    const refused = delivery.refused;
    if (refused === null) {
      assert.equal(verify().id, "r1");
    } else {
      assert.throws(verify, (err: unknown) => err instanceof WebhookSignatureError && err.message.includes(refused));
    }
  });
}
