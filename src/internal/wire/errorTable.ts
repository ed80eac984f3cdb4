/**
 * The error table of A2A 1.0.1 §5.4: for each A2A error, its JSON-RPC
 * code, its gRPC status, its HTTP status and its `ErrorInfo` reason; with
 * the standard JSON-RPC errors (§9.5) beside them, their gRPC and HTTP
 * statuses as `google.rpc.Code` maps them, which is the rule 1.0.1 gave
 * the table. The three server transports answer through it, and the
 * client reads a peer's error through it.
 *
 * 1.0.1 is not 1.0.0: A2A#1627 moved six cells back to `google.rpc.Code`'s
 * mapping (ContentTypeNotSupported 415 → 400, TaskNotCancelable 409 → 400,
 * InvalidAgentResponse 502 → 500, and PushNotificationNotSupported,
 * UnsupportedOperation and VersionNotSupported UNIMPLEMENTED →
 * FAILED_PRECONDITION). A 1.0.0 peer may still answer the old ones; the
 * client reads them by their reason, which did not change.
 *
 * @internal
 */
import { A2A_ERROR_DOMAIN, ERROR_INFO_TYPE } from "@a2a-js/sdk/errors"
import type * as A2AClientError from "../../A2AClientError.js"

/** The gRPC status codes the table uses, by `google.rpc.Code` name. */
export type GrpcStatus = "INVALID_ARGUMENT" | "FAILED_PRECONDITION" | "NOT_FOUND" | "UNIMPLEMENTED" | "INTERNAL"

/** An error of the table, named as `A2AClientError.protocolErrorNames` names it. */
export type Name = Exclude<A2AClientError.ProtocolErrorName, "Unknown">

/** @internal */
export interface Row {
  readonly name: Name
  readonly jsonRpc: number
  readonly grpc: GrpcStatus
  readonly http: number
  /**
   * The `status` of an HTTP+JSON error body; the gRPC status but where
   * HTTP has its own word (a path no operation serves is not found).
   */
  readonly httpStatus: GrpcStatus
  /**
   * The `ErrorInfo` reason sent with it (JSON-RPC's `data`, HTTP+JSON's
   * `details`, gRPC's status details), in the `a2a-protocol.org` domain.
   * A2A errors have their own; a malformed request, whatever step refused
   * it, is the SDK's `INVALID_PARAMS`; an internal error has none on
   * JSON-RPC.
   */
  readonly reason: string | undefined
}

const row = <N extends Name>(
  name: N,
  jsonRpc: number,
  grpc: GrpcStatus,
  http: number,
  reason: string | undefined,
  httpStatus: GrpcStatus = grpc
): Row & { readonly name: N } => ({ name, jsonRpc, grpc, http, httpStatus, reason })

/** Every row, keyed by its error: each error has one, and only one. */
export const rows: { readonly [N in Name]: Row & { readonly name: N } } = {
  TaskNotFound: row("TaskNotFound", -32001, "NOT_FOUND", 404, "TASK_NOT_FOUND"),
  TaskNotCancelable: row("TaskNotCancelable", -32002, "FAILED_PRECONDITION", 400, "TASK_NOT_CANCELABLE"),
  PushNotificationNotSupported: row(
    "PushNotificationNotSupported",
    -32003,
    "FAILED_PRECONDITION",
    400,
    "PUSH_NOTIFICATION_NOT_SUPPORTED"
  ),
  UnsupportedOperation: row("UnsupportedOperation", -32004, "FAILED_PRECONDITION", 400, "UNSUPPORTED_OPERATION"),
  ContentTypeNotSupported: row(
    "ContentTypeNotSupported",
    -32005,
    "INVALID_ARGUMENT",
    400,
    "CONTENT_TYPE_NOT_SUPPORTED"
  ),
  InvalidAgentResponse: row("InvalidAgentResponse", -32006, "INTERNAL", 500, "INVALID_AGENT_RESPONSE"),
  ExtendedAgentCardNotConfigured: row(
    "ExtendedAgentCardNotConfigured",
    -32007,
    "FAILED_PRECONDITION",
    400,
    "EXTENDED_AGENT_CARD_NOT_CONFIGURED"
  ),
  ExtensionSupportRequired: row(
    "ExtensionSupportRequired",
    -32008,
    "FAILED_PRECONDITION",
    400,
    "EXTENSION_SUPPORT_REQUIRED"
  ),
  VersionNotSupported: row("VersionNotSupported", -32009, "FAILED_PRECONDITION", 400, "VERSION_NOT_SUPPORTED"),
  ParseError: row("ParseError", -32700, "INVALID_ARGUMENT", 400, "INVALID_PARAMS"),
  InvalidRequest: row("InvalidRequest", -32600, "INVALID_ARGUMENT", 400, "INVALID_PARAMS"),
  MethodNotFound: row("MethodNotFound", -32601, "UNIMPLEMENTED", 404, undefined, "NOT_FOUND"),
  InvalidParams: row("InvalidParams", -32602, "INVALID_ARGUMENT", 400, "INVALID_PARAMS"),
  InternalError: row("InternalError", -32603, "INTERNAL", 500, "INTERNAL_ERROR")
}

