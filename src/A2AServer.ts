/**
 * An A2A server for an Effect agent, on `@effect/platform`'s `HttpRouter`
 * and `@effect/platform-node`, as a Layer whose scope is the server's
 * lifetime.
 *
 * It serves `GET /.well-known/agent-card.json` (with `Cache-Control`,
 * `ETag` and `Last-Modified`; the v1.0 card as proto JSON,
 * `AgentCard.toJSON`, the v0.3 card in that version's shape), the HTTP+JSON routes as the SDK's Express
 * `restHandler` serves them (v1.0), and the JSON-RPC endpoint through the
 * SDK's `JsonRpcTransportHandler` over the server's own request handler,
 * which appends each run's events to the task store, with v0.3
 * compatibility on: like the SDK's
 * Express `jsonRpcHandler`, a request whose `A2A-Version` header is absent or
 * `0.3` is handled by `LegacyJsonRpcTransportHandler`, anything else by the
 * v1.0 handler. v1.0 clients (the SDK's `ClientFactory` among them) send
 * `A2A-Version: 1.0`.
 *
 * @since 0.1.0
 */
import type { AgentCard } from "@a2a-js/sdk"
import type { TaskStore, User } from "@a2a-js/sdk/server"
import type * as HttpRouter from "@effect/platform/HttpRouter"
import type * as HttpServerError from "@effect/platform/HttpServerError"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import type { JWK } from "jose"
import type * as AgentExecutor from "./AgentExecutor.js"
import type * as Authentication from "./Authentication.js"
import type * as IdempotencyLedger from "./IdempotencyLedger.js"
import { lazyModule } from "./internal/lazyModule.js"
import type * as internalIdempotencyEntry from "./internal/server/idempotency/idempotencyEntry.js"
import type * as internalTransports from "./internal/server/transport/transports.js"
import * as internalErrors from "./internal/serverErrors.js"
import type * as internalTransport from "./internal/wire/transport.js"

// The server's code loads when a server is made: a client that imports the index loads none of it.
const internalServer = lazyModule(() => import("./internal/server/edge/server.js"))
const internalApp = lazyModule(() => import("./internal/server/edge/app.js"))

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
 * @category options
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
 * @category options
 * @since 0.1.0
 */
