/** HitlClient's own behaviour on faults the real service does not make on purpose: a stand-in
 * of the API on loopback that fails as told (a 503 after recording a create, a 429 with
 * Retry-After, a dropped connection, an HTML error page, long polls answered at once). */

import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";

import { HitlApiError, HitlClient } from "../src/index.js";

type Fault = (request: IncomingMessage, response: ServerResponse) => boolean; // true: handled

const seen: { method: string; url: string; body: string }[] = [];
let faults: Fault[] = []; // each used once, in order, before the stand-in answers normally
let base = "";
const server = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on("data", (chunk: Buffer) => chunks.push(chunk));
  request.on("end", () => {
    seen.push({ method: request.method ?? "", url: request.url ?? "", body: Buffer.concat(chunks).toString() });
    const fault = faults.shift();
    if (fault?.(request, response)) return;
    const made = request.method === "POST";
    response.writeHead(made ? 201 : 200, { "Content-Type": "application/json" });
    response.end(JSON.stringify({ id: "r1", status: "pending", to: "slack:U1", tool: "AskUserQuestion" }));
  });
});

before(async () => {
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => server.close());

function fresh(...planned: Fault[]): HitlClient {
  seen.length = 0;
  faults = planned;
  return new HitlClient({ baseUrl: base, token: "hitl_test", backoff: 0, retries: 2 });
}

const status = (code: number, headers: Record<string, string> = {}, body = "{}"): Fault => (_, response) => {
  response.writeHead(code, { "Content-Type": "application/json", ...headers }).end(body);
  return true;
};
const dropped: Fault = (request) => {
  request.socket.destroy();
  return true;
};

test("a create answered 503 after it was recorded is retried with the same idempotency key", async () => {
  const hitl = fresh(status(503, {}, '{"error": "unavailable", "message": "db"}'));
  assert.equal((await hitl.create("AskUserQuestion", { question: "Q?" }, "slack:U1")).id, "r1");
  const keys = seen.map((call) => (JSON.parse(call.body) as { idempotency_key: string }).idempotency_key);
  assert.equal(keys.length, 2);
  assert.equal(keys[0], keys[1]);
});

test("a 429 is retried after its Retry-After, a dropped connection at once", async () => {
  const hitl = fresh(status(429, { "Retry-After": "0" }), dropped);
  assert.equal((await hitl.get("r1")).status, "pending");
  assert.equal(seen.length, 3);
});

test("once the retries are spent, the last answer is the error", async () => {
  const hitl = fresh(...[1, 2, 3].map(() => status(500, {}, '{"error": "unavailable", "message": "down"}')));
  await assert.rejects(hitl.get("r1"), (err) => err instanceof HitlApiError && err.status === 500 && err.error === "unavailable");
  assert.equal(seen.length, 3);
});

test("a proxy's HTML page is an unexpected_response, not a crash", async () => {
  const html: Fault = (_, response) => {
    response.writeHead(502, { "Content-Type": "text/html" }).end("<html>Bad gateway</html>");
    return true;
  };
  const hitl = new HitlClient({ baseUrl: base, token: "hitl_test", retries: 0 });
  faults = [html];
  await assert.rejects(hitl.get("r1"), (err) => err instanceof HitlApiError && err.status === 502 && err.error === "unexpected_response");
});

test("wait against a server that ignores `wait` does not spin: a poll a second at most", async () => {
  const hitl = fresh();
  assert.equal((await hitl.wait("r1", { timeout: 1.5 })).status, "pending");
  assert.ok(seen.length >= 2 && seen.length <= 3, `${seen.length} polls`);
  assert.match(seen[0]!.url, /wait=1\.5\b/);
});

test("the token is the Authorization header only, never in the URL", async () => {
  const hitl = fresh();
  await hitl.get("r1");
  assert.ok(!seen[0]!.url.includes("hitl_test"));
  assert.ok(!String(hitl).includes("hitl_test"));
});
