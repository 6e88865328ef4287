// The error tree of the Node client: one base class, a stable `code` per
// class (the codes of DESIGN §6, the same as the Python SDK's), and on the
// HTTP path `status` (the HTTP status, or null when no response came) and
// `requestId` (the server's x-request-id, or null).
//
//   AdilError                       code
//   ├── ServiceConnectionError      connection_error   (.refused)
//   ├── DeadlineError               timeout            (.limit: "read" | "total" | "connect")
//   ├── ModelNotReadyError          model_not_ready    (.retryAfter)
//   ├── ContextLengthError          context_length_exceeded
//   ├── CapabilityError             unsupported_capability
//   ├── OutputValidationError       output_validation_failed (.text, .location)
//   ├── BusyError                   busy               (.retryAfter)
//   ├── PermissionDeniedError       permission_denied
//   ├── ComponentRefusedError       library_refused | host_refused
//   ├── ToolSchemaError             tool_schema_invalid
//   ├── ModelFormatError            model_format_invalid
//   ├── ModelFileUnreadableError    model_file_unreadable
//   ├── CancelledError              cancelled          (the caller's AbortSignal fired)
//   ├── InvalidArgumentError        invalid_argument
//   ├── OutOfMemoryError            out_of_memory
//   └── InternalError               internal_error
//
// Branch on the class or on `code`, never on the message.  A code this
// version does not know gives a plain AdilError carrying that code.

export class AdilError extends Error {
  /**
   * @param {string} message
   * @param {{code?: string, status?: number|null, requestId?: string|null, cause?: unknown,
   *          details?: object|null}} [fields]
   */
  constructor(message, fields = {}) {
    super(message, fields.cause === undefined ? undefined : { cause: fields.cause });
    this.name = new.target.name;
    this.code = fields.code ?? new.target.code;
    this.status = fields.status ?? null;
    this.requestId = fields.requestId ?? null;
    // The server's error object as sent (extra fields such as "text"), or null.
    this.details = fields.details ?? null;
  }
}
AdilError.code = "adil_error";

function defineError(name, code, init) {
  const cls = {
    [name]: class extends AdilError {
      constructor(message, fields = {}) {
        super(message, fields);
        if (init) init(this, fields);
      }
    },
  }[name];
  cls.code = code;
  return cls;
}

const retryAfter = (error, fields) => {
  error.retryAfter = fields.retryAfter ?? null; // seconds, from Retry-After
};

export const ServiceConnectionError = defineError("ServiceConnectionError", "connection_error",
  (error, fields) => { error.refused = Boolean(fields.refused); });
export const DeadlineError = defineError("DeadlineError", "timeout",
  (error, fields) => { error.limit = fields.limit ?? null; });
export const ModelNotReadyError = defineError("ModelNotReadyError", "model_not_ready", retryAfter);
export const ContextLengthError = defineError("ContextLengthError", "context_length_exceeded");
export const CapabilityError = defineError("CapabilityError", "unsupported_capability");
export const OutputValidationError = defineError("OutputValidationError", "output_validation_failed",
  (error, fields) => {
    error.text = fields.details?.text ?? null; // the output up to the failure
    error.location = fields.details?.location ?? null; // where it broke the schema (a JSON pointer)
  });
export const BusyError = defineError("BusyError", "busy", retryAfter);
export const PermissionDeniedError = defineError("PermissionDeniedError", "permission_denied");
export const ComponentRefusedError = defineError("ComponentRefusedError", "library_refused");
export const ToolSchemaError = defineError("ToolSchemaError", "tool_schema_invalid");
export const ModelFormatError = defineError("ModelFormatError", "model_format_invalid");
export const ModelFileUnreadableError = defineError("ModelFileUnreadableError", "model_file_unreadable");
export const CancelledError = defineError("CancelledError", "cancelled");
export const InvalidArgumentError = defineError("InvalidArgumentError", "invalid_argument");
export const OutOfMemoryError = defineError("OutOfMemoryError", "out_of_memory");
export const InternalError = defineError("InternalError", "internal_error");

const BY_CODE = new Map(
  [ServiceConnectionError, DeadlineError, ModelNotReadyError, ContextLengthError, CapabilityError,
    OutputValidationError, BusyError, PermissionDeniedError, ComponentRefusedError, ToolSchemaError,
    ModelFormatError, ModelFileUnreadableError, CancelledError, InvalidArgumentError, OutOfMemoryError,
    InternalError].map((cls) => [cls.code, cls]),
);
BY_CODE.set("host_refused", ComponentRefusedError);

/** The class for a stable code; AdilError for a code this version does not know. */
export function errorClassForCode(code) {
  return BY_CODE.get(code) ?? AdilError;
}

/**
 * The error for a server's error object `{code, message, request_id, status, ...}`.
 * @param {any} body the "error" object (may be malformed: then an internal_error)
 * @param {{status?: number|null, requestId?: string|null, retryAfter?: number|null}} context
 */
export function errorFromBody(body, context = {}) {
  const ok = body !== null && typeof body === "object";
  const code = ok && typeof body.code === "string" ? body.code : "internal_error";
  const message = ok && typeof body.message === "string" ? body.message : `server error (${code})`;
  const status = context.status ?? (ok && Number.isInteger(body.status) ? body.status : null);
  const requestId = (ok && typeof body.request_id === "string" ? body.request_id : null)
    ?? context.requestId ?? null;
  const cls = errorClassForCode(code);
  return new cls(message, {
    code, status, requestId, details: ok ? body : null, retryAfter: context.retryAfter ?? null,
  });
}
