/**
 * The native memory task store: the shared contract, its bounds, and what
 * the SDK-shaped bounded store it replaced was tested for, through its SDK
 * view (`store.toSdk`).
 */
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
import { Duration, Effect, FastCheck, Runtime, TestClock } from "effect"
import * as makeStore from "../../../../src/internal/server/store/makeStore.js"
import * as memoryStore from "../../../../src/internal/server/store/memoryStore.js"
import * as internalStore from "../../../../src/internal/server/store/store.js"
import { listAll } from "../../../fixtures/serverAgents.js"
import { contextOf, started, status, taskOf, taskStoreContract } from "./taskStores.js"

taskStoreContract("memory", () => makeStore.make({ _tag: "Memory" }))
taskStoreContract("unbounded memory", () => makeStore.make({ _tag: "Unbounded" }))

const hour = Duration.toMillis(Duration.hours(1))
const anonymous = contextOf("")

/** A store on a clock moved by hand, and the tasks it told of forgetting. */
const storeAt = (bounds: Omit<memoryStore.Options, "now"> = {}) => {
  const clock = { now: 0 }
  const store = memoryStore.make({ ...bounds, now: () => clock.now })
  const forgotten: Array<string> = []
  store.whenForgotten((taskId, tenant, owner) => forgotten.push(`${tenant}/${owner}/${taskId}`))
  const save = (id: string, state: TaskState, context = anonymous) =>
    store.append(id, [started(taskOf(id, state))], context)
  const idsOf = (context = anonymous) =>
    Effect.map(store.list(listAll(), context), (page) => page.tasks.map((task) => task.id).sort())
  return { clock, store, save, idsOf, forgotten }
}

describe("the native memory task store's bounds", () => {
  it.effect("beyond maxFinished the oldest ended tasks are forgotten, and told; running and paused ones are kept", () =>
    Effect.gen(function*() {
      const { forgotten, idsOf, save, store } = storeAt({ maxFinished: 2 })
      yield* save("w1", TaskState.TASK_STATE_WORKING)
      yield* save("i1", TaskState.TASK_STATE_INPUT_REQUIRED)
      yield* save("f1", TaskState.TASK_STATE_COMPLETED)
      yield* save("f2", TaskState.TASK_STATE_FAILED, contextOf("t1", "alice"))
      yield* save("f3", TaskState.TASK_STATE_CANCELED)
      expect(yield* store.get("f1", anonymous)).toBeUndefined()
      expect(forgotten).toEqual(["/unknown/f1"])
      expect(yield* idsOf()).toEqual(["f3", "i1", "w1"])
      // A running task that ends by an event joins the queue at its back.
      yield* store.append("w1", [status("w1", TaskState.TASK_STATE_REJECTED, 1)], anonymous)
      expect(forgotten).toEqual(["/unknown/f1", "t1/alice/f2"])
      expect(yield* idsOf()).toEqual(["f3", "i1", "w1"])
      expect(yield* store.heldElsewhere("w1", contextOf("", "bob"))).toBe(true)
      expect(yield* store.heldElsewhere("nope", contextOf("", "bob"))).toBe(false)
    }))

  it.effect("ended tasks go after retention, paused ones after their own, running ones never; an append is a write", () =>
    Effect.gen(function*() {
      const { clock, idsOf, save, store } = storeAt({ retention: "1 hour", interruptedRetention: "2 hours" })
      yield* save("done", TaskState.TASK_STATE_COMPLETED)
      yield* save("input", TaskState.TASK_STATE_INPUT_REQUIRED)
      yield* save("run", TaskState.TASK_STATE_WORKING)
      clock.now = hour - 1
      expect(yield* idsOf()).toEqual(["done", "input", "run"])
      clock.now = hour
      expect(yield* store.get("done", anonymous)).toBeUndefined()
      // An event moves a paused task to the back of its queue.
      yield* store.append("input", [status("input", TaskState.TASK_STATE_INPUT_REQUIRED, 2)], anonymous)
      clock.now = 3 * hour - 1
      expect(yield* idsOf()).toEqual(["input", "run"])
      clock.now = 3 * hour
      expect(yield* idsOf()).toEqual(["run"])
      clock.now = 1000 * hour
      expect(yield* idsOf()).toEqual(["run"])
    }))

  it.effect("the configured store reads the time from the Effect clock, with the defaults of today's", () =>
    Effect.gen(function*() {
      const store = yield* Effect.scoped(makeStore.make({ _tag: "Memory" }))
      yield* store.append("done", [started(taskOf("done", TaskState.TASK_STATE_COMPLETED))], anonymous)
      yield* TestClock.adjust(Duration.millis(hour - 1))
      expect((yield* store.get("done", anonymous))?.id).toBe("done")
      yield* TestClock.adjust(Duration.millis(1))
      expect(yield* store.get("done", anonymous)).toBeUndefined()
    }))

  it.effect("Unbounded keeps every task", () =>
    Effect.gen(function*() {
      const store = yield* Effect.scoped(makeStore.make({ _tag: "Unbounded" }))
      for (let i = 0; i <= 10_001; i++) {
        yield* store.append(`f${i}`, [started(taskOf(`f${i}`, TaskState.TASK_STATE_COMPLETED))], anonymous)
      }
      yield* TestClock.adjust(Duration.hours(1000))
      expect((yield* store.get("f0", anonymous))?.id).toBe("f0")
    }))
})

