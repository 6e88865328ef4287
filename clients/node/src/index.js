// adil-client: the Node.js client of the ADIL Edge SDK's local service
// (`adil serve`).  ESM, Node >= 18, no dependencies.
//
//   import { AdilClient, AdilError } from "adil-client";
//   const client = new AdilClient("http://127.0.0.1:8765", { timeoutMs: { read: 10_000, total: 60_000 } });
//   const { text } = await client.generate("Hello", { maxTokens: 32 });

export { AdilClient, isRetryable } from "./client.js";
export { GenerationStream } from "./stream.js";
export {
  AdilError, BusyError, CancelledError, CapabilityError, ComponentRefusedError, ContextLengthError,
  DeadlineError, InternalError, InvalidArgumentError, ModelFileUnreadableError, ModelFormatError,
  ModelNotReadyError, OutOfMemoryError, OutputValidationError, PermissionDeniedError,
  ServiceConnectionError, ServiceConnectionError as ConnectionError, ToolSchemaError,
  errorClassForCode, errorFromBody,
} from "./errors.js";
