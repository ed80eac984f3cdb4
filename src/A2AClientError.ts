/**
 * The typed error of every failed call to a remote A2A agent: transport
 * failures, HTTP failures, JSON-RPC error responses and responses that cannot
 * be converted.
 *
 * `delivery` says what the caller may assume about the request:
 * `"NotSent"` only when it provably never left this process, `"Unknown"` when
 * the remote side may have received it.
 *
 * @since 0.1.0
 */
import { Duration, Schema } from "effect"

/**
 * Why a call failed. `InvalidRequest`: the call could not be sent as it is
 * (a data part or metadata that is not JSON data, a header or idempotency key
 * that HTTP cannot carry); it is never sent, and sending it again fails the
 * same way. `HttpStatus` without a `status`: the agent answered with a
 * redirect, which is not followed (fetch keeps neither its code nor its
 * target); configure the agent's final URL.
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
 * Whether the request may have reached the remote agent.
 *
 * @example
 * ```ts
 * import { A2AClientError } from "effect-a2a"
 *
 * // sending again cannot run the request twice only when it never left
 * const safeToResend = (error: A2AClientError.A2AClientError) => error.delivery === "NotSent"
 * ```
 * @category errors
 * @since 0.1.0
 */
export const Delivery = Schema.Literal("NotSent", "Unknown")

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
    /** The HTTP status, when the server answered with one. */
    status: Schema.optionalWith(Schema.Int, { exact: true }),
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
    const delivery = this.delivery === "NotSent" ? "request not sent" : "outcome unknown"
    const code = this.code === undefined ? "" : ` ${this.code} ${this.protocolError ?? ""}`.trimEnd()
    const status = this.status === undefined ? "" : ` HTTP ${this.status}`
    return `${this.agent}: ${this.operation} failed (${this.reason}${status}${code}, ${delivery}): ${this.detail}`
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
 * Exhaustive matching over the `reason` of an error: leaving a reason out
 * does not compile.
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
export const matchReason =
  <Cases extends { readonly [R in Reason]: (error: A2AClientError) => unknown }>(cases: Cases) =>
  (error: A2AClientError): ReturnType<Cases[Reason]> =>
    cases[error.reason](error) as ReturnType<Cases[Reason]>
