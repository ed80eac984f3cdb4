/**
 * The typed error of every failed call to a remote A2A agent: transport
 * failures, HTTP failures, JSON-RPC error responses and responses that cannot
 * be converted.
 *
 * `delivery` says what the caller may assume about the request:
 * `"NotSent"` only when it provably never left this process, `"Refused"`
 * when the server received it and answered that it did not act on it, and
 * `"Unknown"` when the remote side may have acted on it.
 *
 * @since 0.1.0
 */
import * as Duration from "effect/Duration"
import * as Schema from "effect/Schema"
import * as internalMatch from "./internal/match.js"
import * as internalTransport from "./internal/wire/transport.js"

/**
 * The A2A transport a call went over, as cards name it in
 * `supportedInterfaces[].protocolBinding`.
 *
 * @example
 * ```ts
 * import { A2AClientError } from "effect-a2a"
 *
 * const overGrpc = (error: A2AClientError.A2AClientError) => error.transport === "GRPC"
 * ```
 * @category errors
 * @since 0.1.0
 */
export const Transport: Schema.Literal<["JSONRPC", "HTTP+JSON", "GRPC"]> = internalTransport.Transport

/**
 * @category errors
 * @since 0.1.0
 */
export type Transport = internalTransport.Transport

/**
 * Why a call failed. `InvalidRequest`: the call could not be sent as it is
 * (a data part or metadata that is not JSON data, a header or idempotency key
 * that HTTP cannot carry); it is never sent, and sending it again fails the
 * same way. `HttpStatus`: the server answered with an error status and no
 * A2A error, an HTTP one in `status` or, on gRPC, a status code in
 * `grpcStatus` (`RESOURCE_EXHAUSTED` is gRPC's 429, but for a message
 * over a size limit, which is no later try's to fit); without either, the
 * agent answered with a redirect, which is not followed (fetch keeps neither
 * its code nor its target): configure the agent's final URL.
 *
 * @example
 * ```ts
 * import { A2AClientError } from "effect-a2a"
 *
 * // the remote side was never reached: nothing to reconcile there
 * const unreached = (reason: A2AClientError.Reason) => reason === "ConnectionRefused" || reason === "Unavailable"
 * ```
 * @category errors
 * @since 0.1.0
 */
export const Reason = Schema.Literal(
  "ConnectionRefused",
  "ConnectionLost",
  "Timeout",
  "Aborted",
  "HttpStatus",
  "ProtocolError",
  "InvalidResponse",
  "StreamInterrupted",
  "Unavailable",
  "InvalidRequest"
)

/**
 * @category errors
 * @since 0.1.0
 */
export type Reason = typeof Reason.Type

/**
 * What the caller may assume about the request. Never more certain than
 * the wire was:
 *
 * | delivery | when |
 * |---|---|
 * | `NotSent` | the request provably never left this process (connection refused, a name that does not resolve, a connect timeout, a request that cannot be sent as it is) |
 * | `Refused` | the server received it and answered that it did not act on it: a JSON-RPC error with an A2A code other than -32603 `InternalError` and -32006 `InvalidAgentResponse`, or with -32700, -32600, -32601, -32602, answering this request (its id, or null), whatever the HTTP status; or, without such a body, an HTTP 4xx (429 included) |
 * | `Unknown` | anything else: -32603, -32006 or a code outside the specification, an HTTP 5xx without a JSON-RPC error (503 included: a proxy answers so after an upstream reset), a lost connection, a time-out after sending, an answer that cannot be read (a JSON-RPC error for another request id included), and any error inside a stream after its first event (the task exists and may be running) |
 *
 * On HTTP+JSON and gRPC, an A2A error read from the answer's `ErrorInfo` is
 * decided as its JSON-RPC code is; gRPC's refusal codes (`INVALID_ARGUMENT`,
 * `NOT_FOUND`, `FAILED_PRECONDITION`, `UNIMPLEMENTED`, `RESOURCE_EXHAUSTED`
 * …) without one are read as an HTTP 4xx, `UNKNOWN` and `INTERNAL` as a 5xx,
 * and `UNAVAILABLE` is `NotSent` only when grpc-js made no connection.
 *
 * @example
 * ```ts
 * import { A2AClientError } from "effect-a2a"
 *
 * // sending again cannot run the request twice when it never left, or when the server ran nothing
 * const nothingRan = (error: A2AClientError.A2AClientError) => error.delivery !== "Unknown"
 * ```
 * @category errors
 * @since 0.1.0
 */
