/**
 * The A2A server as routes of any `@effect/platform` HTTP server: its task
 * store, executor and request handler behind the card, JSON-RPC and
 * HTTP+JSON routes,
 * for the lifetime of the current scope. Nothing here is Node's: the Node
 * server of `A2AServer.make` is in `server.ts`.
 *
 * @internal
 */
import type { AgentCard } from "@a2a-js/sdk"
import type { PushNotificationStore, TaskStore } from "@a2a-js/sdk/server"
import type * as HttpRouter from "@effect/platform/HttpRouter"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import type * as A2AServer from "../../../A2AServer.js"
import type * as AgentExecutor from "../../../AgentExecutor.js"
import type * as IdempotencyLedger from "../../../IdempotencyLedger.js"
import * as internalEventId from "../../wire/eventId.js"
import * as internalTransport from "../../wire/transport.js"
import * as internalAuthentication from "../caller/authentication.js"
import * as internalDurable from "../durable/durableRun.js"
import type { DurableRuns } from "../durable/durableRuns.js"
import * as internalCardSigning from "../handler/cardSigning.js"
import * as internalRequestHandler from "../handler/requestHandler.js"
import type * as internalRunStages from "../handler/runStages.js"
import * as internalStages from "../handler/stages.js"
import * as internalSubscription from "../handler/subscription.js"
import * as internalLoad from "../http/load.js"
import * as internalIdempotency from "../idempotency/idempotency.js"
import * as internalPush from "../push/push.js"
import * as internalReplication from "../replication/replication.js"
import * as internalCancelWatch from "../run/cancelWatch.js"
import * as internalExecutor from "../run/executor.js"
import * as internalMakeStore from "../store/makeStore.js"
import type { Forgotten } from "../store/shelf.js"
import * as internalStore from "../store/store.js"
import * as internalTaskStore from "../store/taskStore.js"
import * as internalGrpc from "../transport/grpc.js"
import * as internalRest from "../transport/rest.js"
import * as internalRpc from "../transport/rpc.js"
import type * as internalTransports from "../transport/transports.js"
import * as internalHttp from "./http.js"
import * as internalResumes from "./resumes.js"

/** @internal */
export const defaultMaxBodyBytes = 1024 * 1024

const defaultShutdownTimeout = Duration.seconds(10)

/** What `make` and `layer` serve by default: every transport. */
const defaultTransports = internalTransport.all

/** What `makeRouter` serves by default: what its router carries (gRPC needs its own port). */
const routerTransports: ReadonlyArray<internalTransport.Transport> = ["JSONRPC", "HTTP+JSON"]

const isTaskStoreConfig = (store: TaskStore | A2AServer.TaskStoreConfig): store is A2AServer.TaskStoreConfig =>
  "_tag" in store

/** The server's task store, and what is wired beside it. */
interface Stores {
  /** What the request handler reads and writes, as the `TaskStore` service. */
  readonly native: internalStore.TaskStore
  /** Whether another caller holds a task not found, when the store can tell. */
  readonly heldElsewhere: internalAuthentication.HeldElsewhere | undefined
  /** Told of each task the memory store forgets. */
  readonly whenForgotten: ((listener: Forgotten) => void) | undefined
  /** The cancels other servers sharing the store append, when it can tell (a database store). */
  readonly cancels: internalStore.CancelFeed | undefined
  /** Where durable agents' runs are kept: a database store's. */
  readonly durable: DurableRuns | undefined
}

// A user's own store of the SDK's shape is served through `fromSdk`; a configured one is native.
const storesOf = (
  store: TaskStore | A2AServer.TaskStoreConfig | undefined,
  withPushConfigs: boolean
): Effect.Effect<Stores, internalTaskStore.TaskStoreError, Scope.Scope> =>
  store !== undefined && !isTaskStoreConfig(store)
    ? Effect.succeed({
      native: internalStore.fromSdk(store),
      heldElsewhere: undefined,
      whenForgotten: undefined,
      cancels: undefined,
      durable: undefined
    })
    : Effect.map(
      internalMakeStore.make(store ?? internalTaskStore.defaultConfig, { withPushConfigs }),
      (native) => ({
        native,
        heldElsewhere: native.heldElsewhere,
        whenForgotten: "whenForgotten" in native ? native.whenForgotten : undefined,
        cancels: "cancels" in native ? native.cancels : undefined,
        durable: "durable" in native ? native.durable : undefined
      })
    )

/** Where each served transport is reached. @internal */
export type Urls = { readonly [T in internalTransport.Transport]?: string }

