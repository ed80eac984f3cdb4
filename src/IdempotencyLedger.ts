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
import { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import type { ConfigError } from "effect/ConfigError"
import {
  Cause,
  Clock,
  Context,
  Data,
  Deferred,
  Duration,
  Effect,
  Either,
  Exit,
  Fiber,
  FiberId,
  Layer,
  Option,
  Redacted,
  Schema
} from "effect"
import { randomUUID } from "node:crypto"
import * as Memory from "./internal/ledger/memory.js"
import * as Sql from "./internal/ledger/sql.js"
import type { Row, RowId, Store } from "./internal/ledger/store.js"
import { idString, isStale } from "./internal/ledger/store.js"
import { storedTextProblem } from "./internal/ledger/storedText.js"

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
 * @since 0.1.0
 */
export const Reason = Schema.Literal("Interrupted", "Timeout", "NotFound", "InvalidResult", "InvalidKey", "Unavailable")

/**
 * @since 0.1.0
 */
export type Reason = typeof Reason.Type

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
 * @since 0.1.0
 */
export class IdempotencyError extends Schema.TaggedError<IdempotencyError>("effect-a2a/IdempotencyError")(
  "IdempotencyError",
  {
    reason: Reason,
    key: Schema.optional(Schema.String),
    detail: Schema.String,
    cause: Schema.optional(Schema.Defect)
  }
) {
  override get message(): string {
    return `${this.key === undefined ? "idempotency ledger" : `idempotency key ${this.key}`}: ${this.reason} (${this.detail})`
  }
}

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
 * @since 0.1.0
 */
export const conflictCode = -32602

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
 * @since 0.1.0
 */
export class IdempotencyConflict extends Schema.TaggedError<IdempotencyConflict>("effect-a2a/IdempotencyConflict")(
  "IdempotencyConflict",
  {
    reason: Schema.Literal("PayloadMismatch"),
    key: Schema.String
  }
) {
  override get message(): string {
    return "idempotency key reused with a different request"
  }
}

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
 * @since 0.1.0
 */
export const Identity = Schema.Struct({ tenant: Schema.String, user: Schema.String })

/**
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
 * @since 0.1.0
 */
export const anonymous: Identity = { tenant: "", user: "" }

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
 * @since 0.1.0
 */
export const BeginOutcome = Data.taggedEnum<BeginOutcome>()

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
 * @since 0.1.0
 */
export interface OnceOptions<A, I, E> {
  /** Encodes the success for storage and decodes it for later calls. */
  readonly success: Schema.Schema<A, I>
  /**
   * When given, a typed failure is stored too and later calls fail with it;
   * by default a failure is not stored and a later call runs the effect again.
   */
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
 * @since 0.1.0
 */
export class IdempotencyLedger extends Context.Tag("effect-a2a/IdempotencyLedger")<IdempotencyLedger, Service>() {}

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
 * @since 0.1.0
 */
export interface SqlOptions extends Options {
  /** The table; `effect_a2a_idempotency` by default. Created when missing. */
  readonly table?: string | undefined
}

// ---------------------------------------------------------------------------
// Implementation
// ---------------------------------------------------------------------------

/** Wakes waiters in this process when an entry changes; other replicas are covered by polling. */
const makeNotifier = () => {
  const watchers = new Map<string, { readonly changed: Deferred.Deferred<void>; count: number }>()
  return {
    /** Subscribes before `use` reads the store, so no change between the read and the wait is missed. */
    watch: <A, E, R>(id: RowId, use: (changed: Effect.Effect<void>) => Effect.Effect<A, E, R>) => {
      const name = idString(id)
      return Effect.acquireUseRelease(
        Effect.sync(() => {
          let watcher = watchers.get(name)
          if (watcher === undefined) {
            watcher = { changed: Deferred.unsafeMake<void>(FiberId.none), count: 0 }
            watchers.set(name, watcher)
          }
          watcher.count++
          return watcher
        }),
        (watcher) => use(Deferred.await(watcher.changed)),
        (watcher) =>
          Effect.sync(() => {
            watcher.count--
            if (watcher.count === 0 && watchers.get(name) === watcher) watchers.delete(name)
          })
      )
    },
    signal: (id: RowId) =>
      Effect.sync(() => {
        const name = idString(id)
        const watcher = watchers.get(name)
        if (watcher !== undefined) {
          watchers.delete(name)
          Deferred.unsafeDone(watcher.changed, Exit.void)
        }
      })
  }
}

// PostgreSQL's index holds about 2700 bytes of a row's key columns.
const maxIdBytes = 2000

const invalidId = (id: RowId): string | undefined => {
  const parts = [id.key, id.tenant, id.principal]
  for (const part of parts) {
    const problem = storedTextProblem(part)
    if (problem !== undefined) return `a key and its identity ${problem}`
  }
  const bytes = parts.reduce((sum, part) => sum + Buffer.byteLength(part, "utf8"), 0)
  if (bytes > maxIdBytes) return `a key and its identity must be at most ${maxIdBytes} bytes of UTF-8 together (got ${bytes})`
  return undefined
}

/**
 * `id` as a caller gave it, refused when a SQL ledger could not keep it
 * apart from others (NUL, a lone surrogate, too long for an index): every
 * ledger refuses it alike. Rows read back from a store are not checked:
 * SQLite and memory ledgers of earlier versions kept such keys, and those
 * entries must still expire.
 */
const checkedId = (id: RowId): Effect.Effect<RowId, IdempotencyError> => {
  const detail = invalidId(id)
  return detail === undefined
    ? Effect.succeed(id)
    : Effect.fail(new IdempotencyError({ reason: "InvalidKey", key: id.key, detail }))
}

const requestRow = (ref: EntryRef): RowId => ({
  scope: "request",
  tenant: ref.identity.tenant,
  principal: ref.identity.user,
  key: ref.key
})

const requestId = (ref: EntryRef): Effect.Effect<RowId, IdempotencyError> => checkedId(requestRow(ref))

const parseResult = (text: string | null): Option.Option<unknown> => {
  if (text === null) return Option.none()
  try {
    return Option.some(JSON.parse(text))
  } catch {
    return Option.none()
  }
}

const toEntry = (row: Row): Entry => ({
  key: row.key,
  identity: { tenant: row.tenant, user: row.principal },
  fingerprint: row.fingerprint,
  taskId: row.taskId ?? "",
  state: row.state,
  result: parseResult(row.result),
  leaseOwner: Option.fromNullable(row.leaseOwner),
  leaseExpiresAt: Option.fromNullable(row.leaseExpiresAt),
  createdAt: row.createdAt,
  finishedAt: Option.fromNullable(row.finishedAt)
})

const runningRow = (
  id: RowId,
  fingerprint: string,
  taskId: string | null,
  lease: Lease,
  now: number
): Row => ({
  ...id,
  fingerprint,
  taskId,
  state: "running",
  result: null,
  leaseToken: lease.token,
  leaseOwner: lease.owner,
  leaseExpiresAt: lease.expiresAt,
  createdAt: now,
  finishedAt: null
})

const millis = (input: Duration.DurationInput | undefined, fallback: Duration.DurationInput): number =>
  Duration.toMillis(Duration.decode(input ?? fallback))

/** Tool-level `once`: what one look at the store decided. */
type Step =
  | { readonly _tag: "Again" }
  | { readonly _tag: "Run"; readonly lease: Lease }
  | { readonly _tag: "Stored"; readonly text: string }

/**
 * Builds a ledger over a store. Every layer goes through here, so the
 * decisions are the same for memory, SQLite and PostgreSQL.
 */
const make = <SE>(store: Store<SE>, options: Options = {}): Service => {
  const owner = options.owner ?? `ledger-${randomUUID()}`
  const retentionMs = millis(options.retention, Duration.hours(24))
  const defaultLeaseMs = millis(options.lease, Duration.seconds(30))
  const defaultWaitMs = millis(options.waitTimeout, Duration.seconds(30))
  const pollMs = Math.max(1, millis(options.pollInterval, Duration.millis(50)))
  const notifier = makeNotifier()

  // The stored form of tool-level outcomes, cached per schema pair: Schema
  // compiles its parsers once per schema instance, and a new codec per call
  // made every `once` pay for a compile.
  const codecs = new WeakMap<object, WeakMap<object, Schema.Schema<any, string>>>()
  const storedCodec = <A, E>(
    success: Schema.Schema<A, any>,
    failure: Schema.Schema<E, any> | undefined
  ): Schema.Schema<Either.Either<A, E>, string> => {
    const left = failure ?? Schema.Never
    let bySuccess = codecs.get(success)
    if (bySuccess === undefined) {
      bySuccess = new WeakMap()
      codecs.set(success, bySuccess)
    }
    let codec = bySuccess.get(left)
    if (codec === undefined) {
      codec = Schema.parseJson(Schema.Either({ right: success, left })) as Schema.Schema<any, string>
      bySuccess.set(left, codec)
    }
    return codec
  }

  /** A store operation on the row `id` (none: on many rows). */
  const db = <A>(id: RowId | undefined, effect: Effect.Effect<A, SE>): Effect.Effect<A, IdempotencyError> =>
    Effect.mapError(effect, (cause) =>
      new IdempotencyError({
        reason: "Unavailable",
        ...(id === undefined ? {} : { key: id.key }),
        detail: "the ledger store failed",
        cause
      }))

  const newLease = (now: number, leaseMs: number): Lease => ({
    token: randomUUID(),
    owner,
    expiresAt: now + leaseMs
  })

  /** The live (not stale) row of `id`. */
  const read = (id: RowId, now: number) =>
    db(id, store.get(id)).pipe(
      Effect.map(Option.filter((row) => !isStale(row, now - retentionMs, now)))
    )

  /** Waits for a change of `id`, at most one poll interval and never past `deadline`. */
  const pause = (changed: Effect.Effect<void>, now: number, deadline: number) =>
    Effect.timeoutOption(changed, Duration.millis(Math.max(0, Math.min(pollMs, deadline - now))))

  const timeout = (key: string, waitedMs: number) =>
    new IdempotencyError({ reason: "Timeout", key, detail: `another run still holds the key after ${waitedMs} ms` })

  /**
   * Runs `effect` while renewing the lease in the background, at a third of
   * its duration, so two missed renewals still leave it held. The renewer
   * stops when the lease is lost.
   */
  const holding = <A, E, R>(id: RowId, token: string, leaseMs: number, effect: Effect.Effect<A, E, R>) => {
    const renewer = Effect.gen(function*() {
      yield* Effect.sleep(Duration.millis(Math.max(1, Math.floor(leaseMs / 3))))
      const now = yield* Clock.currentTimeMillis
      return yield* store.renew(id, token, now + leaseMs)
    }).pipe(
      Effect.catchAll((error) => Effect.as(Effect.logWarning("idempotency lease renewal failed", error), true)),
      Effect.repeat({ while: (renewed) => renewed }),
      // Another holder took the key over: this run's end will not be recorded.
      Effect.zipRight(Effect.logWarning("idempotency lease lost; another holder took the key over").pipe(
        Effect.annotateLogs({ entry: idString(id) })
      ))
    )
    return Effect.acquireUseRelease(
      // A forked fiber inherits its parent's mask; the renewer must stay interruptible.
      Effect.forkDaemon(Effect.interruptible(renewer)),
      () => effect,
      (fiber) => Fiber.interrupt(fiber)
    )
  }

  // Its lease came from `begin`, which checked the key.
  const withLease: Service["withLease"] = (request, effect) =>
    holding(
      requestRow(request),
      request.lease.token,
      millis(request.duration, Duration.millis(defaultLeaseMs)),
      effect
    )

  const begin: Service["begin"] = (request) =>
    Effect.gen(function*() {
      const id = yield* requestId(request)
      const leaseMs = millis(request.lease, Duration.millis(defaultLeaseMs))
      // A row can vanish between the insert and the read (abandon, cleanup); then try again.
      for (let attempt = 0; attempt < 5; attempt++) {
        const now = yield* Clock.currentTimeMillis
        const lease = newLease(now, leaseMs)
        const inserted = yield* db(
          id,
          store.insert(runningRow(id, request.fingerprint, request.taskId, lease, now), now - retentionMs, now)
        )
        if (inserted) return BeginOutcome.Started({ taskId: request.taskId, lease })
        const existing = yield* read(id, now)
        if (Option.isNone(existing)) continue
        const row = existing.value
        if (row.fingerprint !== request.fingerprint) {
          return yield* new IdempotencyConflict({ reason: "PayloadMismatch", key: request.key })
        }
        const entry = toEntry(row)
        if (row.state === "finished") {
          return BeginOutcome.Finished({ taskId: entry.taskId, result: Option.getOrNull(entry.result), entry })
        }
        return (row.leaseExpiresAt ?? 0) <= now
          ? BeginOutcome.Interrupted({ taskId: entry.taskId, entry })
          : BeginOutcome.Running({ taskId: entry.taskId, entry })
      }
      return yield* new IdempotencyError({
        reason: "Unavailable",
        key: request.key,
        detail: "the entry kept disappearing while it was read"
      })
    })

  /** A request-level result as stored: JSON, or a typed error for what JSON cannot hold. */
  const resultText = (key: string, result: unknown): Effect.Effect<string, IdempotencyError> =>
    Effect.try({
      try: () => JSON.stringify(result) ?? "null",
      catch: (cause) => new IdempotencyError({ reason: "InvalidResult", key, detail: "the result could not be written as JSON", cause })
    })

  const renewLease: Service["renewLease"] = (request) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const leaseMs = millis(request.duration, Duration.millis(defaultLeaseMs))
      const id = yield* requestId(request)
      return yield* db(id, store.renew(id, request.lease.token, now + leaseMs))
    })

  const finish: Service["finish"] = (request) =>
    Effect.gen(function*() {
      const id = yield* requestId(request)
      const now = yield* Clock.currentTimeMillis
      const text = yield* resultText(request.key, request.result)
      const done = yield* db(id, store.finish(id, text, now, { token: request.lease?.token }))
      if (done) yield* notifier.signal(id)
      return done
    })

  const abandon: Service["abandon"] = (request) =>
    Effect.gen(function*() {
      const id = yield* requestId(request)
      const done = yield* db(id, store.release(id, request.lease.token))
      if (done) yield* notifier.signal(id)
      return done
    })

  const get: Service["get"] = (ref) =>
    Effect.flatMap(Effect.zip(requestId(ref), Clock.currentTimeMillis), ([id, now]) => read(id, now)).pipe(
      Effect.map(Option.map(toEntry))
    )

  const await_: Service["await"] = (ref) =>
    Effect.gen(function*() {
      const id = yield* requestId(ref)
      const waitMs = millis(ref.timeout, Duration.millis(defaultWaitMs))
      const deadline = (yield* Clock.currentTimeMillis) + waitMs
      while (true) {
        const outcome = yield* notifier.watch(id, (changed) =>
          Effect.gen(function*() {
            const now = yield* Clock.currentTimeMillis
            const existing = yield* read(id, now)
            if (Option.isNone(existing)) {
              return yield* new IdempotencyError({ reason: "NotFound", key: ref.key, detail: "no such entry" })
            }
            const entry = toEntry(existing.value)
            if (entry.state === "finished") {
              return Option.some<AwaitOutcome>(
                BeginOutcome.Finished({ taskId: entry.taskId, result: Option.getOrNull(entry.result), entry })
              )
            }
            if ((existing.value.leaseExpiresAt ?? 0) <= now) {
              return Option.some<AwaitOutcome>(BeginOutcome.Interrupted({ taskId: entry.taskId, entry }))
            }
            if (now >= deadline) return yield* timeout(ref.key, waitMs)
            yield* pause(changed, now, deadline)
            return Option.none<AwaitOutcome>()
          }))
        if (Option.isSome(outcome)) return outcome.value
      }
    })

  /**
   * Records an expired row with what `onExpired` gives it: none when the row
   * was no longer expired (its owner renewed or finished it, another sweep
   * took it). The row is claimed first, with a lease of this ledger's
   * length, so that only one sweep runs `onExpired` for it and its owner can
   * no longer renew or finish it. A failure of `onExpired` (or a result that
   * is not JSON) is returned as a `Left` and ends the claim at once, for the
   * next sweep; a store failure fails.
   */
  const expireRow = <E, R>(row: Row, onExpired: (entry: Entry) => Effect.Effect<unknown, E, R>) =>
    Effect.uninterruptibleMask((restore) =>
      Effect.gen(function*() {
        const none = Either.right(Option.none<Expired>())
        if (row.leaseToken === null) return none
        const now = yield* Clock.currentTimeMillis
        const claim = newLease(now, defaultLeaseMs)
        if (!(yield* db(row, store.takeover(row, row.leaseToken, claim, now)))) return none
        const entry = toEntry(row)
        // Renewed while `onExpired` runs, like a run's lease: a slow one must not be taken over and run twice.
        const written = yield* holding(
          row,
          claim.token,
          defaultLeaseMs,
          restore(
            Effect.flatMap(onExpired(entry), (result) => Effect.map(resultText(row.key, result), (text) => ({ result, text })))
          )
        ).pipe(
          // Ended now, the claim leaves the entry expired again; should that fail, the claim runs out after its lease.
          Effect.onError(() => Effect.ignore(Effect.flatMap(Clock.currentTimeMillis, (at) => store.renew(row, claim.token, at)))),
          Effect.either
        )
        if (Either.isLeft(written)) return Either.left(written.left)
        const at = yield* Clock.currentTimeMillis
        const done = yield* db(row, store.finish(row, written.right.text, at, { token: claim.token }))
        if (done) yield* notifier.signal(row)
        return Either.right(done ? Option.some<Expired>({ entry, result: written.right.result }) : Option.none<Expired>())
      })
    )

  const expireLeases: Service["expireLeases"] = (options) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const candidates = yield* db(undefined, store.listExpired("request", now, options.limit ?? 100))
      const recorded: Array<Expired> = []
      let failures: Cause.Cause<IdempotencyError | Effect.Effect.Error<ReturnType<typeof options.onExpired>>> = Cause.empty
      for (const row of candidates) {
        const expired = yield* expireRow(row, options.onExpired).pipe(
          Effect.catchAll((error) => Effect.failCause(Cause.parallel(failures, Cause.fail(error))))
        )
        if (Either.isLeft(expired)) failures = Cause.parallel(failures, Cause.fail(expired.left))
        else if (Option.isSome(expired.right)) recorded.push(expired.right.value)
      }
      return Cause.isEmpty(failures) ? recorded : yield* Effect.failCause(failures)
    })

  const expireLease: Service["expireLease"] = (ref) =>
    Effect.gen(function*() {
      const id = yield* requestId(ref)
      const now = yield* Clock.currentTimeMillis
      const existing = yield* read(id, now)
      if (Option.isNone(existing)) return Option.none()
      const row = existing.value
      if (row.state !== "running" || (row.leaseExpiresAt ?? 0) > now) return Option.none()
      return yield* Effect.flatten(expireRow(row, ref.onExpired))
    })

  const cleanup: Service["cleanup"] = (options) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      return yield* db(undefined, store.deleteStale(now - millis(options?.retention, Duration.millis(retentionMs)), now))
    })

  const once: Service["once"] = <A, I, E, R>(
    key: string,
    effect: Effect.Effect<A, E, R>,
    onceOptions: OnceOptions<A, I, E>
  ) =>
    Effect.gen(function*() {
      const identity = onceOptions.identity ?? anonymous
      const id = yield* checkedId({ scope: "tool", tenant: identity.tenant, principal: identity.user, key })
      const leaseMs = millis(onceOptions.lease, Duration.millis(defaultLeaseMs))
      const waitMs = millis(onceOptions.waitTimeout, Duration.millis(defaultWaitMs))
      const storeFailure = onceOptions.failure !== undefined
      const codec = storedCodec(onceOptions.success, onceOptions.failure)
      const invalid = (detail: string) => (cause: unknown) =>
        new IdempotencyError({ reason: "InvalidResult", key, detail, cause })

      /** Runs the effect under `lease` and records how it ended. */
      const run = (held: Lease): Effect.Effect<A, E | IdempotencyError, R> =>
        Effect.uninterruptibleMask((restore) =>
          Effect.gen(function*() {
            const exit = yield* Effect.exit(holding(id, held.token, leaseMs, restore(effect)))
            const now = yield* Clock.currentTimeMillis
            const record = (value: Either.Either<A, E>) =>
              Schema.encode(codec)(value).pipe(
                Effect.mapError(invalid("the result could not be encoded")),
                // Read back before it is stored: JSON turns NaN and Infinity into null, which may not decode.
                Effect.tap((text) => Effect.mapError(Schema.decode(codec)(text), invalid("the result would not decode from JSON"))),
                Effect.flatMap((text) => db(id, store.finish(id, text, now, { token: held.token }))),
                Effect.flatMap((done) =>
                  done ? Effect.void : Effect.logWarning("idempotency lease was lost before the result was recorded")
                )
              )
            if (Exit.isSuccess(exit)) {
              const recorded = yield* Effect.either(record(Either.right(exit.value)))
              yield* notifier.signal(id)
              if (Either.isLeft(recorded)) {
                if (recorded.left.reason === "InvalidResult") {
                  // The side effect happened but later callers cannot be told its result:
                  // leave the entry to expire, so they see Interrupted rather than run it again.
                  yield* Effect.ignore(store.renew(id, held.token, now))
                  return yield* recorded.left
                }
                yield* Effect.logWarning("idempotency result could not be recorded", recorded.left)
              }
              return exit.value
            }
            const cause = exit.cause
            const failure = Cause.failureOption(cause)
            if (Option.isSome(failure) && !Cause.isDie(cause) && !Cause.isInterrupted(cause)) {
              const recorded = storeFailure
                ? record(Either.left(failure.value))
                : Effect.asVoid(db(id, store.release(id, held.token)))
              // Unrecorded, the entry would hold its lease to the end: end it now, so later callers
              // learn at once that the outcome is unknown.
              yield* Effect.catchAll(recorded, (error) =>
                Effect.zipRight(
                  Effect.logWarning("idempotency failure could not be recorded", error),
                  Effect.ignore(store.renew(id, held.token, now))
                ))
            } else {
              // A defect or an interruption: the side effect may have happened. End the lease now
              // so later callers learn at once that the outcome is unknown.
              yield* Effect.ignore(store.renew(id, held.token, now))
            }
            yield* notifier.signal(id)
            return yield* exit
          })
        )

      const deadline = (yield* Clock.currentTimeMillis) + waitMs
      while (true) {
        const step: Step = yield* notifier.watch(id, (changed) =>
          Effect.gen(function*() {
            const now = yield* Clock.currentTimeMillis
            const fresh = newLease(now, leaseMs)
            if (yield* db(id, store.insert(runningRow(id, "", null, fresh, now), now - retentionMs, now))) {
              return { _tag: "Run", lease: fresh } as const
            }
            const existing = yield* read(id, now)
            if (Option.isNone(existing)) return { _tag: "Again" } as const
            const row = existing.value
            if (row.state === "finished") return { _tag: "Stored", text: row.result ?? "null" } as const
            if ((row.leaseExpiresAt ?? 0) <= now) {
              if (onceOptions.takeover !== true) {
                return yield* new IdempotencyError({
                  reason: "Interrupted",
                  key,
                  detail: "a previous run stopped before recording its outcome; it may or may not have taken effect"
                })
              }
              const taken = yield* db(id, store.takeover(id, row.leaseToken ?? "", fresh, now))
              return taken ? { _tag: "Run", lease: fresh } as const : { _tag: "Again" } as const
            }
            if (now >= deadline) return yield* timeout(key, waitMs)
            yield* pause(changed, now, deadline)
            return { _tag: "Again" } as const
          }))
        switch (step._tag) {
          case "Again":
            continue
          case "Run":
            return yield* run(step.lease)
          case "Stored": {
            const stored = yield* Schema.decode(codec)(step.text).pipe(
              Effect.mapError(invalid("the stored result could not be decoded"))
            )
            return yield* stored
          }
        }
      }
    })

  return {
    owner,
    begin,
    renewLease,
    withLease,
    finish,
    abandon,
    get,
    await: await_,
    expireLeases,
    expireLease,
    cleanup,
    once
  }
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
 * @since 0.1.0
 */