export const Delivery = Schema.Literal("NotSent", "Refused", "Unknown")

/**
 * @category errors
 * @since 0.1.0
 */
export type Delivery = typeof Delivery.Type

/**
 * The JSON-RPC error codes of A2A v1.0 and their names.
 *
 * @example
 * ```ts
 * import { A2AClientError } from "effect-a2a"
 * A2AClientError.protocolErrorNames[-32001] // "TaskNotFound"
 * ```
 * @category errors
 * @since 0.1.0
 */
export const protocolErrorNames = {
  [-32700]: "ParseError",
  [-32600]: "InvalidRequest",
  [-32601]: "MethodNotFound",
  [-32602]: "InvalidParams",
  [-32603]: "InternalError",
  [-32001]: "TaskNotFound",
  [-32002]: "TaskNotCancelable",
  [-32003]: "PushNotificationNotSupported",
  [-32004]: "UnsupportedOperation",
  [-32005]: "ContentTypeNotSupported",
  [-32006]: "InvalidAgentResponse",
  [-32007]: "ExtendedAgentCardNotConfigured",
  [-32008]: "ExtensionSupportRequired",
  [-32009]: "VersionNotSupported"
} as const

/**
 * The A2A name of a JSON-RPC error, `"Unknown"` for a code outside the
 * specification.
 *
 * @example
 * ```ts
 * import { A2AClientError } from "effect-a2a"
 *
 * // the remote agent no longer knows the task (restarted, expired): start a new one
 * const forgotten = (name: A2AClientError.ProtocolErrorName | undefined) => name === "TaskNotFound"
 * declare const error: A2AClientError.A2AClientError
 * forgotten(error.protocolError)
 * ```
 * @category errors
 * @since 0.1.0
 */
export const ProtocolErrorName = Schema.Literal(...Object.values(protocolErrorNames), "Unknown")

/**
 * @category errors
 * @since 0.1.0
 */
export type ProtocolErrorName = typeof ProtocolErrorName.Type

/**
 * The operation a call was performing.
 *
 * @example
 * ```ts
 * import { A2AClientError } from "effect-a2a"
 *
 * // a failed read is safe to repeat; a failed send may have started a task
 * const isRead = (operation: A2AClientError.Operation) => operation === "GetTask" || operation === "SubscribeToTask"
 * ```
 * @category errors
 * @since 0.1.0
 */
export const Operation = Schema.Literal(
  "SendMessage",
  "SendStreamingMessage",
  "GetTask",
  "CancelTask",
  "SubscribeToTask"
)

/**
 * @category errors
 * @since 0.1.0
 */
export type Operation = typeof Operation.Type

const deliveryWording: Record<Delivery, string> = {
  NotSent: "request not sent",
  Refused: "request refused, nothing ran",
  Unknown: "outcome unknown"
}

/**
 * A failed call to a remote agent.
 *
 * @example
 * ```ts
 * import { A2AClientError } from "effect-a2a"
 *
 * const error = new A2AClientError.A2AClientError({
 *   agent: "booking",
 *   operation: "SendMessage",
 *   reason: "ConnectionRefused",
 *   delivery: "NotSent",
 *   detail: "connect ECONNREFUSED 127.0.0.1:9"
 * })
 * error.message // "booking: SendMessage failed (ConnectionRefused, request not sent): ..."
 * ```
 * @category errors
 * @since 0.1.0
 */
