/**
 * The durable runs the native SQLite and PostgreSQL stores keep
 * (`sqlDurable.ts`): each operation as `durableRuns.ts` describes it, runs
 * kept apart by tenant and owner, what the retention's sweep deletes, and a
 * database of the store before them migrated. Each test works in a tenant
 * of its own, and compares only its own runs.
 */
import { TaskState } from "@a2a-js/sdk"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Option, Scope } from "effect"
import { randomUUID } from "node:crypto"
import type { DurableRuns, RunKey } from "../../../../src/internal/server/durable/durableRuns.js"
import { scopeOf } from "../../../../src/internal/server/store/sqlRows.js"
import * as sqlStore from "../../../../src/internal/server/store/sqlStore.js"
import * as internalTaskStore from "../../../../src/internal/server/store/taskStore.js"
import { contextOf, freshTenant, normal, started, status, taskOf } from "./taskStores.js"

const keyOf = (tenant: string, owner: string, taskId: string = randomUUID()): RunKey => ({ tenant, owner, taskId })

/** What a run keeps, as plain data. */
const loaded = (store: { readonly durable: DurableRuns }, key: RunKey) =>
  Effect.map(
    store.durable.load(key),
    (found) => Option.map(found, ({ row, steps }) => ({ row, steps: Object.fromEntries(steps) }))
  )

/** Raw statements on `config`'s database, for what the store would not do. */
const raw = <A>(
  config: internalTaskStore.DatabaseConfig,
  run: (db: { readonly execute: (query: string) => Promise<ReadonlyArray<Record<string, unknown>>> }) => Promise<A>
) =>
  Effect.scoped(Effect.gen(function*() {
    const { db, sql } = yield* internalTaskStore.connection(config, "test", () => Effect.void)
    return yield* Effect.promise(() =>
      run({ execute: async (query) => (await sql.raw<Record<string, unknown>>(query).execute(db)).rows })
    )
  }))

const ledger = (config: internalTaskStore.DatabaseConfig) =>
  raw(
    config,
    async (db) =>
      (await db.execute(`select name from ${sqlStore.migrationTable} order by name`)).map((row) => row["name"])
  )

const count = (config: internalTaskStore.DatabaseConfig, table: string, taskId: string) =>
  raw(
    config,
    async (db) => Number((await db.execute(`select count(*) as n from ${table} where task_id = '${taskId}'`))[0]?.["n"])
  )

