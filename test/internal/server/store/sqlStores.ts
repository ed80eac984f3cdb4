/**
 * What the native SQLite and PostgreSQL stores must do beside the shared
 * contract: read what today's store (the SDK's `DatabaseTaskStore`, as
 * `taskStore.ts` builds it) wrote, work beside an old replica on one
 * database during a rolling upgrade, keep a settled task as one row,
 * migrate once when replicas start together, and refuse what the database
 * cannot keep.
 */
import { type Task, TaskState } from "@a2a-js/sdk"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import { randomUUID } from "node:crypto"
import * as sqlStore from "../../../../src/internal/server/store/sqlStore.js"
import * as internalTaskStore from "../../../../src/internal/server/store/taskStore.js"
import { listAll } from "../../../fixtures/serverAgents.js"
import {
  artifact,
  artifactOf,
  at,
  contextOf,
  freshTenant,
  message,
  messageOf,
  normal,
  started,
  status,
  taskOf
} from "./taskStores.js"

/** The SDK's `DatabaseTaskStore` on `config`, as a replica of the old version ran it. */
const today = (config: internalTaskStore.DatabaseConfig) =>
  Effect.map(internalTaskStore.open(config, internalTaskStore.tasks), ({ db, sdk }) => {
    const store = new sdk.DatabaseTaskStore(db)
    return {
      save: (task: Task, context = contextOf("")) => Effect.promise(() => store.save(task, context)),
      load: (id: string, context = contextOf("")) => Effect.promise(() => store.load(id, context)),
      list: (context = contextOf("")) => Effect.promise(() => store.list(listAll({ includeArtifacts: true }), context))
    }
  })

/** How many event rows the task `id` has after its snapshot. */
const eventRows = (config: internalTaskStore.DatabaseConfig, id: string) =>
  Effect.scoped(Effect.gen(function*() {
    const { db, sql } = yield* internalTaskStore.connection(config, "test", () => Effect.void)
    const { rows } = yield* Effect.promise(() =>
      sql<{ n: number | string }>`select count(*) as n from ${sql.table(sqlStore.eventsTable)} where task_id = ${id}`
        .execute(db)
    )
    return Number(rows[0]?.n)
  }))

const deleteSnapshot = (config: internalTaskStore.DatabaseConfig, id: string) =>
  Effect.scoped(Effect.gen(function*() {
    const { db, sql } = yield* internalTaskStore.connection(config, "test", () => Effect.void)
    yield* Effect.promise(() => sql`delete from tasks where id = ${id}`.execute(db))
  }))