export const sweep = <E, R>(options: {
  readonly onExpired: (entry: Entry) => Effect.Effect<unknown, E, R>
  readonly every?: Duration.DurationInput | undefined
}): Effect.Effect<never, never, IdempotencyLedger | R> =>
  Effect.flatMap(IdempotencyLedger, (ledger) => {
    // Each step on its own: entries that cannot be expired do not keep old ones from being deleted.
    const logged = (step: string) => <A, E2, R2>(effect: Effect.Effect<A, E2, R2>) =>
      Effect.catchAllCause(effect, (cause) =>
        Cause.isInterruptedOnly(cause)
          ? Effect.interrupt
          : Effect.logWarning(`idempotency ledger sweep: ${step} failed`, cause))
    return ledger.expireLeases({ onExpired: options.onExpired }).pipe(
      logged("expiring leases"),
      Effect.zipRight(logged("cleanup")(ledger.cleanup())),
      Effect.zipRight(Effect.sleep(options.every ?? Duration.seconds(5))),
      Effect.forever
    )
  })

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
 * @since 0.1.0
 */
export const layerMemory = (options?: Options): Layer.Layer<IdempotencyLedger> =>
  Layer.sync(IdempotencyLedger, () => make(Memory.make(), options))

const migrationFailed = (cause: SqlError) =>
  new IdempotencyError({ reason: "Unavailable", detail: "the ledger table could not be created", cause })

