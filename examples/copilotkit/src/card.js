// A tool call's card in the conversation: its status moves inProgress → executing → complete
// as CopilotKit's useHumanInTheLoop describes, and each change draws it again.
import { h } from "./dom.js";
import { declined, render } from "./tools.js";

export class ToolCard {
  constructor(log, id, name, args = {}) {
    Object.assign(this, { id, name, args, status: "inProgress", sent: false });
    this.element = h("div", { className: "tool-card", "data-tool": name });
    log.append(this.element);
    this.draw();
  }

  update(changes) {
    Object.assign(this, changes);
    this.draw();
  }

  // What the person did went to the bridge: the inputs stay as they were, disabled, until the
  // tool's result arrives (so the card cannot be answered twice).
  markSent() {
    this.sent = true;
    this.element.dataset.sent = "true";
    for (const input of this.element.querySelectorAll("button, input, textarea, select")) {
      input.disabled = true;
    }
  }

  reopen() {
    this.sent = false;
    this.draw();
  }

  draw() {
    const { name, args, status, result, message } = this;
    const executing = status === "executing";
    const props = { name, args, status, result, message,
      respond: executing ? this.respond : undefined,
      decline: executing ? this.decline : undefined };
    if (!executing) this.sent = false;
    this.element.toggleAttribute("data-sent", this.sent);
    this.element.dataset.status = status;
    this.element.classList.toggle("declined", status === "complete" && declined(result));
    this.element.replaceChildren(
      h("div", { className: "tool-head" }, h("span", { className: "tool-name" }, name),
        h("span", { className: "status" }, status)),
      render(props));
  }
}
