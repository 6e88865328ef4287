// The client's own logic against a fake server: SSE framing, results,
// error mapping by code, deadlines, abort, refused connections, retries.
import assert from "node:assert/strict";
import net from "node:net";
import { after, before, describe, test } from "node:test";

import {
  AdilClient, AdilError, BusyError, CancelledError, ConnectionError, DeadlineError, ModelNotReadyError,
  OutputValidationError, PermissionDeniedError, errorClassForCode,
} from "../src/index.js";
import { parseEvents } from "../src/sse.js";
import {
  sendError, sendEvent, sendJson, sleep, startEvents, startFake, until,
} from "../testing/fake_server.js";

const DONE = {
  text: "Hello", tokens: [1, 2], stop_reason: "eos", cancel_acknowledged: false, value: null,
  logprobs: null, stats: { n_prompt_tokens: 3, n_generated: 2, decode_ms: 1.5 },
};

async function* chunksOf(...texts) {
  for (const text of texts) yield new TextEncoder().encode(text);
}

async function collect(iterable) {
  const out = [];
  for await (const item of iterable) out.push(item);
  return out;
}

describe("SSE framing", () => {
  test("events split anywhere, CRLF and CR endings, comments and multi-line data", async () => {
    const events = await collect(parseEvents(chunksOf(
      ": ping\n\nevent: pie", "ce\r\ndata: {\"a\":\r", "\n\r\nevent:done\ndata: x\ndata:  y\n\n",
      "data: é", "\n\n", "event: tail\ndata: never ended",
    )));
    assert.deepEqual(events.map((e) => [e.event, e.data]),
      [["piece", "{\"a\":"], ["done", "x\n y"], ["message", "é"]]);
  });

  test("a multi-byte character split across chunks", async () => {
    const bytes = new TextEncoder().encode("data: ü\n\n");
    async function* split() { yield bytes.slice(0, 7); yield bytes.slice(7); }
    const [event] = await collect(parseEvents(split()));
    assert.equal(event.data, "ü");
  });
});

