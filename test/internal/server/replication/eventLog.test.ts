/**
 * The event log's contract, held by the in-memory log and by the PostgreSQL
 * one (on the database of the global setup or DATABASE_URL, each test on
 * tasks of its own), and what only PostgreSQL has to survive: a lost LISTEN
 * connection, lost notifications, a restart of the database.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Exit, FastCheck, Fiber, Option, Scope, Stream } from "effect"
import { randomBytes, randomUUID } from "node:crypto"
import { createRequire } from "node:module"
import * as internalEventLog from "../../../../src/internal/server/replication/eventLog.js"
import * as internalMemoryEventLog from "../../../../src/internal/server/replication/memoryEventLog.js"
import * as internalPgEventLog from "../../../../src/internal/server/replication/pgEventLog.js"
import { databaseUrl } from "../../../fixtures/databaseUrl.js"
import { startPostgres } from "../../../fixtures/postgres.js"
import { captureLogs, eventually } from "../../../fixtures/serverAgents.js"

type EventLog = internalEventLog.EventLog

/** Two instances on one log: two replicas on one database, or one process's log twice. */
type Pair = (options?: internalEventLog.Options) => Effect.Effect<
  readonly [EventLog, EventLog],
  internalEventLog.EventLogError,
  Scope.Scope
>

const eventOf = (n: number) => ({ kind: "status-update", n, text: `event ${n}` })
const entriesOf = (events: ReadonlyArray<unknown>, from = 1) => events.map((event, i) => ({ seq: from + i, event }))

/**
 * A follower of the task from `after`, collecting in the background until the
 * scope closes: what it has received so far, and whether it failed.
 */
const collect = (log: EventLog, taskId: string, after: number) =>
  Effect.gen(function*() {
    const received: Array<internalEventLog.Entry> = []
    const fiber = yield* Effect.forkScoped(
      Stream.runForEach(log.follow(taskId, after), (entry) => Effect.sync(() => void received.push(entry)))
    )
    return { received, fiber }
  })

/** Waits (bounded by `within`) until `received` holds `count` entries, then a little more, for a repeat to show. */
const settled = (received: ReadonlyArray<unknown>, count: number, within: Duration.DurationInput = "10 seconds") =>
  eventually(Effect.sync(() => received.length), (n) => n >= count, Math.ceil(Duration.toMillis(within) / 10)).pipe(
    Effect.zipRight(Effect.sleep("150 millis")),
    Effect.as(received)
  )

/** `settled` for many followers at once: `counts[i]` entries for the i-th. */
const allSettled = <A>(received: ReadonlyArray<ReadonlyArray<A>>, counts: ReadonlyArray<number>) =>
  eventually(Effect.sync(() => received.every((r, i) => r.length >= counts[i]!)), (done) => done, 2_000).pipe(
    Effect.zipRight(Effect.sleep("150 millis")),
    Effect.as(received)
  )

const contract = (name: string, pair: Pair) =>
  describe(name, () => {
    it.live("a follower on another instance sees, from 0, the entries appended on the first in order; from k, exactly those after k", () =>
      Effect.gen(function*() {
        const [a, b] = yield* pair()
        const taskId = randomUUID()
        const events = Array.from({ length: 30 }, (_, i) => eventOf(i + 1))
        const fromZero = yield* collect(b, taskId, 0)
        events.slice(0, 12).forEach((event, i) => a.append(taskId, i + 1, event))
        yield* a.flush
        const fromTwelve = yield* collect(b, taskId, 12)
        events.slice(12).forEach((event, i) => a.append(taskId, i + 13, event))
        yield* a.flush
        expect(yield* settled(fromZero.received, 30)).toEqual(entriesOf(events))
        expect(yield* settled(fromTwelve.received, 18)).toEqual(entriesOf(events.slice(12), 13))
        const fromSeven = yield* collect(b, taskId, 7)
        expect(yield* settled(fromSeven.received, 23)).toEqual(entriesOf(events.slice(7), 8))
        expect(yield* b.read(taskId, 25)).toEqual(entriesOf(events.slice(25), 26))
        expect(yield* b.last(taskId)).toBe(30)
        expect(yield* b.last(randomUUID())).toBe(0)
      }).pipe(Effect.scoped))

    it.live.prop(
      "N appends, a read from a random cursor then a follower from where the read ended: joined, the appended sequence after the cursor, once each",
      {
        events: FastCheck.array(
          FastCheck.record({
            kind: FastCheck.constantFrom("status", "artifact"),
            text: FastCheck.string({ unit: "binary" })
          }),
          { minLength: 1, maxLength: 40 }
        ),
        cursor: FastCheck.nat({ max: 45 }),
        before: FastCheck.nat({ max: 45 })
      },
      ({ before, cursor, events }) =>
        Effect.gen(function*() {
          const [a, b] = yield* pair()
          const taskId = randomUUID()
          // Some appended (and written) before the read, the rest while the follower runs.
          const split = Math.min(before, events.length)
          events.slice(0, split).forEach((event, i) => a.append(taskId, i + 1, event))
          yield* a.flush
          const read = yield* b.read(taskId, cursor)
          const follower = yield* collect(b, taskId, read.length > 0 ? read[read.length - 1]!.seq : cursor)
          events.slice(split).forEach((event, i) => a.append(taskId, split + i + 1, event))
          yield* a.flush
          const expected = entriesOf(events).slice(cursor)
          const followed = yield* settled(follower.received, expected.length - read.length)
          expect([...read, ...followed]).toEqual(expected)
        }).pipe(Effect.scoped),
      { timeout: 60_000, fastCheck: { numRuns: 15 } }
    )

    it.live("a seq another writer took is a Conflict, logged as an error; the entry written first stays", () => {
      const logs = captureLogs()
      return Effect.gen(function*() {
        const [a, b] = yield* pair()
        const taskId = randomUUID()
        a.append(taskId, 1, eventOf(1))
        yield* a.flush
        b.append(taskId, 1, { other: true })
        yield* b.flush
        expect(yield* a.read(taskId, 0)).toEqual(entriesOf([eventOf(1)]))
        expect(logs.lines.filter((line) => line.level === "ERROR" && line.message.includes("already taken")))
          .toMatchObject([
            { annotations: { taskId, seq: 1 } }
          ])
      }).pipe(Effect.scoped, Effect.provide(logs.layer))
    })

    it.live(
      "50 followers of one task on one instance, from cursors spread over 1,500 entries (some behind what its reader holds), one event of 20 KB: each gets every entry after its cursor once, in order",
      () =>
        Effect.gen(function*() {
          const [a, b] = yield* pair()
          const taskId = randomUUID()
          const events = Array.from(
            { length: 1_500 },
            (_, i) => i === 1_200 ? { ...eventOf(i + 1), big: "x".repeat(20_000) } : eventOf(i + 1)
          )
          events.slice(0, 1_100).forEach((event, i) => a.append(taskId, i + 1, event))
          yield* a.flush
          const cursors = Array.from({ length: 50 }, (_, i) => (i * 97) % 1_101)
          const followers = yield* Effect.forEach(cursors, (cursor) => collect(b, taskId, cursor))
          events.slice(1_100).forEach((event, i) => a.append(taskId, 1_101 + i, event))
          yield* a.flush
          const received = yield* allSettled(followers.map((f) => f.received), cursors.map((cursor) => 1_500 - cursor))
          received.forEach((entries, i) =>
            expect(entries).toEqual(entriesOf(events.slice(cursors[i]!), cursors[i]! + 1))
          )
        }).pipe(Effect.scoped),
      60_000
    )

    it.live("a finished task's entries go once retention has passed; an unfinished task's stay", () =>
      Effect.gen(function*() {
        const [a, b] = yield* pair({ retention: "1 second" })
        const finished = randomUUID()
        const running = randomUUID()
        for (const taskId of [finished, running]) [1, 2, 3].forEach((n) => a.append(taskId, n, eventOf(n)))
        a.finish(finished)
        yield* a.flush
        expect(yield* b.read(finished, 0)).toHaveLength(3)
        yield* eventually(Effect.orDie(b.read(finished, 0)), (entries) => entries.length === 0, 500)
        expect(yield* b.last(finished)).toBe(0)
        expect(yield* b.read(running, 0)).toEqual(entriesOf([1, 2, 3].map(eventOf)))
      }).pipe(Effect.scoped))
  })

