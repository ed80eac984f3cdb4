/**
 * The idempotency ledger: which keys were seen, by whom, with which payload,
 * and how they ended. One service, three layers: {@link layerMemory} for a
 * single process, {@link layerSqlite} (the embedded default, a file) and
 * {@link layerPg} for several replicas sharing one PostgreSQL.
 *
 * Two levels use it:
 * - request level (the server): {@link Service.begin} decides whether a
 *   message starts a task, joins a running one or gets the finished one back;
 * - tool level (inside an agent): {@link Service.once} runs a side effect at
 *   most once per key (see also `Idempotency.once`).
 *
 * Every running entry holds a lease. A replica that dies stops renewing it;
 * once it has expired the entry is reported as interrupted and its side
 * effect is never silently run again.
 *
 * @since 0.1.0
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { ConfigError } from "effect/ConfigError"
import type * as Data from "effect/Data"
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import type * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as entry from "./internal/ledger/entry.js"
import * as errors from "./internal/ledger/errors.js"
import * as layer from "./internal/ledger/layer.js"
import * as internal from "./internal/ledger/ledger.js"

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/**
 * Why a ledger operation failed.
 *
 * - `Interrupted`: a previous run holds the key but its lease expired before it
 *   recorded an outcome; the side effect may or may not have happened.
 * - `Timeout`: waiting for another run of the key took longer than allowed.
 * - `NotFound`: the entry waited for does not exist (any more).
 * - `InvalidResult`: a result could not be encoded or a stored one decoded.
 * - `InvalidKey`: the key or its identity holds NUL (U+0000) or a lone
 *   surrogate, or is over 2000 bytes of UTF-8 together, which PostgreSQL
 *   cannot store or keep apart; refused by every ledger, before its store,
 *   so that a key works the same on each.
 * - `Unavailable`: the store failed (database down, migration failed, …).
 * - `MissingPackage`: a layer's optional packages are not installed (its
 *   `detail` says which to install), or better-sqlite3's native addon is
 *   not built.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { IdempotencyLedger } from "effect-a2a"
 *
 * declare const charge: Effect.Effect<string, IdempotencyLedger.IdempotencyError>
 * // an Interrupted run may have charged already: only a slow or unavailable ledger is retried
 * const retryable = (reason: IdempotencyLedger.Reason) => reason === "Timeout" || reason === "Unavailable"
 * const charged = charge.pipe(Effect.retry({ times: 2, while: (error) => retryable(error.reason) }))
 * ```
 * @category errors
 * @since 0.1.0
 */
export const Reason: typeof errors.Reason = errors.Reason

/**
 * @category errors
 * @since 0.1.0
 */
export type Reason = errors.Reason

/**
 * A ledger operation that could not complete.
 *
 * @example
 * ```ts
 * import { IdempotencyLedger } from "effect-a2a"
 *
 * const error = new IdempotencyLedger.IdempotencyError({
 *   reason: "Interrupted",
 *   key: "reserve-seat-12A",
 *   detail: "the previous run stopped before recording its outcome"
 * })
 * error.message // "idempotency key reserve-seat-12A: Interrupted (the previous run ...)"
 * ```
 * @category errors
 * @since 0.1.0
 */
export const IdempotencyError: typeof errors.IdempotencyError = errors.IdempotencyError

/**
 * @category errors
 * @since 0.1.0
 */
export type IdempotencyError = errors.IdempotencyError

/**
 * The JSON-RPC error code a server answers an {@link IdempotencyConflict} with
 * (A2A `InvalidParams`).
 *
 * @example
 * ```ts
 * import { A2AClientError, IdempotencyLedger } from "effect-a2a"
 *
 * declare const error: A2AClientError.A2AClientError // from a send with an idempotency key
 * // the server refused the call: the key was reused with a different request
 * const reused = error.reason === "ProtocolError" && error.code === IdempotencyLedger.conflictCode
 * ```
 * @category errors
 * @since 0.1.0
 */
export const conflictCode: typeof errors.conflictCode = errors.conflictCode

/**
 * The same key arrived with a different request. The caller's fault, so a
 * server answers it with {@link conflictCode} and the message
 * `idempotency key reused with a different request`.
 *
 * @example
 * ```ts
 * import { IdempotencyLedger } from "effect-a2a"
 *
 * const error = new IdempotencyLedger.IdempotencyConflict({ reason: "PayloadMismatch", key: "k-1" })
 * error.message // "idempotency key reused with a different request"
 * ```
 * @category errors
 * @since 0.1.0
 */
