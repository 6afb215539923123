// The page: a conversation with the bridge's agent over AG-UI (@ag-ui/client's HttpAgent,
// posting to this page's own server, which adds the token), its human tools drawn as cards.
import { HttpAgent } from "@ag-ui/client";
import { ToolCard } from "./card.js";
import { h } from "./dom.js";

const log = document.getElementById("log");
const composer = document.getElementById("composer");
const input = document.getElementById("message");
const agent = new HttpAgent({ url: "/ag-ui", threadId: crypto.randomUUID() });
const cards = new Map(); // tool call id → its card
const bubbles = new Map(); // message id → its element
let failed = false; // the current run ended with RUN_ERROR

function say(role, text) {
  const bubble = h("div", { className: `message ${role}` }, text);
  log.append(bubble);
  bubble.scrollIntoView({ block: "end" });
  return bubble;
}

function cardFor(id, name, args) {
  if (!cards.has(id)) cards.set(id, new ToolCard(log, id, name, args));
  return cards.get(id);
}

const subscriber = {
  onTextMessageStartEvent: ({ event }) => void bubbles.set(event.messageId, say("assistant", "")),
  // Each delta appended as text (the subscriber's buffer is the text before this delta).
  onTextMessageContentEvent: ({ event }) => {
    bubbles.get(event.messageId)?.append(event.delta);
  },
  onToolCallStartEvent: ({ event }) => void cardFor(event.toolCallId, event.toolCallName),
  onToolCallArgsEvent: ({ event, partialToolCallArgs }) =>
    cards.get(event.toolCallId)?.update({ args: partialToolCallArgs }),
  onToolCallEndEvent: ({ event, toolCallArgs }) =>
    cards.get(event.toolCallId)?.update({ args: toolCallArgs }),
  onToolCallResultEvent: ({ event }) =>
    cards.get(event.toolCallId)?.update({ status: "complete", result: event.content }),
  onRunFinishedEvent: (params) => {
    if (params.outcome === "interrupt") ask(params.interrupts);
  },
  onRunErrorEvent: ({ event }) => {
    failed = true;
    say("error", event.message);
  },
};

// The run ended waiting for people: each interrupt's card goes to "executing"; once every one
// is answered, the next run resumes them all (AG-UI wants each open interrupt addressed).
// A resume the bridge refused (an answer its schema rejects: RUN_ERROR `invalid_answer`) settles
// nothing, so the cards open again for another answer.
function ask(interrupts) {
  const answers = new Map();
  const asked = [];
  for (const interrupt of interrupts) {
    const { tool, arguments: args } = interrupt.metadata ?? {};
    const card = cardFor(interrupt.toolCallId ?? interrupt.id, tool ?? "tool", args);
    asked.push(card);
    const answer = async (entry) => {
      card.markSent();
      answers.set(interrupt.id, { interruptId: interrupt.id, ...entry });
      if (answers.size < interrupts.length) return;
      if (await run({ resume: interrupts.map((i) => answers.get(i.id)) })) return;
      answers.clear();
      for (const each of asked) if (each.status === "executing") each.reopen();
    };
    card.update({ status: "executing", args: args ?? card.args, message: interrupt.message,
      respond: (payload) => answer({ status: "resolved", payload }),
      decline: (reason) => answer({ status: "cancelled", payload: { reason } }) });
  }
}

// Whether the run ended without an error.
async function run(parameters) {
  document.body.dataset.running = "true";
  input.disabled = true;
  failed = false;
  try {
    await agent.runAgent(parameters, subscriber);
  } catch (error) {
    failed = true;
    say("error", String(error?.message ?? error));
  } finally {
    document.body.dataset.running = "false";
    input.disabled = agent.pendingInterrupts.length > 0; // a thread waiting takes no new message
    if (!input.disabled) input.focus();
  }
  return !failed;
}

composer.addEventListener("submit", (event) => {
  event.preventDefault();
  const text = input.value.trim();
  if (!text || document.body.dataset.running === "true") return;
  input.value = "";
  say("user", text);
  agent.addMessage({ id: crypto.randomUUID(), role: "user", content: text });
  run({});
});
