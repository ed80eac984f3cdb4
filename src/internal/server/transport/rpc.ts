/**
 * The JSON-RPC dispatch of one request, chosen between the SDK's v1.0 and
 * v0.3 transport handlers exactly as `@a2a-js/sdk/server/express`'s
 * `jsonRpcHandler` chooses it: a request without an `A2A-Version` header is a
 * v0.3 request.
 *
 * @internal
 */
import { A2A_VERSION_HEADER, type AgentCard, Extensions, HTTP_EXTENSION_HEADER } from "@a2a-js/sdk"
import {
  A2A_LEGACY_PROTOCOL_VERSION,
  LEGACY_HTTP_EXTENSION_HEADER,
  LEGACY_METHOD_TASKS_RESUBSCRIBE
} from "@a2a-js/sdk/compat/v0_3"
import { LegacyJsonRpcTransportHandler } from "@a2a-js/sdk/compat/v0_3/server"
import { RequestMalformedError, toJsonRpcError } from "@a2a-js/sdk/errors"
import {
  defaultServerCallContextBuilder,
  JsonRpcTransportHandler,
  UnauthenticatedUser,
  type User,
  validateVersion
} from "@a2a-js/sdk/server"
import * as Runtime from "effect/Runtime"
import * as ErrorTable from "../../wire/errorTable.js"
import { nestingProblem } from "../../wire/nesting.js"
import * as requestShape from "../../wire/requestShape.js"
import type { RequestHandler } from "../handler/core.js"
import * as internalSdkHandler from "../handler/sdkHandler.js"
import type { Subscriptions } from "../handler/subscription.js"
import * as internalHttp from "../http/body.js"

/** @internal */
export const INTERNAL_ERROR = -32603
/** @internal */
export const PARSE_ERROR = -32700
/** @internal */
export const INVALID_REQUEST = -32600
/** RequestMalformed's code: a body too large or nested too deep, as HTTP+JSON and gRPC name it (INVALID_PARAMS). @internal */
export const INVALID_PARAMS = -32602
/** @internal */
export const UNSUPPORTED_OPERATION = -32004

/** @internal */
export interface RpcError {
  readonly code: number
  readonly message: string
  readonly data?: unknown
}

/** @internal */
export interface RpcErrorResponse {
  readonly jsonrpc: "2.0"
  readonly id: unknown
  readonly error: RpcError
}

/**
 * The outcome of a dispatch. `cause` is set on -32603 answers when the thrown
 * value is known: what went wrong, for the log only.
 *
 * @internal
 */
export type Dispatched =
  | {
    readonly _tag: "Json"
    readonly status: number
    readonly body: unknown
    readonly headers: Record<string, string>
    readonly cause?: unknown
  }
  | {
    readonly _tag: "Stream"
    readonly first: IteratorResult<unknown> | undefined
    readonly iterator: AsyncIterator<unknown>
    /** Ends the stream for a reader that is done with it, or gone; without waiting for the iterator. */
    readonly close: () => void
    readonly mapError: (error: unknown) => RpcError
    readonly id: unknown
    readonly headers: Record<string, string>
    /** Resolves once the stream's reader is dropped for reading no more (`slowReader.ts`). */
    readonly dropped?: Promise<void> | undefined
    /** Lets go of the request's place in the load bound, ahead of `close`. */
    readonly release?: (() => void) | undefined
  }

/** @internal */
export type Headers = Readonly<Record<string, string | undefined>>

/** @internal */
export interface Dispatcher {
  /** `user`: the authenticated caller; anonymous when undefined. */
  readonly dispatch: (body: unknown, headers: Headers, user?: User) => Promise<Dispatched>
  /**
   * The caller of the request `headers` came with left before its answer: a
   * stream still waiting for its first event (a subscription resumed after
   * a paused task's last event waits for the task's next run) lets go now,
   * so that its dispatch settles.
   */
  readonly leave?: ((headers: Headers) => void) | undefined
}

// JSON-RPC ids are strings or numbers; 0 and "" are ids too.
const idOf = (body: unknown): unknown => {
  const id = typeof body === "object" && body !== null && "id" in body ? (body as { id: unknown }).id : null
  return typeof id === "string" || typeof id === "number" ? id : null
}

const methodOf = (body: unknown): unknown =>
  typeof body === "object" && body !== null && "method" in body ? (body as { method: unknown }).method : undefined