contract(
  "the in-memory event log",
  (options) => Effect.map(internalMemoryEventLog.make(options), (log) => [log, log] as const)
)

const pgPair = (url: () => string, extra: Partial<internalPgEventLog.Options> = {}): Pair => (options) =>
  Effect.all([
    internalPgEventLog.makePg({ url: url(), poolSize: 2, ...options, ...extra }),
    internalPgEventLog.makePg({ url: url(), poolSize: 2, ...options, ...extra })
  ], { concurrency: 2 })

contract("the PostgreSQL event log", pgPair(databaseUrl))

/** Runs one statement on its own connection. */
const execute = (url: string, text: string) =>
  Effect.promise(async () => {
    const pg = createRequire(import.meta.url)("pg")
    const client = new (pg.default ?? pg).Client({ connectionString: url })
    await client.connect()
    try {
      return (await client.query(text)).rows as Array<Record<string, unknown>>
    } finally {
      await client.end()
    }
  })

describe("the followers of one process", () => {
  it.live("share one reader per task: 100 followers, 60 entries appended one at a time, one read per wake-up for them all; offered rows are not read at all", () =>
    Effect.gen(function*() {
      const rows: Array<internalEventLog.Row> = []
      let reads = 0
      const wakeups = internalEventLog.makeWakeups()
      const tails = yield* internalEventLog.makeTails({
        read: (_taskId, after, limit) =>
          Effect.sync(() => {
            reads++
            return rows.filter((row) => row.seq > after).slice(0, limit)
          }),
        wakeups,
        unavailableAfter: Duration.seconds(5),
        unreachableSince: () => undefined
      })
      const follow = (after: number) =>
        Effect.gen(function*() {
          const received: Array<internalEventLog.Entry> = []
          yield* Effect.forkScoped(
            Stream.runForEach(tails.follow("t", after), (entry) => Effect.sync(() => void received.push(entry)))
          )
          return received
        })
      const followers = yield* Effect.forEach(Array.from({ length: 100 }), () => follow(0))
      yield* Effect.sleep("50 millis")
      const append = (seq: number, offer: boolean) =>
        Effect.gen(function*() {
          const row = { seq, text: JSON.stringify(eventOf(seq)) }
          rows.push(row)
          if (!offer || !tails.offer("t", row)) wakeups.signal("t")
          yield* Effect.sleep("2 millis")
        })
      for (let seq = 1; seq <= 30; seq++) yield* append(seq, false)
      const readByWakeups = reads
      for (let seq = 31; seq <= 60; seq++) yield* append(seq, true)
      yield* allSettled(followers, followers.map(() => 60))
      followers.forEach((received) =>
        expect(received).toEqual(entriesOf(Array.from({ length: 60 }, (_, i) => eventOf(i + 1))))
      )
      // Its first read, then one per wake-up: a read that found rows is not followed by one that finds none.
      expect(readByWakeups).toBeLessThanOrEqual(30 + 2)
      expect(reads).toBe(readByWakeups)
      // A row past the next one is refused: the ones between are unknown here.
      expect(tails.offer("t", { seq: 62, text: "{}" })).toBe(false)
    }).pipe(Effect.scoped))
})