/**
 * A ledger over whatever `SqlClient` the context holds (SQLite and
 * PostgreSQL are supported). Creates its table when missing.
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
 * @since 0.1.0
 */
export const layerSql = (
  options?: SqlOptions
): Layer.Layer<IdempotencyLedger, IdempotencyError, SqlClient.SqlClient> =>
  Layer.effect(
    IdempotencyLedger,
    Effect.gen(function*() {
      const table = options?.table ?? Sql.defaultTable
      yield* Effect.mapError(Sql.migrate(table), migrationFailed)
      return make(yield* Sql.make(table), options)
    })
  )

/**
 * A ledger in a SQLite file: the embedded default. Survives restarts of one
 * process; processes on one machine may share the file.
 *
 * @example
 * ```ts
 * import { IdempotencyLedger } from "effect-a2a"
 *
 * const LedgerLive = IdempotencyLedger.layerSqlite({ filename: "./data/idempotency.db" })
 * ```
 * @since 0.1.0
 */
export const layerSqlite = (
  options: SqlOptions & { readonly filename: string }
): Layer.Layer<IdempotencyLedger, IdempotencyError | ConfigError> =>
  layerSql(options).pipe(Layer.provide(
    SqliteClient.layer({ filename: options.filename }).pipe(
      // Opening the file throws (a missing directory, a file that is not a database).
      Layer.catchAllCause((cause) =>
        Layer.fail(
          new IdempotencyError({
            reason: "Unavailable",
            detail: `could not open the SQLite ledger at ${options.filename}`,
            cause: Cause.squash(cause)
          })
        )
      )
    )
  ))