export const sqlStoreSuite = (name: string, config: () => internalTaskStore.DatabaseConfig) =>
  describe(`the ${name} task store, beside today's`, () => {
    it.scoped("a database written by today's store is read after the upgrade: tasks listed and continued", () =>
      Effect.gen(function*() {
        const tenant = freshTenant()
        const alice = contextOf(tenant, "alice")
        const [running, paused, ended] = [randomUUID(), randomUUID(), randomUUID()]
        const written = [
          taskOf(running, TaskState.TASK_STATE_WORKING, 1, { artifacts: [artifactOf("a", "partial")] }),
          taskOf(paused, TaskState.TASK_STATE_INPUT_REQUIRED, 2, { metadata: { asked: "which" } }),
          taskOf(ended, TaskState.TASK_STATE_COMPLETED, 3, { artifacts: [artifactOf("r", "result")] })
        ]
        const before = yield* Scope.make()
        const old = yield* Scope.extend(today(config()), before)
        for (const task of written) yield* old.save(task, alice)
        yield* Scope.close(before, Exit.void)

        const store = yield* sqlStore.make(config())
        for (const task of written) expect(normal(yield* store.get(task.id, alice))).toEqual(normal(task))
        const listed = yield* store.list(listAll({ includeArtifacts: true }), alice)
        expect(listed.tasks.map(normal)).toEqual([...written].reverse().map(normal))
        yield* store.append(
          paused,
          [message(paused, "that one"), status(paused, TaskState.TASK_STATE_WORKING, 4)],
          alice
        )
        const resumed = yield* store.append(paused, [
          artifact(paused, artifactOf("p", "done")),
          status(paused, TaskState.TASK_STATE_COMPLETED, 5)
        ], alice)
        expect(resumed?.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
        expect(resumed?.history.map((each) => each.messageId)).toEqual([`${paused}-m0`, "that one"])
        expect(resumed?.metadata).toEqual({ asked: "which" })
        yield* store.append(running, [artifact(running, artifactOf("a", "rest"), true)], alice)
        expect((yield* store.get(running, alice))?.artifacts[0]?.parts.length).toBe(2)
      }))

    // The decision for a rolling upgrade: old and new replicas work together on one database, old replicas
    // seeing a running task as of its last snapshot (its start, its last settled state or its last compaction).
    it.scoped("old and new replicas work together; an old one sees a running task as of its last settled state", () =>
      Effect.gen(function*() {
        const context = contextOf(freshTenant(), "alice")
        const old = yield* today(config())
        const store = yield* sqlStore.make(config())
        const id = randomUUID()
        yield* store.append(id, [started(taskOf(id, TaskState.TASK_STATE_SUBMITTED, 1))], context)
        yield* store.append(id, [status(id, TaskState.TASK_STATE_WORKING, 2, messageOf(id, "on it"))], context)
        expect((yield* store.get(id, context))?.status?.state).toBe(TaskState.TASK_STATE_WORKING)
        expect((yield* old.load(id, context))?.status?.state).toBe(TaskState.TASK_STATE_SUBMITTED)
        expect((yield* old.list(context)).tasks.map((task) => task.id)).toEqual([id])
        expect(yield* eventRows(config(), id)).toBe(1)

        // Settled: one row again, which the old replica reads whole.
        yield* store.append(id, [status(id, TaskState.TASK_STATE_INPUT_REQUIRED, 3, messageOf(id, "which?"))], context)
        expect(yield* eventRows(config(), id)).toBe(0)
        expect(normal(yield* old.load(id, context))).toEqual(normal(yield* store.get(id, context)))

        // The old replica continues it, saving the whole task; the new one reads and continues that.
        const continued = (yield* old.load(id, context))!
        continued.history.push(messageOf(id, "this"))
        continued.status = {
          state: TaskState.TASK_STATE_WORKING,
          message: undefined,
          timestamp: taskOf(id, 0, 4).status!.timestamp
        }
        yield* old.save(continued, context)
        expect(normal(yield* store.get(id, context))).toEqual(normal(continued))

        // A whole-task save over events the old replica never saw wins, as the last save did: they no longer apply.
        yield* store.append(
          id,
          [status(id, TaskState.TASK_STATE_WORKING, 5), artifact(id, artifactOf("x", "1"))],
          context
        )
        expect(yield* eventRows(config(), id)).toBe(2)
        const canceled = { ...continued, status: { ...continued.status!, state: TaskState.TASK_STATE_CANCELED } }
        yield* old.save(canceled, context)
        expect(normal(yield* store.get(id, context))).toEqual(normal(canceled))
        const after = yield* store.append(id, [status(id, TaskState.TASK_STATE_WORKING, 6)], context)
        expect(after?.status?.state).toBe(TaskState.TASK_STATE_CANCELED)
        expect(yield* eventRows(config(), id)).toBe(0)
        expect(normal(yield* old.load(id, context))).toEqual(normal(canceled))
      }))

    it.scoped("a running task's events are folded into its snapshot every compactAt events", () =>
      Effect.gen(function*() {
        const context = contextOf(freshTenant())
        const store = yield* sqlStore.make(config(), { compactAt: 5 })
        const old = yield* today(config())
        const id = randomUUID()
        yield* store.append(id, [started(taskOf(id, TaskState.TASK_STATE_WORKING, 0))], context)
        for (let second = 1; second <= 4; second++) {
          yield* store.append(id, [status(id, TaskState.TASK_STATE_WORKING, second)], context)
        }
        expect(yield* eventRows(config(), id)).toBe(4)
        expect((yield* old.load(id, context))?.status?.timestamp).toBe(at(0))
        // Folded in: a marker row stays, so that the next events' seq goes on from it.
        yield* store.append(id, [status(id, TaskState.TASK_STATE_WORKING, 5)], context)
        expect(yield* eventRows(config(), id)).toBe(1)
        expect((yield* old.load(id, context))?.status?.timestamp).toBe(at(5))
        expect((yield* store.get(id, context))?.status?.timestamp).toBe(at(5))
        // A batch is one insert, whatever its length.
        yield* store.append(id, [1, 2, 3].map((n) => status(id, TaskState.TASK_STATE_WORKING, 5 + n)), context)
        expect(yield* eventRows(config(), id)).toBe(4)
        expect((yield* store.get(id, context))?.status?.timestamp).toBe(at(8))
        yield* store.append(id, [status(id, TaskState.TASK_STATE_COMPLETED, 9)], context)
        expect(yield* eventRows(config(), id)).toBe(0)
      }))

    it.scoped("two replicas appending to one running task each read the other's events, across compactions", () =>
      Effect.gen(function*() {
        const context = contextOf(freshTenant())
        const [a, b] = [
          yield* sqlStore.make(config(), { compactAt: 3 }),
          yield* sqlStore.make(config(), { compactAt: 3 })
        ]
        const id = randomUUID()
        yield* a.append(id, [started(taskOf(id, TaskState.TASK_STATE_WORKING, 0))], context)
        const sent: Array<string> = [`${id}-m0`]
        // Turns of one to four messages, no status among them: the snapshot's fingerprint stays the same.
        for (let turn = 0; turn < 12; turn++) {
          const [writer, reader] = turn % 2 === 0 ? [a, b] : [b, a]
          const ids = Array.from({ length: 1 + (turn % 4) }, (_, n) => `m${turn}-${n}`)
          for (const messageId of ids) yield* writer.append(id, [message(id, messageId)], context)
          for (const messageId of ids) sent.push(messageId)
          expect((yield* reader.get(id, context))?.history.map((each) => each.messageId)).toEqual(sent)
          const appended = yield* reader.append(id, [], context)
          expect(appended?.history.map((each) => each.messageId)).toEqual(sent)
        }
      }))

    it.scoped("stores starting together migrate once, and again finds it done", () =>
      Effect.gen(function*() {
        const context = contextOf(freshTenant())
        const [a, b] = yield* Effect.all([sqlStore.make(config()), sqlStore.make(config())], { concurrency: 2 })
        const id = randomUUID()
        yield* a.append(id, [started(taskOf(id, TaskState.TASK_STATE_WORKING))], context)
        yield* a.append(id, [status(id, TaskState.TASK_STATE_WORKING, 1)], context)
        expect((yield* b.get(id, context))?.status?.timestamp).toBe(taskOf(id, 0, 1).status?.timestamp)
        const c = yield* sqlStore.make(config())
        expect((yield* c.get(id, context))?.id).toBe(id)
        expect(yield* c.heldElsewhere(id, contextOf(context.tenant ?? "", "mallory"))).toBe(true)
        expect(yield* c.heldElsewhere(id, context)).toBe(false)
      }))

    it.scoped("appends to one task from two replicas at once lose nothing, its creation included", () =>
      Effect.gen(function*() {
        const context = contextOf(freshTenant())
        const [a, b] = [yield* sqlStore.make(config()), yield* sqlStore.make(config())]
        const id = randomUUID()
        // Both start it at once: one inserts its snapshot, the other finds it there and folds into it.
        const start = (store: typeof a) =>
          store.append(id, [started(taskOf(id, TaskState.TASK_STATE_WORKING))], context)
        yield* Effect.all([start(a), start(b)], { concurrency: 2 })
        const appends = (store: typeof a, who: string) =>
          Array.from({ length: 15 }, (_, n) => store.append(id, [message(id, `${who}-${n}`)], context))
        yield* Effect.all([...appends(a, "a"), ...appends(b, "b")], { concurrency: "unbounded" })
        const task = yield* a.get(id, context)
        expect(task?.history.map((each) => each.messageId).sort()).toEqual(
          [`${id}-m0`, ...Array.from({ length: 15 }, (_, n) => [`a-${n}`, `b-${n}`]).flat()].sort()
        )
      }))

    it.live("with a retention, ended tasks past it are deleted as today's store deletes them; running ones stay", () =>
      Effect.scoped(Effect.gen(function*() {
        const context = contextOf(freshTenant())
        const store = yield* sqlStore.make({ ...config(), retention: "200 millis" }, { withPushConfigs: true })
        const [ended, running] = [randomUUID(), randomUUID()]
        // Statuses of 2026-01-01: long past any retention.
        yield* store.append(ended, [started(taskOf(ended, TaskState.TASK_STATE_COMPLETED, 1))], context)
        yield* store.append(running, [started(taskOf(running, TaskState.TASK_STATE_WORKING, 1))], context)
        yield* store.append(running, [status(running, TaskState.TASK_STATE_WORKING, 2)], context)
        let gone = yield* store.get(ended, context)
        for (let round = 0; gone !== undefined && round < 100; round++) {
          yield* Effect.sleep("50 millis")
          gone = yield* store.get(ended, context)
        }
        expect(gone).toBeUndefined()
        expect((yield* store.get(running, context))?.status?.timestamp).toBe(at(2))
        expect(yield* eventRows(config(), running)).toBe(1)
        // Events left behind by a task deleted under them (an old replica's doing) go at the next start.
        yield* deleteSnapshot(config(), running)
        yield* Effect.scoped(sqlStore.make({ ...config(), retention: "200 millis" }))
        expect(yield* eventRows(config(), running)).toBe(0)
      })))

    it.scoped("ids and text the database cannot keep are refused before a write, and never found", () =>
      Effect.gen(function*() {
        const context = contextOf(freshTenant())
        const store = yield* sqlStore.make(config())
        for (const id of ["nul\u0000id", "lone\uD800", "x".repeat(37)]) {
          const refused = yield* Effect.flip(
            store.append(id, [started(taskOf(id, TaskState.TASK_STATE_WORKING))], context)
          )
          expect(refused._tag).toBe("TaskStoreError")
          expect(yield* store.get(id, context)).toBeUndefined()
        }
        const id = randomUUID()
        const longContext = yield* Effect.flip(
          store.append(
            id,
            [started(taskOf(id, TaskState.TASK_STATE_WORKING, 0, { contextId: "c".repeat(37) }))],
            context
          )
        )
        expect(longContext.message).toMatch(/context id must be at most 36 characters/)
        expect((yield* store.list(listAll(), contextOf("nul\u0000tenant"))).tasks).toEqual([])
        // Text inside a task is JSON, which keeps any string as given.
        const odd = "NUL \u0000 and lone \uD800"
        yield* store.append(id, [started(taskOf(id, TaskState.TASK_STATE_WORKING, 0, { metadata: { odd } }))], context)
        yield* store.append(id, [status(id, TaskState.TASK_STATE_WORKING, 1, messageOf(id, odd))], context)
        const read = yield* store.get(id, context)
        expect(read?.metadata).toEqual({ odd })
        expect(read?.history.at(-1)?.messageId).toBe(odd)
      }))
  })