describe("a follower's iterator", () => {
  const tailsOf = (rows: Array<internalEventLog.Row>) =>
    internalEventLog.makeTails({
      read: (_taskId, after, limit) => Effect.sync(() => rows.filter((row) => row.seq > after).slice(0, limit)),
      wakeups: internalEventLog.makeWakeups(),
      unavailableAfter: Duration.seconds(5),
      unreachableSince: () => undefined
    })

  it.live("let go while it waits: its pending next() ends, and the task's reader goes with its last follower", () =>
    Effect.gen(function*() {
      const tails = yield* tailsOf([])
      const iterator = tails.iterate("t", 0)
      const pending = iterator.next()
      yield* Effect.sleep("20 millis")
      // Followed: a row past the next one is refused.
      expect(tails.offer("t", { seq: 2, text: "{}" })).toBe(false)
      yield* Effect.promise(() => iterator.return!())
      expect(yield* Effect.promise(() => pending)).toEqual({ done: true, value: undefined })
      // Followed no more: nothing to refuse.
      expect(tails.offer("t", { seq: 2, text: "{}" })).toBe(true)
    }).pipe(Effect.scoped))

  it.live("a row that is not JSON: next() rejects with EventLogError Decode, naming the entry", () =>
    Effect.gen(function*() {
      const tails = yield* tailsOf([{ seq: 1, text: "not json" }])
      const error = yield* Effect.promise(() => tails.iterate("t", 0).next().then(String, (error: unknown) => error))
      expect(error).toMatchObject({
        _tag: "EventLogError",
        reason: "Decode",
        message: "Entry 1 of the event log is not JSON"
      })
    }).pipe(Effect.scoped))
})

