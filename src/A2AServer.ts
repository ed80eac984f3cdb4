/**
 * An A2A server for an Effect agent, on `@effect/platform`'s `HttpRouter`
 * and `@effect/platform-node`, as a Layer whose scope is the server's
 * lifetime.
 *
 * It serves `GET /.well-known/agent-card.json` (with `Cache-Control` and
 * `ETag`) and the JSON-RPC endpoint through the SDK's `DefaultRequestHandler`
 * and `JsonRpcTransportHandler`, with v0.3 compatibility on: like the SDK's
 * Express `jsonRpcHandler`, a request whose `A2A-Version` header is absent or
 * `0.3` is handled by `LegacyJsonRpcTransportHandler`, anything else by the
 * v1.0 handler. v1.0 clients (the SDK's `ClientFactory` among them) send
 * `A2A-Version: 1.0`.
 *
 * @since 0.1.0
 */
import { A2A_VERSION_HEADER, type AgentCard, formatSSEErrorEvent, formatSSEEvent, type SendMessageRequest, SSE_HEADERS } from "@a2a-js/sdk"
import { LegacyRestTransportHandler } from "@a2a-js/sdk/compat/v0_3/server"
import { DefaultRequestHandler, InMemoryTaskStore, ServerCallContext, type TaskStore, type User } from "@a2a-js/sdk/server"
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as HttpRouter from "@effect/platform/HttpRouter"
import type * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { Cause, Context, Data, Duration, Effect, Layer, Option, Schema, Stream } from "effect"
import type * as ConfigError from "effect/ConfigError"
import { identity } from "effect/Function"
import type * as Scope from "effect/Scope"
import { createHash } from "node:crypto"
import * as Http from "node:http"
import * as AgentExecutor from "./AgentExecutor.js"
import type * as IdempotencyLedger from "./IdempotencyLedger.js"
import * as internalFailure from "./internal/server/failure.js"
import * as internalIdempotency from "./internal/server/idempotency.js"
import * as internalParts from "./internal/server/handler.js"
import * as internalRpc from "./internal/server/rpc.js"
import * as internalTaskStore from "./internal/server/taskStore.js"
import * as internalTracing from "./internal/observability/tracing.js"
import * as ErrorId from "./internal/wire/errorId.js"

/**
 * The card fields the server does not fill in itself: `supportedInterfaces`
 * is always derived from the bound address.
 *
 * @example
 * ```ts
 * import { A2AServer } from "effect-a2a"
 *
 * const card: A2AServer.CardOptions = {
 *   name: "booking",
 *   description: "Books flights",
 *   version: "2.1.0",
 *   documentationUrl: "https://example.com/booking"
 * }
 * ```
 * @since 0.1.0
 */
export type CardOptions = Partial<Omit<AgentCard, "supportedInterfaces">> & {
  readonly name: string
  readonly description: string
}

/**
 * What {@link make} and {@link layer} take: the agent, its card, where to
 * listen, and the options of the `AgentExecutor` that runs the agent.
 *
 * @example
 * ```ts
 * import { A2AServer, AgentExecutor } from "effect-a2a"
 * import { Effect } from "effect"
 *
 * const options: A2AServer.Options<never, never> = {
 *   agent: () => Effect.succeed(AgentExecutor.completedText("booked")),
 *   card: { name: "booking", description: "Books flights" },
 *   host: "0.0.0.0",
 *   port: 8000,
 *   taskStore: A2AServer.TaskStoreConfig.Sqlite({ filename: "./tasks.db" })
 * }
 * ```
 * @since 0.1.0
 */