export interface Options<E, R> extends AgentExecutor.Options<R> {
  readonly agent: AgentExecutor.Agent<E, R>
  readonly card: CardOptions
  /** Default `127.0.0.1`. */
  readonly host?: string | undefined
  /** Default `0`: any free port; read the bound one from {@link A2AServer}. */
  readonly port?: number | undefined
  /** The JSON-RPC path. Default `/a2a/jsonrpc`. */
  readonly rpcPath?: string | undefined
  /** The base path of the HTTP+JSON routes (`${restPath}/message:send`, …). Default `/a2a/rest`. */
  readonly restPath?: string | undefined
  /** The base URL put in the card, when the server sits behind a proxy. Default: the bound address. */
  readonly publicUrl?: string | undefined
  /** Bodies larger than this are refused before parsing. Default 1 MiB. */
  readonly maxBodyBytes?: number | undefined
  /** The card's `max-age`, in seconds. Default 3600; 0 sends `no-cache`. */
  readonly cardMaxAge?: number | undefined
  /**
   * A tracing span per HTTP request. Default: on when the application
   * provides a tracer (e.g. `@effect/opentelemetry`), off otherwise. Off,
   * the Node server answers JSON-RPC and HTTP+JSON itself, without the
   * platform's fiber per request: the same answers, with less memory per
   * request in flight.
   */
  readonly httpSpans?: boolean | undefined
  /** How long running tasks may go on when the server closes. Default 10 seconds. */
  readonly shutdownTimeout?: Duration.DurationInput | undefined
  /**
   * The transports served, in the order the card lists them. Default: all
   * three (`JSONRPC`, `HTTP+JSON`, `GRPC`) for {@link make} and {@link layer},
   * gRPC only when its optional packages `@grpc/grpc-js` and
   * `@bufbuild/protobuf` are installed; `["JSONRPC", "HTTP+JSON"]` for
   * {@link makeRouter}, which serves gRPC, on its own port, only when named.
   * Named here, `"GRPC"` without its packages fails start-up with a
   * {@link TransportError}.
   */
  readonly transports?: ReadonlyArray<Transport> | undefined
  /** Where gRPC is served, on a port of its own; see {@link GrpcOptions}. */
  readonly grpc?: GrpcOptions | undefined
  /**
   * Default: `TaskStoreConfig.Memory({})`, in memory, forgetting ended tasks
   * after an hour and beyond 10,000. {@link TaskStoreConfig} also names an
   * unbounded memory store and stores on SQLite or PostgreSQL; any SDK
   * `TaskStore` is used as given, the whole task saved at each event. Such a
   * store cannot tell of a cancel: one that another server sharing it takes
   * stops a run here only with `replication` on (whose nudge carries it).
   */
  readonly taskStore?: TaskStore | TaskStoreConfig | undefined
  /**
   * How long the request handler retries appending a run's final state
   * while the task store fails (a failover), before a warning is logged
   * and the task is left as stored. A shutdown stops retrying at its
   * deadline. Default: 30 seconds.
   */
  readonly finalSaveTimeout?: Duration.DurationInput | undefined
  /**
   * Request-level idempotency: a `SendMessage` / `SendStreamingMessage`
   * carrying an idempotency key (message metadata `Idempotency.metadataKey`
   * or the `Idempotency-Key` header) runs once per key and caller. Needs an
   * `IdempotencyLedger` in the context. See {@link IdempotencyOptions}.
   */
  readonly idempotency?: IdempotencyOptions | undefined
  /**
   * Push notifications: on when given (`{}` for the defaults), and the card
   * then declares them. See {@link PushOptions}. Default: off, and the
   * push-config methods answer `PushNotificationNotSupported`.
   */
  readonly push?: PushOptions | undefined
  /**
   * The most requests that start or follow a run (a send, blocking or
   * streaming, and a subscription) served at once; one over it is answered
   * HTTP 429 with `Retry-After: 1` before anything runs, which a client
   * reads as `Refused`, safe to send again, and counted in
   * `a2a.server.shed`. A send holds its place until both its answer and
   * its run have ended (a non-blocking send's run goes on after its answer);
   * a subscription while its stream is open. Reading or canceling a task is
   * never shed. Default: no bound.
   */
  readonly maxInFlight?: number | undefined
  /**
   * The same bound per caller: the authenticated caller's id with
   * `authenticate`, otherwise the remote address (behind a proxy, the
   * proxy's). Default: no bound.
   */
  readonly maxInFlightPerCaller?: number | undefined
  /**
   * Who may call, checked on every request of every transport before
   * anything else (the body is not read yet); see {@link Authentication}.
   * A request it refuses is answered HTTP 401 with `WWW-Authenticate`
   * (gRPC `UNAUTHENTICATED`), counted in `a2a.server.unauthenticated`.
   * Each caller then sees only the tasks it created. The agent card stays
   * public. A ready-made authenticator (`Authentication.apiKey`,
   * `Authentication.jwt`) writes its scheme into the card. Default: none,
   * every caller anonymous and every task anyone's.
   */
  readonly authenticate?: Authentication.Authenticator<R> | undefined
  /**
   * Signs the card (A2A §8.4: a JWS over its canonical form, with the SDK's
   * `generateAgentCardSignature`), and the extended card, once at start-up:
   * every request gets the same signature, and the same ETag. Each is
   * signed over its proto-JSON form (`AgentCard.toJSON`), the form the card
   * route and the JSON transports serve it in, so the signature covers
   * every field served, the security schemes included. The v0.3 card
   * carries the same signature; its `url`, `preferredTransport` and
   * `additionalInterfaces`, which the signature does not cover, are the
   * covered `supportedInterfaces`. A key that does not load fails start-up
   * with `AgentExecutor.ConfigurationError` (`InvalidOption`), its message
   * never holding the key. See {@link SigningOptions}. Default: unsigned.
   */
  readonly signing?: SigningOptions | undefined
  /**
   * The card `GetExtendedAgentCard` answers an authenticated caller (an
   * anonymous one gets the card): these fields over the card's, with its
   * interfaces. Given, the card declares `capabilities.extendedAgentCard`.
   * Default: none, and `GetExtendedAgentCard` is unsupported.
   */
  readonly extendedCard?: Partial<CardOptions> | undefined
  /**
   * Replicas that act as one server: every event of every run is written,
   * numbered, to an event log in the PostgreSQL the replicas share, and a
   * `SubscribeToTask` on any replica streams a run on any other. Each
   * streamed event carries its number (metadata `"effect-a2a/seq"`, and the
   * SSE `id:`), and a `SubscribeToTask` with `Last-Event-ID` (gRPC metadata
   * `last-event-id`) resumes right after it, on any replica, after the run
   * ended too. The card declares this as the extension
   * `urn:effect-a2a:ext:resume:v1`. See {@link ReplicationOptions}.
   * Default: none, each process on its own.
   */
  readonly replication?: ReplicationOptions | undefined
}

