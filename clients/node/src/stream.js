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

export class GenerationStream {
  /** @param {(sink: object) => Promise<void>} run reads the stream, feeding the sink */
  constructor(closer, run) {
    this.closer = closer;
    this.requestId = null;
    this.attempt = null;
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
      started: (attempt) => {
        this.attempt = attempt;
        this.requestId = attempt.requestId;
      },
      take: (event, attempt) => this.#take(event, attempt),
    };
    run(sink).then(() => this.#finish(null), (error) => this.#finish(error));
  }

  // One event from the server; true once the stream is complete.
  #take(event, attempt) {
    const data = parseData(event.data, attempt);
    if (event.event === "piece") {
      this.#push({ text: data.text ?? "", tokens: data.tokens ?? [], logprobs: data.logprobs ?? null });
      return false;
    }
    if (event.event === "done") {
      this.resolveResult(resultFromBody(data, attempt.requestId));
      return true;
    }
    if (event.event === "error") {
      throw errorFromBody(data.error, { requestId: attempt.requestId, status: data.error?.status ?? null });
    }
    return false; // an event this version does not know: ignored
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