export const IdempotencyConflict: typeof errors.IdempotencyConflict = errors.IdempotencyConflict

/**
 * @category errors
 * @since 0.1.0
 */
export type IdempotencyConflict = errors.IdempotencyConflict

// ---------------------------------------------------------------------------
// Data
// ---------------------------------------------------------------------------

/**
 * Who sent a request: the tenant and the authenticated user. Part of every
 * lookup, so one caller can never see or join another caller's entry, even
 * with the same key.
 *
 * @example
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { Idempotency, IdempotencyLedger } from "effect-a2a"
 *
 * declare const charge: Effect.Effect<string, Error>
 * const identity: IdempotencyLedger.Identity = { tenant: "acme", user: "ana" }
 * // "order-17" of another tenant or user is another entry
 * const charged = Idempotency.once("order-17", charge, { success: Schema.String, identity })
 * ```
 * @category models
 * @since 0.1.0
 */
export const Identity = Schema.Struct({ tenant: Schema.String, user: Schema.String })

/**
 * @category models
 * @since 0.1.0
 */
export type Identity = typeof Identity.Type

/**
 * The identity tool-level entries use when `once` is given none.
 *
 * @example
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { Idempotency, IdempotencyLedger } from "effect-a2a"
 *
 * declare const user: string | undefined // the signed-in user, if any
 * declare const charge: Effect.Effect<string, Error>
 * const identity = user === undefined ? IdempotencyLedger.anonymous : { tenant: "acme", user }
 * const charged = Idempotency.once("order-17", charge, { success: Schema.String, identity })
 * ```
 * @category constants
 * @since 0.1.0
 */
export const anonymous: Identity = entry.anonymous

/**
 * The right to run an entry: renew it while running, pass it to
 * {@link Service.finish}. `expiresAt` is in epoch milliseconds.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { IdempotencyLedger } from "effect-a2a"
 *
 * declare const runTask: Effect.Effect<{ readonly id: string }>
 * const program = Effect.gen(function*() {
 *   const ledger = yield* IdempotencyLedger.IdempotencyLedger
 *   const ref = { key: "order-17", identity: IdempotencyLedger.anonymous }
 *   const begun = yield* ledger.begin({ ...ref, fingerprint: "f", taskId: "task-1" })
 *   if (begun._tag !== "Started") return
 *   const lease: IdempotencyLedger.Lease = begun.lease
 *   const result = yield* ledger.withLease({ ...ref, lease }, runTask)
 *   yield* ledger.finish({ ...ref, result, lease })
 * })
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Lease {
  readonly token: string
  readonly owner: string
  readonly expiresAt: number
}

/**
 * A request-level record as stored.
 *
 * @example
 * ```ts
 * import { Option } from "effect"
 * import { IdempotencyLedger } from "effect-a2a"
 *
 * const describe = (entry: IdempotencyLedger.Entry): string =>
 *   entry.state === "finished"
 *     ? `task ${entry.taskId} finished`
 *     : `task ${entry.taskId} running on ${Option.getOrElse(entry.leaseOwner, () => "no replica")}`
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Entry {
  readonly key: string
  readonly identity: Identity
  readonly fingerprint: string
  readonly taskId: string
  readonly state: "running" | "finished"
  /** The final result given to {@link Service.finish} (parsed JSON). */
  readonly result: Option.Option<unknown>
  readonly leaseOwner: Option.Option<string>
  readonly leaseExpiresAt: Option.Option<number>
  readonly createdAt: number
  readonly finishedAt: Option.Option<number>
}