/**
 * Where the replicas' event log lives, and how long it keeps an ended task's
 * events.
 *
 * @example
 * ```ts
 * import type { A2AServer } from "effect-a2a"
 *
 * const replication: A2AServer.ReplicationOptions = { url: "postgres://a2a@db.internal/a2a", retention: "1 hour" }
 * ```
 * @category options
 * @since 0.1.0
 */
export interface ReplicationOptions {
  /**
   * The PostgreSQL the replicas share; its tables (`effect_a2a_task_events`,
   * `effect_a2a_task_event_ends`, `effect_a2a_task_runs`,
   * `effect_a2a_event_log_key`) are created if missing.
   */
  readonly url: string
  /** How long the events of an ended task are kept for a caller to resume. Default 1 hour. */
  readonly retention?: Duration.DurationInput | undefined
  /** How often a followed task's log is read when no notification came: a lost one only delays an event. Default 1 second. */
  readonly pollInterval?: Duration.DurationInput | undefined
  /**
   * How long a run's claim on its task lasts unless its replica renews it
   * (every third of it). A replica that dies holds its tasks this long;
   * then another records them FAILED (reason interrupted), or resumes them
   * when their agent is durable. Default 10 seconds.
   */
  readonly lease?: Duration.DurationInput | undefined
  /** How often lapsed claims are looked for. Default 2 seconds. */
  readonly sweep?: Duration.DurationInput | undefined
  /**
   * Whether a small event (up to about 2 KB) rides in the notification that
   * wakes the other replicas, sealed and signed with a key the replicas keep
   * in the table `effect_a2a_event_log_key`: a replica following the task
   * then hands it on without reading the log, and a role that can only
   * connect (any role may LISTEN) learns nothing of it. Whoever can read that
   * table can read carried events and sign events for live subscribers (the
   * log itself stays true); turn this off where such a role,
   * `pg_read_all_data` for one, is not trusted to.
   * Off, every notification is only a reason to read the log. Default true.
   */
  readonly carryEvents?: boolean | undefined
}

/**
 * The algorithms a card may be signed with (JWS `alg`).
 *
 * @example
 * ```ts
 * import type { A2AServer } from "effect-a2a"
 *
 * const alg: A2AServer.SigningAlgorithm = "ES256"
 * ```
 * @category options
 * @since 0.1.0
 */
export type SigningAlgorithm = "ES256" | "ES384" | "ES512" | "RS256" | "PS256" | "EdDSA"

/**
 * How the server signs its cards (`signing` in {@link Options}).
 *
 * - `key`: the private key, as PEM or JWK text (a key file's content) in a
 *   `Redacted`, or as a JWK (with its `d`).
 * - `kid`: the key id in the signature's protected header, by which a client
 *   finds the public key. Default: the JWK's own `kid`, else the RFC 7638
 *   thumbprint of the public key.
 * - `alg`: default from the key: `ES256`, `ES384` or `ES512` for the P-256,
 *   P-384 or P-521 curves, `RS256` for RSA, `PS256` for RSA-PSS, `EdDSA`
 *   for Ed25519.
 *
 * @example
 * ```ts
 * import { A2AServer } from "effect-a2a"
 * import { Redacted } from "effect"
 * import { readFileSync } from "node:fs"
 *
 * const signing = (file: string): A2AServer.SigningOptions => ({
 *   key: Redacted.make(readFileSync(file, "utf8")),
 *   kid: "booking-2026"
 * })
 * ```
 * @category options
 * @since 0.1.0
 */
export interface SigningOptions {
  readonly key: Redacted.Redacted<string> | JWK
  readonly kid?: string | undefined
  readonly alg?: SigningAlgorithm | undefined
}