export interface Options<E, R> extends Omit<AgentExecutor.Options<R>, "taskStore"> {
  readonly agent: AgentExecutor.Agent<E, R>
  readonly card: CardOptions
  /** Default `127.0.0.1`. */
  readonly host?: string | undefined
  /** Default `0`: any free port; read the bound one from {@link A2AServer}. */
  readonly port?: number | undefined
  /** The JSON-RPC path. Default `/a2a/jsonrpc`. */
  readonly rpcPath?: string | undefined
  /** The base URL put in the card, when the server sits behind a proxy. Default: the bound address. */
  readonly publicUrl?: string | undefined
  /** Bodies larger than this are refused before parsing. Default 1 MiB. */
  readonly maxBodyBytes?: number | undefined
  /** The card's `max-age`, in seconds. Default 3600; 0 sends `no-cache`. */
  readonly cardMaxAge?: number | undefined
  /**
   * A tracing span per HTTP request. Default: on when the application
   * provides a tracer (e.g. `@effect/opentelemetry`), off otherwise.
   */
  readonly httpSpans?: boolean | undefined
  /** How long running tasks may go on when the server closes. Default 10 seconds. */
  readonly shutdownTimeout?: Duration.DurationInput | undefined
  /**
   * Default: the SDK's `InMemoryTaskStore`. {@link TaskStoreConfig} puts
   * the SDK's `DatabaseTaskStore` on SQLite or PostgreSQL, its table created
   * at start-up when missing; any other SDK `TaskStore` is used as given.
   */
  readonly taskStore?: TaskStore | TaskStoreConfig | undefined
  /**
   * Request-level idempotency: a `SendMessage` / `SendStreamingMessage`
   * carrying an idempotency key (message metadata `Idempotency.metadataKey`
   * or the `Idempotency-Key` header) runs once per key and caller. Needs an
   * `IdempotencyLedger` in the context. See {@link IdempotencyOptions}.
   */
  readonly idempotency?: IdempotencyOptions | undefined
}

/**
 * Request-level idempotency settings.
 *
 * - A repeat of a finished request gets the original task back in its final
 *   state (FAILED included) without running again.
 * - A repeat while it runs joins it: the same task id; a blocking call waits
 *   up to `wait` for its end (then gets the task as it is); a streaming call
 *   follows the run's events as they come when this replica runs it, and
 *   otherwise gets the final task as a single event. When the original is
 *   refused before any run (its key is then free), the repeat goes on as if
 *   it came first: it gets the same refusal, or runs.
 * - The same key with a different payload (the message without its
 *   `messageId`) is refused with JSON-RPC -32602
 *   `idempotency key reused with a different request`; so is a header key
 *   that differs from the metadata key.
 * - A running entry holds a `lease`, renewed while this replica runs it. When
 *   a replica dies, any replica's sweep (every `sweepEvery`) records the task
 *   FAILED with an error id (logged with reason `interrupted`), and repeats
 *   get that FAILED task: its side effects are never run a second time.
 *
 * @example
 * ```ts
 * import { A2AServer, AgentExecutor, IdempotencyLedger } from "effect-a2a"
 * import { Effect, Layer } from "effect"
 *
 * const ServerLive = A2AServer.layer({
 *   agent: () => Effect.succeed(AgentExecutor.completedText("booked")),
 *   card: { name: "booking", description: "Books flights" },
 *   idempotency: { lease: "30 seconds", wait: "30 seconds" }
 * }).pipe(Layer.provide(IdempotencyLedger.layerSqlite({ filename: "./idempotency.db" })))
 * ```
 * @since 0.1.0
 */
export interface IdempotencyOptions {
  /**
   * Who the caller is; one caller never sees another's entry. Default: the
   * A2A tenant and the authenticated user's name (`""` when anonymous). The
   * tenant should be the request's A2A tenant: the sweep records interrupted
   * tasks in the task store under it.
   */
  readonly identity?: ((headers: internalIdempotency.Headers, user: User | undefined) => IdempotencyLedger.Identity) | undefined
  /** The lease of a running entry. Default 30 seconds. */
  readonly lease?: Duration.DurationInput | undefined
  /** How long a blocking repeat waits for the running original. Default 30 seconds. */
  readonly wait?: Duration.DurationInput | undefined
  /** How often expired leases and entries past retention are swept. Default 5 seconds. */
  readonly sweepEvery?: Duration.DurationInput | undefined
}