/**
 * An entry that {@link Service.expireLeases} or {@link Service.expireLease}
 * recorded, with the result `onExpired` gave it.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { IdempotencyLedger } from "effect-a2a"
 *
 * const sweepOnce = Effect.flatMap(IdempotencyLedger.IdempotencyLedger, (ledger) =>
 *   ledger.expireLeases({ onExpired: (entry) => Effect.succeed({ id: entry.taskId, state: "FAILED" }) })).pipe(
 *     Effect.tap((expired: ReadonlyArray<IdempotencyLedger.Expired>) =>
 *       Effect.forEach(expired, ({ entry }) => Effect.logWarning(`task ${entry.taskId} was interrupted`)))
 *   )
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Expired {
  readonly entry: Entry
  readonly result: unknown
}

/**
 * What {@link Service.begin} decided.
 *
 * - `Started`: this request is the first; run the task and keep the lease.
 * - `Running`: the same request runs; join `taskId`.
 * - `Finished`: the same request ended; answer with `result`, without running.
 * - `Interrupted`: the same request was running but its owner's lease expired;
 *   run {@link Service.expireLease} to record it as failed, then begin again.
 *
 * @category models
 * @since 0.1.0
 */
export type BeginOutcome = Data.TaggedEnum<{
  Started: { readonly taskId: string; readonly lease: Lease }
  Running: { readonly taskId: string; readonly entry: Entry }
  Finished: { readonly taskId: string; readonly result: unknown; readonly entry: Entry }
  Interrupted: { readonly taskId: string; readonly entry: Entry }
}>

/**
 * Constructors and matchers of {@link BeginOutcome}.
 *
 * @example
 * ```ts
 * import { IdempotencyLedger } from "effect-a2a"
 *
 * const describe = IdempotencyLedger.BeginOutcome.$match({
 *   Started: ({ taskId }) => `run ${taskId}`,
 *   Running: ({ taskId }) => `join ${taskId}`,
 *   Finished: ({ taskId }) => `replay ${taskId}`,
 *   Interrupted: ({ taskId }) => `fail ${taskId}`
 * })
 * ```
 * @category models
 * @since 0.1.0
 */
export const BeginOutcome: Data.TaggedEnum.Constructor<BeginOutcome> = entry.BeginOutcome

/**
 * What {@link Service.await} ends with.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { IdempotencyLedger } from "effect-a2a"
 *
 * // a repeat that found its request Running waits for the original's result
 * const resultOf = (ref: IdempotencyLedger.EntryRef) =>
 *   Effect.flatMap(IdempotencyLedger.IdempotencyLedger, (ledger) => ledger.await({ ...ref, timeout: "10 seconds" }))
 *     .pipe(Effect.map((outcome: IdempotencyLedger.AwaitOutcome) =>
 *       outcome._tag === "Finished" ? outcome.result : undefined
 *     ))
 * ```
 * @category models
 * @since 0.1.0
 */
export type AwaitOutcome = Data.TaggedEnum.Value<BeginOutcome, "Finished" | "Interrupted">

/**
 * A key within its caller's identity.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { IdempotencyLedger } from "effect-a2a"
 *
 * const ref: IdempotencyLedger.EntryRef = { key: "order-17", identity: { tenant: "acme", user: "ana" } }
 * const entry = Effect.flatMap(IdempotencyLedger.IdempotencyLedger, (ledger) => ledger.get(ref))
 * ```
 * @category models
 * @since 0.1.0
 */
export interface EntryRef {
  readonly key: string
  readonly identity: Identity
}

/**
 * What {@link Service.begin} records: the key within its identity, the
 * payload's digest and the task id to give the first request.
 *
 * @example
 * ```ts
 * import { Idempotency, IdempotencyLedger } from "effect-a2a"
 *
 * declare const payload: { readonly flight: string; readonly passenger: string }
 * const request: IdempotencyLedger.BeginRequest = {
 *   key: "order-17",
 *   identity: { tenant: "acme", user: "ana" },
 *   fingerprint: Idempotency.fingerprint(payload),
 *   taskId: crypto.randomUUID(),
 *   lease: "1 minute"
 * }
 * ```
 * @category models
 * @since 0.1.0
 */
export interface BeginRequest extends EntryRef {
  /** A digest of the business payload (see `Idempotency.fingerprint`). */
  readonly fingerprint: string
  /** The id the task gets when this request is the first. */
  readonly taskId: string
  readonly lease?: Duration.DurationInput | undefined
}

/**
 * Options of {@link Service.once}.
 *
 * @example
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { Idempotency, IdempotencyLedger } from "effect-a2a"
 *
 * class Declined extends Schema.TaggedError<Declined>()("Declined", { reason: Schema.String }) {}
 * declare const charge: Effect.Effect<string, Declined>
 *
 * const options: IdempotencyLedger.OnceOptions<string, string, Declined> = {
 *   success: Schema.String,
 *   failure: Declined, // a decline is final: later calls fail with it, without charging
 *   waitTimeout: "1 minute"
 * }
 * const charged = charge.pipe(Idempotency.once("charge-order-17", options))
 * ```
 * @category options
 * @since 0.1.0
 */