/**
 * Push notifications (A2A §4.3): a caller registers a webhook for a task
 * (the create call, or `SendMessage`'s
 * `configuration.taskPushNotificationConfig`) and each of the task's events
 * is POSTed to it, as the SDK's payload (`StreamResponse` JSON,
 * `application/a2a+json`), with `Authorization` from the config's
 * `authentication`, else its token in `X-A2A-Notification-Token`.
 *
 * - Deliveries are fed by the runs themselves, not by the request that
 *   started them: a caller that disconnects still gets its webhooks. Each
 *   task's events go out in order; a slow webhook never holds up the agent.
 *   A status update not yet sent is dropped when a later one comes (a
 *   final status never is), and at most `maxPending` deliveries wait.
 * - A delivery that meets a 5xx, a 429 (after its `Retry-After`), a timeout
 *   or a lost connection is tried again with exponential backoff and jitter,
 *   up to `maxAttempts` within `budget`; never after another 4xx or a
 *   redirect, which is not followed. Counted in `a2a.server.push_delivered`,
 *   `push_retried`, `push_failed` and `push_refused`; a give-up is logged
 *   with an error id, the task and the URL's host, never the credentials.
 * - SSRF guard: a webhook on a loopback, private, link-local (the cloud
 *   metadata address included), unique-local, multicast or unspecified
 *   address is refused when registered (-32602, before any connection),
 *   and again at delivery against the address actually connected to. With
 *   `NODE_ENV=production`, `https` is required. `allowPushTargets` lists the
 *   exceptions: hosts, addresses or CIDR blocks (`["127.0.0.1"]` for tests).
 * - Configs are kept beside the tasks: in memory, or in the SQLite or
 *   PostgreSQL task database (the SDK's `DatabasePushNotificationStore`,
 *   its table created at start-up), each caller's own (see `authenticate`).
 * - With a SQLite or PostgreSQL task store, each delivery waiting to be
 *   sent is a row of `effect_a2a_push_outbox` in the same database (created
 *   at start-up), written before its first attempt and deleted once it is
 *   delivered or given up. A server that stops leaves its rows; the next one
 *   to start, or another replica, sends them (within seconds), going on
 *   from their attempts and budget, unless the caller deleted the config
 *   meanwhile. With several replicas, each delivery is sent by one of them.
 *   The rows keep the config's auth headers (its token or credentials), as
 *   the config table keeps the config itself. With the memory stores,
 *   pending deliveries are lost when the server stops.
 *
 * @example
 * ```ts
 * import { A2AServer } from "effect-a2a"
 *
 * const push: A2AServer.PushOptions = { timeout: "10 seconds", maxAttempts: 8, budget: "5 minutes", backoff: "1 second" }
 * const forTests: A2AServer.PushOptions = { allowPushTargets: ["127.0.0.1"] }
 * ```
 * @category options
 * @since 0.1.0
 */
export interface PushOptions {
  /** Push targets let through although the guard would refuse them, and allowed plain http in production. */
  readonly allowPushTargets?: ReadonlyArray<string> | undefined
  /** Each attempt's limit. Default 10 seconds. */
  readonly timeout?: Duration.DurationInput | undefined
  /** Attempts per delivery, the first included. Default 8. */
  readonly maxAttempts?: number | undefined
  /** The time a delivery may take over all its attempts. Default 5 minutes. */
  readonly budget?: Duration.DurationInput | undefined
  /**
   * The delay before the first retry, doubled for each further one, with
   * jitter (×0.8 to ×1.2); a 429's `Retry-After` when longer. Default 1
   * second.
   */
  readonly backoff?: Duration.DurationInput | undefined
  /**
   * The most deliveries that wait per task and webhook behind the one being
   * sent (and the most events per task whose configs are still loading).
   * Past it, the oldest waiting one that is not a final status is dropped:
   * counted in `a2a.server.push_failed` and logged as a give-up with reason
   * `Overflow`, its outbox row deleted. Default 1,000.
   */
  readonly maxPending?: number | undefined
}

/**
 * Where the gRPC transport listens. It has its own port (default `0`: any
 * free one), read from {@link A2AServer}'s `urls.GRPC` (`host:port`, the
 * form cards give gRPC URLs in). `credentials` are grpc-js
 * `ServerCredentials` (default insecure, for loopback; e.g.
 * `ServerCredentials.createSsl(...)` for TLS). `publicAddress` is the
 * `host:port` the card gives, when the server sits behind a proxy.
 *
 * Frames are bounded by `maxBodyBytes`: one over it is answered
 * `RESOURCE_EXHAUSTED` with an ErrorInfo up to twice the bound, beyond
 * which grpc-js refuses it itself (`RESOURCE_EXHAUSTED`, no details).
 *
 * @example
 * ```ts
 * import { A2AServer } from "effect-a2a"
 *
 * const grpc: A2AServer.GrpcOptions = { host: "0.0.0.0", port: 50051, publicAddress: "agents.example.com:443" }
 * ```
 * @category options
 * @since 0.1.0
 */
export type GrpcOptions = internalTransports.GrpcOptions

