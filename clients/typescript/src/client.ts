/** `HitlClient`: the bridge's HTTP API (/api/v1) through openapi-fetch, typed by the
 * generated `schema.ts`.
 *
 * The calls of the API (create, get, wait, cancel, list) and the human tools on them: each
 * typed helper asks, waits until the request settles, and returns the answer or throws the
 * error of how it ended otherwise. A create always sends an idempotency key (the caller's, or
 * a fresh UUID made once per `create`), so its retries never make a second request. Times are
 * in seconds, as in the API. */

import { randomUUID } from "node:crypto";

import createClient from "openapi-fetch";

import * as asks from "./asks.js";
import { pause, retryingFetch } from "./connection.js";
import { HitlApiError, HitlError } from "./errors.js";
import type { paths } from "./schema.js";
import type {
  ArgumentsOf,
  DataField,
  RequestApprovalAnswer,
  RequestInfo,
  RequestPage,
  SelectOptionAnswer,
  Severity,
  Status,
  Tool,
  ToolCallReview,
  UploadFileAnswer,
} from "./types.js";

export const MAX_WAIT = 60; // seconds: the longest long poll the API serves
export const MIN_POLL_GAP = 1; // seconds between polls at least, should a server ignore `wait`
const WITHDRAW_WITHIN = 5; // seconds an aborted helper spends withdrawing its request
const USER_AGENT = "hitl-bridge-client-ts/0.1";

export interface HitlClientOptions {
  /** The bridge's root (or its /api/v1). */
  baseUrl: string;
  /** An API token (`hitl-bridge tokens create`). */
  token: string;
  /** Seconds each HTTP exchange may take (a long poll gets its `wait` on top). Default 30. */
  timeout?: number;
  /** Retries after the first try of a call (default 3), `backoff` seconds apart, doubling. */
  retries?: number;
  backoff?: number;
  /** The step of `wait`, in seconds (default 60; lower behind a proxy that drops idle
   * connections sooner). */
  longPoll?: number;
  /** fetch, for tests or a proxy (default: the global one). */
  fetch?: typeof fetch;
}

/** What every human tool's helper takes besides its own arguments. */
export interface AskOptions {
  /** Seconds the person has (default: the bridge's). */
  timeoutSeconds?: number;
  /** The same key (≤200 characters) returns the first request made with it. */
  idempotencyKey?: string;
  /** Aborting withdraws the request and rejects with the signal's reason. */
  signal?: AbortSignal;
}

export interface CreateOptions {
  timeoutSeconds?: number;
  idempotencyKey?: string;
  /** Where the bridge POSTs the request once settled (signed: `verifyWebhook`). */
  callbackUrl?: string;
  signal?: AbortSignal;
}

export interface ListOptions {
  status?: Status;
  to?: string;
  since?: Date | string;
  /** Per page, 1 to 200 (default 50). */
  limit?: number;
}

export class HitlClient {
  readonly #api: ReturnType<typeof createClient<paths>>;
  readonly #longPoll: number;
  readonly url: string;

