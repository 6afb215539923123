// One render function per human tool, shaped as CopilotKit's useHumanInTheLoop `render`:
// ({ status, args, respond, result }) for status "inProgress" (arguments still streaming),
// "executing" (waiting for the person: `respond(answer)`) and "complete" (`result`, the text
// the model read). `decline(reason)` is this page's addition: the bridge takes a decline with a
// reason for every tool (AG-UI's resume with status "cancelled").
import { declineRow, h, parsed } from "./dom.js";

const field = (label, value) => h("p", {}, h("strong", {}, `${label}: `), String(value ?? ""));

function requestApproval({ status, args, respond, decline }) {
  if (status !== "executing") return field("Action", args.action);
  const approve = h("button", { className: "approve", type: "button" }, "Approve");
  approve.addEventListener("click", () => respond({ approved: true }));
  return h("div", {}, field("Action", args.action), field("Reason", args.reason),
    h("div", { className: "actions" }, approve), declineRow(decline));
}

function askUserQuestion({ status, args, respond, decline }) {
  if (status !== "executing") return h("p", {}, String(args.question ?? ""));
  const answer = h("textarea", { className: "answer", rows: 2 });
  const send = h("button", { className: "send-answer", type: "button" }, "Answer");
  send.addEventListener("click", () => answer.value.trim() && respond({ answer: answer.value }));
  return h("div", {}, h("p", {}, String(args.question)), answer,
    h("div", { className: "actions" }, send), declineRow(decline));
}

function selectOption({ status, args, respond, decline }) {
  const options = Array.isArray(args.options) ? args.options : [];
  if (status !== "executing") return h("p", {}, String(args.question ?? ""));
  const buttons = options.map((option, index) => {
    const button = h("button", { className: "option", type: "button" }, String(option));
    const choose = () => respond({ selectedIndex: index, selectedValue: option });
    button.addEventListener("click", choose);
    return button;
  });
  return h("div", {}, h("p", {}, String(args.question)),
    h("div", { className: "actions" }, buttons), declineRow(decline));
}

function confirmAction({ status, args, respond, decline }) {
  if (status !== "executing") return h("p", {}, String(args.title ?? ""));
  const confirm = h("button", { className: "confirm", type: "button" }, "Confirm");
  confirm.addEventListener("click", () => respond({ confirmed: true }));
  return h("div", { className: `severity-${args.severity ?? "info"}` },
    h("h3", {}, String(args.title)), h("p", {}, String(args.message)),
    h("div", { className: "actions" }, confirm), declineRow(decline));
}

const INPUT_TYPES = { number: "number", integer: "number", email: "email", url: "url",
  date: "date", time: "time", datetime: "datetime-local" };

function formInput(spec) {
  if (spec.type === "boolean") return h("input", { type: "checkbox", name: spec.name });
  if (spec.type === "long_text") return h("textarea", { name: spec.name, rows: 3 });
  if (spec.type === "choice" || spec.type === "choices") {
    const options = (spec.options ?? []).map((o) => h("option", { value: o }, String(o)));
    return h("select", { name: spec.name, multiple: spec.type === "choices" }, options);
  }
  return h("input", { type: INPUT_TYPES[spec.type] ?? "text", name: spec.name });
}

function formValue(input) {
  if (input.type === "checkbox") return input.checked;
  // The bridge reads an answer as its schema says: a number field's value is a JSON number.
  if (input.type === "number") return input.value === "" ? "" : input.valueAsNumber;
  if (input.multiple) return [...input.selectedOptions].map((o) => o.value);
  return input.value;
}

function collectUserData({ status, args, respond, decline }) {
  const fields = Array.isArray(args.fields) ? args.fields : [];
  if (status !== "executing") return h("p", {}, `A form of ${fields.length} field(s)`);
  const inputs = fields.map((spec) => [spec, formInput(spec)]);
  const submit = h("button", { className: "submit", type: "button" }, "Submit");
  // A field left empty is left out: the bridge says which required ones are missing.
  const filled = () => inputs.map(([spec, input]) => [spec.name, formValue(input)])
    .filter(([, value]) => value !== "");
  submit.addEventListener("click", () => respond(Object.fromEntries(filled())));
  return h("div", { className: "form" },
    inputs.map(([spec, input]) => h("label", {}, String(spec.label ?? spec.name), input)),
    h("div", { className: "actions" }, submit), declineRow(decline));
}

// Any other tool (an approval gate, uploadFile, one of your own): its message, an answer typed
// as JSON, and Decline.
function fallback({ status, args, respond, decline, message }) {
  if (status !== "executing") return h("pre", {}, JSON.stringify(args, null, 1));
  const hint = '{"approved": true}';
  const answer = h("textarea", { className: "answer", rows: 2, placeholder: hint });
  const send = h("button", { className: "send-answer", type: "button" }, "Send");
  send.addEventListener("click", () => respond(parsed(answer.value)));
  return h("div", {}, h("p", {}, String(message ?? "")),
    h("pre", {}, JSON.stringify(args, null, 1)), answer,
    h("div", { className: "actions" }, send), declineRow(decline));
}

export const RENDERERS = { requestApproval, AskUserQuestion: askUserQuestion, selectOption,
  confirmAction, collectUserData };

export function render(props) {
  const draw = RENDERERS[props.name] ?? fallback;
  if (props.status !== "complete") return draw(props);
  // What was asked (drawn as while it streamed in), then what came of it.
  return h("div", {}, draw({ ...props, status: "inProgress" }),
    h("p", { className: "result" }, summary(props)));
}

export function declined(result) {
  const value = parsed(result ?? "");
  return Boolean(value && typeof value === "object" && "error" in value);
}

// The result the model read, in words: a decline's reason, else the tool's answer.
function summary({ name, result }) {
  const value = parsed(result ?? "");
  if (declined(result)) return `✗ Declined — ${value.error}`;
  if (name === "requestApproval") return value.approved ? "✓ Approved" : "✗ Not approved";
  if (name === "AskUserQuestion") return `Answered: ${value.answer}`;
  if (name === "selectOption") return `Selected: ${value.selectedValue}`;
  if (name === "confirmAction") return value.confirmed ? "Confirmed" : "Cancelled";
  return typeof value === "string" ? value : JSON.stringify(value);
}
