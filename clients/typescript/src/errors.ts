/** What the client throws: `HitlError` and its subclasses, nothing else of its own (an abort
 * of the caller's signal rejects with the signal's reason, as fetch does). */

import type { RequestInfo } from "./types.js";

/** Any failure the client reports. */
export class HitlError extends Error {
  override name = "HitlError";
}

/** The bridge answered with an HTTP error: `error` is its code (unauthorized, invalid,
 * not_found, too_large, unavailable…), `fields` the invalid fields of a 400. */
export class HitlApiError extends HitlError {
  override name = "HitlApiError";
  constructor(
    readonly status: number,
    readonly error: string,
    readonly detail: string,
    readonly fields: Readonly<Record<string, string>> = {},
  ) {
    super(`${status} ${error}: ${detail}`);
  }
}

/** The bridge could not be reached (or dropped the connection), retries included. */
export class HitlConnectionError extends HitlError {
  override name = "HitlConnectionError";
}

/** A request settled without an answer; the subclass says how. */
export class RequestNotAnswered extends HitlError {
  override name = "RequestNotAnswered";
  constructor(
    readonly reason: string | null,
    readonly answeredBy: string | null,
    readonly request: RequestInfo,
  ) {
    super(`request ${request.id} ${request.status}` + (reason ? `: ${reason}` : ""));
  }
}

/** The person declined (for an approval, a "no" is a decline); `reason` is theirs. */
export class RequestDeclined extends RequestNotAnswered {
  override name = "RequestDeclined";
}

/** Nobody answered before the request's deadline. */
export class RequestExpired extends RequestNotAnswered {
  override name = "RequestExpired";
}

/** The request was withdrawn (by its requester, or by an admin). */
export class RequestCancelled extends RequestNotAnswered {
  override name = "RequestCancelled";
}

/** The request could not be shown to anyone (an unknown person, a refused post…). */
export class RequestUndeliverable extends RequestNotAnswered {
  override name = "RequestUndeliverable";
}

const RAISED = {
  declined: RequestDeclined,
  expired: RequestExpired,
  cancelled: RequestCancelled,
  undeliverable: RequestUndeliverable,
} as const;

/** Throw the error of a request that did not end answered (HitlError if still pending). */
export function throwUnlessAnswered(request: RequestInfo): void {
  if (request.status === "answered") return;
  if (request.status === "pending") throw new HitlError(`request ${request.id} is still pending`);
  const reason = "reason" in request ? (request.reason ?? null) : null;
  const by = "answered_by" in request ? (request.answered_by ?? null) : null;
  throw new RAISED[request.status](reason, by, request);
}