/**
 * The name of an A2A transport, as cards name it in
 * `supportedInterfaces[].protocolBinding`.
 *
 * @example
 * ```ts
 * import { A2AServer } from "effect-a2a"
 *
 * const served: ReadonlyArray<A2AServer.Transport> = ["JSONRPC", "GRPC"]
 * ```
 * @category models
 * @since 0.1.0
 */
export type Transport = internalTransport.Transport

/**
 * A transport asked for in `transports` that cannot be served: reason
 * `MissingPackage` when its optional packages are not installed (gRPC:
 * `@grpc/grpc-js` and `@bufbuild/protobuf`); its message names them.
 *
 * @example
 * ```ts
 * import { A2AServer, AgentExecutor } from "effect-a2a"
 * import { Effect } from "effect"
 *
 * const server = A2AServer.make({
 *   agent: () => Effect.succeed(AgentExecutor.completedText("hello")),
 *   card: { name: "greeter", description: "Says hello" }
 * }).pipe(Effect.tapErrorTag("TransportError", (error) => Effect.logError(`${error.transport}: ${error.message}`)))
 * ```
 * @category errors
 * @since 0.1.0
 */
export const TransportError: typeof internalErrors.TransportError = internalErrors.TransportError

/**
 * @category errors
 * @since 0.1.0
 */
export type TransportError = internalErrors.TransportError

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
 * - A request answered with a bare message (see `AgentExecutor.Message`)
 *   gets that same message on a repeat, as a single event when streamed.
 * - The same key with a different payload (the message without its
 *   `messageId`) is refused with JSON-RPC -32602
 *   `idempotency key reused with a different request`; so is a header key
 *   that differs from the metadata key.
 * - A running entry holds a `lease`, renewed while this replica runs it. When
 *   a replica dies, any replica's sweep (every `sweepEvery`) records the task
 *   FAILED with an error id (logged with reason `interrupted`), and repeats
 *   get that FAILED task: its side effects are never run a second time. A
 *   durable agent's task is not: its run goes on, and repeats get the task.
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
 * @category options
 * @since 0.1.0
 */
export interface IdempotencyOptions {
  /**
   * Who the caller is; one caller never sees another's entry. Default: the
   * A2A tenant and the authenticated caller's id (`""` when anonymous; see
   * `authenticate`). The tenant should be the request's A2A tenant and the
   * user the caller's id: the sweep records interrupted tasks in the task
   * store under them, where their owner finds them.
   */
  readonly identity?:
    | ((headers: internalIdempotencyEntry.Headers, user: User | undefined) => IdempotencyLedger.Identity)
    | undefined
  /** The lease of a running entry. Default 30 seconds. */
  readonly lease?: Duration.DurationInput | undefined
  /** How long a blocking repeat waits for the running original. Default 30 seconds. */
  readonly wait?: Duration.DurationInput | undefined
  /** How often expired leases and entries past retention are swept. Default 5 seconds. */
  readonly sweepEvery?: Duration.DurationInput | undefined
}

/**
 * Where the server keeps tasks.
 *
 * - `Memory` (the default): in the process, bounded. A task that ended
 *   (completed, failed, canceled, rejected) is forgotten `retention` after
 *   its last save, and beyond the `maxFinished` most recent ones, oldest
 *   first; a task paused for input or auth is forgotten after
 *   `interruptedRetention`; a running task is never forgotten.
 * - `Unbounded`: in the process, keeping every task until the process ends.
 *   For tests and short-lived processes.
 * - `Sqlite`, `Postgres`: a task is a row of the SDK's `DatabaseTaskStore`
 *   table, as that store writes it (a database it wrote reads unchanged, and
 *   replicas of an older version share the database), with the events of a
 *   running task appended beside it, in a table of ours, until it pauses or
 *   ends. The server runs the
 *   SDK's own migration (`a2a-db upgrade --store tasks`) at start-up, which
 *   is idempotent and safe for several replicas starting together, and
 *   closes the connection when it stops. Needs `kysely` plus
 *   `better-sqlite3` (SQLite) or `pg` (PostgreSQL). Ids the SDK's table
 *   cannot hold are refused with -32602 before anything runs, on either
 *   database: a task or context id over 36 characters, a tenant over 255,
 *   any id with NUL or a lone surrogate. Tasks are kept until deleted, unless
 *   `retention` is given; with push on, the push configs of the tasks it
 *   deletes go with them. A cancel that reaches another server sharing the
 *   store stops the run where it runs: on PostgreSQL each server's store
 *   holds one more connection, listening for cancels; on SQLite only the
 *   servers of one process are told (one process per file is the supported
 *   deployment).
 *
 * A forgotten task is not found: `GetTask`, `CancelTask` or a message to it
 * answer `TaskNotFound` (-32001), as for an id that never existed.
 *
 * With {@link IdempotencyOptions}, a repeat of a request whose task was
 * forgotten still answers the task as it ended: the ledger keeps that end
 * itself, for its own retention (24 hours by default), and does not run the
 * request again. Only reading the task back by its id fails. Give the
 * ledger a retention no longer than the store's when a repeat must not
 * answer a task that `GetTask` no longer finds.
 *
 * @example
 * ```ts
 * import { A2AServer } from "effect-a2a"
 *
 * A2AServer.TaskStoreConfig.Memory({ retention: "10 minutes", maxFinished: 1_000 })
 * A2AServer.TaskStoreConfig.Unbounded()
 * A2AServer.TaskStoreConfig.Sqlite({ filename: "./tasks.db", retention: "7 days" })
 * A2AServer.TaskStoreConfig.Postgres({ url: "postgresql://a2a@db/a2a", poolSize: 10 })
 * ```
 * @category models
 * @since 0.1.0
 */