export interface OnceOptions<A, I, E> {
  /** Encodes the success for storage and decodes it for later calls. */
  readonly success: Schema.Schema<A, I>
  /**
   * When given, a typed failure is stored too and later calls fail with it;
   * by default a failure is not stored and a later call runs the effect again.
   */

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the encoded form is the schema's affair (stored as JSON text); Schema is invariant in it, and a fourth type parameter would be one more for every caller
  readonly failure?: Schema.Schema<E, any> | undefined
  /** Keys are looked up within this identity; {@link anonymous} by default. */
  readonly identity?: Identity | undefined
  readonly lease?: Duration.DurationInput | undefined
  /** How long to wait for another caller's run of the key. */
  readonly waitTimeout?: Duration.DurationInput | undefined
  /**
   * Run the effect even though a previous run of the key was interrupted
   * (its lease expired without an outcome). Only for side effects the caller
   * knows to be safe to repeat, or after checking the world by other means.
   */
  readonly takeover?: boolean | undefined
}

/**
 * What an idempotency ledger does, whatever stores it: the request-level
 * entries of a server and the tool-level runs of `once`.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { IdempotencyLedger } from "effect-a2a"
 *
 * const tidy = (ledger: IdempotencyLedger.Service) =>
 *   ledger.cleanup({ retention: "1 hour" }).pipe(
 *     Effect.tap((removed) => Effect.log(`${ledger.owner}: removed ${removed} idempotency entries`))
 *   )
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Service {
  /** This ledger instance's lease owner name (a replica id). */
  readonly owner: string
  /**
   * Records the first request with a key and tells later ones what to do.
   * Of several concurrent first requests, on any number of replicas, exactly
   * one gets `Started`.
   */
  readonly begin: (request: BeginRequest) => Effect.Effect<BeginOutcome, IdempotencyConflict | IdempotencyError>
  /** Extends a lease; false when it was lost (taken over, finished, gone). */
  readonly renewLease: (
    request: EntryRef & { readonly lease: Lease; readonly duration?: Duration.DurationInput | undefined }
  ) => Effect.Effect<boolean, IdempotencyError>
  /**
   * Runs `effect` (the task) while renewing `lease` in the background, so
   * the entry stays held as long as this process lives and no longer.
   */
  readonly withLease: <A, E, R>(
    request: EntryRef & { readonly lease: Lease; readonly duration?: Duration.DurationInput | undefined },
    effect: Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E, R>
  /**
   * Records the final result (JSON-serialisable, e.g. the final task). The
   * first final result wins: false when the entry had already finished (for
   * instance marked interrupted) or, given `lease`, when that lease was lost.
   */
  readonly finish: (
    request: EntryRef & { readonly result: unknown; readonly lease?: Lease | undefined }
  ) => Effect.Effect<boolean, IdempotencyError>
  /**
   * Removes a running entry whose task never started (e.g. the request was
   * rejected before running), so the key can be used again.
   */
  readonly abandon: (request: EntryRef & { readonly lease: Lease }) => Effect.Effect<boolean, IdempotencyError>
  readonly get: (ref: EntryRef) => Effect.Effect<Option.Option<Entry>, IdempotencyError>
  /**
   * Waits until a running entry finishes or its lease expires, for at most
   * `timeout` (the layer's `waitTimeout` by default).
   */
  readonly await: (
    ref: EntryRef & { readonly timeout?: Duration.DurationInput | undefined }
  ) => Effect.Effect<AwaitOutcome, IdempotencyError>
  /**
   * Finishes running entries whose lease expired with the result
   * `onExpired` gives (a server records the task as FAILED, reason
   * `interrupted`); returns the entries this call recorded. Each entry is
   * claimed atomically before `onExpired` runs: with several replicas
   * sweeping, `onExpired` runs once per entry, and from then on its owner
   * can neither renew nor finish it (a late owner learns it lost the lease
   * instead of recording an end the sweep contradicts).
   *
   * An entry whose `onExpired` fails, or whose result cannot be written as
   * JSON, stays expired and the sweep goes on with the others: one such
   * entry would otherwise hold up every sweep. The call then fails with all
   * of those failures (in the cause), and what it recorded stays recorded.
   * A failing store ends the call at once, with the failures so far.
   *
   * A call takes up to `limit` (100) expired entries, oldest lease first.
   * The lease of an entry whose `onExpired` fails is ended anew at that
   * moment, which puts it behind the others: entries that keep failing do
   * not hold up the ones behind them.
   */
  readonly expireLeases: <E = never, R = never>(options: {
    readonly onExpired: (entry: Entry) => Effect.Effect<unknown, E, R>
    readonly limit?: number | undefined
  }) => Effect.Effect<ReadonlyArray<Expired>, IdempotencyError | E, R>
  /**
   * What {@link Service.expireLeases} does for one entry: a request that
   * finds its own entry `Interrupted` records it here, whatever else has
   * expired. None when the entry is not running with an expired lease
   * (its owner renewed or finished it, or another replica recorded it
   * first); a failure of `onExpired` fails the call and leaves the entry
   * expired.
   */
  readonly expireLease: <E = never, R = never>(
    ref: EntryRef & { readonly onExpired: (entry: Entry) => Effect.Effect<unknown, E, R> }
  ) => Effect.Effect<Option.Option<Expired>, IdempotencyError | E, R>
  /** Deletes entries older than `retention` (the layer's, 24 h by default); returns how many. */
  readonly cleanup: (
    options?: { readonly retention?: Duration.DurationInput | undefined }
  ) => Effect.Effect<number, IdempotencyError>
  /** See `Idempotency.once`. */
  readonly once: <A, I, E, R>(
    key: string,
    effect: Effect.Effect<A, E, R>,
    options: OnceOptions<A, I, E>
  ) => Effect.Effect<A, E | IdempotencyError, R>
}