// The params' shape, when they are an object of a known method; the handler refuses any other params itself.
const shapeProblem = (body: unknown, legacy: boolean): string | undefined => {
  const { method, params } = body as { readonly method?: unknown; readonly params?: unknown }
  return typeof method === "string" && typeof params === "object" && params !== null && !Array.isArray(params)
    ? (legacy ? requestShape.legacyParamsProblem : requestShape.paramsProblem)(
      method,
      params as Record<string, unknown>
    )
    : undefined
}

const invalidParams = (id: unknown): RpcErrorResponse => ({
  jsonrpc: "2.0",
  id,
  error: toJsonRpcError(new RequestMalformedError("Invalid params: the request's params could not be decoded."))
})

/**
 * A v1.0 error as JSON-RPC answers it: the SDK's mapping, its code read
 * from the error table by the ErrorInfo's reason, so that the table decides
 * what the SDK's own table would.
 */
const throughTable = (error: RpcError): RpcError => {
  const reason = ErrorTable.reasonIn(error.data)
  const row = reason === undefined ? undefined : ErrorTable.ofA2AReason(reason)
  return row === undefined || row.jsonRpc === error.code ? error : { ...error, code: row.jsonRpc }
}

/**
 * What a v1.0 JSON-RPC answer says for `error`, as the error table maps it.
 *
 * @internal
 */
export const rpcErrorOf = (error: unknown): RpcError => throughTable(JsonRpcTransportHandler.mapToJSONRPCError(error))

/**
 * Why a parsed body is not a JSON-RPC 2.0 request object (-32600), or
 * undefined. Only an object goes on: the SDK's handler would parse a JSON
 * string again and run what it holds, past the load and nesting bounds,
 * which read this value. Batches are not served (the SDK dispatches one
 * request). JSON-RPC answers an invalid request under the id null, a
 * notification included. The SDK itself answers a malformed envelope with
 * InvalidParams (-32602).
 *
 * @internal
 */
export const requestProblem = (body: unknown): string | undefined => {
  if (Array.isArray(body)) return "Batch requests are not supported."
  if (typeof body !== "object" || body === null) return "Invalid Request: the body must be a JSON-RPC request object."
  const { id, jsonrpc, method } = body as {
    readonly id?: unknown
    readonly jsonrpc?: unknown
    readonly method?: unknown
  }
  const validId = !("id" in body) || id === null || typeof id === "string" || Number.isInteger(id)
  return jsonrpc === "2.0" && typeof method === "string" && method !== "" && validId
    ? undefined
    : "Invalid Request: a JSON-RPC 2.0 request has jsonrpc \"2.0\", a method name, and an id that is a string, an integer or null."
}

const isInternalError = (result: unknown): boolean =>
  typeof result === "object" && result !== null && "error" in result &&
  (result as { error?: { code?: unknown } }).error?.code === INTERNAL_ERROR

/**
 * The dispatcher of `requestHandler`, the handler with its stages, as the
 * server composes it for every transport (see `edge/app.ts`), through the
 * SDK's codecs on `runtime`.
 * `subscriptions`: what the handler's streams are read through, so that a
 * stream's reader that leaves lets go of it at once.
 *
 * @internal
 */
