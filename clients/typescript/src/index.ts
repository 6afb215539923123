/** hitl-client: the TypeScript client of hitl-bridge's HTTP API. Ask people from any program.
 *
 *     import { HitlClient } from "hitl-client";
 *     const hitl = new HitlClient({ baseUrl: "https://hitl.example.com", token });
 *     const region = await hitl.ask("Which region?", "slack:U0123ABCD");
 *
 * `verifyWebhook` checks a delivery the bridge signed. The types are generated from the
 * bridge's OpenAPI document (`schema.ts`). */

export { HitlClient, MAX_WAIT } from "./client.js";
export type { AskOptions, CreateOptions, HitlClientOptions, ListOptions } from "./client.js";
export {
  HitlApiError,
  HitlConnectionError,
  HitlError,
  RequestCancelled,
  RequestDeclined,
  RequestExpired,
  RequestNotAnswered,
  RequestUndeliverable,
} from "./errors.js";
export { TOLERANCE, WebhookSignatureError, signature, verifyWebhook } from "./webhooks.js";
export type { WebhookHeaders } from "./webhooks.js";
export type * from "./types.js";
export type { components, operations, paths } from "./schema.js";
