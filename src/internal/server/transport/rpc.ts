/**
 * The JSON-RPC dispatch of one request, chosen between the SDK's v1.0 and
 * v0.3 transport handlers exactly as `@a2a-js/sdk/server/express`'s
 * `jsonRpcHandler` chooses it: a request without an `A2A-Version` header is a
 * v0.3 request.
 *
 * @internal
 */
import {
  A2A_VERSION_HEADER,
  type AgentCard,
  Extensions,
  HTTP_EXTENSION_HEADER,
  type SendMessageRequest
} from "@a2a-js/sdk"
import {
  A2A_LEGACY_PROTOCOL_VERSION,
  LEGACY_HTTP_EXTENSION_HEADER,
  LEGACY_METHOD_TASKS_RESUBSCRIBE
} from "@a2a-js/sdk/compat/v0_3"
import { LegacyJsonRpcTransportHandler } from "@a2a-js/sdk/compat/v0_3/server"
import { RequestMalformedError, TaskNotFoundError, toJsonRpcError, UnsupportedOperationError } from "@a2a-js/sdk/errors"
import {
  type A2ARequestHandler,
  defaultServerCallContextBuilder,
  JsonRpcTransportHandler,
  type ServerCallContext,
  UnauthenticatedUser,
  type User,
  validateVersion
} from "@a2a-js/sdk/server"
import { storedTextProblem } from "../../ledger/storedText.js"
import * as ErrorTable from "../../wire/errorTable.js"
import * as requestShape from "../../wire/requestShape.js"
import type { Subscriptions } from "./subscription.js"

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
   * The request handler as the dispatch calls it, with its refusals (see
   * {@link DispatcherOptions}): for the other transports, so that they hold
   * to the same rules.
   */
  readonly handler: A2ARequestHandler
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
 * The longest ids the SDK's database task table holds (`varchar(36)` and
 * `varchar(255)` columns).
 */
const storedIdLimits = { id: 36, taskId: 36, contextId: 36, referenceTaskIds: 36, tenant: 255 } as const

const characters = (text: string): number => (text.length <= 36 ? text.length : [...text].length)

/**
 * Why a request's ids cannot be stored, or undefined: checked before
 * anything runs, since a run whose task cannot be saved would have its
 * side effects and no task.
 */
const unstorableId = (params: unknown): string | undefined => {
  if (typeof params !== "object" || params === null) return undefined
  const { message } = params as { readonly message?: unknown }
  const fields: Array<[string, unknown]> = [
    ["id", (params as { readonly id?: unknown }).id],
    ["tenant", (params as { readonly tenant?: unknown }).tenant],
    ["contextId", (params as { readonly contextId?: unknown }).contextId]
  ]
  if (typeof message === "object" && message !== null) {
    fields.push(["taskId", (message as { readonly taskId?: unknown }).taskId])
    fields.push(["contextId", (message as { readonly contextId?: unknown }).contextId])
    const references = (message as { readonly referenceTaskIds?: unknown }).referenceTaskIds
    if (Array.isArray(references)) { for (const reference of references) fields.push(["referenceTaskIds", reference]) }
  }
  for (const [name, value] of fields) {
    if (typeof value !== "string") continue
    const limit = storedIdLimits[name as keyof typeof storedIdLimits]
    const problem = storedTextProblem(value)
    if (problem !== undefined) return `${name} ${problem}`
    if (characters(value) > limit) return `${name} must be at most ${limit} characters for this server's task store`
  }
  return undefined
}

const storedIdMethods = new Set<PropertyKey>([
  "sendMessage",
  "sendMessageStream",
  "getTask",
  "cancelTask",
  "resubscribe",
  "listTasks"
])
const sendMethods = new Set<PropertyKey>(["sendMessage", "sendMessageStream"])
const streamMethods = new Set<PropertyKey>(["sendMessageStream", "resubscribe"])

/**
 * Holds the task a message continues for the request's length: a release,
 * or undefined when a run of the task is in progress (see
 * `EffectAgentExecutor.claim`).
 *
 * @internal
 */
export type Claim = (taskId: string, params: SendMessageRequest, context: ServerCallContext) => (() => void) | undefined

