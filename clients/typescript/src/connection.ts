/** The fetch the client hands openapi-fetch: authenticated by the client's headers, bounded
 * by a timeout per exchange, retrying transient failures.
 *
 * Every call is retried on network errors, timeouts, 5xx and 429 (after Retry-After, up to a
 * minute). That is safe for every call of the API: reads and cancels change nothing twice,
 * and a create always carries an idempotency key, so a create the bridge recorded before its
 * answer was lost returns that same request when retried, never a second one. The token is
 * only ever the Authorization header: never in an error message. */

import { setTimeout as sleep } from "node:timers/promises";

import { HitlConnectionError } from "./errors.js";

export const MAX_DELAY = 60; // seconds: the longest Retry-After obeyed

export interface Retries {
  /** Retries after the first try. */
  attempts: number;
  /** Seconds before the first retry, doubling after each. */
  backoff: number;
}

/** Whether an answer with this status is tried again: busy or failing, not refused. */
export function retried(status: number): boolean {
  return status === 429 || status >= 500;
}

/** Seconds to sleep before retry number `attempt` (0 for the first). */
export function delay(retries: Retries, attempt: number, retryAfter: string | null): number {
  const asked = retryAfter === null ? NaN : Number(retryAfter); // an HTTP date: backoff
  if (retryAfter !== null && retryAfter.trim() !== "" && asked >= 0) return Math.min(asked, MAX_DELAY);
  return retries.backoff * 2 ** attempt;
}

type Fetch = (request: Request) => Promise<Response>;

/** A fetch retrying `request` as above; each try gets `timeout` seconds, plus the long poll's
 * `wait` when the URL has one. The caller's abort (the request's signal) is never retried. */
export function retryingFetch(retries: Retries, timeout: number, base: typeof fetch = fetch): Fetch {
  return async (request) => {
    const url = new URL(request.url);
    const seconds = timeout + Number(url.searchParams.get("wait") ?? 0);
    const call = `${request.method} ${url.pathname}`;
    for (let attempt = 0; ; attempt++) {
      const last = attempt >= retries.attempts;
      const signal = AbortSignal.any([request.signal, AbortSignal.timeout(seconds * 1000)]);
      let response: Response;
      try {
        response = await base(new Request(request.clone(), { signal }));
      } catch (err) {
        if (request.signal.aborted) throw request.signal.reason;
        if (last) throw new HitlConnectionError(`${call}: ${describe(err)}`, { cause: err });
        await pause(delay(retries, attempt, null), request.signal);
        continue;
      }
      if (last || !retried(response.status)) return response;
      await response.body?.cancel();
      const wait = delay(retries, attempt, response.headers.get("Retry-After"));
      await pause(wait, request.signal);
    }
  };
}

/** `seconds` of sleep, cut short by `signal` (rejecting with its reason, as fetch does). */
export async function pause(seconds: number, signal?: AbortSignal): Promise<void> {
  try {
    await sleep(seconds * 1000, undefined, signal ? { signal } : {});
  } catch (err) {
    throw signal?.aborted ? signal.reason : err;
  }
}

/** fetch's errors say "fetch failed"; the reason is their cause. */
function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause instanceof Error ? `: ${err.cause.message}` : "";
  return `${err.name}: ${err.message}${cause}`;
}
