/** HitlClient against the real service: each helper's request posted in (fake) Slack and
 * answered there; the ends other than an answer thrown as their errors; the API's calls. */

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import {
  HitlApiError,
  HitlConnectionError,
  HitlError,
  RequestCancelled,
  RequestDeclined,
  RequestExpired,
} from "../src/index.js";
import { ANSWER, DECLINE, DECLINED, LEFT_ALONE, TO, TOKEN, URL, WAIT, client } from "./service.js";

const hitl = client();

describe("the human tools, answered in Slack", { timeout: WAIT }, () => {
  test("ask: the person's words", async () => {
    assert.equal(await hitl.ask("Which colour?", TO), ANSWER);
  });

  test("requestApproval: an approval", async () => {
    const approval = await hitl.requestApproval("Deploy v2", "Release day", TO);
    assert.equal(approval.approved, true);
  });

  test("requestApproval declined: RequestDeclined with the person's reason", async () => {
    await assert.rejects(hitl.requestApproval("Drop the table", `please ${DECLINE}`, TO), (err) => {
      assert.ok(err instanceof RequestDeclined && err instanceof HitlError);
      assert.equal(err.reason, DECLINED);
      assert.equal(err.request.status, "declined");
      return true;
    });
  });

  test("selectOption: the chosen index and text", async () => {
    const choice = await hitl.selectOption("Which region?", ["eu-west-1", "us-east-1", "ap-south-1"], TO);
    assert.deepEqual(choice, { selectedIndex: 1, selectedValue: "us-east-1" });
  });

  test("collectData: the form, as the bridge checked it", async () => {
    const fields = [
      { name: "name", label: "Name" },
      { name: "age", label: "Age", type: "integer" },
      { name: "email", label: "Email", type: "email" },
    ] as const;
    const form = await hitl.collectData(fields, TO);
    assert.deepEqual(form, { name: "Ada", age: 36, email: "ada@example.com" });
  });

  test("uploadFile: the file's name, size and URL", async () => {
    const file = await hitl.uploadFile("The signed contract", TO, ["pdf"]);
    assert.equal(file.fileName, "contract.pdf");
    assert.equal(file.fileSize, 13);
    assert.match(file.url, /^https?:\/\//);
  });

  test("confirmAction: whether the person confirmed", async () => {
    assert.equal(await hitl.confirmAction("Restart?", "The API restarts", "danger", TO), true);
  });

  test("reviewToolCall: approved, with the arguments to run", async () => {
    const review = await hitl.reviewToolCall("deploy", { version: "v2" }, TO, { description: "Deploys v2" });
    assert.deepEqual(
      { approved: review.approved, arguments: review.arguments, edited: review.edited, grant: review.grant },
      { approved: true, arguments: { version: "v2" }, edited: false, grant: false },
    );
  });
});

describe("the API's calls", { timeout: WAIT }, () => {
  test("create, get, cancel: a withdrawn request says so, and its helper would throw", async () => {
    const made = await hitl.create("AskUserQuestion", { question: `Left: ${LEFT_ALONE}` }, TO);
    assert.equal(made.status, "pending");
    assert.equal((await hitl.get(made.id)).id, made.id);
    const cancelled = await hitl.cancel(made.id);
    assert.equal(cancelled.status, "cancelled");
    assert.equal((await hitl.wait(made.id)).status, "cancelled");
  });

  test("wait with a timeout: the request as it then is, pending", async () => {
    const made = await hitl.create("AskUserQuestion", { question: `Still: ${LEFT_ALONE}` }, TO);
    assert.equal((await hitl.wait(made.id, { timeout: 0.2 })).status, "pending");
    await hitl.cancel(made.id);
  });

  test("the same idempotency key is the same request", async () => {
    const key = `ts-${process.pid}-${Date.now()}`;
    const args = { action: `Again: ${LEFT_ALONE}`, reason: "twice" };
    const first = await hitl.create("requestApproval", args, TO, { idempotencyKey: key });
    const again = await hitl.create("requestApproval", args, TO, { idempotencyKey: key });
    assert.equal(again.id, first.id);
    await hitl.cancel(first.id);
  });

  test("list: the token's requests, newest first, a page at a time", async () => {
    const made = [];
    for (const n of [1, 2, 3]) {
      made.push((await hitl.create("AskUserQuestion", { question: `Listed ${n}: ${LEFT_ALONE}` }, TO)).id);
    }
    const pages = [];
    for await (const page of hitl.list({ status: "pending", limit: 2 })) pages.push(page.map((r) => r.id));
    assert.ok(pages.every((page) => page.length <= 2) && pages.length >= 2);
    assert.deepEqual(pages.flat().slice(0, 3), [...made].reverse());
    for (const id of made) await hitl.cancel(id);
  });

  test("aborting a helper withdraws its request and rejects with the signal's reason", async () => {
    const stop = new AbortController();
    const asked = hitl.ask(`Aborted: ${LEFT_ALONE}`, TO, { signal: stop.signal });
    let pending: string | undefined;
    while (pending === undefined) {
      for await (const page of hitl.list({ status: "pending" })) pending ??= page[0]?.id;
    }
    stop.abort(new Error("the agent gave up"));
    await assert.rejects(asked, { message: "the agent gave up" });
    assert.equal((await hitl.get(pending)).status, "cancelled");
  });

  test("a request nobody answers in time: RequestExpired", async () => {
    await assert.rejects(hitl.ask(`Expiring: ${LEFT_ALONE}`, TO, { timeoutSeconds: 1 }), RequestExpired);
  });

  test("a withdrawn request's helper: RequestCancelled", async () => {
    const key = `cancel-${process.pid}-${Date.now()}`;
    const made = await hitl.create("AskUserQuestion", { question: `Withdrawn: ${LEFT_ALONE}` }, TO, { idempotencyKey: key });
    await hitl.cancel(made.id);
    await assert.rejects(hitl.ask(`Withdrawn: ${LEFT_ALONE}`, TO, { idempotencyKey: key }), RequestCancelled);
  });
});

describe("errors", { timeout: WAIT }, () => {
  test("an unknown request: 404 not_found, an id with a slash included", async () => {
    for (const id of ["no-such-request", "../requests"]) {
      await assert.rejects(hitl.get(id), (err) => {
        assert.ok(err instanceof HitlApiError);
        assert.deepEqual([err.status, err.error], [404, "not_found"]);
        return true;
      });
    }
  });

  test("invalid arguments: 400 invalid, naming the field", async () => {
    await assert.rejects(hitl.create("selectOption", { question: "Which?", options: [] }, TO), (err) => {
      assert.ok(err instanceof HitlApiError);
      assert.deepEqual([err.status, err.error], [400, "invalid"]);
      assert.ok(Object.keys(err.fields).some((name) => name.includes("options")), JSON.stringify(err.fields));
      return true;
    });
  });

  test("a wrong token: 401 unauthorized, the token in no message", async () => {
    const wrong = `${TOKEN}x`;
    await assert.rejects(client({ token: wrong }).get("anything"), (err) => {
      assert.ok(err instanceof HitlApiError);
      assert.deepEqual([err.status, err.error], [401, "unauthorized"]);
      assert.ok(!err.message.includes(wrong));
      return true;
    });
  });

  test("nothing listening: HitlConnectionError once the retries are spent", async () => {
    const gone = client({ baseUrl: "http://127.0.0.1:9", retries: 1, backoff: 0 });
    await assert.rejects(gone.get("anything"), HitlConnectionError);
  });

  test("a wait out of range is refused before anything is sent", async () => {
    await assert.rejects(hitl.get("anything", { wait: 61 }), RangeError);
  });

  test("the base URL may be the API's root", async () => {
    const made = await client({ baseUrl: `${URL}/api/v1/` }).create("AskUserQuestion", { question: `Root: ${LEFT_ALONE}` }, TO);
    await hitl.cancel(made.id);
  });
});