/** @internal */
export interface DispatcherOptions {
  /** Refuse (-32602) a call whose ids the task store cannot hold, before the handler sees it. */
  readonly checkIds?: boolean
  /** Refuse (-32004) a message to a task that is still running, before the handler sees it. */
  readonly claim?: Claim
  /**
   * Whether the caller of `context` may see the task: a message to another
   * caller's running task is answered TaskNotFound, as the handler answers
   * one to a task it does not find, not -32004, which would tell it exists.
   */
  readonly visible?: (taskId: string, context: ServerCallContext) => Promise<boolean>
  /** The event buses of the handler, so that a subscriber who leaves lets go of its task's bus at once. */
  readonly subscriptions?: Subscriptions
}

const continuedTask = (params: unknown): string | undefined => {
  const taskId = (params as { readonly message?: { readonly taskId?: unknown } } | undefined)?.message?.taskId
  return typeof taskId === "string" && taskId !== "" ? taskId : undefined
}

/**
 * The refusal (-32004) of a message to a task whose run is in progress.
 *
 * @internal
 */
export const stillRunning = (taskId: string): UnsupportedOperationError =>
  new UnsupportedOperationError(
    `Task ${taskId} is still running; a message can continue it once it pauses for input or authentication.`
  )

// What a refused call returns: a stream is refused on its first event, so it is answered as a plain JSON-RPC error.
const refusal = (property: PropertyKey, error: Error | Promise<Error>): unknown =>
  property === "sendMessageStream" || property === "resubscribe"
    ? (async function*() {
      throw await error
    })()
    : Promise.resolve(error).then((error) => Promise.reject(error))

// `result`, with `release` called once it settles (a stream: once it ends or is closed).
const releasing = (result: unknown, release: () => void): unknown => {
  if (result instanceof Promise) {
    result.then(release, release)
    return result
  }
  if (typeof (result as AsyncIterable<unknown> | undefined)?.[Symbol.asyncIterator] === "function") {
    return (async function*() {
      try {
        return yield* result as AsyncIterable<unknown>
      } finally {
        release()
      }
    })()
  }
  release()
  return result
}

/**
 * `handler`, noting the call contexts it was called with and keeping what
 * its calls reject with under their call context: the SDK's transport
 * answers a rejection as -32603 with its message only, and the server log
 * wants the whole error. The caller gets the handler's own promise, so no
 * step is added. See {@link DispatcherOptions} for what it refuses.
 */
const capturing = (
  handler: A2ARequestHandler,
  called: WeakSet<object>,
  thrown: WeakMap<object, unknown>,
  options: DispatcherOptions
): A2ARequestHandler => {
  const wrapped = new Map<PropertyKey, unknown>()
  return new Proxy(handler, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver)
      if (typeof value !== "function") return value
      let method = wrapped.get(property)
      if (method === undefined) {
        const checked = options.checkIds === true && storedIdMethods.has(property)
        const claim = sendMethods.has(property) ? options.claim : undefined
        method = (...args: Array<unknown>) => {
          const context = args[args.length - 1]
          const isContext = typeof context === "object" && context !== null
          if (isContext) called.add(context)
          if (isContext && property === "resubscribe") options.subscriptions?.subscribing(context)
          const problem = checked ? unstorableId(args[0]) : undefined
          if (problem !== undefined) return refusal(property, new RequestMalformedError(problem))
          const taskId = claim === undefined ? undefined : continuedTask(args[0])
          const release = taskId === undefined || claim === undefined
            ? undefined
            : claim(taskId, args[0] as SendMessageRequest, context as ServerCallContext)
          if (taskId !== undefined && release === undefined) {
            const visible = options.visible
            return refusal(
              property,
              visible === undefined ? stillRunning(taskId) : visible(taskId, context as ServerCallContext).then(
                (seen) => seen ? stillRunning(taskId) : new TaskNotFoundError(`Task not found: ${taskId}`)
              )
            )
          }
          let result: unknown
          try {
            result = value.apply(target, args)
          } catch (error) {
            release?.()
            throw error
          }
          if (isContext && result instanceof Promise) result.catch((error: unknown) => thrown.set(context, error))
          // Before its first read, when the handler takes its task's bus: the reader is bounded from its first event.
          if (
            isContext && streamMethods.has(property) && options.subscriptions !== undefined &&
            typeof (result as AsyncIterable<unknown> | undefined)?.[Symbol.asyncIterator] === "function"
          ) {
            result = options.subscriptions.reading(context, (result as AsyncIterable<unknown>)[Symbol.asyncIterator]())
          }
          return release === undefined ? result : releasing(result, release)
        }
        wrapped.set(property, method)
      }
      return method
    }
  })
}

