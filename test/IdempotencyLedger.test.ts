import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { afterAll, describe, expect, it } from "@effect/vitest"
import {
  Cause,
  Context,
  Deferred,
  Effect,
  Either,
  Exit,
  Fiber,
  Layer,
  Option,
  Redacted,
  Schema,
  TestClock
} from "effect"
import { spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Idempotency from "../src/Idempotency.js"
import * as IdempotencyLedger from "../src/IdempotencyLedger.js"
import { databaseUrl } from "./fixtures/databaseUrl.js"

const { IdempotencyConflict, IdempotencyError } = IdempotencyLedger
type Ledger = IdempotencyLedger.Service

const ana: IdempotencyLedger.Identity = { tenant: "acme", user: "ana" }
const bob: IdempotencyLedger.Identity = { tenant: "acme", user: "bob" }
const anaElsewhere: IdempotencyLedger.Identity = { tenant: "globex", user: "ana" }

const unique = (prefix: string) => `${prefix}_${randomBytes(5).toString("hex")}`

// ---------------------------------------------------------------------------
// Backends
// ---------------------------------------------------------------------------

let sqliteDir: string | undefined
const sqliteDirectory = () => (sqliteDir ??= fs.mkdtempSync(path.join(os.tmpdir(), "effect-a2a-ledger-")))
const pgTables: Array<string> = []

afterAll(async () => {
  if (sqliteDir !== undefined) fs.rmSync(sqliteDir, { recursive: true, force: true })
  if (pgTables.length === 0) return
  // Leave nothing behind when the server is an external DATABASE_URL.
  await Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    for (const table of pgTables) yield* sql`DROP TABLE IF EXISTS ${sql(table)}`
  }).pipe(
    Effect.provide(PgClient.layer({ url: Redacted.make(databaseUrl()) })),
    Effect.scoped,
    Effect.runPromise
  )
})

interface Backend {
  readonly name: "memory" | "sqlite" | "pg"
  /** A fresh, empty store's location; pass it to `layer` several times for replicas sharing it. */
  readonly fresh: () => string
  readonly layer: (
    location: string,
    options?: IdempotencyLedger.Options
  ) => Layer.Layer<IdempotencyLedger.IdempotencyLedger, unknown>
}

const backends: ReadonlyArray<Backend> = [
  {
    name: "memory",
    fresh: () => "",
    layer: (_, options) => IdempotencyLedger.layerMemory(options)
  },
  {
    name: "sqlite",
    fresh: () => path.join(sqliteDirectory(), `${unique("ledger")}.db`),
    layer: (filename, options) => IdempotencyLedger.layerSqlite({ ...options, filename })
  },
  {
    name: "pg",
    fresh: () => {
      const table = unique("ledger")
      pgTables.push(table)
      return table
    },
    layer: (table, options) => IdempotencyLedger.layerPg({ ...options, url: databaseUrl(), table })
  }
]

/** Builds a ledger into the test's scope. */
const build = (layer: Layer.Layer<IdempotencyLedger.IdempotencyLedger, unknown>) =>
  Layer.build(layer).pipe(Effect.map(Context.get(IdempotencyLedger.IdempotencyLedger)))

const begin = (ledger: Ledger, key: string, identity = ana, fingerprint = "f1", taskId = unique("task")) =>
  ledger.begin({ key, identity, fingerprint, taskId })

const tag = <A extends { readonly _tag: string }>(a: A) => a._tag

/** A short real-time pause, for background fibers' I/O while the test clock stands still. */
const settle = Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, 30)))
// Time for a sweep on a shared database to finish on a loaded machine, where 30 ms was seen to be too short.
const settleSweep = Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, 250)))

// ---------------------------------------------------------------------------
// The shared behavioural suite
// ---------------------------------------------------------------------------

