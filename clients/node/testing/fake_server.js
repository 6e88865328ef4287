// A tiny stand-in for `adil serve` (node:http): each test installs the
// handler it needs.  Used by the unit tests of the client's own logic
// (framing, error mapping, deadlines); the wire contract itself is tested
// against the real server in test/service.test.js.
import http from "node:http";

let counter = 0;

/** Starts a server on 127.0.0.1:0; `handle(req, res, body)` answers. */
export async function startFake(handle) {
  const requests = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      const record = { method: req.method, url: req.url, headers: req.headers, text, closedEarly: false };
      record.body = text ? JSON.parse(text) : null;
      requests.push(record);
      res.on("close", () => { record.closedEarly = !res.writableFinished; });
      res.setHeader("x-request-id", req.headers["x-request-id"] ?? `req_fake${++counter}`);
      handle(req, res, record);
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    async close() {
      server.closeAllConnections?.();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

export function sendJson(res, status, body, headers = {}) {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

export function sendError(res, status, code, message, headers = {}) {
  const requestId = res.getHeader("x-request-id");
  sendJson(res, status, { error: { code, message, request_id: requestId, status } }, headers);
}

export function startEvents(res) {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-store" });
}

export function sendEvent(res, event, data) {
  res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves once `predicate()` holds (polled), or rejects after `ms`. */
export async function until(predicate, ms = 5000) {
  const end = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > end) throw new Error("condition not reached in time");
    await sleep(10);
  }
}
