// Types of adil-client (src/index.js).

export interface TimeoutMs {
  /** Longest wait for the server: the response head, then each body chunk (ms; null: none). */
  read?: number | null;
  /** The whole call, all retries and the streamed body included (ms; null: none). */
  total?: number | null;
}

export interface RetryOptions {
  /** Retries after the first attempt (default 5). */
  maxRetries?: number;
  /** Delay before the first retry (ms, default 50). */
  initialDelayMs?: number;
  /** Longest delay (ms, default 2000). */
  maxDelayMs?: number;
  /** Growth of the delay per retry (default 2). */
  multiplier?: number;
  /** Random reduction of each delay, in [0, 1) (default 0.5). */
  jitter?: number;
}

export interface ClientOptions {
  /** Default deadlines; a number is the total. */
  timeoutMs?: TimeoutMs | number;
  /** Sent as `Authorization: Bearer <apiKey>`. */
  apiKey?: string | null;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
  /** Retries of busy, model not ready and refused connections; none by default. */
  retry?: RetryOptions | null;
}

export interface CallOptions {
  signal?: AbortSignal;
  timeoutMs?: TimeoutMs | number;
  headers?: Record<string, string>;
  /** Sent as x-request-id (1..128 of [A-Za-z0-9._:-]); the server makes one otherwise. */
  requestId?: string;
}

export interface Sampling {
  temperature?: number;
  topK?: number;
  topP?: number;
  minP?: number;
  repeatPenalty?: number;
  repeatLastN?: number;
  seed?: number;
}

export interface GenerateOptions extends CallOptions, Sampling {
  maxTokens?: number | null;
  sampling?: Sampling;
  stop?: string[];
  stopTokens?: number[];
  /** A JSON schema: the output is constrained to it and read into `value`. */
  schema?: object | null;
  /** A raw grammar (adil.constraints.Constraint.text). */
  constraint?: string | null;
  /** Top alternatives per token (0: the chosen token's logprob only). */
  logprobs?: number | null;
  ignoreEos?: boolean;
}

export interface TokenLogprob {
  token: number;
  text: string;
  logprob: number;
  top: Array<[number, string, number]>;
}

export interface Piece {
  text: string;
  tokens: number[];
  logprobs: TokenLogprob[] | null;
}

export interface Stats {
  nPromptTokens: number;
  nCachedTokens: number;
  nGenerated: number;
  prefillMs: number;
  decodeMs: number;
  forcedTokens: number;
  grammarMs: number;
  [key: string]: number;
}

export interface GenerateResult {
  text: string;
  tokens: number[];
  stopReason: string;
  stats: Stats;
  value: unknown;
  cancelAcknowledged: boolean;
  logprobs: TokenLogprob[] | null;
  requestId: string | null;
}

export declare class GenerationStream<P = Piece, R = GenerateResult> implements AsyncIterableIterator<P> {
  /** The server's x-request-id once the response head arrived. */
  readonly requestId: string | null;
  /** The result once the stream ended; rejects with the stream's error. */
  readonly result: Promise<R>;
  /** Closes the request; the server cancels the run.  The loop then ends quietly. */
  cancel(): void;
  next(): Promise<IteratorResult<P>>;
  return(): Promise<IteratorResult<P>>;
  [Symbol.asyncIterator](): GenerationStream<P, R>;
}

export interface ChatMessage {
  role: string;
  content?: string | null;
  [key: string]: unknown;
}

export interface ChatOptions extends CallOptions {
  model?: string;
  maxTokens?: number;
  temperature?: number;
  topP?: number;
  seed?: number;
  stop?: string | string[];
  tools?: object[];
  toolChoice?: string | object;
  responseFormat?: object;
  logprobs?: boolean;
  topLogprobs?: number;
  /** Further request fields, sent as written. */
  extraBody?: Record<string, unknown>;
}

export interface ChatResult {
  message: ChatMessage | null;
  finishReason: string | null;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null;
  requestId: string | null;
  /** The response body as sent. */
  raw: any;
}

export interface ChatDelta {
  /** The text this chunk adds ("" when none). */
  content: string;
  /** The chunk's tool-call parts (merged by index into the result's message). */
  toolCalls: object[] | null;
  finishReason: string | null;
  /** The chat.completion.chunk as sent. */
  chunk: any;
}

export interface Health {
  status: "loading" | "ready" | "failed";
  error: { code: string; message: string } | null;
  model: string;
  components: Record<string, unknown> | null;
}

export declare class AdilClient {
  constructor(baseUrl: string, options?: ClientOptions);
  readonly baseUrl: string;
  health(opts?: CallOptions): Promise<Health>;
  info(opts?: CallOptions): Promise<{ model: Record<string, unknown>; components: Record<string, unknown> }>;
  tokenize(text: string, opts?: CallOptions & { addBos?: boolean | null; special?: boolean }): Promise<number[]>;
  detokenize(tokens: number[], opts?: CallOptions & { special?: boolean }): Promise<string>;
  generate(prompt: string | number[], opts?: GenerateOptions): Promise<GenerateResult>;
  stream(prompt: string | number[], opts?: GenerateOptions): GenerationStream;
  chat(messages: ChatMessage[], opts?: ChatOptions): Promise<ChatResult>;
  chatStream(messages: ChatMessage[], opts?: ChatOptions): GenerationStream<ChatDelta, ChatResult>;
}

export interface ErrorFields {
  code?: string;
  status?: number | null;
  requestId?: string | null;
  cause?: unknown;
  details?: Record<string, unknown> | null;
}

export declare class AdilError extends Error {
  constructor(message: string, fields?: ErrorFields);
  static readonly code: string;
  /** The stable code (DESIGN §6). */
  readonly code: string;
  /** The HTTP status, or null when no response came. */
  readonly status: number | null;
  /** The server's x-request-id, or null. */
  readonly requestId: string | null;
  /** The server's error object as sent, or null. */
  readonly details: Record<string, unknown> | null;
}
export declare class ServiceConnectionError extends AdilError {
  readonly refused: boolean;
}
export { ServiceConnectionError as ConnectionError };
export declare class DeadlineError extends AdilError {
  readonly limit: "read" | "total" | "connect" | null;
}
export declare class ModelNotReadyError extends AdilError {
  readonly retryAfter: number | null;
}
export declare class BusyError extends AdilError {
  readonly retryAfter: number | null;
}
export declare class OutputValidationError extends AdilError {
  readonly text: string | null;
  readonly location: string | null;
}
export declare class ContextLengthError extends AdilError {}
export declare class CapabilityError extends AdilError {}
export declare class PermissionDeniedError extends AdilError {}
export declare class ComponentRefusedError extends AdilError {}
export declare class ToolSchemaError extends AdilError {}
export declare class ModelFormatError extends AdilError {}
export declare class ModelFileUnreadableError extends AdilError {}
export declare class CancelledError extends AdilError {}
export declare class InvalidArgumentError extends AdilError {}
export declare class OutOfMemoryError extends AdilError {}
export declare class InternalError extends AdilError {}

export declare function errorClassForCode(code: string): typeof AdilError;
export declare function errorFromBody(
  body: unknown, context?: { status?: number | null; requestId?: string | null; retryAfter?: number | null },
): AdilError;
export declare function isRetryable(error: unknown): boolean;