const ledgerSuite = (backend: Backend) =>
  describe(`IdempotencyLedger (${backend.name})`, () => {
    const ledger = (options?: IdempotencyLedger.Options) => build(backend.layer(backend.fresh(), options))

    it.scoped("the first request starts, a repeat while it runs joins, a repeat after it finished replays", () =>
      Effect.gen(function*() {
        const l = yield* ledger()
        const first = yield* begin(l, "k1", ana, "f1", "task-1")
        expect(first._tag).toBe("Started")

        const joined = yield* begin(l, "k1", ana, "f1", "task-2")
        expect(joined._tag).toBe("Running")
        expect(joined.taskId).toBe("task-1")

        const failedTask = { id: "task-1", status: { state: 4, message: "payment declined" } }
        expect(yield* l.finish({ key: "k1", identity: ana, result: failedTask })).toBe(true)

        const replay = yield* begin(l, "k1", ana, "f1", "task-3")
        assertTag(replay, "Finished")
        expect(replay.taskId).toBe("task-1")
        expect(replay.result).toEqual(failedTask)
        // The first final result wins.
        expect(yield* l.finish({ key: "k1", identity: ana, result: { other: true } })).toBe(false)
        const entry = yield* l.get({ key: "k1", identity: ana })
        expect(Option.map(entry, (e) => e.result)).toEqual(Option.some(Option.some(failedTask)))
      }))

    it.scoped("a key or identity holding NUL is refused as InvalidKey before the store, so a key works alike on every ledger", () =>
      Effect.gen(function*() {
        const l = yield* ledger()
        let ran = 0
        const refusals = [
          yield* Effect.flip(begin(l, "k\u00001")),
          yield* Effect.flip(begin(l, "k1", { tenant: "ac\u0000me", user: "ana" })),
          yield* Effect.flip(l.get({ key: "k\u00001", identity: ana })),
          yield* Effect.flip(l.finish({ key: "k1", identity: { tenant: "acme", user: "a\u0000na" }, result: null })),
          yield* Effect.flip(l.once("k\u00001", Effect.sync(() => ran++), { success: Schema.Number }))
        ]
        for (const refused of refusals) {
          expect(refused._tag).toBe("IdempotencyError")
          expect(refused).toMatchObject({ reason: "InvalidKey" })
          expect(refused.message).toContain("must not contain NUL")
        }
        // Two keys that differ only in a lone surrogate would be one key in UTF-8; a key too long for an index.
        expect((yield* Effect.flip(begin(l, "k\uD800"))).message).toContain("no lone surrogate")
        expect((yield* Effect.flip(begin(l, "k", { tenant: "\uDC00", user: "ana" }))).message).toContain(
          "no lone surrogate"
        )
        expect((yield* Effect.flip(begin(l, "k".repeat(2001)))).message).toContain(
          "at most 2000 bytes of UTF-8 together (got 2008)"
        )
        expect((yield* begin(l, "\u{1F600}".repeat(497)))._tag).toBe("Started")
        expect(ran).toBe(0)
        // Nothing was stored: the same key without NUL starts afresh.
        expect((yield* begin(l, "k1"))._tag).toBe("Started")
      }))

    it.scoped("the same key with a different payload is refused, while running and after it finished", () =>
      Effect.gen(function*() {
        const l = yield* ledger()
        yield* begin(l, "k1", ana, "f1")
        const running = yield* Effect.flip(begin(l, "k1", ana, "f2"))
        expect(running).toBeInstanceOf(IdempotencyConflict)
        expect(running._tag).toBe("IdempotencyConflict")
        expect(running.reason).toBe("PayloadMismatch")
        expect(running.message).toBe("idempotency key reused with a different request")
        expect(IdempotencyLedger.conflictCode).toBe(-32602)

        yield* l.finish({ key: "k1", identity: ana, result: "done" })
        const finished = yield* Effect.flip(begin(l, "k1", ana, "f2"))
        expect(finished._tag).toBe("IdempotencyConflict")
      }))

    it.scoped("one caller never sees another caller's entry with the same key", () =>
      Effect.gen(function*() {
        const l = yield* ledger()
        expect(tag(yield* begin(l, "shared", ana, "f1", "task-ana"))).toBe("Started")
        yield* l.finish({ key: "shared", identity: ana, result: { secret: "ana's booking" } })

        // Another user of the same tenant, and the same user name in another tenant, start afresh,
        // even with a different payload (no conflict leaks that the key exists).
        const other = yield* begin(l, "shared", bob, "f2", "task-bob")
        expect(other).toMatchObject({ _tag: "Started", taskId: "task-bob" })
        expect(tag(yield* begin(l, "shared", anaElsewhere, "f1", "task-globex"))).toBe("Started")

        const seenByBob = yield* l.get({ key: "shared", identity: bob })
        expect(Option.getOrThrow(seenByBob).result).toEqual(Option.none())
        const ownReplay = yield* begin(l, "shared", ana, "f1")
        assertTag(ownReplay, "Finished")
        expect(ownReplay.result).toEqual({ secret: "ana's booking" })
      }))

    it.scoped("records expire after the retention and are cleaned up", () =>
      Effect.gen(function*() {
        const l = yield* ledger({ retention: "24 hours" })
        yield* begin(l, "old", ana)
        yield* l.finish({ key: "old", identity: ana, result: 1 })
        yield* TestClock.adjust("23 hours")
        yield* begin(l, "young", ana)
        yield* l.finish({ key: "young", identity: ana, result: 2 })

        expect(yield* l.cleanup()).toBe(0)
        yield* TestClock.adjust("2 hours")
        expect(yield* l.cleanup()).toBe(1)
        expect(Option.isNone(yield* l.get({ key: "old", identity: ana }))).toBe(true)
        expect(Option.isSome(yield* l.get({ key: "young", identity: ana }))).toBe(true)
        // A new first request with the expired key runs again, with its own payload.
        expect(tag(yield* begin(l, "old", ana, "another payload"))).toBe("Started")
        // Past retention but not yet cleaned up, an entry is already treated as absent.
        yield* TestClock.adjust("25 hours")
        expect(tag(yield* begin(l, "young", ana, "f-new"))).toBe("Started")
        expect(yield* l.cleanup({ retention: "1 hour" })).toBe(1)
      }))

    it.scoped("a lease that expires marks the entry interrupted, recorded once as failed", () =>
      Effect.gen(function*() {
        const l = yield* ledger({ lease: "10 seconds" })
        const started = yield* begin(l, "k1", ana, "f1", "task-1")
        assertTag(started, "Started")
        yield* begin(l, "k2", ana, "f1", "task-2")

        // The owner of k1 keeps renewing; k2's owner died.
        yield* TestClock.adjust("8 seconds")
        expect(yield* l.renewLease({ key: "k1", identity: ana, lease: started.lease })).toBe(true)
        yield* TestClock.adjust("8 seconds")
        expect(tag(yield* begin(l, "k1", ana))).toBe("Running")
        const interrupted = yield* begin(l, "k2", ana)
        expect(interrupted).toMatchObject({ _tag: "Interrupted", taskId: "task-2" })

        const expired = yield* l.expireLeases({
          onExpired: (entry) => Effect.succeed({ id: entry.taskId, state: "FAILED", reason: "interrupted" })
        })
        expect(expired.map((e) => e.entry.taskId)).toEqual(["task-2"])
        expect(yield* l.expireLeases({ onExpired: () => Effect.succeed("again") })).toEqual([])

        const replay = yield* begin(l, "k2", ana)
        assertTag(replay, "Finished")
        expect(replay.result).toEqual({ id: "task-2", state: "FAILED", reason: "interrupted" })
        // The dead owner coming back late cannot overwrite the recorded failure.
        expect(yield* l.finish({ key: "k2", identity: ana, result: "late" })).toBe(false)
        // The live owner still finishes normally, with its lease.
        expect(yield* l.finish({ key: "k1", identity: ana, result: "ok", lease: started.lease })).toBe(true)
      }))

    it.scoped("an entry whose expiry cannot be recorded does not hold up the sweep of the others; every failure is in the cause", () =>
      Effect.gen(function*() {
        const l = yield* ledger({ lease: "1 second" })
        for (const key of ["k1", "k2", "k3"]) yield* begin(l, key, ana, "f1", `task-${key}`)
        yield* TestClock.adjust("2 seconds")
        const exit = yield* Effect.exit(l.expireLeases({
          onExpired: (entry) =>
            entry.key === "k1"
              ? Effect.fail("no result for k1" as const)
              : entry.key === "k2"
              ? Effect.succeed({ at: 10n })
              : Effect.succeed({ state: "FAILED" })
        }))
        if (!Exit.isFailure(exit)) return expect.unreachable("the sweep should fail")
        const failures = Array.from(Cause.failures(exit.cause))
        expect(failures).toHaveLength(2)
        expect(failures).toContain("no result for k1")
        expect(failures.find((f) => typeof f !== "string")).toMatchObject({ reason: "InvalidResult", key: "k2" })
        // k3 was recorded all the same; k1 and k2 are still expired, for a later sweep.
        expect(tag(yield* begin(l, "k3", ana))).toBe("Finished")
        const later = yield* l.expireLeases({ onExpired: () => Effect.succeed("interrupted") })
        expect(later.map((e) => e.entry.key).sort()).toEqual(["k1", "k2"])
      }))

    it.scoped("entries whose expiry keeps failing go behind the others instead of holding them up", () =>
      Effect.gen(function*() {
        const l = yield* ledger({ lease: "1 second" })
        // k0 and k1 hold the oldest leases, and their expiry fails.
        for (const key of ["k0", "k1", "k2", "k3"]) {
          yield* begin(l, key, ana, "f1", `task-${key}`)
          yield* TestClock.adjust("10 millis")
        }
        yield* TestClock.adjust("2 seconds")
        const expire = (failing: ReadonlyArray<string>) =>
          l.expireLeases({
            limit: 2,
            onExpired: (entry) => failing.includes(entry.key) ? Effect.fail(entry.key) : Effect.succeed("interrupted")
          }).pipe(
            Effect.exit,
            Effect.map(Exit.match({
              onFailure: (cause) => Array.from(Cause.failures(cause)),
              onSuccess: (recorded) => recorded.map((e) => e.entry.key)
            }))
          )
        expect(yield* expire(["k0", "k1"])).toEqual(["k0", "k1"])
        expect(yield* expire(["k0", "k1"])).toEqual(["k2", "k3"])
        expect(yield* expire([])).toEqual(["k0", "k1"])
        for (const key of ["k0", "k1", "k2", "k3"]) expect(tag(yield* begin(l, key, ana))).toBe("Finished")
      }))

    it.scoped("with several sweeps at once, onExpired runs once per entry, and the owner can no longer record an end", () =>
      Effect.gen(function*() {
        const l = yield* ledger({ lease: "1 second" })
        const started = yield* begin(l, "k1", ana, "f1", "task-k1")
        assertTag(started, "Started")
        yield* TestClock.adjust("2 seconds")
        let calls = 0
        const gate = yield* Deferred.make<void>()
        const first = yield* Effect.fork(l.expireLeases({
          onExpired: () => Effect.as(Effect.zipRight(Effect.sync(() => calls++), Deferred.await(gate)), "first")
        }))
        yield* Effect.yieldNow()
        for (let i = 0; i < 10 && calls === 0; i++) yield* settle
        expect(calls).toBe(1)
        // While the first sweep works on it, the entry is claimed: a second sweep and the late owner find nothing to do.
        expect(yield* l.expireLeases({ onExpired: () => Effect.sync(() => calls++) })).toEqual([])
        expect(yield* l.finish({ key: "k1", identity: ana, result: "late", lease: started.lease })).toBe(false)
        expect(yield* l.renewLease({ key: "k1", identity: ana, lease: started.lease })).toBe(false)
        expect(tag(yield* begin(l, "k1", ana))).toBe("Running")
        // A slow onExpired keeps its claim past the claim's lease, renewed as a run's lease is.
        for (let i = 0; i < 5; i++) {
          yield* TestClock.adjust("500 millis")
          yield* settle
        }
        expect(yield* l.expireLeases({ onExpired: () => Effect.sync(() => calls++) })).toEqual([])
        yield* Deferred.succeed(gate, undefined)
        expect((yield* Fiber.join(first)).map((e) => e.result)).toEqual(["first"])
        expect(calls).toBe(1)
        const replay = yield* begin(l, "k1", ana)
        assertTag(replay, "Finished")
        expect(replay.result).toBe("first")
      }))

    it.scoped("expireLease records one expired entry, whatever else expired, once; never a live, finished or absent one", () =>
      Effect.gen(function*() {
        const l = yield* ledger({ lease: "1 second" })
        for (const key of ["k1", "k2"]) yield* begin(l, key, ana, "f1", `task-${key}`)
        yield* TestClock.adjust("2 seconds")
        yield* begin(l, "live", ana, "f1", "task-live")
        const record = (key: string, identity = ana) =>
          l.expireLease({ key, identity, onExpired: (entry) => Effect.succeed({ id: entry.taskId, state: "FAILED" }) })

        // A failing onExpired fails the call and leaves the entry expired.
        const failed = yield* Effect.flip(
          l.expireLease({ key: "k1", identity: ana, onExpired: () => Effect.fail("down" as const) })
        )
        expect(failed).toBe("down")
        expect(tag(yield* begin(l, "k1", ana))).toBe("Interrupted")

        const k2 = yield* record("k2")
        expect(Option.map(k2, (e) => [e.entry.taskId, e.result])).toEqual(
          Option.some(["task-k2", { id: "task-k2", state: "FAILED" }])
        )
        const replay = yield* begin(l, "k2", ana)
        assertTag(replay, "Finished")
        expect(replay.result).toEqual({ id: "task-k2", state: "FAILED" })
        // Already recorded, still held, someone else's, or absent: nothing to record.
        expect(yield* record("k2")).toEqual(Option.none())
        expect(yield* record("live")).toEqual(Option.none())
        expect(yield* record("k1", bob)).toEqual(Option.none())
        expect(yield* record("absent")).toEqual(Option.none())
        expect(tag(yield* begin(l, "live", ana))).toBe("Running")
        // k1 was left for the sweep.
        const swept = yield* l.expireLeases({ onExpired: () => Effect.succeed("interrupted") })
        expect(swept.map((e) => e.entry.key)).toEqual(["k1"])
        const invalid = yield* Effect.flip(record("k\u0000"))
        expect(invalid).toMatchObject({ _tag: "IdempotencyError", reason: "InvalidKey" })
      }))

    it.scoped("a lost lease can neither be renewed nor finish the entry", () =>
      Effect.gen(function*() {
        const l = yield* ledger({ lease: "1 second" })
        const started = yield* begin(l, "k1", ana, "f1", "task-1")
        assertTag(started, "Started")
        yield* TestClock.adjust("2 seconds")
        yield* l.expireLeases({ onExpired: () => Effect.succeed("interrupted") })
        expect(yield* l.renewLease({ key: "k1", identity: ana, lease: started.lease })).toBe(false)
        expect(yield* l.finish({ key: "k1", identity: ana, result: "late", lease: started.lease })).toBe(false)
      }))

    it.scoped("withLease keeps a running entry held while its task runs, and no longer", () =>
      Effect.gen(function*() {
        const l = yield* ledger({ lease: "10 seconds" })
        const started = yield* begin(l, "k1", ana, "f1", "task-1")
        assertTag(started, "Started")
        const done = yield* Deferred.make<void>()
        const task = yield* Effect.fork(
          l.withLease({ key: "k1", identity: ana, lease: started.lease }, Deferred.await(done))
        )
        // 25 s of test time; without renewals the lease would have expired at 10 s. After each step
        // the renewer's store call (real I/O for SQLite and PostgreSQL) gets real time to complete.
        for (let i = 0; i < 5; i++) {
          yield* TestClock.adjust("5 seconds")
          yield* settle
        }
        expect(tag(yield* begin(l, "k1", ana))).toBe("Running")
        yield* Deferred.succeed(done, undefined)
        yield* Fiber.join(task)
        // The task ended without finishing the entry (its process "died"): the lease runs out.
        yield* TestClock.adjust("20 seconds")
        expect(tag(yield* begin(l, "k1", ana))).toBe("Interrupted")
      }))

    it.scopedLive("sweep records expired leases as failed and removes old entries", () =>
      Effect.gen(function*() {
        const l = yield* ledger({ lease: "50 millis", retention: "1 second" })
        yield* begin(l, "k1", ana, "f1", "task-1")
        const sweeper = yield* IdempotencyLedger.sweep({
          every: "20 millis",
          onExpired: (entry) => Effect.succeed({ id: entry.taskId, state: "FAILED", reason: "interrupted" })
        }).pipe(Effect.provideService(IdempotencyLedger.IdempotencyLedger, l), Effect.fork)
        const recorded = yield* l.get({ key: "k1", identity: ana }).pipe(
          Effect.zipLeft(Effect.sleep("10 millis")),
          Effect.repeat({ until: (entry) => Option.isSome(entry) && entry.value.state === "finished", times: 250 })
        )
        expect(Option.getOrThrow(recorded).result).toEqual(
          Option.some({ id: "task-1", state: "FAILED", reason: "interrupted" })
        )
        // Past retention the sweeper deletes it.
        const gone = yield* l.get({ key: "k1", identity: ana }).pipe(
          Effect.zipLeft(Effect.sleep("20 millis")),
          Effect.repeat({ until: Option.isNone, times: 250 })
        )
        expect(Option.isNone(gone)).toBe(true)
        yield* Fiber.interrupt(sweeper)
      }))

    it.scoped("sweep still deletes old entries while an expired one cannot be recorded", () =>
      Effect.gen(function*() {
        const l = yield* ledger({ lease: "1 second", retention: "10 seconds" })
        yield* begin(l, "done", ana, "f1", "task-1")
        yield* l.finish({ key: "done", identity: ana, result: "ok" })
        yield* TestClock.adjust("9 seconds")
        // Expired from 10 s on; within retention until 19 s.
        yield* begin(l, "stuck", ana, "f1", "task-2")
        const sweeper = yield* IdempotencyLedger.sweep({
          every: "1 second",
          onExpired: () => Effect.fail("cannot record")
        }).pipe(
          Effect.provideService(IdempotencyLedger.IdempotencyLedger, l),
          Effect.fork
        )
        for (let second = 0; second < 3; second++) {
          yield* settleSweep
          yield* TestClock.adjust("1 second")
        }
        yield* settleSweep
        yield* Fiber.interrupt(sweeper)
        // "done" passed retention at 10 s: the sweeper deleted it although "stuck" could not be expired.
        expect(yield* l.cleanup()).toBe(0)
        expect(tag(yield* begin(l, "stuck", ana))).toBe("Interrupted")
      }))

    it.scoped("an abandoned entry frees its key", () =>
      Effect.gen(function*() {
        const l = yield* ledger()
        const started = yield* begin(l, "k1", ana, "f1")
        assertTag(started, "Started")
        expect(yield* l.abandon({ key: "k1", identity: ana, lease: started.lease })).toBe(true)
        expect(tag(yield* begin(l, "k1", ana, "f2"))).toBe("Started")
      }))

    it.scopedLive("await returns when the running entry finishes, and fails typed on time-out", () =>
      Effect.gen(function*() {
        const l = yield* ledger({ pollInterval: "20 millis" })
        yield* begin(l, "k1", ana, "f1", "task-1")
        const waiter = yield* Effect.fork(l.await({ key: "k1", identity: ana, timeout: "10 seconds" }))
        yield* Effect.sleep("50 millis")
        yield* l.finish({ key: "k1", identity: ana, result: { state: "COMPLETED" } })
        const outcome = yield* Fiber.join(waiter)
        expect(outcome).toMatchObject({ _tag: "Finished", taskId: "task-1", result: { state: "COMPLETED" } })

        yield* begin(l, "k2", ana)
        const late = yield* Effect.flip(l.await({ key: "k2", identity: ana, timeout: "100 millis" }))
        expect(late).toBeInstanceOf(IdempotencyError)
        expect(late.reason).toBe("Timeout")
        const missing = yield* Effect.flip(l.await({ key: "nope", identity: ana }))
        expect(missing.reason).toBe("NotFound")
      }))

    it.scoped("once runs the side effect once and returns the stored result later", () =>
      Effect.gen(function*() {
        const l = yield* ledger()
        let runs = 0
        const reserve = Effect.sync(() => {
          runs++
          return { seat: "12A", at: new Date("2025-01-02T03:04:05.000Z") }
        })
        const Reservation = Schema.Struct({ seat: Schema.String, at: Schema.Date })
        const first = yield* l.once("reserve", reserve, { success: Reservation })
        const second = yield* l.once("reserve", reserve, { success: Reservation })
        expect(runs).toBe(1)
        expect(second).toEqual(first)
        // The Date survived the round trip through the store as a Date.
        expect(second.at).toBeInstanceOf(Date)
        // Tool keys are separate from request keys and per identity.
        expect(Option.isNone(yield* l.get({ key: "reserve", identity: IdempotencyLedger.anonymous }))).toBe(true)
        yield* l.once("reserve", reserve, { success: Reservation, identity: bob })
        expect(runs).toBe(2)
      }))

    it.scoped("a failure is not stored by default: seat reserved, payment failed, the retry only pays", () =>
      Effect.gen(function*() {
        const l = yield* ledger()
        let seats = 0
        let payments = 0
        let paymentFails = true
        const reserve = l.once("ctx/reserve", Effect.sync(() => ++seats), { success: Schema.Number })
        const pay = l.once(
          "ctx/pay",
          Effect.suspend(() => {
            payments++
            return paymentFails ? Effect.fail("declined" as const) : Effect.succeed("paid")
          }),
          { success: Schema.String }
        )
        const book = Effect.zip(reserve, pay)

        expect(yield* Effect.flip(book)).toBe("declined")
        paymentFails = false
        expect(yield* book).toEqual([1, "paid"])
        expect(yield* book).toEqual([1, "paid"])
        expect({ seats, payments }).toEqual({ seats: 1, payments: 2 })
      }))

    it.scoped("with a failure schema, a failure is stored and replayed", () =>
      Effect.gen(function*() {
        const l = yield* ledger()
        class Declined extends Schema.TaggedError<Declined>()("Declined", { code: Schema.String }) {}
        let runs = 0
        const pay = l.once(
          "pay",
          Effect.suspend(() => {
            runs++
            return Effect.fail(new Declined({ code: "insufficient-funds" }))
          }),
          { success: Schema.String, failure: Declined }
        )
        const first = yield* Effect.flip(pay)
        const second = yield* Effect.flip(pay)
        expect(runs).toBe(1)
        expect(second).toBeInstanceOf(Declined)
        expect(second).toEqual(first)
      }))

    it.scoped("what the store cannot hold is a typed InvalidResult, and never leaves a key held", () =>
      Effect.gen(function*() {
        const l = yield* ledger()
        // Request level: a result JSON cannot hold.
        const started = yield* begin(l, "bad-result")
        const lease = started._tag === "Started" ? started.lease : undefined
        const cyclic: Record<string, unknown> = {}
        cyclic["self"] = cyclic
        for (const result of [{ n: 1n }, cyclic]) {
          const refused = yield* Effect.flip(l.finish({ key: "bad-result", identity: ana, result, lease }))
          expect([refused.reason, refused.detail]).toEqual(["InvalidResult", "the result could not be written as JSON"])
        }
        // Tool level: a result that would not decode from JSON (NaN becomes null), run once.
        let runs = 0
        const measure = l.once("nan", Effect.sync(() => (runs++, Number.NaN)), {
          success: Schema.Number,
          waitTimeout: "1 second"
        })
        expect((yield* Effect.flip(measure)).reason).toBe("InvalidResult")
        expect((yield* Effect.flip(measure)).reason).toBe("Interrupted")
        expect(runs).toBe(1)
        // A failure the failure schema cannot encode: the next caller learns at once that the outcome is unknown.
        const pay = l.once("unencodable", Effect.fail(1.5), {
          success: Schema.String,
          failure: Schema.Int,
          waitTimeout: "1 second"
        })
        expect(yield* Effect.flip(pay)).toBe(1.5)
        const next = yield* Effect.flip(pay)
        expect(typeof next === "number" ? next : next.reason).toBe("Interrupted")
      }))

    it.scopedLive("25 concurrent calls with one key run the effect once and all get its result", () =>
      Effect.gen(function*() {
        const l = yield* ledger({ pollInterval: "20 millis" })
        let runs = 0
        const effect = Effect.gen(function*() {
          runs++
          yield* Effect.sleep("50 millis")
          return `ticket-${runs}`
        })
        const results = yield* Effect.all(
          Array.from({ length: 25 }, () => l.once("ticket", effect, { success: Schema.String })),
          { concurrency: "unbounded" }
        )
        expect(runs).toBe(1)
        expect(new Set(results)).toEqual(new Set(["ticket-1"]))
      }))

    it.scopedLive("a waiter gives up with a typed time-out", () =>
      Effect.gen(function*() {
        const l = yield* ledger({ pollInterval: "20 millis" })
        const release = yield* Deferred.make<void>()
        const holder = yield* Effect.fork(l.once("slow", Deferred.await(release), { success: Schema.Void }))
        yield* Effect.sleep("30 millis")
        const error = yield* Effect.flip(
          l.once("slow", Effect.void, { success: Schema.Void, waitTimeout: "100 millis" })
        )
        expect(error.reason).toBe("Timeout")
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(holder)
      }))

    it.scoped("a run that dies is never silently repeated; takeover is explicit", () =>
      Effect.gen(function*() {
        const l = yield* ledger()
        let runs = 0
        const charge = (ok: boolean) =>
          Effect.suspend(() => {
            runs++
            return ok ? Effect.succeed("charged") : Effect.die(new Error("crashed mid-charge"))
          })
        const died = yield* Effect.exit(l.once("charge", charge(false), { success: Schema.String }))
        expect(Exit.isFailure(died) && !Exit.isInterrupted(died)).toBe(true)

        const refused = yield* Effect.flip(l.once("charge", charge(true), { success: Schema.String }))
        expect(refused).toBeInstanceOf(IdempotencyError)
        expect(refused.reason).toBe("Interrupted")
        expect(runs).toBe(1)

        expect(yield* l.once("charge", charge(true), { success: Schema.String, takeover: true })).toBe("charged")
        expect(yield* l.once("charge", charge(true), { success: Schema.String })).toBe("charged")
        expect(runs).toBe(2)
      }))

    it.scopedLive("an interrupted run is reported as Interrupted to the next caller", () =>
      Effect.gen(function*() {
        const l = yield* ledger()
        const started = yield* Deferred.make<void>()
        const fiber = yield* Effect.fork(
          l.once("send-email", Effect.zipRight(Deferred.succeed(started, undefined), Effect.never), {
            success: Schema.Void
          })
        )
        yield* Deferred.await(started)
        yield* Fiber.interrupt(fiber)
        const error = yield* Effect.flip(l.once("send-email", Effect.void, { success: Schema.Void }))
        expect(error.reason).toBe("Interrupted")
      }))

    if (backend.name !== "memory") {
      it.scoped("migrations can run twice on one store", () =>
        Effect.gen(function*() {
          const location = backend.fresh()
          const a = yield* build(backend.layer(location))
          yield* begin(a, "k1", ana, "f1", "task-1")
          const b = yield* build(backend.layer(location))
          expect(yield* begin(b, "k1", ana, "f1", "task-2")).toMatchObject({ _tag: "Running", taskId: "task-1" })
        }))

      it.scopedLive("two replicas racing first requests: exactly one starts each key", () =>
        Effect.gen(function*() {
          const location = backend.fresh()
          // Built concurrently too: both run the migration at the same time.
          const [a, b] = yield* Effect.all(
            [build(backend.layer(location, { owner: "a" })), build(backend.layer(location, { owner: "b" }))],
            { concurrency: 2 }
          )
          expect([a.owner, b.owner]).toEqual(["a", "b"])
          const keys = Array.from({ length: 20 }, (_, i) => `race-${i}`)
          const outcomes = yield* Effect.forEach(
            keys,
            (key) =>
              Effect.all([begin(a, key, ana, "f", `${key}-a`), begin(b, key, ana, "f", `${key}-b`)], {
                concurrency: 2
              }),
            { concurrency: 4 }
          )
          for (const [x, y] of outcomes) {
            expect([x._tag, y._tag].sort()).toEqual(["Running", "Started"])
            expect(x.taskId).toBe(y.taskId)
          }
        }))

      it.scopedLive("once across two replicas runs the effect once", () =>
        Effect.gen(function*() {
          const location = backend.fresh()
          const a = yield* build(backend.layer(location, { pollInterval: "10 millis" }))
          const b = yield* build(backend.layer(location, { pollInterval: "10 millis" }))
          let runs = 0
          const effect = Effect.sync(() => ++runs).pipe(Effect.delay("30 millis"))
          const results = yield* Effect.all(
            Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? a : b).once("k", effect, { success: Schema.Number })),
            { concurrency: "unbounded" }
          )
          expect(runs).toBe(1)
          expect(results).toEqual(Array.from({ length: 12 }, () => 1))
        }))

      it.scopedLive("a replica killed mid-side-effect: after its lease expires the next caller gets Interrupted", () =>
        Effect.gen(function*() {
          const location = backend.fresh()
          const target = backend.name === "pg" ? databaseUrl() : location
          const table = backend.name === "pg" ? location : "effect_a2a_idempotency"
          const l = yield* build(backend.layer(location, { pollInterval: "20 millis" }))
          yield* killedMidRun(backend.name, target, table, "wire-transfer", 400)
          // The lease may not have run out yet: this caller waits for it, then learns the outcome is unknown.
          const error = yield* Effect.flip(
            l.once("wire-transfer", Effect.succeed("sent twice!"), {
              success: Schema.String,
              waitTimeout: "10 seconds"
            })
          )
          expect(error.reason).toBe("Interrupted")
          const takenOver = yield* l.once("wire-transfer", Effect.succeed("checked, sent"), {
            success: Schema.String,
            takeover: true
          })
          expect(takenOver).toBe("checked, sent")
        }), 60_000)
    }
  })