export const sqlDurableSuite = (name: string, config: () => internalTaskStore.DatabaseConfig) =>
  describe(`the durable runs of the ${name} task store`, () => {
    it.scoped("a run is begun once, counted at each resume, listed, and ended with its records", () =>
      Effect.gen(function*() {
        const store = yield* sqlStore.make(config())
        const { durable } = store
        const tenant = freshTenant()
        const key = keyOf(tenant, "alice")
        expect(yield* durable.load(key)).toEqual(Option.none())
        expect(yield* durable.resumed(key)).toBeUndefined()

        yield* durable.begin(key, `{"request":1}`)
        // A second begin (a retried start) keeps the run as it is.
        yield* durable.begin(key, `{"request":2}`)
        expect(yield* loaded(store, key)).toEqual(Option.some({
          row: { ...key, request: `{"request":1}`, resumes: 0, asking: undefined },
          steps: {}
        }))
        expect(yield* durable.resumed(key)).toBe(1)
        expect(yield* durable.resumed(key)).toBe(2)
        yield* durable.begin(key, `{"request":3}`)
        expect(Option.getOrThrow(yield* durable.load(key)).row.resumes).toBe(2)

        const other = keyOf(tenant, "alice")
        yield* durable.begin(other, "{}")
        yield* durable.ask(other, 4)
        const ours = (yield* durable.all).filter((row) => row.tenant === tenant)
        expect(ours).toEqual(
          [
            { ...key, request: `{"request":1}`, resumes: 2, asking: undefined },
            { ...other, request: "{}", resumes: 0, asking: 4 }
          ].sort((a, b) => a.taskId < b.taskId ? -1 : 1)
        )

        yield* durable.record(key, "step/1", `"one"`)
        yield* durable.record(key, "step/2", `"two"`)
        // The end of another run of the task (begun from another request) leaves this one and its records.
        yield* durable.end(key, `{"request":0}`)
        expect(Option.map(yield* durable.load(key), (loaded) => loaded.steps.size)).toEqual(Option.some(2))
        yield* durable.end(key, `{"request":1}`)
        expect(yield* durable.load(key)).toEqual(Option.none())
        expect(yield* count(config(), sqlStore.durableStepsTable, key.taskId)).toBe(0)
        expect(yield* durable.resumed(key)).toBeUndefined()
        expect((yield* durable.all).filter((row) => row.tenant === tenant).map((row) => row.taskId)).toEqual([
          other.taskId
        ])
        // Ending a run that is gone does nothing.
        yield* durable.end(key)
        expect(Option.isSome(yield* durable.load(other))).toBe(true)
      }))

    it.scoped("a step's first record is kept: a second one, from this process or another, reads it back", () =>
      Effect.gen(function*() {
        const [a, b] = [yield* sqlStore.make(config()), yield* sqlStore.make(config())]
        const key = keyOf(freshTenant(), "alice")
        yield* a.durable.begin(key, "{}")
        expect(yield* a.durable.record(key, "charge", `{"charged":1}`)).toBe(`{"charged":1}`)
        expect(yield* a.durable.record(key, "charge", `{"charged":2}`)).toBe(`{"charged":1}`)
        expect(yield* b.durable.record(key, "charge", `{"charged":3}`)).toBe(`{"charged":1}`)

        // Two processes running one step at once both end with one record.
        const kept = yield* Effect.all([
          a.durable.record(key, "ship", `"by a"`),
          b.durable.record(key, "ship", `"by b"`)
        ], { concurrency: 2 })
        expect(kept[0]).toBe(kept[1])
        expect(["\"by a\"", "\"by b\""]).toContain(kept[0])
        expect(Option.getOrThrow(yield* loaded(b, key)).steps).toEqual({ charge: `{"charged":1}`, ship: kept[0] })
      }))

    it.scoped("an answer is recorded only to the question the run waits on, once", () =>
      Effect.gen(function*() {
        const [a, b] = [yield* sqlStore.make(config()), yield* sqlStore.make(config())]
        const key = keyOf(freshTenant(), "alice")
        // No run, no question.
        expect(yield* a.durable.answer(key, 1, `"yes"`)).toBe(false)
        yield* a.durable.begin(key, "{}")
        expect(yield* a.durable.answer(key, 1, `"yes"`)).toBe(false)
        yield* a.durable.ask(key, 1)
        expect(Option.getOrThrow(yield* a.durable.load(key)).row.asking).toBe(1)

        // The wrong question: nothing written.
        expect(yield* a.durable.answer(key, 2, `"no"`)).toBe(false)
        expect(yield* loaded(a, key)).toEqual(Option.some({
          row: { ...key, request: "{}", resumes: 0, asking: 1 },
          steps: {}
        }))

        expect(yield* a.durable.answer(key, 1, `"yes"`)).toBe(true)
        expect(yield* loaded(a, key)).toEqual(Option.some({
          row: { ...key, request: "{}", resumes: 0, asking: undefined },
          steps: { "ask/1": `"yes"` }
        }))
        // Answered already: a second answer changes nothing.
        expect(yield* b.durable.answer(key, 1, `"again"`)).toBe(false)
        expect(Option.getOrThrow(yield* loaded(a, key)).steps).toEqual({ "ask/1": `"yes"` })

        // Two answers to one question at once, from two processes: one is recorded.
        yield* a.durable.ask(key, 2)
        const answered = yield* Effect.all([
          a.durable.answer(key, 2, `"from a"`),
          b.durable.answer(key, 2, `"from b"`)
        ], { concurrency: 2 })
        expect(answered.filter((took) => took)).toEqual([true])
        const steps = Option.getOrThrow(yield* loaded(a, key)).steps
        expect(steps["ask/2"]).toBe(answered[0] ? `"from a"` : `"from b"`)
        expect(Option.getOrThrow(yield* a.durable.load(key)).row.asking).toBeUndefined()
      }))

    it.scoped("tenants and owners are kept apart", () =>
      Effect.gen(function*() {
        const store = yield* sqlStore.make(config())
        const { durable } = store
        const [tenant, elsewhere] = [freshTenant(), freshTenant()]
        const taskId = randomUUID()
        const keys = [keyOf(tenant, "alice", taskId), keyOf(tenant, "bob", taskId), keyOf(elsewhere, "alice", taskId)]
        for (const [at, key] of keys.entries()) {
          yield* durable.begin(key, `{"who":${at}}`)
          yield* durable.record(key, "step", `${at}`)
        }
        yield* durable.ask(keys[1]!, 7)
        expect(yield* durable.resumed(keys[2]!)).toBe(1)
        expect(yield* durable.answer(keys[0]!, 7, `"not alice's"`)).toBe(false)
        expect(yield* durable.answer(keys[2]!, 7, `"nor here"`)).toBe(false)
        for (const [at, key] of keys.entries()) {
          expect(yield* loaded(store, key)).toEqual(Option.some({
            row: { ...key, request: `{"who":${at}}`, resumes: at === 2 ? 1 : 0, asking: at === 1 ? 7 : undefined },
            steps: { step: `${at}` }
          }))
        }
        yield* durable.end(keys[0]!)
        expect(yield* durable.load(keys[0]!)).toEqual(Option.none())
        expect(Option.getOrThrow(yield* loaded(store, keys[1]!)).steps).toEqual({ step: "1" })
        expect(Option.getOrThrow(yield* loaded(store, keys[2]!)).steps).toEqual({ step: "2" })
        expect(yield* count(config(), sqlStore.durableStepsTable, taskId)).toBe(2)
      }))

    it.scoped("a run the store cannot keep is refused before a write, and never found", () =>
      Effect.gen(function*() {
        const { durable } = yield* sqlStore.make(config())
        const tenant = freshTenant()
        const long = keyOf(tenant, "alice", "x".repeat(37))
        const refused = yield* Effect.flip(durable.begin(long, "{}"))
        expect(refused.reason).toBe("Driver")
        expect(refused.message).toMatch(/^Beginning the durable run of task x+: task id must be at most 36 characters/)
        expect(yield* durable.load(long)).toEqual(Option.none())
        expect(yield* durable.resumed(keyOf("nul\u0000", "alice"))).toBeUndefined()
        expect(yield* durable.answer(long, 1, "1")).toBe(false)

        const key = keyOf(tenant, "alice")
        yield* durable.begin(key, "{}")
        const step = yield* Effect.flip(durable.record(key, "s".repeat(256), "1"))
        expect(step.message).toMatch(/step must be at most 255 characters/)
        const text = yield* Effect.flip(durable.record(key, "step", "nul \u0000"))
        expect(text.message).toMatch(/record must not contain NUL/)
        expect(Option.getOrThrow(yield* loaded({ durable }, key)).steps).toEqual({})
      }))

    it.live("with a retention, the runs and records of deleted tasks are deleted; those of stored tasks stay", () =>
      Effect.scoped(Effect.gen(function*() {
        const context = contextOf(freshTenant(), "alice")
        const store = yield* sqlStore.make(config())
        const [deleted, kept] = [randomUUID(), randomUUID()]
        for (const id of [deleted, kept]) {
          yield* store.append(id, [started(taskOf(id, TaskState.TASK_STATE_WORKING, 1))], context)
          const key = { ...scopeOf(context), taskId: id }
          yield* store.durable.begin(key, "{}")
          yield* store.durable.record(key, "step", "1")
        }
        // The task deleted under its run, as the retention deletes it after its process died.
        yield* raw(config(), (db) => db.execute(`delete from tasks where id = '${deleted}'`))
        yield* Effect.scoped(sqlStore.make({ ...config(), retention: "1 hour" }))
        expect(yield* store.durable.load({ ...scopeOf(context), taskId: deleted })).toEqual(Option.none())
        expect(yield* count(config(), sqlStore.durableStepsTable, deleted)).toBe(0)
        expect(Option.getOrThrow(yield* loaded(store, { ...scopeOf(context), taskId: kept })).steps).toEqual({
          step: "1"
        })
      })))

    it.scoped("a database of the store before durable runs is migrated: its tasks read, the new tables work", () =>
      Effect.gen(function*() {
        const context = contextOf(freshTenant(), "alice")
        const id = randomUUID()
        // The database as the previous version left it: migration 0001 only, a running task with events.
        const before = yield* Scope.make()
        const old = yield* Scope.extend(sqlStore.make(config()), before)
        yield* old.append(id, [started(taskOf(id, TaskState.TASK_STATE_WORKING, 1))], context)
        yield* old.append(id, [status(id, TaskState.TASK_STATE_WORKING, 2)], context)
        const written = yield* old.get(id, context)
        yield* Scope.close(before, Exit.void)
        yield* raw(config(), async (db) => {
          await db.execute(`drop table ${sqlStore.durableStepsTable}`)
          await db.execute(`drop table ${sqlStore.durableRunsTable}`)
          await db.execute(`delete from ${sqlStore.migrationTable} where name = '0002_durable_runs'`)
        })
        expect(yield* ledger(config())).toEqual(["0001_task_store_events"])
        expect(yield* count(config(), sqlStore.eventsTable, id)).toBe(1)

        const store = yield* sqlStore.make(config())
        expect(yield* ledger(config())).toEqual(["0001_task_store_events", "0002_durable_runs"])
        expect(normal(yield* store.get(id, context))).toEqual(normal(written))
        const ended = yield* store.append(id, [status(id, TaskState.TASK_STATE_COMPLETED, 3)], context)
        expect(ended?.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
        const key = { ...scopeOf(context), taskId: id }
        yield* store.durable.begin(key, "{}")
        expect(yield* store.durable.record(key, "step", "1")).toBe("1")
        expect(yield* loaded(store, key)).toEqual(Option.some({
          row: { ...key, request: "{}", resumes: 0, asking: undefined },
          steps: { step: "1" }
        }))
        // Opened again, it finds nothing left to migrate.
        const again = yield* sqlStore.make(config())
        expect(Option.getOrThrow(yield* loaded(again, key)).steps).toEqual({ step: "1" })
        expect(yield* ledger(config())).toEqual(["0001_task_store_events", "0002_durable_runs"])
      }))
  })