describe("against a fake server", () => {
  let fake;
  let mode = {};
  before(async () => {
    fake = await startFake(async (req, res, record) => {
      const handler = mode[req.url] ?? (() => sendError(res, 404, "invalid_argument", "no route"));
      await handler(req, res, record);
    });
  });
  after(() => fake.close());

  const client = (options) => new AdilClient(fake.url, options);

  test("generate streams underneath and returns the done event's result", async () => {
    mode = {
      "/adil/v1/generate": async (req, res) => {
        startEvents(res);
        res.write(": ping\n\n");
        sendEvent(res, "piece", { text: "Hel", tokens: [1], logprobs: null });
        sendEvent(res, "piece", { text: "lo", tokens: [2], logprobs: null });
        sendEvent(res, "done", DONE);
        res.end();
      },
    };
    const result = await client({ apiKey: "k" }).generate("Hi", {
      maxTokens: 8, temperature: 0, sampling: { topK: 5 }, stop: ["\n"], requestId: "mine-1",
    });
    assert.equal(result.text, "Hello");
    assert.deepEqual(result.tokens, [1, 2]);
    assert.equal(result.stopReason, "eos");
    assert.deepEqual(result.stats, { nPromptTokens: 3, nGenerated: 2, decodeMs: 1.5 });
    assert.equal(result.requestId, "mine-1");
    const sent = fake.requests.at(-1);
    assert.deepEqual(sent.body, {
      prompt: "Hi", stream: true, max_tokens: 8, stop: ["\n"], sampling: { temperature: 0, top_k: 5 },
    });
    assert.equal(sent.headers.authorization, "Bearer k");
    assert.equal(sent.headers["x-request-id"], "mine-1");
    assert.equal(sent.headers.origin, undefined); // Node's fetch sends no Origin
  });

  test("stream yields pieces, then result; an error event rejects both", async () => {
    mode = {
      "/adil/v1/generate": async (req, res) => {
        startEvents(res);
        sendEvent(res, "piece", { text: "{\"a\"", tokens: [7] });
        sendEvent(res, "error", { error: {
          code: "output_validation_failed", message: "cut", request_id: "r9", status: 422, text: "{\"a\"",
        } });
        res.end();
      },
    };
    const stream = client().stream([1, 2, 3]);
    const pieces = [];
    await assert.rejects(async () => { for await (const p of stream) pieces.push(p); }, (error) => {
      assert.ok(error instanceof OutputValidationError);
      assert.ok(error instanceof AdilError);
      assert.equal(error.code, "output_validation_failed");
      assert.equal(error.status, 422);
      assert.equal(error.requestId, "r9");
      assert.equal(error.text, "{\"a\"");
      return true;
    });
    assert.deepEqual(pieces, [{ text: "{\"a\"", tokens: [7], logprobs: null }]);
    await assert.rejects(stream.result, OutputValidationError);
  });

  test("a stream that ends without done is a connection error", async () => {
    mode = {
      "/adil/v1/generate": async (req, res) => {
        startEvents(res);
        sendEvent(res, "piece", { text: "a", tokens: [1] });
        res.end();
      },
    };
    await assert.rejects(client().generate("x"), (e) => e instanceof ConnectionError && !e.refused);
  });

  test("error responses map by code, with status, requestId and Retry-After", async () => {
    mode = {
      "/adil/v1/generate": (req, res) => sendError(res, 503, "busy", "one at a time", { "retry-after": "1" }),
      "/adil/v1/info": (req, res) => sendError(res, 503, "model_not_ready", "loading", { "retry-after": "1" }),
      "/health": (req, res) => sendError(res, 401, "permission_denied", "wrong API key"),
      "/v1/chat/completions": (req, res) => sendError(res, 418, "some_new_code", "new"),
    };
    await assert.rejects(client().generate("x"), (e) => e instanceof BusyError && e.status === 503
      && e.code === "busy" && e.retryAfter === 1 && e.requestId.startsWith("req_fake"));
    await assert.rejects(client().info(), (e) => e instanceof ModelNotReadyError && e.status === 503);
    await assert.rejects(client().health(), (e) => e instanceof PermissionDeniedError && e.status === 401);
    await assert.rejects(client().chat([]), (e) => e.constructor === AdilError && e.code === "some_new_code");
    assert.equal(errorClassForCode("host_refused").name, "ComponentRefusedError");
  });

  test("a non-JSON error body still maps by status", async () => {
    mode = { "/health": (req, res) => { res.writeHead(502); res.end("<html>bad gateway</html>"); } };
    await assert.rejects(client().health(), (e) => e.code === "internal_error" && e.status === 502);
  });

  test("chat sends OpenAI's shape and returns message, finishReason, usage", async () => {
    mode = {
      "/v1/chat/completions": (req, res) => sendJson(res, 200, {
        id: "chatcmpl-1", object: "chat.completion", choices: [{ index: 0,
          message: { role: "assistant", content: "Hi" }, finish_reason: "stop" }],
        usage: { prompt_tokens: 4, completion_tokens: 1, total_tokens: 5 },
      }),
    };
    const reply = await client().chat([{ role: "user", content: "Hello" }],
      { maxTokens: 5, toolChoice: "auto", tools: [] });
    assert.deepEqual(reply.message, { role: "assistant", content: "Hi" });
    assert.equal(reply.finishReason, "stop");
    assert.equal(reply.usage.total_tokens, 5);
    assert.ok(reply.requestId);
    assert.deepEqual(fake.requests.at(-1).body, {
      messages: [{ role: "user", content: "Hello" }], stream: false, max_tokens: 5, tools: [],
      tool_choice: "auto",
    });
  });

  // A stream that sends one piece and then nothing: the server sees its
  // connection close when the client gives up.
  const silentAfterOnePiece = async (req, res) => {
    startEvents(res);
    sendEvent(res, "piece", { text: "a", tokens: [1] });
  };

  test("read timeout: silence aborts the fetch (the server sees the close)", async () => {
    mode = { "/adil/v1/generate": silentAfterOnePiece };
    const started = Date.now();
    await assert.rejects(client({ timeoutMs: { read: 200 } }).generate("x"),
      (e) => e instanceof DeadlineError && e.limit === "read" && e.code === "timeout" && Boolean(e.requestId));
    assert.ok(Date.now() - started < 4000);
    const record = fake.requests.at(-1);
    await until(() => record.closedEarly);
  });

  test("total timeout across a stream that keeps sending", async () => {
    mode = {
      "/adil/v1/generate": async (req, res) => {
        startEvents(res);
        for (let i = 0; i < 100 && !res.destroyed; i++) {
          sendEvent(res, "piece", { text: ".", tokens: [i] });
          await sleep(50);
        }
        res.end();
      },
    };
    const stream = client({ timeoutMs: { read: 1000 } }).stream("x", { timeoutMs: { total: 300 } });
    const pieces = [];
    await assert.rejects(async () => { for await (const p of stream) pieces.push(p); },
      (e) => e instanceof DeadlineError && e.limit === "total");
    assert.ok(pieces.length >= 1 && pieces.length < 100);
    await until(() => fake.requests.at(-1).closedEarly);
  });

  test("abort via signal, before and during a stream", async () => {
    mode = { "/adil/v1/generate": silentAfterOnePiece };
    const early = new AbortController();
    early.abort(new Error("stop now"));
    await assert.rejects(client().generate("x", { signal: early.signal }),
      (e) => e instanceof CancelledError && e.code === "cancelled" && e.cause.message === "stop now");
    const controller = new AbortController();
    const stream = client().stream("x", { signal: controller.signal });
    await assert.rejects(async () => {
      for await (const piece of stream) {
        assert.equal(piece.text, "a");
        controller.abort();
      }
    }, CancelledError); // the signal's abort is an error of the loop (cancel() or break is not)
    await assert.rejects(stream.result, CancelledError);
    await until(() => fake.requests.at(-1).closedEarly);
  });

  test("leaving the loop early closes the request", async () => {
    mode = { "/adil/v1/generate": silentAfterOnePiece };
    const stream = client().stream("x");
    for await (const piece of stream) { void piece; break; }
    await assert.rejects(stream.result, CancelledError);
    await until(() => fake.requests.at(-1).closedEarly);
  });

  test("retries busy until it succeeds, never past the total deadline", async () => {
    let calls = 0;
    mode = {
      "/health": (req, res) => (++calls < 3 ? sendError(res, 503, "busy", "busy", { "retry-after": "0" })
        : sendJson(res, 200, { status: "ready" })),
    };
    const health = await client({ retry: { initialDelayMs: 10 } }).health();
    assert.equal(health.status, "ready");
    assert.equal(calls, 3);
    calls = -1000;
    await assert.rejects(client({ retry: { initialDelayMs: 50, maxDelayMs: 50 }, timeoutMs: 400 }).health(),
      BusyError); // the last busy, not a timeout: no sleep reaches into the deadline
  });
});