/**
 * Where the SDK's `DatabaseTaskStore` keeps tasks. The server runs the
 * SDK's own migration (`a2a-db upgrade --store tasks`) at start-up, which is
 * idempotent and safe for several replicas starting together, and closes
 * the connection when it stops. Needs `kysely` plus `better-sqlite3` (SQLite)
 * or `pg` (PostgreSQL). Ids the SDK's table cannot hold are refused with
 * -32602 before anything runs, on either database: a task or context id
 * over 36 characters, a tenant over 255, any id with NUL or a lone surrogate.
 *
 * @example
 * ```ts
 * import { A2AServer } from "effect-a2a"
 *
 * A2AServer.TaskStoreConfig.Sqlite({ filename: "./tasks.db" })
 * A2AServer.TaskStoreConfig.Postgres({ url: "postgresql://a2a@db/a2a", poolSize: 10 })
 * ```
 * @since 0.1.0
 */
export type TaskStoreConfig = Data.TaggedEnum<{
  /** A file; `:memory:` is refused (use the default in-memory store). */
  Sqlite: { readonly filename: string }
  /** `poolSize` defaults to 10. */
  Postgres: { readonly url: string; readonly poolSize?: number | undefined }
}>

/**
 * @since 0.1.0
 */
export const TaskStoreConfig = Data.taggedEnum<TaskStoreConfig>()

/**
 * The database task store could not be set up: its driver is missing, its
 * table could not be created, or the database is unreachable.
 *
 * @example
 * ```ts
 * import { A2AServer, AgentExecutor } from "effect-a2a"
 * import { Effect } from "effect"
 *
 * const server = A2AServer.make({
 *   agent: () => Effect.succeed(AgentExecutor.completedText("booked")),
 *   card: { name: "booking", description: "Books flights" },
 *   taskStore: A2AServer.TaskStoreConfig.Postgres({ url: "postgresql://a2a@db/a2a" })
 * }).pipe(Effect.tapErrorTag("TaskStoreError", (error) => Effect.logError(`task store (${error.reason}): ${error.message}`)))
 * ```
 * @since 0.1.0
 */
export class TaskStoreError extends Schema.TaggedError<TaskStoreError>("effect-a2a/TaskStoreError")(
  "TaskStoreError",
  {
    reason: Schema.Literal("Driver", "Migration", "Connection"),
    message: Schema.String
  }
) {}

const isTaskStoreConfig = (store: TaskStore | TaskStoreConfig): store is TaskStoreConfig => "_tag" in store

/**
 * The running server.
 *
 * @example
 * ```ts
 * import { A2AServer, AgentExecutor } from "effect-a2a"
 * import { Effect } from "effect"
 *
 * const ServerLive = A2AServer.layer({
 *   agent: () => Effect.succeed(AgentExecutor.completedText("hello")),
 *   card: { name: "greeter", description: "Says hello" }
 * })
 *
 * const program = Effect.gen(function* () {
 *   const server = yield* A2AServer.A2AServer
 *   console.log(server.url) // http://127.0.0.1:<port>
 * }).pipe(Effect.provide(ServerLive))
 * ```
 * @since 0.1.0
 */
export class A2AServer extends Context.Tag("effect-a2a/A2AServer")<A2AServer, {
  /** The base URL; the card is at `${url}/.well-known/agent-card.json`. */
  readonly url: string
  /** The JSON-RPC endpoint. */
  readonly rpcUrl: string
  readonly address: { readonly hostname: string; readonly port: number }
  readonly card: AgentCard
  readonly executor: AgentExecutor.EffectAgentExecutor
  readonly taskStore: TaskStore
}>() {}

/**
 * The well-known path of the agent card.
 *
 * @example
 * ```ts
 * import { A2AServer } from "effect-a2a"
 * import { Effect } from "effect"
 *
 * const cardUrl = Effect.map(A2AServer.A2AServer, (server) => `${server.url}${A2AServer.cardPath}`)
 * ```
 * @since 0.1.0
 */
export const cardPath = "/.well-known/agent-card.json"

const defaultMaxBodyBytes = 1024 * 1024
const encoder = new TextEncoder()

// A string body goes to Node's `end` as is, with its length declared: one write with the headers,
// no re-encoding and no chunked framing (which Node would choose for a body of unknown length).
const jsonText = (text: string, status: number, headers: Record<string, string>) =>
  HttpServerResponse.raw(text, { status, contentType: "application/json", contentLength: Buffer.byteLength(text), headers })