describe("the PostgreSQL event log, when the database fails it", () => {
  it.live("events appended together are written together: one whose seq another writer took is a Conflict, the others are written", () => {
    const logs = captureLogs()
    return Effect.gen(function*() {
      const [a, b] = yield* pgPair(databaseUrl)()
      const taskId = randomUUID()
      b.append(taskId, 3, { other: true })
      yield* b.flush
      const events = Array.from({ length: 6 }, (_, i) => eventOf(i + 1))
      events.forEach((event, i) => a.append(taskId, i + 1, event))
      yield* a.flush
      expect(yield* b.read(taskId, 0)).toEqual([
        ...entriesOf(events.slice(0, 2)),
        { seq: 3, event: { other: true } },
        ...entriesOf(events.slice(3), 4)
      ])
      expect(logs.lines.filter((line) => line.level === "ERROR")).toMatchObject([{ annotations: { taskId, seq: 3 } }])
    }).pipe(Effect.scoped, Effect.provide(logs.layer))
  })

  it.live("three instances starting together on a database without its tables all start, on one log", () =>
    Effect.gen(function*() {
      const database = `effect_a2a_events_${randomUUID().replaceAll("-", "")}`
      yield* Effect.acquireRelease(
        execute(databaseUrl(), `create database ${database}`),
        () => execute(databaseUrl(), `drop database ${database} with (force)`)
      )
      const url = new URL(databaseUrl())
      url.pathname = `/${database}`
      const logs = yield* Effect.all(
        Array.from({ length: 3 }, () => internalPgEventLog.makePg({ url: url.href, poolSize: 1 })),
        { concurrency: 3 }
      )
      const taskId = randomUUID()
      logs.forEach((log, i) => log.append(taskId, i + 1, eventOf(i + 1)))
      yield* Effect.forEach(logs, (log) => log.flush)
      for (const log of logs) expect(yield* log.read(taskId, 0)).toEqual(entriesOf([1, 2, 3].map(eventOf)))
    }).pipe(Effect.scoped))

  it.live("its LISTEN connection killed: the follower keeps receiving, what was appended meanwhile too, and the log says it reconnected", () => {
    const logs = captureLogs()
    return Effect.gen(function*() {
      const applicationName = `effect-a2a-event-log-${randomUUID().slice(0, 8)}`
      const writer = yield* internalPgEventLog.makePg({ url: databaseUrl(), poolSize: 2 })
      // A poll too slow to deliver anything within the test: what arrives came by notifications.
      const reader = yield* internalPgEventLog.makePg({
        url: databaseUrl(),
        poolSize: 2,
        applicationName,
        pollInterval: "1 hour"
      })
      const taskId = randomUUID()
      const events = Array.from({ length: 15 }, (_, i) => eventOf(i + 1))
      const follower = yield* collect(reader, taskId, 0)
      events.slice(0, 5).forEach((event, i) => writer.append(taskId, i + 1, event))
      yield* settled(follower.received, 5)
      const killed = yield* execute(
        databaseUrl(),
        `select count(pg_terminate_backend(pid))::int as n from pg_stat_activity where application_name = '${applicationName}'`
      )
      expect(killed).toEqual([{ n: 1 }])
      // Written while the reader is down (it pauses before it reconnects): their notifications are lost.
      yield* eventually(
        Effect.sync(() => logs.lines.some((line) => line.message.includes("lost its LISTEN connection"))),
        (lost) => lost,
        500
      )
      events.slice(5, 10).forEach((event, i) => writer.append(taskId, i + 6, event))
      yield* writer.flush
      yield* eventually(
        Effect.sync(() => logs.lines.some((line) => line.message.includes("LISTEN connection is back"))),
        (back) => back,
        500
      )
      // Read again once the reader is back, without a notification to wake it.
      expect(yield* settled(follower.received, 10, "3 seconds")).toEqual(entriesOf(events.slice(0, 10)))
      events.slice(10).forEach((event, i) => writer.append(taskId, i + 11, event))
      expect(yield* settled(follower.received, 15, "3 seconds")).toEqual(entriesOf(events))
      expect(logs.lines.filter((line) => line.message.includes("lost its LISTEN connection"))).toHaveLength(1)
      const listening = yield* execute(
        databaseUrl(),
        `select count(*)::int as n from pg_stat_activity where application_name = '${applicationName}'`
      )
      expect(listening).toEqual([{ n: 1 }])
    }).pipe(Effect.scoped, Effect.provide(logs.layer))
  })

  it.live("without notifications (no LISTEN connection), the poll delivers every entry", () =>
    Effect.gen(function*() {
      const [writer, reader] = yield* pgPair(databaseUrl, { listen: false, pollInterval: "100 millis" })()
      const taskId = randomUUID()
      const events = Array.from({ length: 20 }, (_, i) => eventOf(i + 1))
      const follower = yield* collect(reader, taskId, 0)
      for (const [i, event] of events.entries()) {
        writer.append(taskId, i + 1, event)
        if (i % 5 === 4) yield* Effect.sleep("120 millis")
      }
      expect(yield* settled(follower.received, 20, "3 seconds")).toEqual(entriesOf(events))
    }).pipe(Effect.scoped))

  it.live(
    "PostgreSQL restarted mid-stream: entries appended before, during (queued, retried) and after all reach the follower once, in order",
    () => {
      const logs = captureLogs()
      return Effect.gen(function*() {
        const postgres = yield* Effect.acquireRelease(
          Effect.promise(() => startPostgres({ restartable: true })),
          (postgres) => Effect.promise(() => postgres.stop())
        )
        const url = () => postgres.url
        const [writer, reader] = yield* pgPair(url)()
        // Another follower, that gives up on a log unreachable for half a second.
        const impatient = yield* internalPgEventLog.makePg({
          url: url(),
          poolSize: 1,
          unavailableAfter: "500 millis",
          pollInterval: "100 millis"
        })
        const taskId = randomUUID()
        const events = Array.from({ length: 30 }, (_, i) => eventOf(i + 1))
        const follower = yield* collect(reader, taskId, 0)
        const gaveUp = yield* collect(impatient, taskId, 0)
        events.slice(0, 10).forEach((event, i) => writer.append(taskId, i + 1, event))
        yield* settled(follower.received, 10)
        yield* Effect.promise(() =>
          postgres.restart(async () => {
            events.slice(10, 20).forEach((event, i) => writer.append(taskId, i + 11, event))
            await new Promise((resolve) => setTimeout(resolve, 1500))
          })
        )
        events.slice(20).forEach((event, i) => writer.append(taskId, i + 21, event))
        yield* writer.flush.pipe(Effect.timeoutFail({ duration: "20 seconds", onTimeout: () => new Error("flush") }))
        expect(yield* settled(follower.received, 30, "15 seconds")).toEqual(entriesOf(events))
        expect(yield* reader.read(taskId, 0)).toEqual(entriesOf(events))
        const failed = yield* Fiber.join(gaveUp.fiber).pipe(Effect.flip, Effect.timeout("5 seconds"))
        expect(failed).toMatchObject({ _tag: "EventLogError", reason: "Unavailable" })
        const lines = logs.lines.map((line) => line.message)
        expect(lines.some((line) => line.includes("lost its LISTEN connection"))).toBe(true)
        // The poll may have delivered the rest before the reconnection, which waits out its backoff.
        yield* eventually(
          Effect.sync(() => logs.lines.some((line) => line.message.includes("LISTEN connection is back"))),
          (back) => back,
          1000
        )
        expect(lines.some((line) => line.includes("Could not write an event to the event log; retrying"))).toBe(true)
        expect(logs.lines.map((line) => line.message).join("\n")).not.toContain(
          postgres.url.split(":")[2]!.split("@")[0]!
        )
      }).pipe(Effect.scoped, Effect.provide(logs.layer))
    },
    120_000
  )

  it.live(
    "the NOTIFY queue held full by a session that listens, left in a transaction: every entry is written all the same and reaches a follower on another instance (by the poll), once, in order; the log says why",
    () => {
      const logs = captureLogs()
      return Effect.gen(function*() {
        // The smallest queue PostgreSQL allows (64 pages of 8 KB), that the entries below fill several times over.
        const postgres = yield* Effect.acquireRelease(
          Effect.promise(() => startPostgres({ settings: ["max_notify_queue_pages=64"] })),
          (postgres) => Effect.promise(() => postgres.stop())
        )
        const channel = `full_${randomUUID().slice(0, 8)}`
        yield* Effect.acquireRelease(
          Effect.promise(async () => {
            const pg = createRequire(import.meta.url)("pg")
            const client = new (pg.default ?? pg).Client({ connectionString: postgres.url })
            await client.connect()
            await client.query(`listen ${channel}`)
            await client.query("begin")
            await client.query("select 1")
            return client
          }),
          (client) => Effect.promise(() => client.end().catch(() => undefined))
        )
        const [writer, reader] = yield* pgPair(() => postgres.url, { channel, pollInterval: "200 millis" })()
        const taskId = randomUUID()
        const follower = yield* collect(reader, taskId, 0)
        yield* Effect.sleep("100 millis")
        const events = Array.from(
          { length: 1_500 },
          (_, i) => ({ ...eventOf(i + 1), text: `${i + 1} ${"x".repeat(1_000)}` })
        )
        events.forEach((event, i) => writer.append(taskId, i + 1, event))
        yield* writer.flush.pipe(
          Effect.timeoutFail({ duration: "30 seconds", onTimeout: () => new Error("the appends never ended") })
        )
        expect(yield* settled(follower.received, events.length, "15 seconds")).toEqual(entriesOf(events))
        expect(logs.lines.filter((line) => line.message.includes("NOTIFY queue is full"))).toHaveLength(1)
      }).pipe(Effect.scoped, Effect.provide(logs.layer))
    },
    120_000
  )
})

