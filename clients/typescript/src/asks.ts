/** Each human tool's call and the reading of its answer, none of it I/O: what the typed
 * helpers of `HitlClient` send, and how a settled request becomes their result or error. */

import { HitlError, throwUnlessAnswered } from "./errors.js";
import type {
  ArgumentsOf,
  DataField,
  RequestApprovalAnswer,
  RequestInfo,
  SelectOptionAnswer,
  Severity,
  Tool,
  ToolCallReview,
  UploadFileAnswer,
} from "./types.js";

/** One tool's call, and how the request it makes is read once it settles. */
export interface Ask<T extends Tool, R> {
  tool: T;
  arguments: ArgumentsOf<T>;
  answer: (request: RequestInfo) => R;
}

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A helper's reading of a settled request: its answer checked by `parse`, the error of any
 * other end (RequestDeclined, RequestExpired…). */
function answered<R>(parse: (answer: Json) => R | undefined): (request: RequestInfo) => R {
  return (request) => {
    throwUnlessAnswered(request);
    const answer = "answer" in request ? request.answer : undefined;
    const parsed = isObject(answer) ? parse(answer) : undefined;
    if (parsed === undefined) {
      const tool = "tool" in request ? request.tool : "its tool's";
      throw new HitlError(`request ${request.id}: its answer is not a ${tool} answer`);
    }
    return parsed;
  };
}

const text = (value: unknown): value is string => typeof value === "string";
const names = (value: unknown): boolean =>
  value === undefined || value === null || (Array.isArray(value) && value.every(text));

export function askQuestion(question: string): Ask<"AskUserQuestion", string> {
  return {
    tool: "AskUserQuestion",
    arguments: { question },
    answer: answered((a) => (text(a.answer) ? a.answer : undefined)),
  };
}

export function requestApproval(
  action: string,
  reason: string,
): Ask<"requestApproval", RequestApprovalAnswer> {
  const approval = (a: Json): RequestApprovalAnswer | undefined =>
    typeof a.approved === "boolean" && (a.reason == null || text(a.reason)) && names(a.approved_by)
      ? (a as RequestApprovalAnswer)
      : undefined;
  return { tool: "requestApproval", arguments: { action, reason }, answer: answered(approval) };
}

export function selectOption(
  question: string,
  options: readonly string[],
): Ask<"selectOption", SelectOptionAnswer> {
  const choice = (a: Json): SelectOptionAnswer | undefined =>
    Number.isInteger(a.selectedIndex) && text(a.selectedValue)
      ? (a as SelectOptionAnswer)
      : undefined;
  return { tool: "selectOption", arguments: { question, options: [...options] }, answer: answered(choice) };
}

export function collectData(fields: readonly DataField[]): Ask<"collectUserData", Json> {
  return { tool: "collectUserData", arguments: { fields: [...fields] }, answer: answered((a) => a) };
}

export function uploadFile(
  purpose: string,
  acceptedTypes: readonly string[],
): Ask<"uploadFile", UploadFileAnswer> {
  const file = (a: Json): UploadFileAnswer | undefined =>
    text(a.fileName) && typeof a.fileSize === "number" && text(a.url) ? (a as UploadFileAnswer) : undefined;
  return {
    tool: "uploadFile",
    arguments: { purpose, acceptedTypes: [...acceptedTypes] },
    answer: answered(file),
  };
}

export function confirmAction(
  title: string,
  message: string,
  severity: Severity,
): Ask<"confirmAction", boolean> {
  return {
    tool: "confirmAction",
    arguments: { title, message, severity },
    answer: answered((a) => (typeof a.confirmed === "boolean" ? a.confirmed : undefined)),
  };
}

/** The bridge's approval gate on another agent's call: a decline is a review too. `allow`
 * offers "approve and allow" for what it names (the review's `grant`). */
export function reviewToolCall(
  toolName: string,
  input: Json,
  description?: string,
  allow?: string,
): Ask<"approveToolCall", ToolCallReview> {
  const asked = { ...input };
  const decided = (request: RequestInfo): ToolCallReview => {
    const by = "answered_by" in request ? (request.answered_by ?? null) : null;
    if (request.status === "declined") {
      const reason = "reason" in request ? (request.reason ?? null) : null;
      return { approved: false, arguments: asked, edited: false, grant: false, reason, answeredBy: by };
    }
    throwUnlessAnswered(request); // expired, cancelled, undeliverable: thrown as such
    const given: unknown = "answer" in request ? request.answer : undefined;
    const answer: Json = isObject(given) ? given : {};
    if (answer.approved !== true) throw new HitlError(`request ${request.id}: its answer is not an approval`);
    const edits = isObject(answer.arguments) ? answer.arguments : {};
    return {
      approved: true,
      arguments: { ...asked, ...edits },
      edited: Object.keys(edits).length > 0,
      grant: answer.grant === true,
      reason: null,
      answeredBy: by,
    };
  };
  const call: ArgumentsOf<"approveToolCall"> = { tool_name: toolName, input: asked };
  if (description !== undefined) call.description = description;
  if (allow !== undefined) call.allow = allow;
  return { tool: "approveToolCall", arguments: call, answer: decided };
}