const jsonResponse = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  jsonText(JSON.stringify(body), status, headers)

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false })
const versionHeader = A2A_VERSION_HEADER.toLowerCase()

const rpcError = (id: unknown, code: number, message: string, status = 200) =>
  jsonResponse({ jsonrpc: "2.0", id, error: { code, message } }, status)

// A refused body is not read on: the connection closes after the answer, instead of taking in the rest.
const tooLarge = (message: string) =>
  HttpServerResponse.setHeader(rpcError(null, internalRpc.INVALID_REQUEST, message, 413), "connection", "close")

const buildCard = (options: CardOptions, baseUrl: string, rpcPath: string): AgentCard => {
  const url = new URL(rpcPath, baseUrl).toString()
  return {
    version: "1.0.0",
    provider: undefined,
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills: [],
    signatures: [],
    ...options,
    capabilities: { streaming: true, pushNotifications: false, extensions: [], ...options.capabilities },
    supportedInterfaces: [
      { url, protocolBinding: "JSONRPC", tenant: "", protocolVersion: "1.0" },
      { url, protocolBinding: "JSONRPC", tenant: "", protocolVersion: "0.3" }
    ]
  }
}

/**
 * Starts the server in the current scope. Fails when the port cannot be
 * bound, and with `AgentExecutor.ConfigurationError` when debug error detail
 * is on in production without `allowDebugErrorsInProduction`.
 *
 * Closing the scope stops accepting requests, lets running tasks finish
 * within `shutdownTimeout`, then ends the rest FAILED with an error id.
 *
 * @example
 * ```ts
 * import { A2AServer, AgentExecutor } from "effect-a2a"
 * import { Effect } from "effect"
 *
 * const program = Effect.scoped(Effect.gen(function* () {
 *   const server = yield* A2AServer.make({
 *     agent: () => Effect.succeed(AgentExecutor.completedText("hello")),
 *     card: { name: "greeter", description: "Says hello" }
 *   })
 *   yield* Effect.log(`JSON-RPC at ${server.rpcUrl}`)
 *   yield* Effect.never // serves until the scope closes
 * }))
 * ```
 * @since 0.1.0
 */