export class A2AClientError extends Schema.TaggedError<A2AClientError>("effect-a2a/A2AClientError")(
  "A2AClientError",
  {
    agent: Schema.String,
    operation: Operation,
    reason: Reason,
    delivery: Delivery,
    /** A short description of the underlying failure, for logs. */
    detail: Schema.String,
    /** The transport the call went over; none when the call never reached one. */
    transport: Schema.optionalWith(Transport, { exact: true }),
    /** The HTTP status, when the server answered with one. */
    status: Schema.optionalWith(Schema.Int, { exact: true }),
    /**
     * On gRPC, the name of the status the call ended with (`"UNAVAILABLE"`,
     * `"RESOURCE_EXHAUSTED"` …), whether the server or the client library
     * set it.
     */
    grpcStatus: Schema.optionalWith(Schema.String, { exact: true }),
    /** The JSON-RPC error code. */
    code: Schema.optionalWith(Schema.Int, { exact: true }),
    /** The A2A name of the JSON-RPC error code. */
    protocolError: Schema.optionalWith(ProtocolErrorName, { exact: true }),
    /** From a `Retry-After` header. */
    retryAfter: Schema.optionalWith(
      Schema.DurationFromMillis.pipe(Schema.filter(Duration.isFinite, { message: () => "a finite duration" })),
      { exact: true }
    ),
    taskId: Schema.optionalWith(Schema.String, { exact: true }),
    contextId: Schema.optionalWith(Schema.String, { exact: true }),
    /** How many attempts were made, when a retry policy gave up. */
    attempts: Schema.optionalWith(Schema.Int, { exact: true })
  }
) {
  override get message(): string {
    const delivery = deliveryWording[this.delivery]
    const code = this.code === undefined ? "" : ` ${this.code} ${this.protocolError ?? ""}`.trimEnd()
    const status = this.status === undefined ? "" : ` HTTP ${this.status}`
    const grpc = this.grpcStatus === undefined ? "" : ` gRPC ${this.grpcStatus}`
    return `${this.agent}: ${this.operation} failed (${this.reason}${status}${grpc}${code}, ${delivery}): ${this.detail}`
  }
}

/**
 * The name of a JSON-RPC error code.
 *
 * @example
 * ```ts
 * import { A2AClientError } from "effect-a2a"
 *
 * A2AClientError.protocolErrorName(-32001) // "TaskNotFound"
 * A2AClientError.protocolErrorName(-32099) // "Unknown"
 * ```
 * @category errors
 * @since 0.1.0
 */
export const protocolErrorName = (code: number): ProtocolErrorName =>
  (protocolErrorNames as Record<number, ProtocolErrorName>)[code] ?? "Unknown"

/**
 * Exhaustive matching over the `reason` of an error: leaving a reason out,
 * or adding a key that is not one (a misspelt reason), does not compile.
 *
 * @example
 * ```ts
 * import { A2AClientError } from "effect-a2a"
 *
 * const describe = A2AClientError.matchReason({
 *   ConnectionRefused: () => "down",
 *   ConnectionLost: () => "lost",
 *   Timeout: () => "slow",
 *   Aborted: () => "aborted",
 *   HttpStatus: (e) => `HTTP ${e.status ?? "3xx (a redirect)"}`,
 *   ProtocolError: (e) => `${e.protocolError}`,
 *   InvalidResponse: () => "garbled",
 *   StreamInterrupted: () => "cut",
 *   Unavailable: () => "not resolved at start-up",
 *   InvalidRequest: () => "not JSON"
 * })
 * ```
 * @category pattern matching
 * @since 0.1.0
 */
export const matchReason: internalMatch.Matcher<Reason, A2AClientError> = internalMatch.onField((error) => error.reason)

/**
 * Exhaustive matching over the `delivery` of an error: leaving one out, or
 * adding a key that is not one, does not compile.
 *
 * @example
 * ```ts
 * import { A2AClientError } from "effect-a2a"
 *
 * const whatToTell = A2AClientError.matchDelivery({
 *   NotSent: () => "not submitted: try again",
 *   Refused: (e) => `refused (${e.protocolError ?? `HTTP ${e.status}`}): nothing ran`,
 *   Unknown: (e) => e.taskId === undefined ? "outcome unknown" : `check task ${e.taskId} before trying again`
 * })
 * ```
 * @category pattern matching
 * @since 0.1.0
 */
export const matchDelivery: internalMatch.Matcher<Delivery, A2AClientError> = internalMatch.onField((error) =>
  error.delivery
)
