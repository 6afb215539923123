/** Checking a webhook the bridge POSTed: `verifyWebhook(secret, headers, body)`.
 *
 * The bridge signs each delivery with the token's webhook secret (printed by `hitl-bridge
 * tokens create`): `X-Hitl-Signature: sha256=<hex HMAC-SHA256 of "<X-Hitl-Timestamp>.<body>">`,
 * the timestamp in unix seconds. The signature is compared in constant time, and a timestamp
 * older (or newer) than `tolerance` seconds is refused, so a captured delivery cannot be
 * replayed later. Receivers deduplicate on `X-Hitl-Delivery`, the same on every attempt. */

import { createHmac, timingSafeEqual } from "node:crypto";

import { request } from "./client.js";
import { HitlError } from "./errors.js";
import type { RequestInfo } from "./types.js";

export const TOLERANCE = 300; // seconds a delivery's timestamp may be off from this machine's clock
// What the bridge sends, and nothing else (the same in clients/python/hitl_client/webhooks.py).
const SIGNATURE = /^sha256=([0-9a-fA-F]{64})$/;
const TIMESTAMP = /^[0-9]{1,12}(\.[0-9]{1,9})?$/;
const EDGES = /^[ \t]+|[ \t]+$/g; // spaces and tabs only, as Python's str.strip(" \t")

/** The delivery is not one the bridge signed with this secret, or is too old. */
export class WebhookSignatureError extends HitlError {
  override name = "WebhookSignatureError";
}

/** Headers as received: a plain object (node:http's `IncomingHttpHeaders`), or fetch's. */
export type WebhookHeaders = Headers | Readonly<Record<string, string | readonly string[] | undefined>>;

/** `X-Hitl-Signature` of `body` sent at `timestamp`, as the bridge computes it. */
export function signature(secret: string, timestamp: string, body: Uint8Array | string): string {
  return "sha256=" + createHmac("sha256", secret).update(`${timestamp}.`).update(body).digest("hex");
}

/** The request the delivery tells of, once its signature and timestamp check out;
 * WebhookSignatureError otherwise. `body` is the raw body, as received. */
export function verifyWebhook(
  secret: string,
  headers: WebhookHeaders,
  body: Uint8Array | string,
  options: { tolerance?: number; now?: number } = {},
): RequestInfo {
  const { tolerance = TOLERANCE, now = Date.now() / 1000 } = options;
  const timestamp = header(headers, "x-hitl-timestamp");
  const signed = header(headers, "x-hitl-signature");
  if (timestamp === undefined || signed === undefined) {
    throw new WebhookSignatureError("no X-Hitl-Timestamp or X-Hitl-Signature header");
  }
  const given = SIGNATURE.exec(signed.replace(EDGES, ""));
  if (given === null) {
    throw new WebhookSignatureError(`X-Hitl-Signature is not sha256=<64 hex>: ${JSON.stringify(signed.slice(0, 80))}`);
  }
  const expected = Buffer.from(signature(secret, timestamp, body));
  if (!timingSafeEqual(expected, Buffer.from(`sha256=${(given[1] ?? "").toLowerCase()}`))) {
    throw new WebhookSignatureError("the signature does not match this secret");
  }
  if (!TIMESTAMP.test(timestamp.replace(EDGES, ""))) {
    throw new WebhookSignatureError(`X-Hitl-Timestamp is not a time: ${JSON.stringify(timestamp.slice(0, 40))}`);
  }
  const age = Math.abs(now - Number(timestamp));
  if (!(age <= tolerance)) {
    throw new WebhookSignatureError(`the delivery is ${age.toFixed(0)} s off (tolerance ${tolerance} s)`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(typeof body === "string" ? body : Buffer.from(body).toString("utf8"));
  } catch (err) {
    throw new WebhookSignatureError(`the body is not JSON: ${(err as Error).message}`);
  }
  return request(parsed);
}

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === name) return typeof value === "string" ? value : value?.[0];
  }
  return undefined;
}