export const makeDispatcher = (
  requestHandler: RequestHandler,
  card: AgentCard,
  runtime: Runtime.Runtime<never>,
  subscriptions?: Subscriptions
): Dispatcher => {
  const runSync = Runtime.runSync(runtime)
  // The contexts of the calls that reached the handler: the SDK's codec answers its own failures as -32603 too.
  const called = new WeakSet<object>()
  // The SDK's codecs answer a rejection as -32603 with its message only: an unexpected one is logged whole here
  // and rejects with its error id only, so that every -32603 of a call is opaque already.
  const sdkHandler = internalSdkHandler.toSdk(
    requestHandler,
    runtime,
    (cause, operation) => runSync(internalHttp.opaqueFailure("JSON-RPC", cause, { where: operation })),
    (context) => called.add(context)
  )
  // The calls whose streams wait for their first event, by their request's headers: what `leave` lets go of.
  const waiting = new WeakMap<Headers, object>()
  const v1 = new JsonRpcTransportHandler(sdkHandler)
  const legacy = new LegacyJsonRpcTransportHandler(sdkHandler)
  const versionHeader = A2A_VERSION_HEADER.toLowerCase()
  const dispatch = async (body: unknown, headers: Headers, user?: User): Promise<Dispatched> => {
    const requestedVersion = headers[versionHeader] || undefined
    const useLegacy = (requestedVersion ?? A2A_LEGACY_PROTOCOL_VERSION) === A2A_LEGACY_PROTOCOL_VERSION
    const mapError = useLegacy ? LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError : rpcErrorOf
    const id = idOf(body)
    // The v0.3 handler has its own request types, checked against their own shapes.
    const problem = nestingProblem(body) ?? shapeProblem(body, useLegacy)
    if (problem !== undefined) {
      const error = toJsonRpcError(new RequestMalformedError(problem))
      return { _tag: "Json", status: 200, body: { jsonrpc: "2.0", id, error }, headers: {} }
    }
    try {
      const extensionsHeader = useLegacy
        ? headers[LEGACY_HTTP_EXTENSION_HEADER.toLowerCase()] ?? headers[HTTP_EXTENSION_HEADER.toLowerCase()]
        : headers[HTTP_EXTENSION_HEADER.toLowerCase()]
      const context = defaultServerCallContextBuilder({
        extensions: Extensions.parseServiceParameter(extensionsHeader),
        user: user ?? new UnauthenticatedUser(),
        headers: { ...headers },
        ...(requestedVersion === undefined ? {} : { requestedVersion })
      })
      validateVersion(context.requestedVersion, card, "JSONRPC")
      const handler = useLegacy ? legacy : v1
      const result = await handler.handle(body as Record<string, unknown>, context)
      const responseHeaders: Record<string, string> = {}
      if (context.activatedExtensions) {
        responseHeaders[useLegacy ? LEGACY_HTTP_EXTENSION_HEADER : HTTP_EXTENSION_HEADER] = Array.from(
          context.activatedExtensions
        ).join(",")
      }
      if (typeof (result as AsyncIterable<unknown>)?.[Symbol.asyncIterator] === "function") {
        const iterator = (result as AsyncIterable<unknown>)[Symbol.asyncIterator]()
        // Not awaited: an iterator parked on its next event finishes its return only after that event.
        const close = () => {
          void iterator.return?.(undefined)?.catch(() => undefined)
          subscriptions?.close(context)
        }
        const dropped = subscriptions?.dropped(context)
        // v0.3 resubscribe always answers with SSE, even for an immediate error.
        if (useLegacy && methodOf(body) === LEGACY_METHOD_TASKS_RESUBSCRIBE) {
          return { _tag: "Stream", first: undefined, iterator, close, mapError, id, headers: responseHeaders, dropped }
        }
        let first: IteratorResult<unknown>
        waiting.set(headers, context)
        try {
          first = await iterator.next()
        } catch (error) {
          return {
            _tag: "Json",
            status: 200,
            body: { jsonrpc: "2.0", id, error: mapError(error) },
            headers: {},
            cause: error
          }
        } finally {
          waiting.delete(headers)
        }
        return { _tag: "Stream", first, iterator, close, mapError, id, headers: responseHeaders, dropped }
      }
      if (isInternalError(result) && !called.has(context)) {
        // The SDK failed before it reached the handler: it could not decode the params. A -32603 after (the SDK
        // failed to encode the answer) is ours: the edge logs it and answers it opaque, as any other.
        return { _tag: "Json", status: 200, body: invalidParams(id), headers: responseHeaders }
      }
      return {
        _tag: "Json",
        status: 200,
        // The SDK echoes an invalid id (an object, say) in its error; JSON-RPC answers it with null.
        body: typeof result === "object" && result !== null && "error" in result
          ? { ...result, id, ...(useLegacy ? {} : { error: throughTable((result as { error: RpcError }).error) }) }
          : result,
        headers: responseHeaders
      }
    } catch (error) {
      const mapped = mapError(error)
      return {
        _tag: "Json",
        status: mapped.code === INTERNAL_ERROR ? 500 : 200,
        body: { jsonrpc: "2.0", id, error: mapped },
        headers: {},
        cause: error
      }
    }
  }
  const leave = (headers: Headers) => {
    const context = waiting.get(headers)
    if (context !== undefined) subscriptions?.close(context)
  }
  return { dispatch, leave }
}