const user = (userName: string): User => ({ isAuthenticated: true, userName })

const sdkContextOf = (tenant: string, userName: string | undefined) =>
  new ServerCallContext({
    user: userName === undefined ? new UnauthenticatedUser() : user(userName),
    ...(tenant === "" ? {} : { tenant })
  })

const sdkAnonymous = sdkContextOf("", undefined)

const sdkTaskOf = (id: string, state: TaskState, extra: Partial<Task> = {}): Task => ({
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

/** The store in the SDK's shape (`store.toSdk`, what the server's public `taskStore` is), on a clock moved by hand. */
const sdkStoreAt = (options: Omit<memoryStore.Options, "now"> = {}) => {
  const clock = { now: 0 }
  const store = internalStore.toSdk(memoryStore.make({ ...options, now: () => clock.now }), Runtime.defaultRuntime)
  const idsOf = async (context = sdkAnonymous) =>
    (await store.list(listAll(), context)).tasks.map((task) => task.id).sort()
  return { clock, store, idsOf }
}

// What the SDK-shaped bounded store (`memoryTaskStore.ts`, which this store replaced) was tested for, through
// the SDK view of this one.
describe("the native memory task store in the SDK's shape", () => {
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
        const ours = sdkStoreAt().store
        const sdk = new InMemoryTaskStore()
        const previous = new Map<TaskStore, string>()
        for (const operation of operations) {
          const context = () => sdkContextOf(operation.scope.tenant, operation.scope.user)
          const run = (store: TaskStore) => {
            switch (operation.op) {
              case "save":
                return outcome(() =>
                  store.save(
                    sdkTaskOf(operation.id, operation.state, {
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
      const { store } = sdkStoreAt()
      const task = sdkTaskOf("a", TaskState.TASK_STATE_WORKING)
      const saved = structuredClone(task)
      await store.save(task, sdkAnonymous)
      task.status!.state = TaskState.TASK_STATE_FAILED
      task.history[0]!.parts.push(task.history[0]!.parts[0]!)
      task.artifacts.length = 0
      const loaded = (await store.load("a", sdkAnonymous))!
      expect(loaded).toEqual(saved)
      loaded.status!.state = TaskState.TASK_STATE_CANCELED
      loaded.history.length = 0
      loaded.artifacts[0]!.parts.length = 0
      const listed = (await store.list(listAll({ includeArtifacts: true }), sdkAnonymous)).tasks[0]!
      expect(listed).toEqual(saved)
      listed.status!.state = TaskState.TASK_STATE_REJECTED
      listed.artifacts.length = 0
      expect(await store.load("a", sdkAnonymous)).toEqual(saved)
    }))

  it.effect("beyond maxFinished the oldest ended tasks are forgotten; running and paused ones are kept", () =>
    Effect.promise(async () => {
      const { idsOf, store } = sdkStoreAt({ maxFinished: 2 })
      for (const id of ["w1", "w2", "w3"]) await store.save(sdkTaskOf(id, TaskState.TASK_STATE_WORKING), sdkAnonymous)
      await store.save(sdkTaskOf("s1", TaskState.TASK_STATE_SUBMITTED), sdkAnonymous)
      await store.save(sdkTaskOf("i1", TaskState.TASK_STATE_INPUT_REQUIRED), sdkAnonymous)
      await store.save(sdkTaskOf("u1", TaskState.TASK_STATE_UNSPECIFIED), sdkAnonymous)
      await store.save(sdkTaskOf("f1", TaskState.TASK_STATE_COMPLETED), sdkAnonymous)
      await store.save(sdkTaskOf("f2", TaskState.TASK_STATE_FAILED), sdkContextOf("t1", "alice"))
      await store.save(sdkTaskOf("f3", TaskState.TASK_STATE_CANCELED), sdkAnonymous)
      // The bound counts every tenant and caller together.
      expect(await store.load("f1", sdkAnonymous)).toBeUndefined()
      expect(await idsOf()).toEqual(["f3", "i1", "s1", "u1", "w1", "w2", "w3"])
      expect(await idsOf(sdkContextOf("t1", "alice"))).toEqual(["f2"])
      // A running task that ends joins the queue at its back.
      await store.save(sdkTaskOf("w1", TaskState.TASK_STATE_REJECTED), sdkAnonymous)
      expect(await idsOf(sdkContextOf("t1", "alice"))).toEqual([])
      expect(await idsOf()).toEqual(["f3", "i1", "s1", "u1", "w1", "w2", "w3"])
    }))

  it.effect("a save moves a task to the back: the one saved longest ago goes first", () =>
    Effect.promise(async () => {
      const { idsOf, store } = sdkStoreAt({ maxFinished: 2 })
      await store.save(sdkTaskOf("a", TaskState.TASK_STATE_COMPLETED), sdkAnonymous)
      await store.save(sdkTaskOf("b", TaskState.TASK_STATE_COMPLETED), sdkAnonymous)
      await store.save(sdkTaskOf("a", TaskState.TASK_STATE_COMPLETED, { metadata: { again: true } }), sdkAnonymous)
      await store.save(sdkTaskOf("c", TaskState.TASK_STATE_COMPLETED), sdkAnonymous)
      expect(await idsOf()).toEqual(["a", "c"])
      expect((await store.load("a", sdkAnonymous))?.metadata).toEqual({ again: true })
    }))

  it.effect("ended tasks are forgotten after retention, paused ones after their own, running ones never", () =>
    Effect.promise(async () => {
      const { clock, idsOf, store } = sdkStoreAt({ retention: "1 hour", interruptedRetention: "24 hours" })
      await store.save(sdkTaskOf("done", TaskState.TASK_STATE_COMPLETED), sdkAnonymous)
      await store.save(sdkTaskOf("input", TaskState.TASK_STATE_INPUT_REQUIRED), sdkAnonymous)
      await store.save(sdkTaskOf("auth", TaskState.TASK_STATE_AUTH_REQUIRED), sdkContextOf("t1", "bob"))
      await store.save(sdkTaskOf("run", TaskState.TASK_STATE_WORKING), sdkAnonymous)
      clock.now = 30 * 60 * 1000
      await store.save(sdkTaskOf("later", TaskState.TASK_STATE_FAILED), sdkAnonymous)
      clock.now = hour - 1
      expect(await idsOf()).toEqual(["done", "input", "later", "run"])
      // No save is needed for a task past retention to be gone: a read does not find it.
      clock.now = hour
      expect(await store.load("done", sdkAnonymous)).toBeUndefined()
      expect(await idsOf()).toEqual(["input", "later", "run"])
      clock.now = 24 * hour - 1
      expect(await idsOf()).toEqual(["input", "run"])
      expect((await store.load("auth", sdkContextOf("t1", "bob")))?.id).toBe("auth")
      clock.now = 24 * hour
      expect(await store.load("auth", sdkContextOf("t1", "bob"))).toBeUndefined()
      expect(await idsOf()).toEqual(["run"])
      clock.now = 1000 * hour
      expect(await idsOf()).toEqual(["run"])
    }))

  it.effect("a paused task that resumes is no longer subject to the paused retention", () =>
    Effect.promise(async () => {
      const { clock, idsOf, store } = sdkStoreAt({ retention: "1 hour", interruptedRetention: "2 hours" })
      await store.save(sdkTaskOf("t", TaskState.TASK_STATE_INPUT_REQUIRED), sdkAnonymous)
      clock.now = hour
      await store.save(sdkTaskOf("t", TaskState.TASK_STATE_WORKING), sdkAnonymous)
      clock.now = 10 * hour
      expect(await idsOf()).toEqual(["t"])
      await store.save(sdkTaskOf("t", TaskState.TASK_STATE_COMPLETED), sdkAnonymous)
      clock.now = 11 * hour - 1
      expect(await idsOf()).toEqual(["t"])
      clock.now = 11 * hour
      expect(await idsOf()).toEqual([])
    }))

  it.effect("a forgotten task's scope starts afresh: a later save of the same id is a new task", () =>
    Effect.promise(async () => {
      const { store } = sdkStoreAt({ maxFinished: 1 })
      const alice = sdkContextOf("t1", "alice")
      await store.save(sdkTaskOf("a", TaskState.TASK_STATE_COMPLETED), alice)
      await store.save(sdkTaskOf("b", TaskState.TASK_STATE_COMPLETED), sdkAnonymous)
      expect(await store.load("a", alice)).toBeUndefined()
      await store.save(sdkTaskOf("a", TaskState.TASK_STATE_WORKING), alice)
      expect((await store.load("a", alice))?.status?.state).toBe(TaskState.TASK_STATE_WORKING)
      expect(await store.load("a", sdkAnonymous)).toBeUndefined()
      expect((await store.load("b", sdkAnonymous))?.id).toBe("b")
    }))

  it.effect("the configured store reads the time from the Effect clock; the defaults are an hour, 10,000 and a day", () =>
    Effect.gen(function*() {
      const store = internalStore.toSdk(
        yield* Effect.scoped(makeStore.make({ _tag: "Memory" })),
        yield* Effect.runtime<never>()
      )
      const save = (task: Task) => Effect.promise(() => store.save(task, sdkAnonymous))
      const load = (id: string) => Effect.promise(() => store.load(id, sdkAnonymous))
      yield* save(sdkTaskOf("done", TaskState.TASK_STATE_COMPLETED))
      yield* save(sdkTaskOf("input", TaskState.TASK_STATE_INPUT_REQUIRED))
      yield* TestClock.adjust(Duration.millis(hour - 1))
      expect((yield* load("done"))?.id).toBe("done")
      yield* TestClock.adjust(Duration.millis(1))
      expect(yield* load("done")).toBeUndefined()
      yield* TestClock.adjust(Duration.millis(23 * hour - 1))
      expect((yield* load("input"))?.id).toBe("input")
      yield* TestClock.adjust(Duration.millis(1))
      expect(yield* load("input")).toBeUndefined()
      for (let i = 0; i <= 10_000; i++) yield* save(sdkTaskOf(`f${i}`, TaskState.TASK_STATE_COMPLETED))
      expect(yield* load("f0")).toBeUndefined()
      expect((yield* load("f1"))?.id).toBe("f1")
      expect((yield* load("f10000"))?.id).toBe("f10000")
    }))
})
