/** Benchmark: one create → click → answer round trip through HitlClient beside bare fetch
 * making the same two requests (`POST /api/v1/requests`, then `GET …?wait=60`). Run by
 * bench/ts_client_round_trip.py, which serves the bridge and clicks Approve on each request as
 * it is posted; prints each way's times (ms) as JSON. The two take turns round by round, so
 * the machine's noise falls on each alike; the first three rounds warm up. */

import { HitlClient } from "../src/index.js";

const [url, token, to] = ["HITL_URL", "HITL_TOKEN", "HITL_TO"].map((name) => process.env[name] ?? "");
const rounds = Number(process.env.ROUNDS ?? 20);
const APPROVAL = { action: "Deploy v2 to production", reason: "Benchmark" };

const hitl = new HitlClient({ baseUrl: url!, token: token! });
const headers = { Authorization: `Bearer ${token}`, "Content-Type": "application/json" };

async function byFetch(): Promise<void> {
  const body = JSON.stringify({ tool: "requestApproval", arguments: APPROVAL, to });
  const made = (await (await fetch(`${url}/api/v1/requests`, { method: "POST", headers, body })).json()) as { id: string };
  const answer = (await (await fetch(`${url}/api/v1/requests/${made.id}?wait=60`, { headers })).json()) as { status: string };
  if (answer.status !== "answered") throw new Error(`not answered: ${JSON.stringify(answer)}`);
}

async function byClient(): Promise<void> {
  const approval = await hitl.requestApproval(APPROVAL.action, APPROVAL.reason, to!);
  if (!approval.approved) throw new Error("not approved");
}

const ways: Record<string, () => Promise<void>> = { "bare fetch": byFetch, "hitl-client": byClient };
const times: Record<string, number[]> = Object.fromEntries(Object.keys(ways).map((name) => [name, []]));
for (let n = 0; n < rounds + 3; n++) {
  for (const [name, way] of Object.entries(ways)) {
    const started = performance.now();
    await way();
    if (n >= 3) times[name]!.push(performance.now() - started);
  }
}
console.log(JSON.stringify(times));
