// One HTTP exchange over fetch, with the client's deadlines: `total` bounds
// the whole call (all attempts, the streamed body included), `read` bounds
// each wait for the server (the response head, then every body chunk).  A
// deadline, the caller's AbortSignal, or closing a stream aborts exactly
// this fetch: its connection closes and the server cancels that run only.

import {
  AdilError, CancelledError, DeadlineError, InternalError, ServiceConnectionError, errorFromBody,
} from "./errors.js";

/** Why an attempt's controller was aborted (its signal's reason). */
class Stop {
  constructor(kind, detail) {
    this.kind = kind; // "read" | "total" | "cancel"
    this.detail = detail;
  }
}

/** The deadlines of one call: an absolute end (total) and a silence bound (read). */
export class Clock {
  /** @param {{read?: number|null, total?: number|null}} timeoutMs */
  constructor(timeoutMs) {
    this.read = timeoutMs.read ?? null;
    this.total = timeoutMs.total ?? null;
    this.end = this.total === null ? Infinity : Date.now() + this.total;
  }

  remaining() {
    return this.end - Date.now();
  }

  expired() {
    return new DeadlineError(`the total timeout of ${this.total} ms expired`, { limit: "total" });
  }
}

/**
 * One request on the wire.  `open()` sends it and waits for the head;
 * `chunks()` reads the body; `close()` frees the timers (always call it).
 */
export class Attempt {
  constructor(clock, signal) {
    this.clock = clock;
    this.userSignal = signal ?? null;
    this.controller = new AbortController();
    this.requestId = null;
    this.status = null;
    this.readTimer = null;
    this.totalTimer = null;
    this.onUserAbort = () => this.controller.abort(new Stop("cancel", this.userSignal.reason));
    if (this.userSignal) {
      if (this.userSignal.aborted) this.onUserAbort();
      else this.userSignal.addEventListener("abort", this.onUserAbort, { once: true });
    }
    const remaining = clock.remaining();
    if (remaining !== Infinity) {
      this.totalTimer = setTimeout(() => this.controller.abort(new Stop("total")), Math.max(0, remaining));
    }
  }

  armRead() {
    this.disarmRead();
    if (this.clock.read !== null) {
      this.readTimer = setTimeout(() => this.controller.abort(new Stop("read")), this.clock.read);
    }
  }

  disarmRead() {
    if (this.readTimer !== null) clearTimeout(this.readTimer);
    this.readTimer = null;
  }

  /** Sends the request; returns the Response whatever its status. */
  async open(url, init) {
    if (this.controller.signal.aborted) throw this.failure(null);
    this.armRead();
    try {
      const response = await fetch(url, { ...init, signal: this.controller.signal });
      this.requestId = response.headers.get("x-request-id");
      this.status = response.status;
      return response;
    } catch (error) {
      throw this.failure(error);
    } finally {
      this.disarmRead();
    }
  }

  /** The body's chunks, each wait bounded by the read deadline. */
  async *chunks(response) {
    if (!response.body) return;
    const reader = response.body.getReader();
    try {
      for (;;) {
        this.armRead();
        let step;
        try {
          step = await reader.read();
        } catch (error) {
          throw this.failure(error);
        } finally {
          this.disarmRead();
        }
        if (step.done) return;
        yield step.value;
      }
    } finally {
      // Stopped early (an error, or the caller had what it needed): let go
      // of the body; a run still going is cancelled by the server.
      reader.cancel().catch(() => {});
    }
  }

  /** The whole body as text (bounded by the deadlines). */
  async text(response) {
    const decoder = new TextDecoder("utf-8");
    let text = "";
    for await (const chunk of this.chunks(response)) text += decoder.decode(chunk, { stream: true });
    return text + decoder.decode();
  }

  /** The body as JSON; a body that is not JSON is an internal_error. */
  async json(response) {
    const text = await this.text(response);
    try {
      return JSON.parse(text);
    } catch (error) {
      throw new InternalError(`the server's answer is not JSON: ${text.slice(0, 200)}`, {
        status: this.status, requestId: this.requestId, cause: error,
      });
    }
  }

  /** The error of a response whose status is not 2xx. */
  async errorOf(response) {
    const retryAfter = parseRetryAfter(response.headers.get("retry-after"));
    const context = { status: response.status, requestId: this.requestId, retryAfter };
    let text = "";
    try {
      text = await this.text(response);
      const body = JSON.parse(text);
      if (body && typeof body === "object" && body.error && typeof body.error === "object") {
        return errorFromBody(body.error, context);
      }
    } catch (error) {
      if (error instanceof AdilError) return error;
    }
    const code = FALLBACK_CODES[response.status] ?? "internal_error";
    return errorFromBody({ code, message: `HTTP ${response.status}: ${text.slice(0, 200)}` }, context);
  }

  /** The SDK error for a failure of fetch or of a body read. */
  failure(error) {
    const fields = { status: this.status, requestId: this.requestId, cause: error ?? undefined };
    const stop = this.controller.signal.aborted ? this.controller.signal.reason : null;
    if (stop instanceof Stop) {
      if (stop.kind === "read") {
        return new DeadlineError(`no data from the server for ${this.clock.read} ms (read timeout)`,
          { ...fields, limit: "read" });
      }
      if (stop.kind === "total") {
        return new DeadlineError(`the total timeout of ${this.clock.total} ms expired`,
          { ...fields, limit: "total" });
      }
      // The caller's signal (or the stream's cancel()): the reason is the cause.
      return new CancelledError("the request was aborted", { ...fields, cause: stop.detail });
    }
    if (error instanceof AdilError) return error;
    return connectionError(error, fields);
  }

  close() {
    this.disarmRead();
    if (this.totalTimer !== null) clearTimeout(this.totalTimer);
    this.totalTimer = null;
    if (this.userSignal) this.userSignal.removeEventListener("abort", this.onUserAbort);
  }
}

const FALLBACK_CODES = {
  400: "invalid_argument", 401: "permission_denied", 403: "permission_denied", 413: "invalid_argument",
  422: "output_validation_failed", 501: "unsupported_capability", 503: "model_not_ready",
  504: "timeout", 507: "out_of_memory",
};

function parseRetryAfter(value) {
  if (value === null) return null;
  const seconds = Number(value);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds : null;
}

// fetch reports network failures as TypeError("fetch failed") with the
// socket error as its cause (an AggregateError when several addresses
// were tried); a dropped body as TypeError("terminated").
function socketCodes(error) {
  const codes = [];
  const seen = new Set();
  const visit = (e) => {
    if (!e || typeof e !== "object" || seen.has(e)) return;
    seen.add(e);
    if (typeof e.code === "string") codes.push(e.code);
    if (Array.isArray(e.errors)) e.errors.forEach(visit);
    visit(e.cause);
  };
  visit(error);
  return codes;
}

function connectionError(error, fields) {
  const codes = socketCodes(error);
  if (codes.includes("UND_ERR_CONNECT_TIMEOUT") || codes.includes("ETIMEDOUT")) {
    return new DeadlineError("connecting to the service timed out", { ...fields, limit: "connect" });
  }
  const refused = codes.includes("ECONNREFUSED");
  const detail = error?.cause?.message ?? error?.message ?? String(error);
  const message = refused ? `the service refused the connection (${detail})`
    : `the connection to the service failed or dropped (${detail})`;
  return new ServiceConnectionError(message, { ...fields, refused });
}