export type TaskStoreConfig = Data.TaggedEnum<{
  Memory: {
    /** How long an ended task is kept after its last save. Default 1 hour. */
    readonly retention?: Duration.DurationInput | undefined
    /** How many ended tasks are kept at most, over all tenants and callers. Default 10,000. */
    readonly maxFinished?: number | undefined
    /** How long a task paused for input or auth is kept after its last save. Default 24 hours. */
    readonly interruptedRetention?: Duration.DurationInput | undefined
  }
  /** Keeps every task; nothing bounds its memory. */
  Unbounded: {}
  /** A file; `:memory:` is refused (use `Memory`). */
  Sqlite: {
    readonly filename: string
    /**
     * Deletes ended tasks whose last status is older than this, at start-up
     * and then at least every minute. Default: none is deleted.
     */
    readonly retention?: Duration.DurationInput | undefined
  }
  /** `poolSize` defaults to 10. */
  Postgres: {
    readonly url: string
    readonly poolSize?: number | undefined
    /**
     * Deletes ended tasks whose last status is older than this, at start-up
     * and then at least every minute. Default: none is deleted.
     */
    readonly retention?: Duration.DurationInput | undefined
  }
}>

/**
 * @category models
 * @since 0.1.0
 */
export const TaskStoreConfig = Data.taggedEnum<TaskStoreConfig>()

/**
 * The database task store could not be set up: its optional packages are
 * not installed (`MissingPackage`, the message naming them: `kysely` and
 * `better-sqlite3` or `pg`), its driver failed, its table could not be
 * created, or the database is unreachable. Replication fails with it too.
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
 * @category errors
 * @since 0.1.0
 */
export const TaskStoreError: typeof internalErrors.TaskStoreError = internalErrors.TaskStoreError

/**
 * @category errors
 * @since 0.1.0
 */
export type TaskStoreError = internalErrors.TaskStoreError

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
 * @category tags
 * @since 0.1.0
 */