/**
 * A ledger in PostgreSQL, shared by several server replicas. Needs the
 * `@effect/sql-pg` package, which is loaded only when this layer is built.
 *
 * @example
 * ```ts
 * import { IdempotencyLedger } from "effect-a2a"
 *
 * const LedgerLive = IdempotencyLedger.layerPg({ url: process.env.DATABASE_URL ?? "", owner: "replica-a" })
 * ```
 * @since 0.1.0
 */
export const layerPg = (
  options: SqlOptions & {
    readonly url: string | Redacted.Redacted
    readonly maxConnections?: number | undefined
  }
): Layer.Layer<IdempotencyLedger, IdempotencyError> =>
  Layer.unwrapEffect(
    Effect.tryPromise({
      try: () => import("@effect/sql-pg/PgClient"),
      catch: (cause) =>
        new IdempotencyError({ reason: "Unavailable", detail: "layerPg needs the @effect/sql-pg package", cause })
    }).pipe(
      Effect.map((PgClient) =>
        layerSql(options).pipe(
          Layer.provide(
            PgClient.layer({
              url: typeof options.url === "string" ? Redacted.make(options.url) : options.url,
              ...(options.maxConnections === undefined ? {} : { maxConnections: options.maxConnections })
            }).pipe(
              Layer.mapError((cause) =>
                new IdempotencyError({ reason: "Unavailable", detail: "could not connect to PostgreSQL", cause })
              )
            )
          )
        )
      )
    )
  )
