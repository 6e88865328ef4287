// The remaining error rows of the product page, from the real `adil serve`
// on scripted stub engines: model not ready (then served on retry),
// capability, output validation, host refusal.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import net from "node:net";
import readline from "node:readline";
import path from "node:path";
import { after, before, describe, test } from "node:test";

import {
  AdilClient, AdilError, CapabilityError, DeadlineError, ComponentRefusedError, ModelNotReadyError, OutputValidationError,
} from "../src/index.js";
import { startServe, unavailable } from "../testing/adil_serve.js";

// The stub that refuses the host is a test variant (-DADIL_TEST_VARIANTS=ON).
const refusing = process.env.ADIL_LIBRARY_DIR
  && path.join(process.env.ADIL_LIBRARY_DIR, "libadil_stub_refuses_host.so");
const noRefusing = refusing && !existsSync(refusing)
  ? `${refusing} is not built (configure with -DADIL_TEST_VARIANTS=ON)` : false;

describe("adil serve error rows (stub engine)", { skip: unavailable() ?? false }, () => {
  const servers = {};

  before(async () => {
    const [notReady, capability, validation, refused] = await Promise.all([
      startServe({ turns: [{ text: "ready now" }], faults: [{ not_ready_ms: 3000 }] }),
      startServe({ turns: [{ text: "ok" }, { text: "ok" }], faults: [{ on_call: 1, status: "capability" }] }),
      startServe({ turns: [{ text: "{\"a\": 1" }] }),
      noRefusing ? null : startServe({ turns: [{ text: "ok" }] }, ["--library", refusing]),
    ]);
    Object.assign(servers, { notReady, capability, validation, refused });
  });

  after(async () => {
    await Promise.all(Object.values(servers).map((server) => server?.stop()));
  });

  test("model not ready: ModelNotReadyError 503 with Retry-After; served on retry", async () => {
    const client = new AdilClient(servers.notReady.url);
    await assert.rejects(client.generate("x"), (error) => {
      assert.ok(error instanceof ModelNotReadyError, String(error));
      assert.equal(error.code, "model_not_ready");
      assert.equal(error.status, 503);
      assert.equal(error.retryAfter, 1);
      assert.ok(error.requestId);
      return true;
    });
    const patient = new AdilClient(servers.notReady.url,
      { retry: { maxRetries: 100, initialDelayMs: 100, maxDelayMs: 500 }, timeoutMs: { total: 20_000 } });
    assert.equal((await patient.generate("x")).text, "ready now");
  });

  test("capability: CapabilityError 501", async () => {
    const client = new AdilClient(servers.capability.url);
    await assert.rejects(client.generate("x"), (error) => error instanceof CapabilityError
      && error.code === "unsupported_capability" && error.status === 501 && Boolean(error.requestId));
  });

  test("output validation: OutputValidationError 422 with the text so far", async () => {
    const client = new AdilClient(servers.validation.url);
    const schema = { type: "object", properties: { a: { type: "integer" } }, required: ["a"] };
    await assert.rejects(client.generate("x", { schema, maxTokens: 64 }), (error) => {
      assert.ok(error instanceof OutputValidationError, String(error));
      assert.equal(error.code, "output_validation_failed");
      assert.equal(error.status, 422);
      assert.equal(error.text, "{\"a\": 1");
      assert.ok(error.requestId);
      return true;
    });
  });

  test("host refusal: health says failed; operations get host_refused 503", { skip: noRefusing }, async () => {
    const client = new AdilClient(servers.refused.url);
    let health;
    for (let i = 0; i < 200; i++) {
      health = await client.health();
      if (health.status !== "loading") break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.equal(health.status, "failed");
    assert.equal(health.error.code, "host_refused");
    await assert.rejects(client.generate("x"), (error) => error instanceof ComponentRefusedError
      && error instanceof AdilError && error.code === "host_refused" && error.status === 503);
  });
});

// A port that accepts no connection: a socket that listens with a full
// backlog and never accepts (SYNs are dropped), so connecting hangs.
test("connecting to a blackholed port: DeadlineError from the read deadline", { skip: unavailable() ?? false },
  async () => {
    const holder = spawn(process.env.PYTHON ?? "python3", ["-c", [
      "import socket, sys",
      "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(0)",
      "print(s.getsockname()[1], flush=True)",
      "sys.stdin.read()",
    ].join("\n")], { stdio: ["pipe", "pipe", "inherit"] });
    const fillers = [];
    try {
      const lines = readline.createInterface({ input: holder.stdout });
      const port = Number(await new Promise((resolve) => lines.once("line", resolve)));
      // Fill the accept queue (backlog 0 holds one; two to be sure).
      for (let i = 0; i < 2; i++) {
        const socket = net.connect(port, "127.0.0.1");
        socket.on("error", () => {});
        fillers.push(socket);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
      const client = new AdilClient(`http://127.0.0.1:${port}`, { timeoutMs: { read: 300, total: 5000 } });
      await assert.rejects(client.health(), (error) => error instanceof DeadlineError
        && error.limit === "read" && error.status === null);
    } finally {
      fillers.forEach((socket) => socket.destroy());
      holder.stdin.end();
      holder.kill();
    }
  });
