// AdilClient: the Node.js host of an `adil serve` service (or any server of
// the same wire contract).  No dependencies: fetch, AbortSignal, timers.

import { BusyError, InvalidArgumentError, ModelNotReadyError, ServiceConnectionError } from "./errors.js";
import { parseEvents } from "./sse.js";
import { Attempt, Clock } from "./transport.js";
import { GenerationStream, chatDecoder, decodeGenerateEvent } from "./stream.js";

const SAMPLING_KEYS = {
  temperature: "temperature", topK: "top_k", topP: "top_p", minP: "min_p",
  repeatPenalty: "repeat_penalty", repeatLastN: "repeat_last_n", seed: "seed",
};

/**
 * @typedef {{read?: number|null, total?: number|null}} TimeoutMs
 * @typedef {{maxRetries?: number, initialDelayMs?: number, maxDelayMs?: number,
 *            multiplier?: number, jitter?: number}} RetryOptions
 */

export class AdilClient {
  /**
   * @param {string} baseUrl e.g. "http://127.0.0.1:8765"
   * @param {{timeoutMs?: TimeoutMs|number, apiKey?: string|null, headers?: Record<string,string>,
   *          retry?: RetryOptions|null}} [options]
   */
  constructor(baseUrl, options = {}) {
    if (typeof baseUrl !== "string" || !/^https?:\/\//.test(baseUrl)) {
      throw new InvalidArgumentError(`baseUrl must be an http(s) URL, got ${JSON.stringify(baseUrl)}`);
    }
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.timeoutMs = normalizeTimeout(options.timeoutMs, { read: null, total: null });
    this.apiKey = options.apiKey ?? null;
    this.headers = { ...(options.headers ?? {}) };
    this.retry = options.retry ? normalizeRetry(options.retry) : null;
  }