/** The rows of A2A's own errors (§5.4), in the specification's order. */
export const a2aRows: ReadonlyArray<Row> = [
  rows.TaskNotFound,
  rows.TaskNotCancelable,
  rows.PushNotificationNotSupported,
  rows.UnsupportedOperation,
  rows.ContentTypeNotSupported,
  rows.InvalidAgentResponse,
  rows.ExtendedAgentCardNotConfigured,
  rows.ExtensionSupportRequired,
  rows.VersionNotSupported
]

/** The standard JSON-RPC errors' rows (§9.5). */
export const standardRows: ReadonlyArray<Row> = [
  rows.ParseError,
  rows.InvalidRequest,
  rows.MethodNotFound,
  rows.InvalidParams,
  rows.InternalError
]

const byOwnReason = (row: Row): Array<[string, Row]> => row.reason === undefined ? [] : [[row.reason, row]]

const byReason: ReadonlyMap<string, Row> = new Map([
  ...a2aRows.flatMap(byOwnReason),
  // A reason several standard errors share stands, without its JSON-RPC code, for the one that names it.
  ...byOwnReason(rows.InvalidParams),
  ...byOwnReason(rows.InternalError)
])

/**
 * The row of an `ErrorInfo` reason, or undefined for a reason outside the
 * table. `INVALID_PARAMS` reads as InvalidParams: where a transport has no
 * JSON-RPC code to tell a parse error from invalid params, they are one.
 */
export const ofReason = (reason: string): Row | undefined => byReason.get(reason)

/**
 * The row of an A2A error's reason, or undefined: only the nine errors of
 * §5.4, whose reason is theirs alone, so that a JSON-RPC code can be read
 * from it.
 */
export const ofA2AReason = (reason: string): Row | undefined => {
  const found = byReason.get(reason)
  return found === undefined || !a2aRows.includes(found) ? undefined : found
}

/** The gRPC status codes of the table, as numbers (`google.rpc.Code`). */
export const grpcCodes: { readonly [S in GrpcStatus]: number } = {
  INVALID_ARGUMENT: 3,
  NOT_FOUND: 5,
  FAILED_PRECONDITION: 9,
  UNIMPLEMENTED: 12,
  INTERNAL: 13
}

/**
 * The reason of the A2A `ErrorInfo` among `details` (JSON-RPC's `data`, a
 * Status's `details`), if any; another domain's reason is not A2A's.
 */
export const reasonIn = (details: unknown): string | undefined => {
  if (!Array.isArray(details)) return undefined
  for (const detail of details as ReadonlyArray<unknown>) {
    if (typeof detail !== "object" || detail === null) continue
    const info = detail as { readonly "@type"?: unknown; readonly reason?: unknown; readonly domain?: unknown }
    if (info["@type"] === ERROR_INFO_TYPE && info.domain === A2A_ERROR_DOMAIN && typeof info.reason === "string") {
      return info.reason
    }
  }
  return undefined
}