/**
 * The ledger service.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { IdempotencyLedger } from "effect-a2a"
 *
 * const program = Effect.gen(function*() {
 *   const ledger = yield* IdempotencyLedger.IdempotencyLedger
 *   return yield* ledger.begin({
 *     key: "k-1",
 *     identity: { tenant: "acme", user: "ana" },
 *     fingerprint: "f",
 *     taskId: "task-1"
 *   })
 * }).pipe(Effect.provide(IdempotencyLedger.layerMemory()))
 * ```
 * @category tags
 * @since 0.1.0
 */
export const IdempotencyLedger: typeof internal.IdempotencyLedger = internal.IdempotencyLedger

/**
 * @category tags
 * @since 0.1.0
 */
export type IdempotencyLedger = internal.IdempotencyLedger

/**
 * Settings shared by every layer.
 *
 * @example
 * ```ts
 * import { IdempotencyLedger } from "effect-a2a"
 *
 * const options: IdempotencyLedger.Options = {
 *   owner: process.env.HOSTNAME ?? "local", // this replica, as `Entry.leaseOwner` shows it
 *   retention: "7 days",
 *   lease: "1 minute"
 * }
 * const LedgerLive = IdempotencyLedger.layerSqlite({ ...options, filename: "./idempotency.db" })
 * ```
 * @category options
 * @since 0.1.0
 */
export interface Options {
  /** Lease owner name of this instance; a random id by default. */
  readonly owner?: string | undefined
  /** How long entries are kept; 24 hours by default. */
  readonly retention?: Duration.DurationInput | undefined
  /** The default lease; 30 seconds. */
  readonly lease?: Duration.DurationInput | undefined
  /** The default bound on waiting for another run; 30 seconds. */
  readonly waitTimeout?: Duration.DurationInput | undefined
  /**
   * How often a waiter re-reads the store; waiters in the same process are
   * woken at once, this covers runs on other replicas. 50 ms by default.
   */
  readonly pollInterval?: Duration.DurationInput | undefined
}

/**
 * The {@link Options} of a SQL ledger, and the table it keeps its entries in.
 *
 * @example
 * ```ts
 * import { SqliteClient } from "@effect/sql-sqlite-node"
 * import { Layer } from "effect"
 * import { IdempotencyLedger } from "effect-a2a"
 *
 * // the ledger in the application's own database, in a table of its own
 * const options: IdempotencyLedger.SqlOptions = { table: "booking_idempotency", retention: "48 hours" }
 * const LedgerLive = IdempotencyLedger.layerSql(options).pipe(Layer.provide(SqliteClient.layer({ filename: "app.db" })))
 * ```
 * @category options
 * @since 0.1.0
 */