/** Starts a child process that begins a side effect under `once` and SIGKILLs it once it has. */
const killedMidRun = (backend: string, target: string, table: string, key: string, leaseMs: number) =>
  Effect.async<void, Error>((resume) => {
    const child = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        path.join(import.meta.dirname, "fixtures", "ledgerCrashChild.ts"),
        backend,
        target,
        table,
        key,
        String(leaseMs)
      ],
      { stdio: ["ignore", "pipe", "pipe"] }
    )
    let stderr = ""
    let done = false
    const finish = (result: Effect.Effect<void, Error>) => {
      if (done) return
      done = true
      clearTimeout(timer)
      resume(result)
    }
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      finish(Effect.fail(new Error(`child did not start in time: ${stderr}`)))
    }, 30_000)
    child.stderr.on("data", (chunk) => (stderr += String(chunk)))
    child.stdout.on("data", (chunk) => {
      if (String(chunk).includes("started")) child.kill("SIGKILL")
    })
    child.on(
      "exit",
      (_code, signal) =>
        finish(signal === "SIGKILL" ? Effect.void : Effect.fail(new Error(`child exited on its own: ${stderr}`)))
    )
    return Effect.sync(() => child.kill("SIGKILL"))
  })

function assertTag<T extends IdempotencyLedger.BeginOutcome["_tag"]>(
  outcome: IdempotencyLedger.BeginOutcome,
  expected: T
): asserts outcome is Extract<IdempotencyLedger.BeginOutcome, { readonly _tag: T }> {
  expect(outcome._tag).toBe(expected)
}

