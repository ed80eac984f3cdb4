/**
 * The A2A server: its task store, executor and request handler, behind the
 * HTTP edge on a Node HTTP server, for the lifetime of the current scope.
 *
 * @internal
 */
import type { AgentCard } from "@a2a-js/sdk"
import { DefaultRequestHandler, InMemoryTaskStore, type TaskStore } from "@a2a-js/sdk/server"
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as HttpServerError from "@effect/platform/HttpServerError"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Duration, Effect, Predicate } from "effect"
import type * as Context from "effect/Context"
import type * as Scope from "effect/Scope"
import * as Http from "node:http"
import type * as A2AServer from "../../A2AServer.js"
import type * as AgentExecutor from "../../AgentExecutor.js"
import type * as IdempotencyLedger from "../../IdempotencyLedger.js"
import * as internalTracing from "../observability/tracing.js"
import * as internalExecutor from "./executor.js"
import * as internalHandler from "./handler.js"
import * as internalHttp from "./http.js"
import * as internalIdempotency from "./idempotency.js"
import * as internalRpc from "./rpc.js"
import * as internalTaskStore from "./taskStore.js"

const defaultMaxBodyBytes = 1024 * 1024

const isTaskStoreConfig = (store: TaskStore | A2AServer.TaskStoreConfig): store is A2AServer.TaskStoreConfig =>
  "_tag" in store

const taskStoreOf = (
  store: TaskStore | A2AServer.TaskStoreConfig | undefined
): Effect.Effect<TaskStore, internalTaskStore.TaskStoreError, Scope.Scope> =>
  store === undefined
    ? Effect.sync(() => new InMemoryTaskStore())
    : isTaskStoreConfig(store)
    ? Effect.mapError(internalTaskStore.make(store), (failure) => new internalTaskStore.TaskStoreError(failure))
    : Effect.succeed(store)

const buildCard = (options: A2AServer.CardOptions, baseUrl: string, rpcPath: string): AgentCard => {
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

const bracketed = (hostname: string): string => hostname.includes(":") ? `[${hostname}]` : hostname

// The platform's ServeError has no message of its own, only Node's error as its cause.
class ListenError extends HttpServerError.ServeError {
  constructor(cause: unknown, address: string) {
    super({ cause })
    this.message = Predicate.hasProperty(cause, "code") && cause.code === "EADDRINUSE"
      ? `address ${address} is in use`
      : `cannot listen on ${address}: ${cause instanceof Error ? cause.message : String(cause)}`
  }
}

// Binds the Node server; its base URL is the public one when given, otherwise the bound address.
const listen = (options: Pick<A2AServer.Options<unknown, unknown>, "host" | "port" | "publicUrl">) =>
  Effect.gen(function* () {
    const nodeServer = Http.createServer()
    const host = options.host ?? "127.0.0.1"
    const port = options.port ?? 0
    const httpServer = yield* NodeHttpServer.make(() => nodeServer, { host, port }).pipe(
      Effect.mapError((error) => new ListenError(error.cause, `${bracketed(host)}:${port}`))
    )
    const address = httpServer.address._tag === "TcpAddress"
      ? { hostname: httpServer.address.hostname, port: httpServer.address.port }
      : { hostname: "localhost", port: 0 }
    const hostForUrl = address.hostname === "0.0.0.0" || address.hostname === "::"
      ? "127.0.0.1"
      : bracketed(address.hostname)
    const url = (options.publicUrl ?? `http://${hostForUrl}:${address.port}`).replace(/\/+$/, "")
    return { nodeServer, httpServer, address, url }
  })

const requestHandlerOf = (
  card: AgentCard,
  taskStore: TaskStore,
  executor: AgentExecutor.EffectAgentExecutor,
  subscriptions: internalRpc.Subscriptions,
  idempotency: A2AServer.IdempotencyOptions | undefined
): Effect.Effect<internalIdempotency.Made, never, IdempotencyLedger.IdempotencyLedger | Scope.Scope> =>
  idempotency === undefined
    // Without idempotency, a message to a task whose run is in progress is refused.
    ? Effect.succeed({
      handler: new DefaultRequestHandler(
        card,
        taskStore,
        executor,
        ...internalHandler.handlerArguments(subscriptions.manager)
      ),
      claim: (taskId) => executor.claim(taskId)
    })
    : internalIdempotency.make({ card, taskStore, executor, subscriptions, options: idempotency })

const close = (
  nodeServer: Http.Server,
  executor: AgentExecutor.EffectAgentExecutor,
  shutdownTimeout: Duration.DurationInput,
  state: { closing: boolean }
) =>
  Effect.gen(function* () {
    state.closing = true
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

/** @internal */
export const make = <E, R>(
  options: A2AServer.Options<E, R>
): Effect.Effect<
  Context.Tag.Service<A2AServer.A2AServer>,
  A2AServer.MakeError,
  R | IdempotencyLedger.IdempotencyLedger | Scope.Scope
> =>
  Effect.gen(function* () {
    const taskStore = yield* taskStoreOf(options.taskStore)
    const executor = yield* internalExecutor.make(options.agent, { ...options, name: options.name ?? options.card.name, taskStore })
    const rpcPath = `/${(options.rpcPath ?? "/a2a/jsonrpc").replace(/^\/+/, "")}`
    const { address, httpServer, nodeServer, url } = yield* listen(options)
    const card = buildCard(options.card, `${url}/`, rpcPath.replace(/^\//, ""))
    const subscriptions = internalRpc.makeSubscriptions()
    const { claim, handler } = yield* requestHandlerOf(
      card,
      executor.taskStore ?? taskStore,
      executor,
      subscriptions,
      options.idempotency
    )
    const dispatcher = internalRpc.makeDispatcher(handler, card, {
      checkIds: options.taskStore !== undefined && isTaskStoreConfig(options.taskStore),
      claim,
      subscriptions
    })
    const state = { closing: false }
    const router = yield* internalHttp.router({
      card,
      cardMaxAge: options.cardMaxAge ?? 3600,
      rpcPath,
      maxBodyBytes: options.maxBodyBytes ?? defaultMaxBodyBytes,
      dispatcher,
      state
    })
    // The platform builds a span per request (URL parsing, every header as an
    // attribute); with no tracer of the application's it goes nowhere.
    const tracer = yield* Effect.tracer
    const httpSpans = options.httpSpans ?? internalTracing.exportsSpans(tracer)
    yield* httpSpans
      ? httpServer.serve(router)
      : HttpMiddleware.withTracerDisabledWhenEffect(httpServer.serve(router), () => true)

    // Added last, so it runs first when the scope closes.
    const shutdownTimeout = options.shutdownTimeout ?? Duration.seconds(10)
    yield* Effect.addFinalizer(() => close(nodeServer, executor, shutdownTimeout, state))

    return { url, rpcUrl: card.supportedInterfaces[0]!.url, address, card, executor, taskStore }
  })
