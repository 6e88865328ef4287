// GenerationStream: the pieces of one streamed generation, read from the
// server as they come (the reading does not wait for the consumer, so the
// read deadline measures the server's silence only), and its result.

import { CancelledError, errorFromBody, InternalError } from "./errors.js";

const camel = (key) => key.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase());

function camelKeys(object) {
  if (!object || typeof object !== "object" || Array.isArray(object)) return object;
  return Object.fromEntries(Object.entries(object).map(([k, v]) => [camel(k), v]));
}

/** The non-stream body of /adil/v1/generate (or a done event's data) as the client's result. */
export function resultFromBody(body, requestId) {
  return {
    text: body.text,
    tokens: body.tokens,
    stopReason: body.stop_reason,
    stats: camelKeys(body.stats),
    value: body.value ?? null,
    cancelAcknowledged: Boolean(body.cancel_acknowledged),
    logprobs: body.logprobs ?? null,
    requestId,
  };
}

/** /adil/v1/generate's events: piece ..., then done or error. */
export function decodeGenerateEvent(event, attempt) {
  if (event.event === "piece") {
    const data = parseData(event.data, attempt);
    return { piece: { text: data.text ?? "", tokens: data.tokens ?? [], logprobs: data.logprobs ?? null } };
  }
  if (event.event === "done") return { result: resultFromBody(parseData(event.data, attempt), attempt.requestId) };
  if (event.event === "error") throw eventError(parseData(event.data, attempt), attempt);
  return null; // an event this version does not know: ignored
}

/**
 * A decoder of /v1/chat/completions' stream (`data: {chunk}` ... `data: [DONE]`): pieces
 * {content, toolCalls, finishReason, chunk}; the result is chat()'s, assembled from the deltas.
 */
export function chatDecoder() {
  const message = { role: "assistant", content: "" };
  const calls = [];
  let finishReason = null;
  let usage = null;
  return (event, attempt) => {
    if (event.data === "[DONE]") {
      if (calls.length > 0) message.tool_calls = calls.filter(Boolean);
      return { result: { message, finishReason, usage, requestId: attempt.requestId, raw: null } };
    }
    const chunk = parseData(event.data, attempt);
    if (chunk.error) throw eventError(chunk, attempt);
    usage = chunk.usage ?? usage;
    const choice = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined;
    if (!choice) return null;
    const delta = choice.delta ?? {};
    if (typeof delta.content === "string") message.content += delta.content;
    for (const call of delta.tool_calls ?? []) mergeToolCall(calls, call);
    finishReason = choice.finish_reason ?? finishReason;
    return { piece: { content: delta.content ?? "", toolCalls: delta.tool_calls ?? null,
      finishReason: choice.finish_reason ?? null, chunk } };
  };
}

// OpenAI streams a tool call in parts by index: the id and name once, the
// arguments as text pieces to concatenate.
function mergeToolCall(calls, part) {
  const index = Number.isInteger(part.index) ? part.index : calls.length;
  const call = calls[index] ??= { id: null, type: "function", function: { name: "", arguments: "" } };
  if (part.id) call.id = part.id;
  if (part.type) call.type = part.type;
  if (part.function?.name) call.function.name += part.function.name;
  if (part.function?.arguments) call.function.arguments += part.function.arguments;
}

function eventError(data, attempt) {
  return errorFromBody(data.error, { requestId: attempt.requestId, status: data.error?.status ?? null });
}

export class GenerationStream {
  /**
   * @param {AbortController} closer aborting it closes the request
   * @param {(sink: object) => Promise<void>} run reads the stream, feeding the sink
   * @param {(event: object, attempt: object) => ({piece?: object, result?: object}|null)} decode
   *   one event: a piece, or the result (the end); throws the error an event carries
   */
  constructor(closer, run, decode = decodeGenerateEvent) {
    this.closer = closer;
    this.decode = decode;
    this.requestId = null;
    this.items = [];
    this.waiter = null;
    this.finished = false;
    this.error = null;
    this.errorThrown = false;
    this.cancelled = false;
    this.result = new Promise((resolve, reject) => {
      this.resolveResult = resolve;
      this.rejectResult = reject;
    });
    this.result.catch(() => {}); // awaited or not: never an unhandled rejection
    const sink = {
      started: (attempt) => { this.requestId = attempt.requestId; },
      take: (event, attempt) => this.#take(event, attempt),
    };
    run(sink).then(() => this.#finish(null), (error) => this.#finish(error));
  }

  // One event from the server; true once the stream is complete.
  #take(event, attempt) {
    const step = this.decode(event, attempt);
    if (step?.piece) this.#push(step.piece);
    if (step?.result) {
      this.resolveResult(step.result);
      return true;
    }
    return false;
  }

  #push(item) {
    this.items.push(item);
    this.#wake();
  }

  #wake() {
    const waiter = this.waiter;
    this.waiter = null;
    if (waiter) waiter();
  }

  #finish(error) {
    if (error) {
      this.error = error;
      this.rejectResult(error);
    }
    this.finished = true;
    this.#wake();
  }

  /** Stops the generation: closes the request (the server cancels the run). */
  cancel() {
    this.cancelled = true;
    if (!this.finished) this.closer.abort(new CancelledError("the stream was cancelled"));
  }

  async next() {
    while (this.items.length === 0 && !this.finished) {
      await new Promise((resolve) => { this.waiter = resolve; });
    }
    if (this.items.length > 0) return { value: this.items.shift(), done: false };
    if (this.error && !this.errorThrown && !(this.cancelled && this.error instanceof CancelledError)) {
      this.errorThrown = true;
      throw this.error;
    }
    return { value: undefined, done: true };
  }

  async return() {
    if (!this.finished) this.cancel();
    return { value: undefined, done: true };
  }

  [Symbol.asyncIterator]() {
    return this;
  }
}

function parseData(text, attempt) {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new InternalError(`an event's data is not JSON: ${text.slice(0, 200)}`,
      { status: attempt.status, requestId: attempt.requestId, cause: error });
  }
}