describe("the shared reader, under adversarial timing", () => {
  /** A hand-made source over `rows`: `block(after)` holds a read forever; `fail` refuses every read. */
  const sourceOf = (rows: Array<internalEventLog.Row>, unavailableAfter: Duration.DurationInput = "5 seconds") => {
    const state = {
      block: (_after: number) => false,
      fail: false,
      inFlight: 0,
      wakeups: internalEventLog.makeWakeups()
    }
    const source: internalEventLog.Source = {
      read: (_taskId, after, limit) =>
        Effect.suspend(() => {
          if (state.fail) {
            return Effect.fail(new internalEventLog.EventLogError({ reason: "Unavailable", message: "refused" }))
          }
          if (state.block(after)) {
            return Effect.acquireUseRelease(
              Effect.sync(() => void state.inFlight++),
              () => Effect.never,
              () => Effect.sync(() => void state.inFlight--)
            )
          }
          return Effect.succeed(rows.filter((row) => row.seq > after).slice(0, limit))
        }),
      wakeups: state.wakeups,
      unavailableAfter: Duration.decode(unavailableAfter),
      unreachableSince: () => undefined
    }
    return { state, source }
  }
  const rowOf = (seq: number): internalEventLog.Row => ({ seq, text: JSON.stringify(eventOf(seq)) })
  const within = <A>(promise: Promise<A>, millis = 1_000) =>
    Effect.promise(() => promise).pipe(Effect.timeout(Duration.millis(millis)), Effect.option)

  it.live("a follower from 0 that joins a reader opened past the log's last gets every entry as it is written", () =>
    Effect.gen(function*() {
      const log = yield* internalMemoryEventLog.make()
      const ahead = log.iterate("t", 10)
      const pendingAhead = ahead.next()
      const from0 = log.iterate("t", 0)
      const received: Array<internalEventLog.Entry> = []
      const drain = Effect.promise(async () => {
        for (let n = 0; n < 11; n++) {
          const result = await from0.next()
          if (result.done) return
          received.push(result.value)
        }
      })
      const fiber = yield* Effect.fork(drain)
      yield* Effect.sleep("20 millis")
      for (let seq = 1; seq <= 11; seq++) {
        log.append("t", seq, eventOf(seq))
        yield* Effect.sleep("5 millis")
      }
      yield* Fiber.join(fiber).pipe(Effect.timeout("2 seconds"), Effect.option)
      expect(received).toEqual(entriesOf(Array.from({ length: 11 }, (_, i) => eventOf(i + 1))))
      expect(yield* within(pendingAhead)).toEqual(Option.some({ done: false, value: { seq: 11, event: eventOf(11) } }))
      yield* Effect.promise(async () => {
        await ahead.return!()
        await from0.return!()
      })
    }).pipe(Effect.scoped))

  it.live("a row written and signalled while the reader's read is in flight, which returns a short page taken before it: the reader reads again, and the follower gets it", () =>
    Effect.gen(function*() {
      const rows = [rowOf(1)]
      const wakeups = internalEventLog.makeWakeups()
      let gate: Deferred.Deferred<void> | undefined
      let reads = 0
      const tails = yield* internalEventLog.makeTails({
        // What the log held when the read began, answered once the gate opens.
        read: (_taskId, after, limit) =>
          Effect.suspend(() => {
            reads++
            const snapshot = rows.filter((row) => row.seq > after).slice(0, limit)
            return gate === undefined ? Effect.succeed(snapshot) : Effect.as(Deferred.await(gate), snapshot)
          }),
        wakeups,
        unavailableAfter: Duration.seconds(5),
        unreachableSince: () => undefined
      })
      const follower = tails.iterate("t", 0)
      expect(yield* within(follower.next())).toEqual(Option.some({ done: false, value: { seq: 1, event: eventOf(1) } }))
      gate = yield* Deferred.make<void>()
      rows.push(rowOf(2))
      wakeups.signal("t")
      yield* eventually(Effect.sync(() => reads), (n) => n === 2, 100)
      rows.push(rowOf(3))
      wakeups.signal("t")
      const opened = gate
      gate = undefined
      yield* Deferred.succeed(opened, undefined)
      expect(yield* within(follower.next())).toEqual(Option.some({ done: false, value: { seq: 2, event: eventOf(2) } }))
      expect(yield* within(follower.next())).toEqual(Option.some({ done: false, value: { seq: 3, event: eventOf(3) } }))
      yield* Effect.promise(() => follower.return!())
    }).pipe(Effect.scoped))

  it.live("a follower let go while its own read (behind the reader) is in flight: its pending next() ends at once and the read is interrupted", () =>
    Effect.gen(function*() {
      const rows = Array.from({ length: 10 }, (_, i) => rowOf(i + 1))
      const { source, state } = sourceOf(rows)
      state.block = (after) => after < 5
      const tails = yield* internalEventLog.makeTails(source)
      const ahead = tails.iterate("t", 5)
      expect(yield* within(ahead.next())).toEqual(Option.some({ done: false, value: { seq: 6, event: eventOf(6) } }))
      const behind = tails.iterate("t", 0)
      const pending = behind.next()
      yield* Effect.sleep("20 millis")
      expect(state.inFlight).toBe(1)
      yield* Effect.promise(() => behind.return!())
      expect(yield* within(pending.catch((error: unknown) => ({ rejected: error })))).toEqual(
        Option.some({ done: true, value: undefined })
      )
      yield* eventually(Effect.sync(() => state.inFlight), (n) => n === 0, 100)
      yield* Effect.promise(() => ahead.return!())
    }).pipe(Effect.scoped))

  it.live("the log closed while a follower waits: its pending next() rejects with Unavailable rather than wait forever", () =>
    Effect.gen(function*() {
      const { source } = sourceOf([])
      const scope = yield* Scope.make()
      const tails = yield* internalEventLog.makeTails(source).pipe(Scope.extend(scope))
      const iterator = tails.iterate("t", 0)
      const pending = iterator.next().then(() => "resolved", (error: unknown) => error)
      yield* Effect.sleep("20 millis")
      yield* Scope.close(scope, Exit.void)
      const settledWith = yield* within(pending)
      expect(Option.getOrUndefined(settledWith)).toMatchObject({ _tag: "EventLogError", reason: "Unavailable" })
    }))

  it.live("a row that is not JSON after good ones: the follower gets those before it, then fails with Decode", () =>
    Effect.gen(function*() {
      const { source } = sourceOf([rowOf(1), rowOf(2), { seq: 3, text: "not json" }, rowOf(4)])
      const tails = yield* internalEventLog.makeTails(source)
      const iterator = tails.iterate("t", 0)
      expect(yield* within(iterator.next())).toEqual(Option.some({ done: false, value: { seq: 1, event: eventOf(1) } }))
      expect(yield* within(iterator.next())).toEqual(Option.some({ done: false, value: { seq: 2, event: eventOf(2) } }))
      const failed = yield* within(iterator.next().then(String, (error: unknown) => error))
      expect(Option.getOrUndefined(failed)).toMatchObject({
        _tag: "EventLogError",
        reason: "Decode",
        message: "Entry 3 of the event log is not JSON"
      })
      expect(yield* within(iterator.next())).toEqual(Option.some({ done: true, value: undefined }))
    }).pipe(Effect.scoped))

  it.live("a follower of a log already closed: its next() rejects with Unavailable rather than wait forever", () =>
    Effect.gen(function*() {
      const { source } = sourceOf([rowOf(1)])
      const scope = yield* Scope.make()
      const tails = yield* internalEventLog.makeTails(source).pipe(Scope.extend(scope))
      yield* Scope.close(scope, Exit.void)
      const iterator = tails.iterate("t", 1)
      const settledWith = yield* within(iterator.next().then(() => "resolved", (error: unknown) => error))
      expect(Option.getOrUndefined(settledWith)).toMatchObject({ _tag: "EventLogError", reason: "Unavailable" })
    }))

  it.live("its reader fails (Unavailable): each follower fails once, then ends; a new follower gets a fresh reader; no reader is left", () =>
    Effect.gen(function*() {
      const rows = [rowOf(1)]
      const { source, state } = sourceOf(rows, "150 millis")
      const tails = yield* internalEventLog.makeTails(source)
      const followers = [tails.iterate("t", 0), tails.iterate("t", 0)]
      for (const follower of followers) {
        expect(yield* within(follower.next())).toEqual(
          Option.some({ done: false, value: { seq: 1, event: eventOf(1) } })
        )
      }
      const pending = followers.map((follower) => follower.next().then(() => "resolved", (error: unknown) => error))
      yield* Effect.sleep("20 millis")
      state.fail = true
      rows.push(rowOf(2))
      state.wakeups.signal("t")
      for (const failed of pending) {
        expect(Option.getOrUndefined(yield* within(failed, 3_000))).toMatchObject({
          _tag: "EventLogError",
          reason: "Unavailable"
        })
      }
      for (const follower of followers) {
        expect(yield* within(follower.next())).toEqual(Option.some({ done: true, value: undefined }))
      }
      expect(state.wakeups.followed()).toEqual([])
      state.fail = false
      const fresh = tails.iterate("t", 0)
      expect(yield* within(fresh.next())).toEqual(Option.some({ done: false, value: { seq: 1, event: eventOf(1) } }))
      expect(yield* within(fresh.next())).toEqual(Option.some({ done: false, value: { seq: 2, event: eventOf(2) } }))
      yield* Effect.promise(() => fresh.return!())
      yield* eventually(Effect.sync(() => state.wakeups.followed().length), (n) => n === 0, 100)
      expect(tails.offer("t", rowOf(9))).toBe(true)
    }).pipe(Effect.scoped))

  it.live("no reader is left once every follower returned: those that took what they wanted, waited, failed to decode, or read on their own", () =>
    Effect.gen(function*() {
      const rows = Array.from({ length: 1_500 }, (_, i) => rowOf(i + 1))
      const { source, state } = sourceOf(rows)
      // Task "u" has one row, not JSON.
      const tails = yield* internalEventLog.makeTails({
        ...source,
        read: (taskId, after, limit) =>
          taskId === "u"
            ? Effect.succeed(after < 1 ? [{ seq: 1, text: "not json" }] : [])
            : source.read(taskId, after, limit)
      })
      const taken = yield* Effect.forEach(
        [0, 1_400],
        (after) => Stream.runCollect(Stream.take(tails.follow("t", after), 3)),
        { concurrency: "unbounded" }
      ).pipe(Effect.timeout("3 seconds"))
      expect(taken.map((chunk) => [...chunk].map((entry) => entry.seq))).toEqual([[1, 2, 3], [1_401, 1_402, 1_403]])
      const waiting = tails.iterate("t", 1_500)
      const pending = waiting.next()
      const undecodable = yield* within(tails.iterate("u", 0).next().then(String, (error: unknown) => error))
      expect(Option.getOrUndefined(undecodable)).toMatchObject({ _tag: "EventLogError", reason: "Decode" })
      // Past the reader's 1,000 rows: this one reads on its own.
      const behind = tails.iterate("t", 10)
      expect(yield* within(behind.next())).toEqual(Option.some({ done: false, value: { seq: 11, event: eventOf(11) } }))
      yield* Effect.promise(async () => {
        await behind.return!()
        await waiting.return!()
      })
      expect(yield* within(pending)).toEqual(Option.some({ done: true, value: undefined }))
      yield* eventually(Effect.sync(() => state.wakeups.followed().length), (n) => n === 0, 100)
      expect(tails.offer("t", rowOf(1_600))).toBe(true)
      expect(tails.offer("u", rowOf(9))).toBe(true)
    }).pipe(Effect.scoped))
})