/**
 * The card's `supportedInterfaces`: each served transport with a URL, in
 * the order served. JSON-RPC answers v1.0 and v0.3 clients; HTTP+JSON
 * serves v1.0 only (the SDK's v0.3 REST router is Express's, and its
 * converters are private).
 *
 * @internal
 */
export const interfacesOf = (
  served: ReadonlyArray<internalTransport.Transport>,
  urls: Urls
): AgentCard["supportedInterfaces"] =>
  served.flatMap((transport) => {
    const url = urls[transport]
    if (url === undefined) return []
    const versions = transport === "HTTP+JSON" ? ["1.0"] : ["1.0", "0.3"]
    return versions.map((protocolVersion) => ({ url, protocolBinding: transport, tenant: "", protocolVersion }))
  })

const buildCard = (
  options: A2AServer.CardOptions,
  interfaces: AgentCard["supportedInterfaces"],
  pushNotifications: boolean,
  extendedAgentCard: boolean,
  resumable: boolean
): AgentCard => ({
  version: "1.0.0",
  provider: undefined,
  securitySchemes: {},
  securityRequirements: [],
  defaultInputModes: ["text/plain"],
  defaultOutputModes: ["text/plain"],
  skills: [],
  signatures: [],
  ...options,
  capabilities: {
    streaming: true,
    pushNotifications,
    ...options.capabilities,
    extensions: [...(options.capabilities?.extensions ?? []), ...(resumable ? [internalEventId.resumeExtension] : [])],
    ...(extendedAgentCard ? { extendedAgentCard } : {})
  },
  supportedInterfaces: interfaces
})

/** The request handler with its first stages, and the hold it takes on the task a message continues. */
interface Keyed {
  readonly handler: internalRequestHandler.RequestHandler
  /** The core handler's, which a durable run started again goes through, with no caller's key. */
  readonly resuming: internalRequestHandler.Resuming
  readonly claim: internalStages.Claim
  readonly heldElsewhere?: internalIdempotency.Idempotency["heldElsewhere"] | undefined
}

const requestHandlerOf = (
  card: AgentCard,
  extendedCard: AgentCard | undefined,
  executor: AgentExecutor.EffectAgentExecutor,
  subscriptions: internalSubscription.Subscriptions,
  idempotency: A2AServer.IdempotencyOptions | undefined,
  pushStore: PushNotificationStore | undefined,
  replication: internalReplication.Replication | undefined,
  appendRetryMillis: number,
  runStages: ReadonlyArray<internalRunStages.RunStage>,
  durable: DurableRuns | undefined
): Effect.Effect<Keyed, never, IdempotencyLedger.IdempotencyLedger | internalStore.TaskStore | Scope.Scope> =>
  Effect.gen(function*() {
    const keys = idempotency === undefined ? undefined : yield* internalIdempotency.make({
      card,
      executor,
      subscriptions,
      options: idempotency,
      follow: replication?.subscribe,
      durable
    })
    const core = yield* internalRequestHandler.make({
      card,
      extendedCard,
      executor,
      channels: subscriptions.channels,
      pushStore,
      appendRetryMillis,
      runStages,
      ...keys?.hooks
    })
    // Without idempotency, a message to a task whose run is in progress is refused.
    if (keys === undefined) return { handler: core, resuming: core, claim: (taskId) => executor.claim(taskId) }
    return {
      handler: internalIdempotency.keying(core, keys),
      resuming: core,
      claim: keys.claim,
      heldElsewhere: keys.heldElsewhere
    }
  })

/** The run stage of the server's bound: a run shares the hold of the request that started it. */
const counted = (load: internalLoad.Load): internalRunStages.RunStage => ({
  startNow: ({ requestContext }) => {
    const release = load.run(requestContext.userMessage.messageId)
    return release === undefined ? undefined : { end: Effect.sync(release) }
  }
})

/** What serves the agent, whatever server carries its routes. @internal */
export interface App {
  readonly router: HttpRouter.HttpRouter
  /** The JSON-RPC endpoint the router serves, when served: a server of its own may answer it first. */
  readonly rpc: internalHttp.RpcEndpoint | undefined
  /** The HTTP+JSON routes the router serves, when served: a server of its own may answer them first. */
  readonly rest: internalRest.Options | undefined
  readonly card: AgentCard
  readonly rpcUrl: string
  readonly urls: Urls
  readonly executor: AgentExecutor.EffectAgentExecutor
  readonly taskStore: TaskStore
  readonly replica: Option.Option<string>
  /**
   * Refuses new requests (503), then lets running tasks finish within the
   * shutdown timeout; then a gRPC server is drained.
   */
  readonly shutdown: Effect.Effect<void>
}

