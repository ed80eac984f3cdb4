import { Role, type Task, TaskState } from "@a2a-js/sdk"
import { RequestMalformedError } from "@a2a-js/sdk/errors"
import {
  InMemoryTaskStore,
  ServerCallContext,
  type TaskStore,
  UnauthenticatedUser,
  type User
} from "@a2a-js/sdk/server"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, FastCheck, TestClock } from "effect"
import * as internalMemoryTaskStore from "../../../../src/internal/server/store/memoryTaskStore.js"
import * as internalTaskStore from "../../../../src/internal/server/store/taskStore.js"
import { listAll } from "../../../fixtures/serverAgents.js"

const user = (userName: string): User => ({ isAuthenticated: true, userName })

const contextOf = (tenant: string, userName: string | undefined) =>
  new ServerCallContext({
    user: userName === undefined ? new UnauthenticatedUser() : user(userName),
    ...(tenant === "" ? {} : { tenant })
  })

const anonymous = contextOf("", undefined)

const taskOf = (id: string, state: TaskState, extra: Partial<Task> = {}): Task => ({
  id,
  contextId: "ctx",
  status: { state, message: undefined, timestamp: "2026-01-01T00:00:00.000Z" },
  artifacts: [{
    artifactId: `${id}-a`,
    name: "",
    description: "",
    parts: [{ content: { $case: "text", value: `${id} result` }, metadata: undefined, filename: "", mediaType: "" }],
    metadata: undefined,
    extensions: []
  }],
  history: [{
    messageId: `${id}-m`,
    contextId: "ctx",
    taskId: id,
    role: Role.ROLE_USER,
    parts: [{ content: { $case: "text", value: "hello" }, metadata: undefined, filename: "", mediaType: "" }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: []
  }],
  metadata: undefined,
  ...extra
})

/** A store on a clock moved by hand. */
const storeAt = (options: Omit<internalMemoryTaskStore.Options, "now"> = {}) => {
  const clock = { now: 0 }
  const store = internalMemoryTaskStore.make({ ...options, now: () => clock.now })
  const idsOf = async (context = anonymous) =>
    (await store.list(listAll(), context)).tasks.map((task) => task.id).sort()
  return { clock, store, idsOf }
}

const hour = Duration.toMillis(Duration.hours(1))

describe("the bounded in-memory task store", () => {
  describe("keeps the SDK's InMemoryTaskStore semantics", () => {
    const states = [
      TaskState.TASK_STATE_SUBMITTED,
      TaskState.TASK_STATE_WORKING,
      TaskState.TASK_STATE_COMPLETED,
      TaskState.TASK_STATE_FAILED,
      TaskState.TASK_STATE_INPUT_REQUIRED
    ]
    const scope = FastCheck.record({
      tenant: FastCheck.constantFrom("", "t1"),
      user: FastCheck.constantFrom(undefined, "alice", "bob")
    })
    const operation = FastCheck.oneof(
      FastCheck.record({
        op: FastCheck.constant("save" as const),
        scope,
        id: FastCheck.constantFrom("a", "b", "c", "d|e"),
        state: FastCheck.constantFrom(...states),
        contextId: FastCheck.constantFrom("c1", "c2"),
        timestamp: FastCheck.constantFrom("", "2026-01-01T00:00:00.000Z", "2026-01-01T00:00:01.000Z")
      }),
      FastCheck.record({
        op: FastCheck.constant("load" as const),
        scope,
        id: FastCheck.constantFrom("a", "b", "c", "d|e")
      }),
      FastCheck.record({
        op: FastCheck.constant("list" as const),
        scope,
        contextId: FastCheck.constantFrom("", "c1"),
        status: FastCheck.constantFrom(TaskState.TASK_STATE_UNSPECIFIED, ...states),
        pageSize: FastCheck.constantFrom(undefined, 1, 2),
        // The token of the page before, when there is one; else a given one, well formed or not.
        pageToken: FastCheck.constantFrom("previous", "", "bm90LWEtdG9rZW4=", "MjAyNi0wMS0wMVQwMDowMDowMC4wMDBafGE="),
        statusTimestampAfter: FastCheck.constantFrom(undefined, "2026-01-01T00:00:00.500Z"),
        includeArtifacts: FastCheck.boolean()
      })
    )
    const outcome = async (call: () => Promise<unknown>) => {
      try {
        return { ok: await call() }
      } catch (error) {
        return { error: error instanceof RequestMalformedError ? `malformed: ${error.message}` : String(error) }
      }
    }

    it.effect.prop("the same calls give the same answers, with bounds it does not reach", [
      FastCheck.array(operation, { maxLength: 40 })
    ], ([operations]) =>
      Effect.promise(async () => {
        const ours = internalMemoryTaskStore.make({ now: () => 0 })
        const sdk = new InMemoryTaskStore()
        const previous = new Map<TaskStore, string>()
        for (const operation of operations) {
          const context = () => contextOf(operation.scope.tenant, operation.scope.user)
          const run = (store: TaskStore) => {
            switch (operation.op) {
              case "save":
                return outcome(() =>
                  store.save(
                    taskOf(operation.id, operation.state, {
                      contextId: operation.contextId,
                      status: { state: operation.state, message: undefined, timestamp: operation.timestamp }
                    }),
                    context()
                  )
                )
              case "load":
                return outcome(() => store.load(operation.id, context()))
              case "list": {
                const { op: _op, pageSize, pageToken, scope: _scope, ...rest } = operation
                const token = pageToken === "previous" ? previous.get(store) ?? "" : pageToken
                return outcome(async () => {
                  const page = await store.list(listAll({ ...rest, pageSize, pageToken: token }), context())
                  previous.set(store, page.nextPageToken)
                  return page
                })
              }
            }
          }
          expect(await run(ours)).toEqual(await run(sdk))
        }
      }))
  })

  it.effect("a task changed by its caller after save, load or list stays as saved", () =>
    Effect.promise(async () => {
      const { store } = storeAt()
      const task = taskOf("a", TaskState.TASK_STATE_WORKING)
      const saved = structuredClone(task)
      await store.save(task, anonymous)
      task.status!.state = TaskState.TASK_STATE_FAILED
      task.history[0]!.parts.push(task.history[0]!.parts[0]!)
      task.artifacts.length = 0
      const loaded = (await store.load("a", anonymous))!
      expect(loaded).toEqual(saved)
      loaded.status!.state = TaskState.TASK_STATE_CANCELED
      loaded.history.length = 0
      loaded.artifacts[0]!.parts.length = 0
      const listed = (await store.list(listAll({ includeArtifacts: true }), anonymous)).tasks[0]!
      expect(listed).toEqual(saved)
      listed.status!.state = TaskState.TASK_STATE_REJECTED
      listed.artifacts.length = 0
      expect(await store.load("a", anonymous)).toEqual(saved)
    }))

  it.effect("beyond maxFinished the oldest ended tasks are forgotten; running and paused ones are kept", () =>
    Effect.promise(async () => {
      const { idsOf, store } = storeAt({ maxFinished: 2 })
      for (const id of ["w1", "w2", "w3"]) await store.save(taskOf(id, TaskState.TASK_STATE_WORKING), anonymous)
      await store.save(taskOf("s1", TaskState.TASK_STATE_SUBMITTED), anonymous)
      await store.save(taskOf("i1", TaskState.TASK_STATE_INPUT_REQUIRED), anonymous)
      await store.save(taskOf("u1", TaskState.TASK_STATE_UNSPECIFIED), anonymous)
      await store.save(taskOf("f1", TaskState.TASK_STATE_COMPLETED), anonymous)
      await store.save(taskOf("f2", TaskState.TASK_STATE_FAILED), contextOf("t1", "alice"))
      await store.save(taskOf("f3", TaskState.TASK_STATE_CANCELED), anonymous)
      // The bound counts every tenant and caller together.
      expect(await store.load("f1", anonymous)).toBeUndefined()
      expect(await idsOf()).toEqual(["f3", "i1", "s1", "u1", "w1", "w2", "w3"])
      expect(await idsOf(contextOf("t1", "alice"))).toEqual(["f2"])
      // A running task that ends joins the queue at its back.
      await store.save(taskOf("w1", TaskState.TASK_STATE_REJECTED), anonymous)
      expect(await idsOf(contextOf("t1", "alice"))).toEqual([])
      expect(await idsOf()).toEqual(["f3", "i1", "s1", "u1", "w1", "w2", "w3"])
    }))

  it.effect("a save moves a task to the back: the one saved longest ago goes first", () =>
    Effect.promise(async () => {
      const { idsOf, store } = storeAt({ maxFinished: 2 })
      await store.save(taskOf("a", TaskState.TASK_STATE_COMPLETED), anonymous)
      await store.save(taskOf("b", TaskState.TASK_STATE_COMPLETED), anonymous)
      await store.save(taskOf("a", TaskState.TASK_STATE_COMPLETED, { metadata: { again: true } }), anonymous)
      await store.save(taskOf("c", TaskState.TASK_STATE_COMPLETED), anonymous)
      expect(await idsOf()).toEqual(["a", "c"])
      expect((await store.load("a", anonymous))?.metadata).toEqual({ again: true })
    }))

  it.effect("ended tasks are forgotten after retention, paused ones after their own, running ones never", () =>
    Effect.promise(async () => {
      const { clock, idsOf, store } = storeAt({ retention: "1 hour", interruptedRetention: "24 hours" })
      await store.save(taskOf("done", TaskState.TASK_STATE_COMPLETED), anonymous)
      await store.save(taskOf("input", TaskState.TASK_STATE_INPUT_REQUIRED), anonymous)
      await store.save(taskOf("auth", TaskState.TASK_STATE_AUTH_REQUIRED), contextOf("t1", "bob"))
      await store.save(taskOf("run", TaskState.TASK_STATE_WORKING), anonymous)
      clock.now = 30 * 60 * 1000
      await store.save(taskOf("later", TaskState.TASK_STATE_FAILED), anonymous)
      clock.now = hour - 1
      expect(await idsOf()).toEqual(["done", "input", "later", "run"])
      // No save is needed for a task past retention to be gone: a read does not find it.
      clock.now = hour
      expect(await store.load("done", anonymous)).toBeUndefined()
      expect(await idsOf()).toEqual(["input", "later", "run"])
      clock.now = 24 * hour - 1
      expect(await idsOf()).toEqual(["input", "run"])
      expect((await store.load("auth", contextOf("t1", "bob")))?.id).toBe("auth")
      clock.now = 24 * hour
      expect(await store.load("auth", contextOf("t1", "bob"))).toBeUndefined()
      expect(await idsOf()).toEqual(["run"])
      clock.now = 1000 * hour
      expect(await idsOf()).toEqual(["run"])
    }))

  it.effect("a paused task that resumes is no longer subject to the paused retention", () =>
    Effect.promise(async () => {
      const { clock, idsOf, store } = storeAt({ retention: "1 hour", interruptedRetention: "2 hours" })
      await store.save(taskOf("t", TaskState.TASK_STATE_INPUT_REQUIRED), anonymous)
      clock.now = hour
      await store.save(taskOf("t", TaskState.TASK_STATE_WORKING), anonymous)
      clock.now = 10 * hour
      expect(await idsOf()).toEqual(["t"])
      await store.save(taskOf("t", TaskState.TASK_STATE_COMPLETED), anonymous)
      clock.now = 11 * hour - 1
      expect(await idsOf()).toEqual(["t"])
      clock.now = 11 * hour
      expect(await idsOf()).toEqual([])
    }))

  it.effect("a forgotten task's scope starts afresh: a later save of the same id is a new task", () =>
    Effect.promise(async () => {
      const { store } = storeAt({ maxFinished: 1 })
      const alice = contextOf("t1", "alice")
      await store.save(taskOf("a", TaskState.TASK_STATE_COMPLETED), alice)
      await store.save(taskOf("b", TaskState.TASK_STATE_COMPLETED), anonymous)
      expect(await store.load("a", alice)).toBeUndefined()
      await store.save(taskOf("a", TaskState.TASK_STATE_WORKING), alice)
      expect((await store.load("a", alice))?.status?.state).toBe(TaskState.TASK_STATE_WORKING)
      expect(await store.load("a", anonymous)).toBeUndefined()
      expect((await store.load("b", anonymous))?.id).toBe("b")
    }))

  it.effect("the configured store reads the time from the Effect clock; the defaults are an hour, 10,000 and a day", () =>
    Effect.gen(function*() {
      const store = yield* Effect.scoped(internalTaskStore.make(internalTaskStore.defaultConfig))
      const save = (task: Task) => Effect.promise(() => store.save(task, anonymous))
      const load = (id: string) => Effect.promise(() => store.load(id, anonymous))
      yield* save(taskOf("done", TaskState.TASK_STATE_COMPLETED))
      yield* save(taskOf("input", TaskState.TASK_STATE_INPUT_REQUIRED))
      yield* TestClock.adjust(Duration.millis(hour - 1))
      expect((yield* load("done"))?.id).toBe("done")
      yield* TestClock.adjust(Duration.millis(1))
      expect(yield* load("done")).toBeUndefined()
      yield* TestClock.adjust(Duration.millis(23 * hour - 1))
      expect((yield* load("input"))?.id).toBe("input")
      yield* TestClock.adjust(Duration.millis(1))
      expect(yield* load("input")).toBeUndefined()
      for (let i = 0; i <= 10_000; i++) yield* save(taskOf(`f${i}`, TaskState.TASK_STATE_COMPLETED))
      expect(yield* load("f0")).toBeUndefined()
      expect((yield* load("f1"))?.id).toBe("f1")
      expect((yield* load("f10000"))?.id).toBe("f10000")
    }))

  it.effect("Unbounded is the SDK's InMemoryTaskStore", () =>
    Effect.gen(function*() {
      const store = yield* Effect.scoped(internalTaskStore.make({ _tag: "Unbounded" }))
      expect(store).toBeInstanceOf(InMemoryTaskStore)
    }))
})