  constructor(options: HitlClientOptions) {
    const { token, timeout = 30, retries = 3, backoff = 0.5, longPoll = MAX_WAIT } = options;
    if (!(longPoll > 0 && longPoll <= MAX_WAIT)) {
      throw new RangeError(`longPoll must be above 0 and at most ${MAX_WAIT} seconds`);
    }
    if (!(retries >= 0 && backoff >= 0)) throw new RangeError("retries and backoff must be 0 or more");
    this.#longPoll = longPoll;
    this.url = options.baseUrl.replace(/\/+$/, "").replace(/\/api\/v1$/, "");
    this.#api = createClient<paths>({
      baseUrl: this.url,
      headers: { Authorization: `Bearer ${token}`, Accept: "application/json", "User-Agent": USER_AGENT },
      fetch: retryingFetch({ attempts: retries, backoff }, timeout, options.fetch),
    });
  }

  /** Never shows the token. */
  toString(): string {
    return `HitlClient(${this.url})`;
  }

  // -- the API ------------------------------------------------------------------------------

  /** Ask `to` with a human tool's call. */
  async create<T extends Tool>(
    tool: T,
    args: ArgumentsOf<T>,
    to: string,
    options: CreateOptions = {},
  ): Promise<RequestInfo> {
    const body = {
      tool,
      arguments: args,
      to,
      idempotency_key: options.idempotencyKey ?? randomUUID(),
      ...(options.timeoutSeconds !== undefined && { timeout_seconds: options.timeoutSeconds }),
      ...(options.callbackUrl !== undefined && { callback_url: options.callbackUrl }),
    } as Extract<paths["/api/v1/requests"]["post"]["requestBody"]["content"]["application/json"], { tool: T }>;
    return request(await answer(this.#api.POST("/api/v1/requests", { body, ...signal(options.signal) })));
  }

  /** The request; with `wait` (seconds, at most 60), once it settles or `wait` passes. */
  async get(requestId: string, options: { wait?: number; signal?: AbortSignal } = {}): Promise<RequestInfo> {
    const wait = options.wait ?? 0;
    if (!(wait >= 0 && wait <= MAX_WAIT)) throw new RangeError(`wait must be from 0 to ${MAX_WAIT} seconds`);
    const query = wait > 0 ? { wait: Math.round(wait * 1000) / 1000 } : {};
    const params = { path: { id: requestId }, query };
    return request(await answer(this.#api.GET("/api/v1/requests/{id}", { params, ...signal(options.signal) })));
  }

  /** The request once settled, long polling in steps of `longPoll`; after `timeout` seconds
   * (default: no limit), the request as it then is, pending perhaps. */
  async wait(requestId: string, options: { timeout?: number; signal?: AbortSignal } = {}): Promise<RequestInfo> {
    const now = () => performance.now() / 1000;
    const deadline = options.timeout === undefined ? null : now() + Math.max(options.timeout, 0);
    for (;;) {
      const step = Math.max(deadline === null ? this.#longPoll : Math.min(this.#longPoll, deadline - now()), 0);
      const asked = now();
      const info = await this.get(requestId, { wait: step, ...signal(options.signal) });
      if (info.status !== "pending" || (deadline !== null && now() >= deadline)) return info;
      // A server (or a proxy) that answers long polls at once must not make `wait` spin.
      await pause(Math.max(Math.min(MIN_POLL_GAP, step) - (now() - asked), 0), options.signal);
    }
  }

  /** Withdraw a pending request; a settled one comes back as it settled. */
  async cancel(requestId: string, options: { signal?: AbortSignal } = {}): Promise<RequestInfo> {
    const params = { path: { id: requestId } };
    return request(await answer(this.#api.DELETE("/api/v1/requests/{id}", { params, ...signal(options.signal) })));
  }

  /** This token's requests, newest first, a page (of at most `limit`) at a time. */
  async *list(options: ListOptions = {}): AsyncGenerator<RequestInfo[], void, undefined> {
    const { status, to, since, limit = 50 } = options;
    const query: NonNullable<paths["/api/v1/requests"]["get"]["parameters"]["query"]> = { limit };
    if (status !== undefined) query.status = status;
    if (to !== undefined) query.to = to;
    if (since !== undefined) query.since = since instanceof Date ? since.toISOString() : since;
    for (;;) {
      const page = await answer(this.#api.GET("/api/v1/requests", { params: { query } }));
      if (!isPage(page)) throw new HitlError("the bridge's answer is not a RequestPage");
      if (page.requests.length > 0) yield page.requests;
      if (page.next == null) return;
      query.before = page.next;
    }
  }

  // -- the human tools: ask, then wait for the answer -----------------------------------------

  /** AskUserQuestion: the person's answer, as they wrote it. */
  ask(question: string, to: string, options?: AskOptions): Promise<string> {
    return this.#answer(asks.askQuestion(question), to, options);
  }

  /** requestApproval: an approval (a "no" rejects with RequestDeclined, with its reason). */
  requestApproval(action: string, reason: string, to: string, options?: AskOptions): Promise<RequestApprovalAnswer> {
    return this.#answer(asks.requestApproval(action, reason), to, options);
  }

  /** selectOption: the chosen option's index (from 0) and text. */
  selectOption(question: string, options: readonly string[], to: string, ask?: AskOptions): Promise<SelectOptionAnswer> {
    return this.#answer(asks.selectOption(question, options), to, ask);
  }

  /** collectUserData: the filled-in form, {field name: value}, as the bridge checked it. */
  collectData(fields: readonly DataField[], to: string, options?: AskOptions): Promise<Record<string, unknown>> {
    return this.#answer(asks.collectData(fields), to, options);
  }

  /** uploadFile (acceptedTypes: extensions or MIME types): the file's name, size, URL. */
  uploadFile(purpose: string, to: string, acceptedTypes: readonly string[] = [], options?: AskOptions): Promise<UploadFileAnswer> {
    return this.#answer(asks.uploadFile(purpose, acceptedTypes), to, options);
  }

  /** confirmAction: whether the person confirmed. */
  confirmAction(title: string, message: string, severity: Severity, to: string, options?: AskOptions): Promise<boolean> {
    return this.#answer(asks.confirmAction(title, message, severity), to, options);
  }

  /** approveToolCall: another agent's call of `toolName`, shown with Approve, Edit and
   * Decline (and "approve and allow" for what `allow` names). A decline is a review too. */
  reviewToolCall(
    toolName: string,
    input: Record<string, unknown>,
    to: string,
    options: AskOptions & { description?: string; allow?: string } = {},
  ): Promise<ToolCallReview> {
    return this.#answer(asks.reviewToolCall(toolName, input, options.description, options.allow), to, options);
  }

  /** Ask, wait, and return the answer read; the error of any other end. */
  async #answer<T extends Tool, R>(ask: asks.Ask<T, R>, to: string, options: AskOptions = {}): Promise<R> {
    // The create is not aborted midway: its request may be made with its answer in flight,
    // and only the answer says which request to withdraw.
    const { signal: given, ...creating } = options;
    const info = await this.create(ask.tool, ask.arguments, to, creating);
    try {
      given?.throwIfAborted();
      return ask.answer(await this.wait(info.id, signal(given)));
    } catch (err) {
      if (given?.aborted) {
        // Whoever waited gave up: withdraw the question rather than leave a person
        // answering it for nobody.
        await this.cancel(info.id, { signal: AbortSignal.timeout(WITHDRAW_WITHIN * 1000) }).catch(() => undefined);
      }
      throw err;
    }
  }
}

function signal(given: AbortSignal | undefined): { signal?: AbortSignal } {
  return given === undefined ? {} : { signal: given };
}

/** A 2xx answer's body; any other answer as a HitlApiError. */
async function answer<D>(sent: Promise<{ data?: D; error?: unknown; response: Response }>): Promise<D> {
  let done: { data?: D; error?: unknown; response: Response };
  try {
    done = await sent;
  } catch (err) {
    if (err instanceof SyntaxError) throw new HitlApiError(0, "unexpected_response", "a body that is not JSON");
    throw err;
  }
  const { data, error, response } = done;
  if (response.ok && data !== undefined) return data;
  if (!isObject(error)) {
    const what = (typeof error === "string" ? error.slice(0, 200).trim() : "") || response.statusText;
    throw new HitlApiError(response.status, "unexpected_response", what);
  }
  const fields = isObject(error.fields)
    ? Object.fromEntries(Object.entries(error.fields).map(([k, v]) => [k, String(v)]))
    : {};
  throw new HitlApiError(response.status, String(error.error ?? "unknown"), String(error.message ?? ""), fields);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const STATUSES: readonly string[] = ["pending", "answered", "declined", "expired", "cancelled", "undeliverable"];

/** Whether `body` is a request as the API tells one (its id, status and address). */
export function isRequest(body: unknown): body is RequestInfo {
  return isObject(body) && typeof body.id === "string" && typeof body.to === "string"
    && typeof body.status === "string" && STATUSES.includes(body.status);
}

function isPage(body: unknown): body is RequestPage {
  return isObject(body) && Array.isArray(body.requests) && body.requests.every(isRequest);
}

/** The bridge's answer as a request, or a HitlError saying it is not one. */
export function request(body: unknown): RequestInfo {
  if (!isRequest(body)) throw new HitlError("the bridge's answer is not a request");
  return body;
}