/**
 * The agent's routes, its card pointing below `url`. The caller decides when
 * `shutdown` runs, as it alone knows when its server stops accepting.
 *
 * @internal
 */
export const make = <E, R>(
  options: Omit<A2AServer.RouterOptions<E, R>, "publicUrl">,
  url: string,
  readBody?: internalHttp.BodyReader,
  grpc?: internalTransports.OwnPort
): Effect.Effect<App, A2AServer.MakeError, R | IdempotencyLedger.IdempotencyLedger | Scope.Scope> =>
  Effect.gen(function*() {
    const name = options.name ?? options.card.name
    const stores = yield* storesOf(options.taskStore, options.push !== undefined)
    const stored = stores.native
    // What still reads the SDK's shape (the public `taskStore`) reads this view.
    const taskStore = options.taskStore !== undefined && !isTaskStoreConfig(options.taskStore)
      ? options.taskStore
      : internalStore.toSdk(stored, yield* Effect.runtime<never>())
    const load = yield* internalLoad.make(options, name)
    const push = options.push === undefined
      ? undefined
      : yield* internalPush.make(options.push, options.taskStore, name, stores.whenForgotten)
    // The request handler writes every event of a run, its end included: the executor needs no store. It reads
    // one only when told of a cancel that reached another server sharing it (`run/cancelWatch.ts`).
    // A durable agent's runs are kept in the store's database: without one the executor refuses it.
    const durable = options.durable === undefined || options.durable === false ? undefined : stores.durable
    const executorOptions:
      & AgentExecutor.Options<R>
      & internalCancelWatch.CancelWatchOptions
      & internalDurable.DurableOptions = {
        ...options,
        name,
        [internalCancelWatch.cancelWatchOption]: stores.cancels === undefined
          ? undefined
          : { feed: stores.cancels, store: stored },
        [internalDurable.durableOption]: durable === undefined ? undefined : {
          runs: durable,
          maxResumes: typeof options.durable === "object" ? options.durable.maxResumes ?? 3 : 3
        }
      }
    // Handed to the request handler as it is: what goes on around its runs is in `runStages`.
    const executor = yield* internalExecutor.make(options.agent, executorOptions)
    // Set once the request handler is made, and gone once the server stops: a lapsed claim of a durable run is
    // resumed through it.
    const late: { resuming?: internalRequestHandler.Resuming | undefined } = {}
    const replication = options.replication === undefined
      ? undefined
      : yield* internalReplication.open(
        options.replication,
        stored,
        durable === undefined ?
          undefined :
          (claims) => internalResumes.onLapsed(durable, stored, claims, () => late.resuming)
      )
    // Around each run, in this order (ended in reverse): the bound's hold, the log's numbers, the push sender.
    const runStages = [
      ...(load === undefined ? [] : [counted(load)]),
      ...(replication === undefined ? [] : [replication.logging(executor)]),
      ...(push === undefined ? [] : [push.pushing])
    ]
    const served = options.transports ?? defaultTransports
    const rpcPath = `/${(options.rpcPath ?? "/a2a/jsonrpc").replace(/^\/+/, "")}`
    const restPath = `/${(options.restPath ?? internalRest.defaultPath).replace(/^\/+/, "").replace(/\/+$/, "")}`
    const base = `${url.replace(/\/+$/, "")}/`
    const rpcUrl = new URL(rpcPath.slice(1), base).toString()
    const urls: Urls = {
      ...(served.includes("JSONRPC") ? { JSONRPC: rpcUrl } : {}),
      ...(served.includes("HTTP+JSON") ? { "HTTP+JSON": new URL(restPath.slice(1), base).toString() } : {}),
      ...(grpc === undefined ? {} : { GRPC: grpc.url })
    }
    const interfaces = interfacesOf(served, urls)
    const cardOf = (fields: A2AServer.CardOptions) =>
      internalAuthentication.declare(
        buildCard(
          fields,
          interfaces,
          push !== undefined,
          options.extendedCard !== undefined,
          replication !== undefined
        ),
        options.authenticate?.scheme
      )
    const [card, extendedCard] = yield* internalCardSigning.signCards(
      options.signing,
      cardOf(options.card),
      options.extendedCard === undefined ? undefined : cardOf({ ...options.card, ...options.extendedCard })
    )
    const gate = options.authenticate === undefined
      ? undefined
      : yield* internalAuthentication.makeGate(options.authenticate, name)
    const subscriptions = internalSubscription.makeSubscriptions()
    const { claim, handler: handled, heldElsewhere, resuming: core } = yield* requestHandlerOf(
      card,
      extendedCard,
      executor,
      subscriptions,
      options.idempotency,
      push?.store,
      replication,
      Duration.toMillis(options.finalSaveTimeout ?? Duration.seconds(30)),
      runStages,
      durable
    ).pipe(Effect.provideService(internalStore.TaskStore, stored))
    late.resuming = core
    // A paused durable run has no run in progress to end it: its task's cancel does.
    const keyed = durable === undefined ? handled : internalResumes.endingPaused(handled, durable)
    // One server alone on its store starts again, now, the durable runs its last process left.
    if (durable !== undefined && replication === undefined) yield* internalResumes.atStart(durable, stored, core)
    const runtime = yield* Effect.runtime<never>()
    const followed = replication === undefined
      ? internalSubscription.continuing(keyed, subscriptions)
      : replication.handling(keyed, subscriptions, heldElsewhere)
    // The stages every transport calls the handler through: its streams' readers bounded, then what is refused
    // before a run.
    const refused = internalStages.refusing(internalSubscription.bounding(followed, subscriptions), {
      checkIds: options.taskStore !== undefined && isTaskStoreConfig(options.taskStore) &&
        internalTaskStore.isDatabase(options.taskStore),
      claim,
      visible: gate === undefined
        ? undefined
        : (taskId, context) => Effect.map(stored.get(taskId, context), (task) => task !== undefined)
    })
    // Ownership, with callers told apart: a miss on another caller's task is counted, the answer unchanged.
    const onMiss = gate === undefined ? undefined : yield* internalAuthentication.missWatch(stores.heldElsewhere, name)
    const handler = onMiss === undefined ? refused : internalStages.noticingMisses(refused, onMiss)
    const dispatcher = internalRpc.makeDispatcher(handler, card, runtime, subscriptions)
    const state = { closing: false }
    const maxBodyBytes = options.maxBodyBytes ?? defaultMaxBodyBytes
    const rpc: internalHttp.RpcEndpoint | undefined = served.includes("JSONRPC")
      ? { path: rpcPath, maxBodyBytes, dispatcher, state, load, gate }
      : undefined
    const routes = yield* internalHttp.router({ card, cardMaxAge: options.cardMaxAge ?? 3600, rpc, state, readBody })
    const rest: internalRest.Options | undefined = served.includes("HTTP+JSON")
      ? {
        path: restPath,
        card,
        handler,
        subscriptions,
        maxBodyBytes,
        state,
        readBody: readBody ?? internalHttp.platformBodyReader,
        load,
        gate
      }
      : undefined
    const router = rest === undefined ? routes : internalRest.routesOn(routes, rest)
    const shutdownTimeout = options.shutdownTimeout ?? defaultShutdownTimeout
    const refusing = Effect.suspend(() => {
      state.closing = true
      late.resuming = undefined
      subscriptions.shutdown()
      return executor.shutdown(shutdownTimeout)
    })
    if (grpc !== undefined) yield* grpc.serve({ handler, subscriptions, state, load, gate })
    const shutdown = grpc === undefined ? refusing : grpc.draining(refusing)
    const replica = Option.map(Option.fromNullable(replication), (replication) => replication.replica)
    return { router, rpc, rest, card, rpcUrl, urls, executor, taskStore, replica, shutdown }
  })

/**
 * The routes alone, for an application's own server: they stop taking
 * requests, and running tasks end, when the scope closes.
 *
 * @internal
 */
export const makeRouter = <E, R>(
  options: A2AServer.RouterOptions<E, R>
): Effect.Effect<A2AServer.Router, A2AServer.MakeError, R | IdempotencyLedger.IdempotencyLedger | Scope.Scope> =>
  Effect.gen(function*() {
    // Its own port, served only when named: the application's server carries the routes, not gRPC.
    const grpc = yield* internalGrpc.listenFor(options, options.maxBodyBytes ?? defaultMaxBodyBytes, false)
    const app = yield* make(
      { ...options, transports: options.transports ?? routerTransports },
      options.publicUrl,
      undefined,
      grpc
    )
    yield* Effect.addFinalizer(() => app.shutdown)
    return {
      router: app.router,
      url: options.publicUrl.replace(/\/+$/, ""),
      rpcUrl: app.rpcUrl,
      urls: app.urls,
      card: app.card,
      executor: app.executor,
      taskStore: app.taskStore,
      replica: app.replica
    }
  })