export const make: {
  <E, R>(
    options: Options<E, R> & { readonly idempotency: IdempotencyOptions }
  ): Effect.Effect<Context.Tag.Service<A2AServer>, MakeError, R | IdempotencyLedger.IdempotencyLedger | Scope.Scope>
  <E, R>(options: Options<E, R>): Effect.Effect<Context.Tag.Service<A2AServer>, MakeError, R | Scope.Scope>
} = <E, R>(
  options: Options<E, R>
): Effect.Effect<Context.Tag.Service<A2AServer>, MakeError, R | IdempotencyLedger.IdempotencyLedger | Scope.Scope> =>
  Effect.gen(function* () {
    const taskStore = options.taskStore === undefined
      ? new InMemoryTaskStore()
      : isTaskStoreConfig(options.taskStore)
      ? yield* Effect.mapError(internalTaskStore.make(options.taskStore), (failure) => new TaskStoreError(failure))
      : options.taskStore
    const executor = yield* AgentExecutor.make(options.agent, { ...options, name: options.name ?? options.card.name, taskStore })
    const rpcPath = `/${(options.rpcPath ?? "/a2a/jsonrpc").replace(/^\/+/, "")}`
    const maxBodyBytes = options.maxBodyBytes ?? defaultMaxBodyBytes
    const cardMaxAge = options.cardMaxAge ?? 3600
    const shutdownTimeout = options.shutdownTimeout ?? Duration.seconds(10)

    const nodeServer = Http.createServer()
    const httpServer = yield* NodeHttpServer.make(() => nodeServer, {
      host: options.host ?? "127.0.0.1",
      port: options.port ?? 0
    })
    const address = httpServer.address._tag === "TcpAddress"
      ? { hostname: httpServer.address.hostname, port: httpServer.address.port }
      : { hostname: "localhost", port: 0 }
    const hostForUrl = address.hostname === "0.0.0.0" || address.hostname === "::"
      ? "127.0.0.1"
      : address.hostname.includes(":")
      ? `[${address.hostname}]`
      : address.hostname
    const url = (options.publicUrl ?? `http://${hostForUrl}:${address.port}`).replace(/\/+$/, "")
    const card = buildCard(options.card, `${url}/`, rpcPath.replace(/^\//, ""))
    const subscriptions = internalRpc.makeSubscriptions()
    // Keyed messages let through to the ledger although a run of their task was in progress here.
    const unheld = new WeakSet<ServerCallContext>()
    const requestHandler = options.idempotency === undefined
      ? new DefaultRequestHandler(
        card,
        executor.taskStore ?? taskStore,
        executor,
        ...internalParts.handlerArguments(subscriptions.manager)
      )
      : yield* (internalIdempotency.make({
        card,
        taskStore: executor.taskStore ?? taskStore,
        executor,
        subscriptions,
        unheld: (context) => unheld.has(context),
        options: options.idempotency
      }))
    const keyed = (params: SendMessageRequest, context: ServerCallContext): boolean => {
      if (options.idempotency === undefined || params.message === undefined) return false
      try {
        return internalIdempotency.keyOf(params.message, internalParts.headersOf(context)) !== undefined
      } catch {
        return true
      }
    }
    const dispatcher = internalRpc.makeDispatcher(requestHandler, card, {
      checkIds: options.taskStore !== undefined && isTaskStoreConfig(options.taskStore),
      claim: (taskId, params, context) => {
        const release = executor.claim(taskId)
        if (release !== undefined || !keyed(params, context)) return release
        // A keyed message goes on to the ledger, which joins a repeat to its run; a new key, it refuses.
        unheld.add(context)
        return () => {}
      },
      subscriptions
    })

    // Like the SDK's Express `agentCardHandler` with v0.3 compatibility: a
    // request whose A2A-Version is absent or in [0.3, 1.0) gets the card in
    // the v0.3 shape (the SDK's own conversion, the v1.0 interfaces embedded),
    // any other the v1.0 card; each with its own ETag.
    const legacyCard = yield* Effect.promise(() =>
      new LegacyRestTransportHandler({ getAuthenticatedExtendedAgentCard: () => Promise.resolve(card) } as never)
        .getAuthenticatedExtendedAgentCard(new ServerCallContext())
    )
    const cardCacheControl = cardMaxAge > 0 ? `public, max-age=${cardMaxAge}` : "no-cache"
    const servedCard = (value: unknown) => {
      const body = JSON.stringify(value)
      const etag = `W/"${createHash("sha256").update(body).digest("hex").slice(0, 16)}"`
      return { body, etag, headers: { ETag: etag, "Cache-Control": cardCacheControl, Vary: A2A_VERSION_HEADER } }
    }
    const v1Card = servedCard(card)
    const v03Card = servedCard({ ...legacyCard, supportedInterfaces: structuredClone(card.supportedInterfaces) })
    const serveCard = Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
      const served = internalRpc.isLegacyVersion(request.headers[versionHeader]) ? v03Card : v1Card
      const ifNoneMatch = request.headers["if-none-match"]
      if (
        ifNoneMatch !== undefined &&
        ifNoneMatch.split(",").some((tag) => tag.trim() === served.etag || tag.trim() === "*")
      ) {
        return HttpServerResponse.empty({ status: 304, headers: served.headers })
      }
      return jsonText(served.body, 200, served.headers)
    })

    // -32603 answers carry only an error id; what happened is logged under it.
    // `thrown` is what was thrown, when known; otherwise the log has the error's message.
    const sanitize = (error: internalRpc.RpcError, id: unknown, where: string, thrown?: unknown) => {
      if (error.code !== internalRpc.INTERNAL_ERROR) return Effect.succeed(error)
      // Already opaque: its cause was logged under that id where it happened.
      if (ErrorId.isInternalErrorText(error.message)) {
        return Effect.succeed<internalRpc.RpcError>({ code: error.code, message: error.message })
      }
      const errorId = ErrorId.make()
      const cause = thrown === undefined ? `${error.message}` : internalFailure.renderCause(Cause.die(thrown))
      return internalFailure.logErrorOffSpan("Unexpected error in the JSON-RPC endpoint", {
        errorId,
        where,
        requestId: String(id),
        cause
      }).pipe(
        Effect.as<internalRpc.RpcError>({ code: internalRpc.INTERNAL_ERROR, message: ErrorId.internalErrorText(errorId) })
      )
    }

    const sanitizeBody = (body: unknown, where: string, thrown?: unknown): Effect.Effect<unknown> => {
      if (typeof body === "object" && body !== null && "error" in body) {
        const response = body as internalRpc.RpcErrorResponse
        return Effect.map(sanitize(response.error, response.id, where, thrown), (error) => ({ ...response, error }))
      }
      return Effect.succeed(body)
    }

    const sseStream = (dispatched: Extract<internalRpc.Dispatched, { _tag: "Stream" }>) => {
      const { id, iterator, mapError } = dispatched
      const head = dispatched.first === undefined || dispatched.first.done === true
        ? Stream.empty
        : Stream.succeed(dispatched.first.value)
      const rest = dispatched.first?.done === true ? Stream.empty : Stream.repeatEffectOption(
        Effect.tryPromise({ try: () => iterator.next(), catch: (error) => error }).pipe(
          Effect.mapError(Option.some),
          Effect.flatMap((next) => next.done === true ? Effect.fail(Option.none()) : Effect.succeed(next.value))
        )
      )
      return Stream.concat(head, rest).pipe(
        // An event that cannot be written ends the stream with an error event, like any failure.
        Stream.mapEffect((event) =>
          Effect.flatMap(sanitizeBody(event, "stream"), (body) => Effect.try({ try: () => formatSSEEvent(body), catch: identity }))
        ),
        Stream.catchAll((error) =>
          Stream.fromEffect(Effect.map(
            sanitize(mapError(error), id, "stream", error),
            (mapped) => formatSSEErrorEvent({ jsonrpc: "2.0", id, error: mapped })
          ))
        ),
        Stream.map((text) => encoder.encode(text)),
        Stream.ensuring(Effect.sync(dispatched.close))
      )
    }

    let closing = false

    const serveRpc = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
      if (closing) {
        return Effect.succeed(rpcError(null, internalRpc.INTERNAL_ERROR, "The server is shutting down.", 503))
      }
      // The Node request itself: its headers object and body stream, without copies.
      const incoming = NodeHttpServerRequest.toIncomingMessage(request)
      const headers = incoming.headers as internalRpc.Headers
      const contentType = headers["content-type"]
      if (contentType !== undefined && contentType.split(";", 1)[0]!.trim().toLowerCase() !== "application/json") {
        return Effect.succeed(rpcError(null, -32005, `Unsupported Content-Type; expected application/json.`))
      }
      const declared = Number(headers["content-length"])
      if (Number.isFinite(declared) && declared > maxBodyBytes) {
        return Effect.succeed(tooLarge("Request body too large."))
      }
      // Read, parse and dispatch in one promise: one wait for the fiber per request.
      type Received = HttpServerResponse.HttpServerResponse | internalRpc.Dispatched
      const receive = (): Promise<Received> =>
        internalRpc.readBody(incoming, maxBodyBytes).then((bytes): Received | Promise<Received> => {
          if (bytes === undefined) {
            return tooLarge("Request body too large or unreadable.")
          }
          let body: unknown
          try {
            body = JSON.parse(utf8.decode(bytes))
          } catch {
            return rpcError(null, internalRpc.PARSE_ERROR, "Invalid JSON payload.")
          }
          return dispatcher.dispatch(body, headers)
        })
      return Effect.suspend(() => {
        const received = receive()
        return Effect.flatMap(Effect.promise(() => received), (dispatched) => {
          if (HttpServerResponse.isServerResponse(dispatched)) return Effect.succeed(dispatched)
          if (dispatched._tag === "Json") {
            return Effect.map(
              sanitizeBody(dispatched.body, "response", dispatched.cause),
              (sanitized) => jsonResponse(sanitized, dispatched.status, dispatched.headers)
            )
          }
          return Effect.succeed(HttpServerResponse.stream(sseStream(dispatched), {
            contentType: SSE_HEADERS["Content-Type"],
            headers: { ...SSE_HEADERS, ...dispatched.headers }
          }))
        }).pipe(
          // A client gone before its answer: a stream that would have been written is closed all the same,
          // so that what it holds (the hold on a task it continues, its place on the task's bus) is let go.
          Effect.onInterrupt(() =>
            Effect.sync(() => {
              received.then((dispatched) => {
                if (!HttpServerResponse.isServerResponse(dispatched) && dispatched._tag === "Stream") dispatched.close()
              }, () => undefined)
            })
          )
        )
      })
    }).pipe(
      Effect.catchAllCause((cause) => {
        const errorId = ErrorId.make()
        return internalFailure.logErrorOffSpan("Unexpected error in the JSON-RPC endpoint", {
          errorId,
          cause: internalFailure.renderCause(cause)
        }).pipe(
          Effect.as(rpcError(null, internalRpc.INTERNAL_ERROR, ErrorId.internalErrorText(errorId), 500))
        )
      })
    )

    const router = HttpRouter.empty.pipe(
      HttpRouter.get(cardPath, serveCard),
      HttpRouter.post(rpcPath as HttpRouter.PathInput, serveRpc)
    )
    // The platform builds a span per request (URL parsing, every header as an
    // attribute); with no tracer of the application's it goes nowhere.
    const tracer = yield* Effect.tracer
    const httpSpans = options.httpSpans ?? internalTracing.exportsSpans(tracer)
    yield* httpSpans
      ? httpServer.serve(router)
      : HttpMiddleware.withTracerDisabledWhenEffect(httpServer.serve(router), () => true)

    // Added last, so it runs first when the scope closes.
    yield* Effect.addFinalizer(() =>
      Effect.gen(function* () {
        closing = true
        // Stops accepting; the connections close as they go idle.
        let closed = false
        nodeServer.close(() => {
          closed = true
        })
        nodeServer.closeIdleConnections()
        yield* executor.shutdown(shutdownTimeout)
        // Let the answers to the runs that just ended go out: a connection is idle once its answer is.
        yield* Effect.sync(() => nodeServer.closeIdleConnections()).pipe(
          Effect.zipRight(Effect.sleep("10 millis")),
          Effect.repeat({ until: () => closed, times: 200 })
        )
        nodeServer.closeAllConnections()
      })
    )

    return { url, rpcUrl: card.supportedInterfaces[0]!.url, address, card, executor, taskStore }
  })

