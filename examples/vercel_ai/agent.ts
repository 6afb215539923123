/**
 * A Vercel AI SDK agent whose tools ask a person in Slack or Teams through hitl-bridge.
 *
 *     npm ci --prefix clients/typescript && npm run build --prefix clients/typescript
 *     npm ci --prefix examples/vercel_ai
 *     HITL_URL=http://localhost:3000 HITL_TOKEN=hitl_... HITL_TO=slack:U0123ABCD \
 *         npm start --prefix examples/vercel_ai
 *
 * `askPerson` is a tool whose `execute` asks the question through the bridge and returns the
 * person's answer; `deploy` runs only once the person approves it, and a decline comes back to
 * the model as the tool's result (with the person's reason), not as an error that ends the run.
 * The AI SDK's abort signal withdraws a question nobody will read the answer of.
 *
 * The model here is `scriptedModel()`, the AI SDK's own MockLanguageModelV3 playing a model
 * that asks, deploys and reports, so the example runs with no key and no network but the
 * bridge's. Pass any AI SDK model to `run` instead (e.g. `openai("gpt-4.1")` from
 * `@ai-sdk/openai`).
 */

import { generateText, stepCountIs, tool, type LanguageModel } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { HitlClient, RequestDeclined } from "hitl-client";
import { z } from "zod";

const PROMPT = "Deploy payments v2 to production, in the region the on-call engineer picks.";

/** The tools, asking `to` through `hitl`. */
export function humanTools(hitl: HitlClient, to: string) {
  return {
    askPerson: tool({
      description: "Ask the on-call engineer a question and wait for their answer.",
      inputSchema: z.object({ question: z.string().describe("The question, as they will read it") }),
      execute: async ({ question }, { abortSignal }) => ({
        answer: await hitl.ask(question, to, { signal: abortSignal }),
      }),
    }),
    deploy: tool({
      description: "Deploy a service version to a region; the on-call engineer approves it first.",
      inputSchema: z.object({ service: z.string(), version: z.string(), region: z.string() }),
      execute: async ({ service, version, region }, { abortSignal }) => {
        const action = `Deploy ${service} ${version} to ${region}`;
        try {
          await hitl.requestApproval(action, PROMPT, to, { signal: abortSignal });
        } catch (err) {
          if (err instanceof RequestDeclined) return { deployed: false, declined: err.reason };
          throw err;
        }
        return { deployed: true, service, version, region }; // your deploy goes here
      },
    }),
  };
}

/** The agent's run: the model calls the tools until it has an answer. */
export async function run(model: LanguageModel, hitl: HitlClient, to: string): Promise<string> {
  const result = await generateText({
    model,
    tools: humanTools(hitl, to),
    stopWhen: stepCountIs(5),
    prompt: PROMPT,
  });
  return result.text;
}

type Call = Parameters<MockLanguageModelV3["doGenerate"]>[0];

/** The tool results the model has been given so far, by tool name. */
function results(call: Call): Map<string, unknown> {
  const found = new Map<string, unknown>();
  for (const message of call.prompt) {
    if (message.role !== "tool") continue;
    for (const part of message.content) {
      if (part.type === "tool-result" && part.output.type === "json") found.set(part.toolName, part.output.value);
    }
  }
  return found;
}

/** A stand-in model (the AI SDK's mock): asks which region, deploys there, reports. */
export function scriptedModel(): MockLanguageModelV3 {
  const usage = {
    inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
    outputTokens: { total: 10, text: 10, reasoning: undefined },
  };
  const callTool = (toolName: string, input: object) => ({
    content: [{ type: "tool-call" as const, toolCallId: `call-${toolName}`, toolName, input: JSON.stringify(input) }],
    finishReason: { unified: "tool-calls" as const, raw: undefined },
    usage,
    warnings: [],
  });
  return new MockLanguageModelV3({
    doGenerate: async (call) => {
      const told = results(call);
      const asked = told.get("askPerson") as { answer: string } | undefined;
      if (asked === undefined) return callTool("askPerson", { question: "Which region should payments v2 go to?" });
      const deployed = told.get("deploy");
      if (deployed === undefined) {
        return callTool("deploy", { service: "payments", version: "v2", region: asked.answer });
      }
      const text = `The engineer said "${asked.answer}"; the deploy: ${JSON.stringify(deployed)}`;
      return { content: [{ type: "text", text }], finishReason: { unified: "stop", raw: undefined }, usage, warnings: [] };
    },
  });
}

function setting(name: string): string {
  const value = process.env[name];
  if (!value) {
    console.error(`${name} is not set: HITL_URL, HITL_TOKEN and HITL_TO say which bridge asks whom`);
    process.exit(2);
  }
  return value;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const hitl = new HitlClient({ baseUrl: setting("HITL_URL"), token: setting("HITL_TOKEN") });
  console.log(await run(scriptedModel(), hitl, setting("HITL_TO")));
}
