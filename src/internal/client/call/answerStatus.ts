/**
 * The status a server answered a call with, as HTTP numbers it, whatever the
 * transport: what retries and the circuit breaker read to tell a transient
 * refusal (429, a shutdown's 503) and a server error (5xx) on every
 * transport alike.
 *
 * @internal
 */
import type * as A2AClientError from "../../../A2AClientError.js"

/** gRPC's status codes as HTTP numbers them, as `google.rpc.Code` documents each. */
const httpOfGrpc: Readonly<Record<string, number>> = {
  INVALID_ARGUMENT: 400,
  FAILED_PRECONDITION: 400,
  OUT_OF_RANGE: 400,
  UNAUTHENTICATED: 401,
  PERMISSION_DENIED: 403,
  NOT_FOUND: 404,
  ALREADY_EXISTS: 409,
  ABORTED: 409,
  RESOURCE_EXHAUSTED: 429,
  UNKNOWN: 500,
  INTERNAL: 500,
  DATA_LOSS: 500,
  UNIMPLEMENTED: 501,
  UNAVAILABLE: 503
}

/**
 * The HTTP status of the server's answer; on gRPC, its status code's, and
 * only for an answer (`HttpStatus`, `ProtocolError`): grpc-js sets a status
 * on a lost connection or a time-out too, which no server said.
 *
 * @internal
 */
export const answerStatus = (error: A2AClientError.A2AClientError): number | undefined =>
  error.status ??
    (error.grpcStatus !== undefined && (error.reason === "HttpStatus" || error.reason === "ProtocolError")
      // grpc-js's refusal of a message over its limit is RESOURCE_EXHAUSTED too, but no later try fits it better.
      ? error.grpcStatus === "RESOURCE_EXHAUSTED" && error.detail.includes("Received message larger than max")
        ? 413
        : httpOfGrpc[error.grpcStatus]
      : undefined)

/** How a retry names the status it retries. @internal */
export const statusName = (error: A2AClientError.A2AClientError, status: number): string =>
  error.status === undefined && error.grpcStatus !== undefined ? `gRPC ${error.grpcStatus}` : `HttpStatus ${status}`