  /** GET /health: {status: "loading"|"ready"|"failed", error, model, components}. */
  async health(opts = {}) {
    return (await this.#call("GET", "/health", undefined, opts)).body;
  }

  /** GET /adil/v1/info: {model, components} (model_not_ready while loading). */
  async info(opts = {}) {
    return (await this.#call("GET", "/adil/v1/info", undefined, opts)).body;
  }

  /** POST /adil/v1/tokenize -> the token ids. */
  async tokenize(text, opts = {}) {
    const body = { text, add_bos: opts.addBos ?? null, special: opts.special ?? false };
    return (await this.#call("POST", "/adil/v1/tokenize", body, opts)).body.tokens;
  }

  /** POST /adil/v1/detokenize -> the text. */
  async detokenize(tokens, opts = {}) {
    const body = { tokens, special: opts.special ?? false };
    return (await this.#call("POST", "/adil/v1/detokenize", body, opts)).body.text;
  }

  /**
   * A whole generation: {text, tokens, stopReason, stats, value, cancelAcknowledged, logprobs,
   * requestId}.  Streams underneath, so `timeoutMs.read` bounds the silence between tokens.
   */
  async generate(prompt, opts = {}) {
    const stream = this.stream(prompt, opts);
    for await (const piece of stream) void piece;
    return stream.result;
  }

  /**
   * A streamed generation: an async iterable of pieces {text, tokens, logprobs}; `result`
   * (a promise) settles with generate()'s result once the stream ended, or with its error.
   * Leaving the loop early (break) or `cancel()` closes the request: the server cancels the run.
   */
  stream(prompt, opts = {}) {
    return this.#eventStream("/adil/v1/generate", generateBody(prompt, opts), opts, decodeGenerateEvent);
  }

  // A streamed call: the request, its events decoded into pieces and a result.
  #eventStream(path, body, opts, decode) {
    // One controller closes the request: the caller's signal, cancel(), or leaving the loop.
    const closer = new AbortController();
    const user = opts.signal;
    const forward = () => closer.abort(user.reason);
    if (user?.aborted) forward();
    else user?.addEventListener("abort", forward, { once: true });
    return new GenerationStream(closer, async (sink) => {
      let exchange = null;
      let done = false;
      try {
        exchange = await this.#open("POST", path, body, { ...opts, signal: closer.signal },
          "text/event-stream");
        sink.started(exchange.attempt);
        // After the done event the body ends: read it to its end, so the
        // connection is reused rather than closed under the server.
        for await (const event of parseEvents(exchange.attempt.chunks(exchange.response))) {
          if (!done) done = sink.take(event, exchange.attempt);
        }
        if (done) return;
        throw new ServiceConnectionError("the stream ended before its last event",
          { status: exchange.response.status, requestId: exchange.attempt.requestId });
      } catch (error) {
        if (done) return; // the result is in: a failure while draining the rest does not matter
        throw exchange ? exchange.attempt.failure(error) : error;
      } finally {
        exchange?.attempt.close();
        user?.removeEventListener("abort", forward);
      }
    }, decode);
  }

  /**
   * POST /v1/chat/completions (OpenAI's shape): {message, finishReason, usage, requestId, raw}.
   * @param {Array<object>} messages OpenAI-style messages ({role, content, ...})
   */
  async chat(messages, opts = {}) {
    const { body, requestId } = await this.#call("POST", "/v1/chat/completions",
      chatBody(messages, opts), opts);
    const choice = Array.isArray(body.choices) ? body.choices[0] ?? {} : {};
    return {
      message: choice.message ?? null,
      finishReason: choice.finish_reason ?? null,
      usage: body.usage ?? null,
      requestId,
      raw: body,
    };
  }

  /**
   * POST /v1/chat/completions with stream: true: an async iterable of deltas {content, toolCalls,
   * finishReason, chunk}; `result` settles with chat()'s result (message assembled, usage, requestId).
   */
  chatStream(messages, opts = {}) {
    const body = { ...chatBody(messages, opts), stream: true, stream_options: { include_usage: true } };
    return this.#eventStream("/v1/chat/completions", body, opts, chatDecoder());
  }

  // One JSON call: the request, retried where allowed, and its JSON answer.
  async #call(method, path, body, opts) {
    const exchange = await this.#open(method, path, body, opts, "application/json");
    try {
      const json = await exchange.attempt.json(exchange.response);
      return { body: json, requestId: exchange.attempt.requestId };
    } finally {
      exchange.attempt.close();
    }
  }

  // Sends the request until a 2xx head arrives: retries busy, model not
  // ready and refused connections (with backoff, never past the total
  // deadline); any other error is thrown.  The caller closes the attempt.
  async #open(method, path, body, opts, accept) {
    const clock = new Clock(normalizeTimeout(opts.timeoutMs, this.timeoutMs));
    const init = { method, headers: this.#headers(opts, accept, body !== undefined) };
    if (body !== undefined) init.body = JSON.stringify(body);
    for (let retry = 0; ; retry++) {
      if (clock.remaining() <= 0) throw clock.expired();
      const attempt = new Attempt(clock, opts.signal);
      let error;
      try {
        const response = await attempt.open(this.baseUrl + path, init);
        if (response.ok) return { response, attempt };
        error = await attempt.errorOf(response);
      } catch (caught) {
        error = attempt.failure(caught);
      }
      attempt.close();
      const delay = this.#retryDelay(error, retry, clock);
      if (delay === null) throw error;
      await sleep(delay, opts.signal); // an abort ends the sleep; the next attempt then fails at once
    }
  }

