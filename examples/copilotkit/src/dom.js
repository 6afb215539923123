// Builds elements. Every child string becomes a text node (`append` never parses HTML), so
// what the model or a tool's arguments wrote is shown as written, never run.
export function h(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === false) continue;
    if (key.startsWith("on")) element.addEventListener(key.slice(2), value);
    else if (key === "className") element.className = value;
    else element.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined && child !== false) element.append(child);
  }
  return element;
}

// A reason box and a Decline button: every human tool can be declined, saying why.
export function declineRow(decline) {
  const reason = h("input", { className: "decline-reason", placeholder: "Reason (optional)" });
  const button = h("button", { className: "decline", type: "button" }, "Decline");
  button.addEventListener("click", () => decline(reason.value.trim()));
  return h("div", { className: "decline-row" }, reason, button);
}

export function parsed(text) {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