export interface SqlOptions extends Options {
  /** The table; `effect_a2a_idempotency` by default. Created when missing. */
  readonly table?: string | undefined
}

/**
 * Keeps the ledger tidy for as long as it runs: every `every` (5 seconds by
 * default) it records entries whose lease expired with `onExpired` and
 * deletes entries past retention. Failures are logged and the next round
 * tries again. Fork it for the lifetime of a server; with several replicas
 * each may run one.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { IdempotencyLedger } from "effect-a2a"
 *
 * const sweeper = IdempotencyLedger.sweep({
 *   onExpired: (entry) => Effect.succeed({ id: entry.taskId, status: { state: "TASK_STATE_FAILED" } })
 * }).pipe(Effect.forkScoped)
 * ```
 * @category combinators
 * @since 0.1.0
 */
export const sweep: <E, R>(options: {
  readonly onExpired: (entry: Entry) => Effect.Effect<unknown, E, R>
  readonly every?: Duration.DurationInput | undefined
}) => Effect.Effect<never, never, IdempotencyLedger | R> = internal.sweep

// ---------------------------------------------------------------------------
// Layers
// ---------------------------------------------------------------------------

/**
 * A ledger in this process's memory: for tests and single-process servers
 * that may forget everything on restart.
 *
 * @example
 * ```ts
 * import { IdempotencyLedger } from "effect-a2a"
 *
 * const LedgerLive = IdempotencyLedger.layerMemory({ retention: "1 hour" })
 * ```
 * @category layers
 * @since 0.1.0
 */
export const layerMemory: (options?: Options) => Layer.Layer<IdempotencyLedger> = layer.layerMemory

/**
 * A ledger over whatever `SqlClient` the context holds (SQLite and
 * PostgreSQL are supported). Creates its table when missing. `@effect/sql`
 * is an optional peer, loaded when this layer is built.
 *
 * @example
 * ```ts
 * import { SqliteClient } from "@effect/sql-sqlite-node"
 * import { Layer } from "effect"
 * import { IdempotencyLedger } from "effect-a2a"
 *
 * const LedgerLive = IdempotencyLedger.layerSql().pipe(
 *   Layer.provide(SqliteClient.layer({ filename: "app.db" }))
 * )
 * ```
 * @category layers
 * @since 0.1.0
 */
export const layerSql: (
  options?: SqlOptions
) => Layer.Layer<IdempotencyLedger, IdempotencyError, SqlClient.SqlClient> = layer.layerSql

/**
 * A ledger in a SQLite file: the embedded default. Survives restarts of one
 * process; processes on one machine may share the file. Its modules
 * (`@effect/sql`, `@effect/sql-sqlite-node`, better-sqlite3 and its native
 * addon) are optional peers, loaded only when this layer is built, so a
 * client that never builds it needs none; without them it fails with reason
 * `MissingPackage`, naming what to install.
 *
 * @example
 * ```ts
 * import { IdempotencyLedger } from "effect-a2a"
 *
 * const LedgerLive = IdempotencyLedger.layerSqlite({ filename: "./data/idempotency.db" })
 * ```
 * @category layers
 * @since 0.1.0
 */
export const layerSqlite: (
  options: SqlOptions & { readonly filename: string }
) => Layer.Layer<IdempotencyLedger, IdempotencyError | ConfigError> = layer.layerSqlite

/**
 * A ledger in PostgreSQL, shared by several server replicas. Needs the
 * optional peers `@effect/sql` and `@effect/sql-pg`, loaded only when this
 * layer is built (without them it fails with reason `MissingPackage`).
 *
 * @example
 * ```ts
 * import { IdempotencyLedger } from "effect-a2a"
 *
 * const LedgerLive = IdempotencyLedger.layerPg({ url: process.env.DATABASE_URL ?? "", owner: "replica-a" })
 * ```
 * @category layers
 * @since 0.1.0
 */
export const layerPg: (
  options: SqlOptions & {
    readonly url: string | Redacted.Redacted
    readonly maxConnections?: number | undefined
  }
) => Layer.Layer<IdempotencyLedger, IdempotencyError> = layer.layerPg