export class A2AServer extends Context.Tag("effect-a2a/A2AServer")<A2AServer, {
  /**
   * The server's base URL, no trailing slash: `publicUrl` when given, else
   * the bound address (`http://127.0.0.1:<port>`). Not an endpoint of any
   * transport: the card is at `${url}/.well-known/agent-card.json`, and the
   * transports are in `urls`.
   */
  readonly url: string
  /** The JSON-RPC endpoint, `${url}${rpcPath}` (where it would be, when JSON-RPC is not served). */
  readonly rpcUrl: string
  /**
   * One entry per served transport, exactly the URL the card lists for it in
   * `supportedInterfaces`: `JSONRPC` is the endpoint `${url}${rpcPath}`,
   * `"HTTP+JSON"` the base `${url}${restPath}` its routes hang from, `GRPC`
   * the `host:port` of the gRPC port (no scheme). A transport not served
   * has no entry.
   */
  readonly urls: { readonly [T in Transport]?: string }
  readonly address: { readonly hostname: string; readonly port: number }
  readonly card: AgentCard
  readonly executor: AgentExecutor.EffectAgentExecutor
  /**
   * The server's task store, in the SDK's shape: the one given as
   * `taskStore`, or a view of the configured one, where `load` and `list`
   * read it and `save` appends the whole task as a run's first event (its
   * status, context and metadata replace the stored ones, its artifacts are
   * merged in by id, its history replaces the stored one unless empty).
   */
  readonly taskStore: TaskStore
  /** With `replication`: this replica's id, as its run claims and log lines name it. */
  readonly replica: Option.Option<string>
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
 * @category constants
 * @since 0.1.0
 */
export const cardPath: typeof internalErrors.cardPath = internalErrors.cardPath

/**
 * Starts the server in the current scope. Fails with a `ServeError` when
 * the address cannot be bound (its message names it, e.g.
 * `address 127.0.0.1:8000 is in use`; its `cause` is Node's error), and with
 * `AgentExecutor.ConfigurationError` when debug error detail is on in
 * production without `allowDebugErrorsInProduction`.
 *
 * A connection that comes while the server starts waits until every route
 * and transport can answer it.
 *
 * Closing the scope refuses new requests (503 with `Retry-After`, gRPC's
 * UNAVAILABLE) on ports still open while running tasks finish within
 * `shutdownTimeout`, ends the rest FAILED with an error id (a durable
 * agent's are left for the next start, or another replica, to resume), then
 * stops listening.
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
 * @category constructors
 * @since 0.1.0
 */
export const make: {
  <E, R>(
    options: Options<E, R> & { readonly idempotency: IdempotencyOptions }
  ): Effect.Effect<Context.Tag.Service<A2AServer>, MakeError, R | IdempotencyLedger.IdempotencyLedger | Scope.Scope>
  <E, R>(options: Options<E, R>): Effect.Effect<Context.Tag.Service<A2AServer>, MakeError, R | Scope.Scope>
} = <E, R>(options: Options<E, R>) => Effect.flatMap(internalServer, (internal) => internal.make(options))

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
 * @category layers
 * @since 0.1.0
 */
export const layer: {
  <E, R>(
    options: Options<E, R> & { readonly idempotency: IdempotencyOptions }
  ): Layer.Layer<A2AServer, MakeError, R | IdempotencyLedger.IdempotencyLedger>
  <E, R>(options: Options<E, R>): Layer.Layer<A2AServer, MakeError, R>
} = <E, R>(
  options: Options<E, R>
): Layer.Layer<A2AServer, MakeError, R | IdempotencyLedger.IdempotencyLedger> => Layer.scoped(A2AServer, make(options))

/**
 * {@link layer} with its options read through `Config`, as the
 * `layerConfig` of `@effect/sql-pg` does: each field a `Config` (or the
 * whole a `Config` of options). Values that are not configuration, the
 * agent first, are given with `Config.succeed`. A missing or malformed
 * value fails the layer with a `ConfigError`.
 *
 * @example
 * ```ts
 * import { A2AServer, AgentExecutor } from "effect-a2a"
 * import { Config, Effect } from "effect"
 *
 * const ServerLive = A2AServer.layerConfig({
 *   agent: Config.succeed(() => Effect.succeed(AgentExecutor.completedText("hello"))),
 *   card: { name: Config.succeed("greeter"), description: Config.succeed("Says hello") },
 *   host: Config.string("HOST").pipe(Config.withDefault("127.0.0.1")),
 *   port: Config.port("PORT").pipe(Config.withDefault(8000)),
 *   publicUrl: Config.option(Config.string("PUBLIC_URL")).pipe(Config.map((url) => url._tag === "Some" ? url.value : undefined))
 * })
 * ```
 * @category layers
 * @since 0.1.0
 */
export const layerConfig: {
  <E, R>(
    config: Config.Config.Wrap<Options<E, R> & { readonly idempotency: IdempotencyOptions }>
  ): Layer.Layer<A2AServer, MakeError, R | IdempotencyLedger.IdempotencyLedger>
  <E, R>(config: Config.Config.Wrap<Options<E, R>>): Layer.Layer<A2AServer, MakeError, R>
} = <E, R>(
  config: Config.Config.Wrap<Options<E, R>>
): Layer.Layer<A2AServer, MakeError, R | IdempotencyLedger.IdempotencyLedger> =>
  Layer.scoped(A2AServer, Effect.flatMap(Config.unwrap<Options<E, R>>(config), (options) => make(options)))

/**
 * What {@link makeRouter} takes: the options of {@link make} without the
 * address to listen on, which the application's server decides, and with
 * the base URL the card gives, which only the application knows.
 *
 * @example
 * ```ts
 * import { A2AServer, AgentExecutor } from "effect-a2a"
 * import { Effect } from "effect"
 *
 * const options: A2AServer.RouterOptions<never, never> = {
 *   agent: () => Effect.succeed(AgentExecutor.completedText("booked")),
 *   card: { name: "booking", description: "Books flights" },
 *   publicUrl: "https://agents.example.com/booking"
 * }
 * ```
 * @category options
 * @since 0.1.0
 */
export interface RouterOptions<E, R> extends Omit<Options<E, R>, "host" | "port" | "publicUrl" | "httpSpans"> {
  /**
   * Where the routes are reached from outside: the card says the JSON-RPC
   * endpoint is at `${publicUrl}${rpcPath}`, HTTP+JSON at `${publicUrl}${restPath}`. With the router mounted under
   * a prefix, include it.
   */
  readonly publicUrl: string
}

/**
 * The agent's routes, for the application's own server, and what
 * {@link A2AServer} tells of a running server but its address.
 *
 * @example
 * ```ts
 * import { A2AServer } from "effect-a2a"
 * import { HttpRouter } from "@effect/platform"
 *
 * // under a prefix: give the same prefix in `publicUrl`
 * const mounted = (a2a: A2AServer.Router) => HttpRouter.empty.pipe(HttpRouter.mount("/booking", a2a.router))
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Router extends Omit<Context.Tag.Service<A2AServer>, "address"> {
  /** `GET /.well-known/agent-card.json`, `POST` on the JSON-RPC path, and the HTTP+JSON routes below `restPath`. */
  readonly router: HttpRouter.HttpRouter
}