test("nothing listening: ConnectionError with refused", async () => {
  const server = net.createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  await assert.rejects(new AdilClient(`http://127.0.0.1:${port}`).generate("x"), (e) => {
    assert.ok(e instanceof ConnectionError);
    assert.equal(e.code, "connection_error");
    assert.equal(e.refused, true);
    assert.equal(e.status, null);
    return true;
  });
});

test("options are checked", () => {
  assert.throws(() => new AdilClient("localhost:1"), (e) => e.code === "invalid_argument");
  assert.throws(() => new AdilClient("http://x", { timeoutMs: { read: -1 } }), AdilError);
  assert.throws(() => new AdilClient("http://x").stream({}), AdilError);
});

test("chatStream: deltas, tool calls merged by index, usage, [DONE]", async () => {
  const chunk = (delta, finish = null) => ({ id: "c1", object: "chat.completion.chunk",
    choices: [{ index: 0, delta, finish_reason: finish }] });
  const fake = await startFake((req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    for (const data of [
      chunk({ role: "assistant", content: "" }), chunk({ content: "Let me " }), chunk({ content: "check." }),
      chunk({ tool_calls: [{ index: 0, id: "call_1", type: "function",
        function: { name: "get_weather", arguments: "{\"city\":" } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: " \"Oslo\"}" } }] }),
      chunk({}, "tool_calls"),
      { id: "c1", object: "chat.completion.chunk", choices: [], usage: { total_tokens: 9 } },
    ]) res.write(`data: ${JSON.stringify(data)}\n\n`);
    res.end("data: [DONE]\n\n");
  });
  try {
    const stream = new AdilClient(fake.url).chatStream([{ role: "user", content: "Weather?" }]);
    const text = [];
    for await (const piece of stream) text.push(piece.content);
    const reply = await stream.result;
    assert.equal(text.join(""), "Let me check.");
    assert.deepEqual(reply.message, { role: "assistant", content: "Let me check.", tool_calls: [
      { id: "call_1", type: "function", function: { name: "get_weather", arguments: "{\"city\": \"Oslo\"}" } },
    ] });
    assert.equal(reply.finishReason, "tool_calls");
    assert.deepEqual(reply.usage, { total_tokens: 9 });
    assert.ok(reply.requestId);
    const sent = fake.requests[0].body;
    assert.equal(sent.stream, true);
    assert.deepEqual(sent.stream_options, { include_usage: true });
  } finally {
    await fake.close();
  }
});

test("chatStream: an error chunk after the start rejects", async () => {
  const fake = await startFake((req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.end(`data: ${JSON.stringify({ error: { code: "output_validation_failed", message: "bad",
      type: "output_validation_failed", param: null, status: 422, request_id: "r1" } })}\n\n`);
  });
  try {
    const stream = new AdilClient(fake.url).chatStream([{ role: "user", content: "x" }]);
    await assert.rejects(async () => { for await (const p of stream) void p; },
      (e) => e instanceof OutputValidationError && e.status === 422 && e.requestId === "r1");
  } finally {
    await fake.close();
  }
});

test("an abort during a retry's sleep ends the call at once", async () => {
  const fake = await startFake((req, res) => sendError(res, 503, "busy", "busy", { "retry-after": "1" }));
  try {
    const controller = new AbortController();
    const client = new AdilClient(fake.url, { retry: { initialDelayMs: 1000, maxDelayMs: 1000 } });
    const call = client.health({ signal: controller.signal });
    await until(() => fake.requests.length === 1);
    controller.abort();
    await assert.rejects(call, CancelledError);
    assert.equal(fake.requests.length, 1);
  } finally {
    await fake.close();
  }
});