  #retryDelay(error, retry, clock) {
    const policy = this.retry;
    if (!policy || retry >= policy.maxRetries || !isRetryable(error)) return null;
    const base = Math.min(policy.maxDelayMs, policy.initialDelayMs * policy.multiplier ** Math.min(retry, 64));
    let delay = base * (1 - policy.jitter * Math.random());
    if (error.retryAfter !== null && error.retryAfter !== undefined) {
      delay = Math.max(delay, Math.min(error.retryAfter * 1000, policy.maxDelayMs));
    }
    return delay < clock.remaining() ? delay : null; // never sleep into the total deadline
  }

  #headers(opts, accept, hasBody) {
    const headers = { accept, ...this.headers, ...(opts.headers ?? {}) };
    if (hasBody) headers["content-type"] = "application/json";
    if (this.apiKey !== null) headers.authorization = `Bearer ${this.apiKey}`;
    if (opts.requestId) headers["x-request-id"] = opts.requestId;
    return headers;
  }
}

/** Busy, model not ready, or a refused connection: the retryable failures. */
export function isRetryable(error) {
  if (error instanceof BusyError || error instanceof ModelNotReadyError) return true;
  return error instanceof ServiceConnectionError && error.refused;
}

function sleep(ms, signal) {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}

function normalizeTimeout(value, fallback) {
  if (value === undefined || value === null) return { ...fallback };
  if (typeof value === "number") return { read: fallback.read, total: checkMs("timeoutMs", value) };
  if (typeof value !== "object") {
    throw new InvalidArgumentError("timeoutMs must be a number (total) or {read, total}");
  }
  return {
    read: value.read === undefined ? fallback.read : checkMs("timeoutMs.read", value.read),
    total: value.total === undefined ? fallback.total : checkMs("timeoutMs.total", value.total),
  };
}

function checkMs(name, value) {
  if (value === null) return null;
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
    throw new InvalidArgumentError(`${name} must be a positive number of milliseconds or null, got ${value}`);
  }
  return value;
}

function normalizeRetry(retry) {
  const policy = {
    maxRetries: retry.maxRetries ?? 5, initialDelayMs: retry.initialDelayMs ?? 50,
    maxDelayMs: retry.maxDelayMs ?? 2000, multiplier: retry.multiplier ?? 2, jitter: retry.jitter ?? 0.5,
  };
  const ok = Number.isInteger(policy.maxRetries) && policy.maxRetries >= 0
    && policy.initialDelayMs > 0 && policy.initialDelayMs <= policy.maxDelayMs
    && policy.multiplier >= 1 && policy.jitter >= 0 && policy.jitter < 1;
  if (!ok) throw new InvalidArgumentError(`invalid retry options: ${JSON.stringify(retry)}`);
  return policy;
}

function generateBody(prompt, opts) {
  if (typeof prompt !== "string" && !(Array.isArray(prompt) && prompt.every(Number.isInteger))) {
    throw new InvalidArgumentError("prompt must be a string or an array of token ids");
  }
  const body = { prompt, stream: true };
  const sampling = {};
  for (const source of [opts, opts.sampling ?? {}]) {
    for (const [camel, snake] of Object.entries(SAMPLING_KEYS)) {
      if (source[camel] !== undefined) sampling[snake] = source[camel];
      if (source[snake] !== undefined) sampling[snake] = source[snake];
    }
  }
  if (Object.keys(sampling).length > 0) body.sampling = sampling;
  copy(body, opts, { maxTokens: "max_tokens", stop: "stop", stopTokens: "stop_tokens", schema: "schema",
    constraint: "constraint", logprobs: "logprobs", ignoreEos: "ignore_eos" });
  return body;
}

function chatBody(messages, opts) {
  if (!Array.isArray(messages)) throw new InvalidArgumentError("messages must be an array");
  const body = { messages, stream: false };
  copy(body, opts, { model: "model", maxTokens: "max_tokens", temperature: "temperature", topP: "top_p",
    seed: "seed", stop: "stop", tools: "tools", toolChoice: "tool_choice",
    responseFormat: "response_format", logprobs: "logprobs", topLogprobs: "top_logprobs" });
  return { ...body, ...(opts.extraBody ?? {}) };
}

function copy(target, source, names) {
  for (const [from, to] of Object.entries(names)) {
    if (source[from] !== undefined) target[to] = source[from];
  }
}
