/** The API's types under short names, all from the generated `schema.ts` (the server's OpenAPI
 * document): nothing here is written by hand but the aliases. */

import type { components } from "./schema.js";

type Schemas = components["schemas"];

/** A request as the bridge tells it: one variant per tool (narrow on `tool`), beside a request
 * whose idempotency key is taken but whose record is not yet written (no `tool`). */
export type RequestInfo = Schemas["RequestOut"];
export type RequestPage = Schemas["RequestPage"];
export type Status = RequestInfo["status"];
/** `POST /api/v1/requests`'s body: a union on `tool`. */
export type CreateRequest = Schemas["CreateRequest"];
/** A built-in human tool's name. */
export type Tool = CreateRequest["tool"];
/** The arguments `tool` takes. */
export type ArgumentsOf<T extends Tool> = Extract<CreateRequest, { tool: T }>["arguments"];

export type ApiErrorBody = Schemas["ApiError"];
export type DataField = Schemas["DataField"];
export type Severity = NonNullable<Schemas["ConfirmActionArguments"]["severity"]>;
export type RequestApprovalAnswer = Schemas["RequestApprovalAnswer"];
export type SelectOptionAnswer = Schemas["SelectOptionAnswer"];
export type UploadFileAnswer = Schemas["UploadFileAnswer"];
export type ConfirmActionAnswer = Schemas["ConfirmActionAnswer"];
export type AskUserQuestionAnswer = Schemas["AskUserQuestionAnswer"];
export type ApproveToolCallAnswer = Schemas["ApproveToolCallAnswer"];

/** An approveToolCall review: approved (perhaps with edited arguments, perhaps with the
 * grant of "approve and allow") or declined with the person's reason. */
export interface ToolCallReview {
  approved: boolean;
  /** The call's arguments: as asked, with the person's edits on top. */
  arguments: Record<string, unknown>;
  edited: boolean;
  grant: boolean;
  reason: string | null;
  answeredBy: string | null;
}