for (const backend of backends) ledgerSuite(backend)

describe("IdempotencyLedger errors", () => {
  it("encode and decode through their schemas", () => {
    const error = new IdempotencyError({ reason: "Timeout", key: "k", detail: "waited 10 ms" })
    expect(error.message).toBe("idempotency key k: Timeout (waited 10 ms)")
    const roundTrip = Schema.decodeUnknownSync(IdempotencyError)(Schema.encodeSync(IdempotencyError)(error))
    expect(roundTrip).toBeInstanceOf(IdempotencyError)
    expect(roundTrip.reason).toBe("Timeout")
    const decoded = Schema.decodeUnknownEither(IdempotencyError)({
      _tag: "IdempotencyError",
      reason: "Nope",
      detail: ""
    })
    expect(Either.isLeft(decoded)).toBe(true)
  })

  it.scoped("layerSqlite fails typed when its file cannot be opened: a missing directory, a file that is not a database", () =>
    Effect.gen(function*() {
      const notADatabase = path.join(sqliteDirectory(), `${unique("garbage")}.db`)
      fs.writeFileSync(notADatabase, "this is not a database, it is plain text that is long enough to be read")
      const cases = [
        [path.join(sqliteDirectory(), "no-such-dir", "ledger.db"), "the directory does not exist"],
        [notADatabase, "file is not a database"]
      ] as const
      for (const [filename, why] of cases) {
        const error = yield* Effect.flip(build(IdempotencyLedger.layerSqlite({ filename })))
        expect(error).toBeInstanceOf(IdempotencyError)
        expect((error as IdempotencyLedger.IdempotencyError).reason).toBe("Unavailable")
        // The driver's own words follow, rather than hide in the cause.
        expect((error as IdempotencyLedger.IdempotencyError).detail).toMatch(
          `could not open the SQLite ledger at ${filename}: `
        )
        expect((error as IdempotencyLedger.IdempotencyError).detail).toContain(why)
      }
    }))

  it.scoped("a stored key holding NUL (kept by a SQLite ledger before keys were checked) is still expired by the sweep", () =>
    Effect.gen(function*() {
      const filename = path.join(sqliteDirectory(), `${unique("legacy")}.db`)
      const l = yield* build(IdempotencyLedger.layerSqlite({ filename, lease: "1 second" }))
      yield* begin(l, "legacy")
      yield* begin(l, "other")
      yield* Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql`UPDATE effect_a2a_idempotency SET idem_key = ${"leg\u0000acy"} WHERE idem_key = ${"legacy"}`
      ).pipe(
        Effect.provide(SqliteClient.layer({ filename }))
      )
      yield* TestClock.adjust("2 seconds")
      const expired = yield* l.expireLeases({ onExpired: () => Effect.succeed("interrupted") })
      expect(expired.map((e) => e.entry.key).sort()).toEqual(["leg\u0000acy", "other"])
    }))

  it.effect("the accessor `Idempotency.once` reads the ledger from the context, data-first and data-last", () =>
    Effect.gen(function*() {
      let runs = 0
      const effect = Effect.sync(() => ++runs)
      const first = yield* Idempotency.once("k", effect, { success: Schema.Number })
      const second = yield* effect.pipe(Idempotency.once("k", { success: Schema.Number }))
      expect([first, second, runs]).toEqual([1, 1, 1])
    }).pipe(Effect.provide(IdempotencyLedger.layerMemory())))
})