/**
 * The server as a Layer: it runs while the layer is alive.
 *
 * @example
 * ```ts
 * import { A2AServer, AgentExecutor } from "effect-a2a"
 * import { NodeRuntime } from "@effect/platform-node"
 * import { Effect, Layer } from "effect"
 *
 * A2AServer.layer({
 *   agent: () => Effect.succeed(AgentExecutor.completedText("hello")),
 *   card: { name: "greeter", description: "Says hello" },
 *   port: 8000
 * }).pipe(Layer.launch, NodeRuntime.runMain)
 * ```
 * @since 0.1.0
 */
export const layer: {
  <E, R>(
    options: Options<E, R> & { readonly idempotency: IdempotencyOptions }
  ): Layer.Layer<A2AServer, MakeError, R | IdempotencyLedger.IdempotencyLedger>
  <E, R>(options: Options<E, R>): Layer.Layer<A2AServer, MakeError, R>
} = <E, R>(
  options: Options<E, R>
): Layer.Layer<A2AServer, MakeError, R | IdempotencyLedger.IdempotencyLedger> =>
  Layer.scoped(A2AServer, make(options))

/**
 * Why the server could not start.
 *
 * @example
 * ```ts
 * import { A2AServer } from "effect-a2a"
 *
 * const hint = (error: A2AServer.MakeError): string =>
 *   error._tag === "ServeError" ? "is the port free?"
 *   : error._tag === "TaskStoreError" ? `check the task database (${error.reason})`
 *   : "check the configuration"
 * ```
 * @since 0.1.0
 */
export type MakeError =
  | HttpServerError.ServeError
  | AgentExecutor.ConfigurationError
  | TaskStoreError
  | ConfigError.ConfigError
