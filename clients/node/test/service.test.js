// The Node client against the real `adil serve` on the stub engine: every
// call and error row the client sees, over HTTP.  The servers are started
// here (testing/adil_serve.js); ADIL_LIBRARY_DIR names the stub's directory.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import {
  AdilClient, AdilError, BusyError, CancelledError, ConnectionError, ContextLengthError, DeadlineError,
  PermissionDeniedError,
} from "../src/index.js";
import { startServe, unavailable } from "../testing/adil_serve.js";

const API_KEY = "node-test-key";
const TEXT = "Hello from the stub.";
const turns = (n, text) => Array.from({ length: n }, () => ({ text }));
// The slow model: 50 ms before each token (one byte, one token), 200 tokens a run.
const SLOW_TEXT = "abcdefghij".repeat(20);
// Several retries, a little apart, bounded by the total deadline: "served at
// once" means within a few polls, not after the uncancelled run's 10 s.
const PROMPT_RETRY = { maxRetries: 40, initialDelayMs: 20, maxDelayMs: 100 };


async function ready(client) {
  for (let i = 0; i < 200; i++) {
    const health = await client.health();
    if (health.status === "ready") return health;
    if (health.status === "failed") throw new Error(`the model failed to load: ${JSON.stringify(health)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error("the model was not ready in 10 s");
}

describe("adil serve (stub engine)", { skip: unavailable() ?? false }, () => {
  let fast;
  let slow;
  let client;
  let slowClient;

  before(async () => {
    [fast, slow] = await Promise.all([
      startServe({ turns: turns(80, TEXT), context_length: 256 }, ["--api-key", API_KEY]),
      startServe({ turns: turns(60, SLOW_TEXT), token_delay_ms: 50 }),
    ]);
    const timeoutMs = { read: 10_000, total: 30_000 };
    // No retries: the server frees the slot before an answer's last bytes,
    // so a request sent the moment the previous one ended never meets busy.
    client = new AdilClient(fast.url, { apiKey: API_KEY, timeoutMs });
    slowClient = new AdilClient(slow.url, { timeoutMs });
    await Promise.all([ready(client), ready(slowClient)]);
  });

  after(async () => {
    await Promise.all([fast?.stop(), slow?.stop()]);
  });

  test("health and info report the stub's component set", async () => {
    const health = await client.health();
    assert.equal(health.status, "ready");
    assert.equal(health.error, null);
    assert.equal(health.components.abi_major, 2);
    const info = await client.info();
    assert.equal(typeof info.model, "object");
    assert.equal(info.components.abi_major, 2);
  });

  test("generate returns text, tokens, stop reason, stats and a request id", async () => {
    const result = await client.generate("Hi", { maxTokens: 64, requestId: "node-generate-1" });
    assert.equal(result.text, TEXT);
    assert.equal(result.tokens.length, Buffer.byteLength(TEXT));
    assert.equal(typeof result.stopReason, "string");
    assert.equal(result.stats.nGenerated, result.tokens.length);
    assert.equal(result.cancelAcknowledged, false);
    assert.equal(result.requestId, "node-generate-1");
  });

  test("stream yields the pieces of the result", async () => {
    const stream = client.stream("Hi", { maxTokens: 64 });
    const pieces = [];
    for await (const piece of stream) pieces.push(piece);
    const result = await stream.result;
    assert.ok(pieces.length >= 1);
    assert.equal(pieces.map((p) => p.text).join(""), result.text);
    assert.deepEqual(pieces.flatMap((p) => p.tokens), result.tokens);
    assert.equal(result.text, TEXT);
    assert.match(stream.requestId, /^req_[0-9a-f]{24}$/);
  });

  test("chat answers in OpenAI's shape", async () => {
    const reply = await client.chat([{ role: "user", content: "Hello" }], { maxTokens: 64 });
    assert.equal(reply.message.role, "assistant");
    assert.equal(reply.message.content, TEXT);
    assert.equal(reply.finishReason, "stop");
    assert.equal(reply.usage.completion_tokens, Buffer.byteLength(TEXT));
    assert.ok(reply.requestId);
  });

  test("chatStream streams the same answer", async () => {
    const stream = client.chatStream([{ role: "user", content: "Hello" }], { maxTokens: 64 });
    let text = "";
    for await (const piece of stream) text += piece.content;
    const reply = await stream.result;
    assert.equal(text, TEXT);
    assert.equal(reply.message.content, TEXT);
    assert.equal(reply.finishReason, "stop");
    assert.equal(reply.usage.completion_tokens, Buffer.byteLength(TEXT));
  });

  test("a wrong or missing API key: permission_denied, 401", async () => {
    for (const apiKey of ["wrong", null]) {
      const other = new AdilClient(fast.url, { apiKey });
      await assert.rejects(other.generate("Hi"), (error) => {
        assert.ok(error instanceof PermissionDeniedError);
        assert.equal(error.code, "permission_denied");
        assert.equal(error.status, 401);
        assert.ok(error.requestId);
        return true;
      });
    }
  });

  test("a page's Origin that is not allowed: permission_denied, 403, nothing runs", async () => {
    const page = new AdilClient(fast.url, { apiKey: API_KEY, headers: { origin: "http://evil.example" } });
    await assert.rejects(page.generate("Hi"), (error) => error instanceof PermissionDeniedError
      && error.status === 403 && /evil\.example/.test(error.message) && Boolean(error.requestId));
    // The turn it would have taken is still the next one.
    assert.equal((await client.generate("Hi", { maxTokens: 64 })).text, TEXT);
  });

  test("a prompt longer than the context: context_length_exceeded, 400", async () => {
    await assert.rejects(client.generate("x".repeat(1000)), (error) => error instanceof ContextLengthError
      && error.status === 400 && error.code === "context_length_exceeded" && Boolean(error.requestId));
  });

  test("back-to-back generations never meet busy", async () => {
    for (let i = 0; i < 20; i++) assert.equal((await client.generate("Hi", { maxTokens: 2 })).tokens.length, 2);
  });

  test("two generations at once: one runs, the other is busy (503, request id)", async () => {
    const runs = await Promise.allSettled([
      slowClient.generate("a", { maxTokens: 40 }), slowClient.generate("b", { maxTokens: 40 }),
    ]);
    const failed = runs.filter((r) => r.status === "rejected");
    assert.equal(failed.length, 1, JSON.stringify(runs.map((r) => r.status)));
    const error = failed[0].reason;
    assert.ok(error instanceof BusyError, String(error));
    assert.equal(error.status, 503);
    assert.equal(error.code, "busy");
    assert.equal(error.retryAfter, 1);
    assert.ok(error.requestId);
    const done = runs.find((r) => r.status === "fulfilled").value;
    assert.equal(done.tokens.length, 40);
  });

  // After a run the client gave up on, the next request is served promptly:
  // the server cancelled that run (uncancelled, it would hold the slot 10 s).
  async function servedPromptly() {
    const next = new AdilClient(slow.url, { retry: PROMPT_RETRY, timeoutMs: { total: 5000 } });
    const result = await next.generate("next", { maxTokens: 2 });
    assert.equal(result.tokens.length, 2);
  }

  test("total timeout: DeadlineError, and the server cancelled exactly that run", async () => {
    await assert.rejects(slowClient.generate("long", { timeoutMs: { total: 300 } }), (error) => {
      assert.ok(error instanceof DeadlineError, String(error));
      assert.equal(error.code, "timeout");
      assert.equal(error.limit, "total");
      assert.ok(error.requestId);
      return true;
    });
    await servedPromptly();
  });

  test("read timeout on a silent server: DeadlineError(read)", async () => {
    // 50 ms between tokens against a 20 ms read bound.
    await assert.rejects(slowClient.generate("long", { timeoutMs: { read: 20 } }),
      (error) => error instanceof DeadlineError && error.limit === "read");
    await servedPromptly();
  });

  test("abort via signal mid-stream: CancelledError, the run is cancelled", async () => {
    const controller = new AbortController();
    const stream = slowClient.stream("long", { signal: controller.signal });
    let pieces = 0;
    await assert.rejects(async () => {
      for await (const piece of stream) {
        void piece;
        if (++pieces === 2) controller.abort();
      }
    }, CancelledError);
    await assert.rejects(stream.result, (error) => error instanceof CancelledError && error instanceof AdilError);
    await servedPromptly();
  });

  test("leaving a stream early cancels the run", async () => {
    const stream = slowClient.stream("long");
    for await (const piece of stream) { void piece; break; }
    await servedPromptly();
  });

  test("the server killed mid-stream: ConnectionError (not refused); then refused", async () => {
    const stream = slowClient.stream("long");
    const iterator = stream[Symbol.asyncIterator]();
    await iterator.next();
    await slow.stop("SIGKILL");
    await assert.rejects(stream.result, (error) => error instanceof ConnectionError && !error.refused
      && error.code === "connection_error");
    await assert.rejects(slowClient.health(), (error) => error instanceof ConnectionError && error.refused);
  });
});
