// The page's server: serves the page and passes its AG-UI runs on to the bridge, adding the
// bridge token here, so it never reaches the browser (CopilotKit's runtime sits between page
// and agent the same way). Run by `npm start` after the bundle is built (see README.md).
import { readFile } from "node:fs/promises";
import http from "node:http";
import https from "node:https";

const HERE = new URL(".", import.meta.url);
const TOKEN = process.env.HITL_TOKEN;
const TARGET = new URL("/ag-ui", process.env.HITL_URL ?? "http://localhost:3000");
const FILES = {
  "/": ["src/index.html", "text/html; charset=utf-8"],
  "/style.css": ["src/style.css", "text/css; charset=utf-8"],
  "/app.js": ["dist/app.js", "text/javascript; charset=utf-8"],
};

if (!TOKEN) {
  console.error("HITL_TOKEN is not set: `hitl-bridge tokens create --name copilotkit` makes one");
  process.exit(2);
}

async function serveFile(response, [path, type]) {
  try {
    const body = await readFile(new URL(path, HERE));
    response.writeHead(200, { "Content-Type": type, "Cache-Control": "no-store" }).end(body);
  } catch {
    const missing = `${path} is missing: npm run build`;
    response.writeHead(500, { "Content-Type": "text/plain" }).end(missing);
  }
}

// The run goes to the bridge with the token; its SSE stream comes back chunk by chunk as the
// bridge writes it (piped, never collected), so the page sees each event as it happens.
function proxy(request, response) {
  const client = TARGET.protocol === "https:" ? https : http;
  const upstream = client.request(TARGET, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "text/event-stream",
      Authorization: `Bearer ${TOKEN}` },
  }, (answer) => {
    response.writeHead(answer.statusCode ?? 502, {
      "Content-Type": answer.headers["content-type"] ?? "text/plain",
      "Cache-Control": "no-cache",
    });
    response.flushHeaders();
    answer.pipe(response);
  });
  upstream.on("error", (error) => {
    if (!response.headersSent) response.writeHead(502, { "Content-Type": "application/json" });
    response.end(JSON.stringify({ error: `the bridge is unreachable: ${error.message}` }));
  });
  response.on("close", () => upstream.destroy()); // the page left: so does its run's stream
  request.pipe(upstream);
}

const server = http.createServer((request, response) => {
  const { pathname } = new URL(request.url ?? "/", "http://page");
  if (request.method === "POST" && pathname === "/ag-ui") return proxy(request, response);
  if (request.method === "GET" && FILES[pathname]) return serveFile(response, FILES[pathname]);
  response.writeHead(404, { "Content-Type": "text/plain" }).end("not found");
});

// Loopback unless HOST says otherwise: whoever reaches this server runs the agent as the token.
server.listen(Number(process.env.PORT ?? 3100), process.env.HOST ?? "127.0.0.1", () => {
  const { address, port } = server.address();
  console.log(`listening on http://${address}:${port}/ (the bridge: ${TARGET.origin})`);
});