/**
 * How deep a request may nest. The SDK copies messages and tasks with
 * `structuredClone`, whose limit depends on the stack (about 1900 levels
 * here, less elsewhere): past it, a run could start whose task can then not
 * be copied, saved or read. Far above any real message.
 *
 * @internal
 */
export const maxNesting = 256

/** @internal */
export const tooDeep = `Request nested deeper than ${maxNesting} levels.`

/**
 * Whether `value` nests objects and arrays more than `levels` deep. Recursive, without allocating (it runs
 * on every request): it never goes deeper than `levels`, far within the stack.
 *
 * @internal
 */
export const deeperThan = (value: unknown, levels: number): boolean => {
  // A decoded protobuf's bytes hold no nesting: not walked byte by byte.
  if (typeof value !== "object" || value === null || ArrayBuffer.isView(value)) return false
  if (levels === 0) return true
  if (Array.isArray(value)) {
    for (const item of value) if (deeperThan(item, levels - 1)) return true
    return false
  }
  for (const key in value) if (deeperThan((value as Record<string, unknown>)[key], levels - 1)) return true
  return false
}

/**
 * Why a decoded request is refused for its nesting (see `maxNesting`), or undefined.
 *
 * @internal
 */
export const nestingProblem = (request: unknown): string | undefined =>
  deeperThan(request, maxNesting) ? tooDeep : undefined

/**
 * The dispatcher, and the request handler it calls with what it refuses
 * (see {@link DispatcherOptions}), which the other transports call too.
 *
 * @internal
 */
export const makeDispatcher = (
  requestHandler: A2ARequestHandler,
  card: AgentCard,
  options: DispatcherOptions = {}
): Dispatcher & { readonly handler: A2ARequestHandler } => {
  const called = new WeakSet<object>()
  const thrown = new WeakMap<object, unknown>()
  const captured = capturing(requestHandler, called, thrown, options)
  const subscriptions = options.subscriptions
  const v1 = new JsonRpcTransportHandler(captured)
  const legacy = new LegacyJsonRpcTransportHandler(captured)
  const versionHeader = A2A_VERSION_HEADER.toLowerCase()
  const dispatch = async (body: unknown, headers: Headers, user?: User): Promise<Dispatched> => {
    const requestedVersion = headers[versionHeader] || undefined
    const useLegacy = (requestedVersion ?? A2A_LEGACY_PROTOCOL_VERSION) === A2A_LEGACY_PROTOCOL_VERSION
    const mapError = useLegacy ? LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError : rpcErrorOf
    const id = idOf(body)
    // The v0.3 handler has its own request types, checked against their own shapes.
    const problem = deeperThan(body, maxNesting) ? tooDeep : shapeProblem(body, useLegacy)
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
        }
        return { _tag: "Stream", first, iterator, close, mapError, id, headers: responseHeaders, dropped }
      }
      if (isInternalError(result) && !called.has(context)) {
        // The SDK failed before it reached the request handler: it could not decode the params.
        return { _tag: "Json", status: 200, body: invalidParams(id), headers: responseHeaders }
      }
      return {
        _tag: "Json",
        status: 200,
        // The SDK echoes an invalid id (an object, say) in its error; JSON-RPC answers it with null.
        body: typeof result === "object" && result !== null && "error" in result
          ? { ...result, id, ...(useLegacy ? {} : { error: throughTable((result as { error: RpcError }).error) }) }
          : result,
        headers: responseHeaders,
        ...(isInternalError(result) && thrown.has(context) ? { cause: thrown.get(context) } : {})
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
  return { dispatch, handler: captured }
}
