/** verifyWebhook on a delivery the real bridge signed and POSTed to a receiver here; what it
 * refuses: another body, another secret, a stale timestamp, no signature. */

import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";

import { WebhookSignatureError, signature, verifyWebhook } from "../src/index.js";
import { TO, WAIT, WEBHOOK_SECRET, client } from "./service.js";

interface Delivery {
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** A receiver on loopback; resolves with the first delivery. */
async function receiver(): Promise<{ url: string; delivered: Promise<Delivery>; close: () => void }> {
  let deliver: (got: Delivery) => void = () => undefined;
  const delivered = new Promise<Delivery>((resolve) => (deliver = resolve));
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      response.writeHead(204).end();
      deliver({ headers: request.headers, body: Buffer.concat(chunks) });
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/hook`, delivered, close: () => server.close() };
}

const refused = (pattern: RegExp) => (err: unknown) => err instanceof WebhookSignatureError && pattern.test(err.message);

test("a delivery the bridge signed verifies, and nothing else does", { timeout: WAIT }, async () => {
  const hook = await receiver();
  try {
    const hitl = client();
    const asked = await hitl.create("requestApproval", { action: "Ship it", reason: "hooked" }, TO, { callbackUrl: hook.url });
    const { headers, body } = await hook.delivered;

    const told = verifyWebhook(WEBHOOK_SECRET, headers, body);
    assert.equal(told.id, asked.id);
    assert.equal(told.status, "answered");
    const fetchHeaders = new Headers(Object.entries(headers).map(([k, v]): [string, string] => [k, String(v)]));
    assert.equal(verifyWebhook(WEBHOOK_SECRET, fetchHeaders, body.toString("utf8")).id, asked.id);

    const tampered = Buffer.from(body.toString("utf8").replace('"answered"', '"declined"'));
    assert.throws(() => verifyWebhook(WEBHOOK_SECRET, headers, tampered), refused(/does not match/));
    assert.throws(() => verifyWebhook("whsec_other", headers, body), refused(/does not match/));
    const sent = Number(headers["x-hitl-timestamp"]);
    assert.throws(() => verifyWebhook(WEBHOOK_SECRET, headers, body, { now: sent + 301 }), refused(/301 s off/));
    assert.throws(() => verifyWebhook(WEBHOOK_SECRET, {}, body), refused(/no X-Hitl-Timestamp/));
  } finally {
    hook.close();
  }
});

test("a signature over a body that is not JSON, or a timestamp that is not a time, is refused", () => {
  const stamp = String(Math.floor(Date.now() / 1000));
  const notJson = { "X-Hitl-Timestamp": stamp, "X-Hitl-Signature": signature(WEBHOOK_SECRET, stamp, "<html>") };
  assert.throws(() => verifyWebhook(WEBHOOK_SECRET, notJson, "<html>"), refused(/not JSON/));
  const body = '{"id": "r1"}';
  const notTime = { "x-hitl-timestamp": "soon", "x-hitl-signature": signature(WEBHOOK_SECRET, "soon", body) };
  assert.throws(() => verifyWebhook(WEBHOOK_SECRET, notTime, body), refused(/not a time/));
});
