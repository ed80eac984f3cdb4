/**
 * The native memory task store: the shared contract, and its bounds, which
 * are the SDK-shaped bounded store's (see memoryTaskStore.test.ts).
 */
import { TaskState } from "@a2a-js/sdk"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, TestClock } from "effect"
import * as makeStore from "../../../../src/internal/server/store/makeStore.js"
import * as memoryStore from "../../../../src/internal/server/store/memoryStore.js"
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