/**
 * The server as routes of an `@effect/platform` `HttpRouter`, to serve
 * beside the application's own routes and middleware on its own server
 * (`HttpRouter.concat`, or `HttpRouter.mount` under a prefix). The routes
 * read only the platform's request (headers, body stream), so they run on
 * any platform's server; {@link make} and {@link layer} are these routes on
 * a Node server they start, reading Node's request directly, which is
 * faster.
 *
 * Closing the scope refuses new requests with 503 and lets running
 * tasks finish within `shutdownTimeout`, as {@link make} does; the server
 * itself is the application's to stop.
 *
 * gRPC, which cannot share the application's HTTP server, is served on its
 * own port (see {@link GrpcOptions}) only when `transports` names `"GRPC"`;
 * the scope's close drains it as {@link make}'s.
 *
 * @example
 * ```ts
 * import { A2AServer, AgentExecutor } from "effect-a2a"
 * import { HttpRouter, HttpServer, HttpServerResponse } from "@effect/platform"
 * import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
 * import { Effect, Layer } from "effect"
 * import { createServer } from "node:http"
 *
 * const Routes = Layer.scopedDiscard(Effect.gen(function* () {
 *   const a2a = yield* A2AServer.makeRouter({
 *     agent: () => Effect.succeed(AgentExecutor.completedText("hello")),
 *     card: { name: "greeter", description: "Says hello" },
 *     publicUrl: "http://127.0.0.1:8000"
 *   })
 *   const app = HttpRouter.empty.pipe(
 *     HttpRouter.get("/healthz", HttpServerResponse.text("ok")),
 *     HttpRouter.concat(a2a.router)
 *   )
 *   yield* HttpServer.serveEffect(app)
 * }))
 *
 * Routes.pipe(Layer.provide(NodeHttpServer.layer(createServer, { port: 8000 })), Layer.launch, NodeRuntime.runMain)
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const makeRouter: {
  <E, R>(
    options: RouterOptions<E, R> & { readonly idempotency: IdempotencyOptions }
  ): Effect.Effect<Router, MakeError, R | IdempotencyLedger.IdempotencyLedger | Scope.Scope>
  <E, R>(options: RouterOptions<E, R>): Effect.Effect<Router, MakeError, R | Scope.Scope>
} = <E, R>(options: RouterOptions<E, R>) => Effect.flatMap(internalApp, (internal) => internal.makeRouter(options))

/**
 * Why the server could not start. A `ServeError` is an address that could
 * not be bound; its message says which, and why
 * (`address 127.0.0.1:8000 is in use`).
 *
 * @example
 * ```ts
 * import { A2AServer } from "effect-a2a"
 *
 * const hint = (error: A2AServer.MakeError): string =>
 *   error._tag === "ServeError" ? error.message // e.g. "address 127.0.0.1:8000 is in use"
 *   : error._tag === "TaskStoreError" ? `check the task database (${error.reason})`
 *   : "check the configuration"
 * ```
 * @category errors
 * @since 0.1.0
 */
export type MakeError =
  | HttpServerError.ServeError
  | AgentExecutor.ConfigurationError
  | TaskStoreError
  | TransportError
  | ConfigError.ConfigError