describe("the PostgreSQL event log's wake-ups", () => {
  it.live("an append past a gap (the entry before it dropped) reaches a follower on the writer's instance at once, not at the next poll", () =>
    Effect.gen(function*() {
      const log = yield* internalPgEventLog.makePg({
        url: databaseUrl(),
        poolSize: 2,
        listen: false,
        pollInterval: "30 seconds"
      })
      const taskId = randomUUID()
      const follower = yield* collect(log, taskId, 0)
      yield* Effect.sleep("100 millis")
      log.append(taskId, 1, eventOf(1))
      expect(yield* settled(follower.received, 1, "2 seconds")).toEqual(entriesOf([eventOf(1)]))
      // Not JSON data: dropped (and logged), so seq 2 is a gap.
      log.append(taskId, 2, { n: 2n })
      log.append(taskId, 3, eventOf(3))
      // Well before the next poll (30 s).
      yield* settled(follower.received, 2, "2 seconds").pipe(Effect.sandbox, Effect.ignore)
      expect(follower.received.map((entry) => entry.seq)).toEqual([1, 3])
    }).pipe(Effect.scoped, Effect.provide(captureLogs().layer)))

  it.live("a batch refused for a seq another writer took, written row by row: a follower on the refused writer's instance gets every entry once, in order", () =>
    Effect.gen(function*() {
      const [stale, other] = yield* pgPair(databaseUrl)()
      const taskId = randomUUID()
      const follower = yield* collect(stale, taskId, 0)
      yield* Effect.sleep("100 millis")
      other.append(taskId, 1, eventOf(1))
      other.append(taskId, 2, { ...eventOf(2), by: "other" })
      yield* other.flush
      // Queued together: one statement, refused for seq 2, then each row on its own.
      stale.append(taskId, 2, eventOf(2))
      stale.append(taskId, 3, eventOf(3))
      yield* stale.flush
      expect(yield* settled(follower.received, 3, "3 seconds")).toEqual(
        entriesOf([eventOf(1), { ...eventOf(2), by: "other" }, eventOf(3)])
      )
    }).pipe(Effect.scoped, Effect.provide(captureLogs().layer)))

  it.live("notifications with malformed payloads on its channel wake nothing wrongly: the follower gets each entry once, in order", () =>
    Effect.gen(function*() {
      const channel = `review_${randomUUID().slice(0, 8)}`
      const [writer, reader] = yield* pgPair(databaseUrl, { channel })()
      const taskId = randomUUID()
      const follower = yield* collect(reader, taskId, 0)
      yield* Effect.sleep("100 millis")
      writer.append(taskId, 1, eventOf(1))
      expect(yield* settled(follower.received, 1, "2 seconds")).toHaveLength(1)
      for (
        const payload of [
          "",
          "x",
          ":",
          `:${taskId}`,
          "nudge:",
          `-1:${taskId}`,
          `1e400:${taskId}`,
          `99999999999999999999:${taskId}`,
          `abc:${taskId}`,
          "2"
        ]
      ) {
        yield* execute(databaseUrl(), `select pg_notify('${channel}', '${payload}')`)
      }
      writer.append(taskId, 2, eventOf(2))
      writer.append(taskId, 3, eventOf(3))
      expect(yield* settled(follower.received, 3, "2 seconds")).toEqual(entriesOf([1, 2, 3].map(eventOf)))
    }).pipe(Effect.scoped))

  it.live("a small event rides in its notification, sealed and signed with the log's key: a follower on another instance gets it without reading the log; with carry off, it does not", () =>
    Effect.gen(function*() {
      const channel = `carried_${randomUUID().slice(0, 8)}`
      const [, reader] = yield* pgPair(databaseUrl, { channel, pollInterval: "30 seconds" })()
      const distrustful = yield* internalPgEventLog.makePg({
        url: databaseUrl(),
        poolSize: 2,
        channel,
        pollInterval: "30 seconds",
        carry: false
      })
      const taskId = randomUUID()
      const follower = yield* collect(reader, taskId, 0)
      const other = yield* collect(distrustful, taskId, 0)
      yield* Effect.sleep("100 millis")
      const [stored] = yield* execute(databaseUrl(), `select key from ${internalPgEventLog.keyTable} where id = 1`)
      const payload = internalPgEventLog.payloadOf(
        internalPgEventLog.keysOf(Buffer.from(String(stored?.key), "base64")),
        taskId,
        { seq: 1, text: JSON.stringify(eventOf(1)) }
      )
      expect(payload.startsWith("e")).toBe(true)
      // Sent on its own: the log holds no row for the task, so only the notification can have brought it.
      yield* execute(databaseUrl(), `select pg_notify('${channel}', '${payload}')`)
      expect(yield* settled(follower.received, 1, "2 seconds")).toEqual(entriesOf([eventOf(1)]))
      expect(yield* reader.read(taskId, 0)).toEqual([])
      expect(other.received).toEqual([])
    }).pipe(Effect.scoped))

  it.live("a follower from 0 on another instance, joining a reader opened past the log's last, gets each entry as it is written: woken by its notification, or by the poll without LISTEN", () =>
    Effect.gen(function*() {
      for (const extra of [{ pollInterval: "30 seconds" }, { listen: false, pollInterval: "100 millis" }] as const) {
        const [writer, reader] = yield* pgPair(databaseUrl, extra)()
        const taskId = randomUUID()
        // Its cursor past the log's last (one seen in the store before the log): the task's reader starts there.
        const ahead = yield* collect(reader, taskId, 10)
        yield* Effect.sleep("100 millis")
        const from0 = yield* collect(reader, taskId, 0)
        yield* Effect.sleep("100 millis")
        for (let seq = 1; seq <= 3; seq++) writer.append(taskId, seq, eventOf(seq))
        yield* settled(from0.received, 3, "2 seconds").pipe(Effect.sandbox, Effect.ignore)
        expect(from0.received).toEqual(entriesOf([1, 2, 3].map(eventOf)))
        expect(ahead.received).toEqual([])
      }
    }).pipe(Effect.scoped))

  it.live("task ids with colons, digits, astral characters, quotes or 1,000 characters: each one's carried event reaches its own follower alone, signed and parsed as sent", () => {
    const logs = captureLogs()
    return Effect.gen(function*() {
      const channel = `parsed_${randomUUID().slice(0, 8)}`
      const [, reader] = yield* pgPair(databaseUrl, { channel, pollInterval: "30 seconds" })()
      const [stored] = yield* execute(databaseUrl(), `select key from ${internalPgEventLog.keyTable} where id = 1`)
      const keys = internalPgEventLog.keysOf(Buffer.from(String(stored?.key), "base64"))
      const base = randomUUID()
      const taskIds = [
        `${base}:1:`,
        `12:${base}`,
        `7:${base}`,
        `😀${base}𝄞`,
        `${base}'"`,
        `${base}${"é".repeat(500)}`,
        `${base}`
      ]
      const followers = yield* Effect.forEach(taskIds, (taskId) => collect(reader, taskId, 0))
      yield* Effect.sleep("100 millis")
      // Sent on their own: the log holds no row for these tasks, so only the notifications can bring them.
      for (const [i, taskId] of taskIds.entries()) {
        const payload = internalPgEventLog.payloadOf(keys, taskId, {
          seq: 1,
          text: JSON.stringify({ ...eventOf(1), i })
        })
        expect(payload.startsWith("e")).toBe(true)
        yield* execute(databaseUrl(), `select pg_notify('${channel}', '${payload.replaceAll("'", "''")}')`)
      }
      yield* allSettled(followers.map((follower) => follower.received), taskIds.map(() => 1))
      followers.forEach((follower, i) => expect(follower.received).toEqual(entriesOf([{ ...eventOf(1), i }])))
      expect(logs.lines.filter((line) => line.message.includes("not signed with the log's key"))).toEqual([])
    }).pipe(Effect.scoped, Effect.provide(logs.layer))
  })

  it.live("a role that may only connect, listening on the channel, learns nothing of a carried event: it rides sealed, and a follower on another instance still gets it", () =>
    Effect.gen(function*() {
      const channel = `sealed_${randomUUID().slice(0, 8)}`
      const role = `listener_${randomBytes(4).toString("hex")}`
      const password = randomBytes(8).toString("hex")
      yield* Effect.acquireRelease(
        execute(databaseUrl(), `create role ${role} login password '${password}'`),
        () => execute(databaseUrl(), `drop role ${role}`)
      )
      const url = new URL(databaseUrl())
      url.username = role
      url.password = password
      const [writer, reader] = yield* pgPair(databaseUrl, { channel, pollInterval: "30 seconds" })()
      const payloads: Array<string> = []
      const listener = yield* Effect.acquireRelease(
        Effect.promise(async () => {
          const pg = createRequire(import.meta.url)("pg")
          const client = new (pg.default ?? pg).Client({ connectionString: url.href })
          await client.connect()
          client.on("notification", (notification: { payload?: string }) => payloads.push(notification.payload ?? ""))
          await client.query(`listen ${channel}`)
          return client as { query: (text: string) => Promise<unknown>; end: () => Promise<void> }
        }),
        (client) => Effect.promise(() => client.end())
      )
      // The log itself is closed to it: only LISTEN, which takes no privilege, is open.
      const refused = yield* Effect.promise(() =>
        listener.query(`select event from ${internalPgEventLog.table}`).then(
          () => "read",
          (error: { code?: string }) => error.code
        )
      )
      expect(refused).toBe("42501")
      const taskId = randomUUID()
      const follower = yield* collect(reader, taskId, 0)
      yield* Effect.sleep("100 millis")
      const secret = { ...eventOf(1), text: `secret ${randomUUID()}` }
      writer.append(taskId, 1, secret)
      expect(yield* settled(follower.received, 1, "2 seconds")).toEqual(entriesOf([secret]))
      yield* eventually(Effect.sync(() => payloads.length), (n) => n >= 1)
      expect(payloads).toHaveLength(1)
      expect(payloads[0]!.startsWith("e")).toBe(true)
      expect(payloads[0]).not.toContain(secret.text)
      expect(payloads[0]).not.toContain(JSON.stringify(secret))
    }).pipe(Effect.scoped))

  it.live("an event carried with another key is not handed on: the follower gets what the log holds, and the forgery is logged once", () => {
    const logs = captureLogs()
    return Effect.gen(function*() {
      const channel = `forged_${randomUUID().slice(0, 8)}`
      const [writer, reader] = yield* pgPair(databaseUrl, { channel, pollInterval: "30 seconds" })()
      const taskId = randomUUID()
      const follower = yield* collect(reader, taskId, 0)
      yield* Effect.sleep("100 millis")
      const forged = (seq: number) =>
        internalPgEventLog.payloadOf(internalPgEventLog.keysOf(randomBytes(32)), taskId, {
          seq,
          text: JSON.stringify({ ...eventOf(seq), forged: true })
        })
      // Well-formed but not signed with the key: a wake-up at most.
      yield* execute(
        databaseUrl(),
        `select pg_notify('${channel}', '${forged(1)}'), pg_notify('${channel}', '${forged(2)}')`
      )
      yield* Effect.sleep("200 millis")
      expect(follower.received).toEqual([])
      writer.append(taskId, 1, eventOf(1))
      // Larger than a notification carries: read from the log.
      const large = { ...eventOf(2), text: "x".repeat(5_000) }
      writer.append(taskId, 2, large)
      expect(yield* settled(follower.received, 2, "2 seconds")).toEqual(entriesOf([eventOf(1), large]))
      expect(logs.lines.filter((line) => line.message.includes("not signed with the log's key"))).toHaveLength(1)
    }).pipe(Effect.scoped, Effect.provide(logs.layer))
  })
})
