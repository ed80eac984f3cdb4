import { TaskState } from "@a2a-js/sdk"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as internalAuthentication from "../../../src/internal/server/authentication.js"
import * as internalMemoryTaskStore from "../../../src/internal/server/memoryTaskStore.js"
import * as internalPush from "../../../src/internal/server/push.js"
import { eventually, seededTask } from "../../fixtures/serverAgents.js"

describe("server/push", () => {
  it.scopedLive("the configs of a task the bounded memory store forgets go with it, in the scope of its caller only", () =>
    Effect.gen(function*() {
      let now = 0
      const tasks = internalMemoryTaskStore.make({ retention: "1 second", now: () => now })
      const push = yield* internalPush.make({ allowPushTargets: ["127.0.0.1"] }, undefined, "push-test", tasks)
      const as = (owner: string) => internalAuthentication.ownerContext("", owner)
      const config = (id: string, taskId: string) => ({ tenant: "", id, taskId, url: "http://127.0.0.1:9/hook", token: "t", authentication: undefined })
      const ended = seededTask("task-1", TaskState.TASK_STATE_COMPLETED, new Date(0).toISOString())
      yield* Effect.promise(() => tasks.save(ended, as("a")))
      yield* Effect.promise(() => push.store.save("task-1", as("a"), config("c1", "task-1")))
      yield* Effect.promise(() => push.store.save("task-1", as("a"), config("c2", "task-1")))
      // Another caller's config of a task of the same id, which the store keeps for that caller.
      yield* Effect.promise(() => tasks.save(ended, as("b")))
      yield* Effect.promise(() => push.store.save("task-1", as("b"), config("c3", "task-1")))
      const configs = (owner: string) => Effect.promise(() => push.store.load("task-1", as(owner)))
      expect((yield* configs("a")).map((c) => c.id)).toEqual(["c1", "c2"])

      // Retention passes for a's task only: b's was saved again since.
      now = 600
      yield* Effect.promise(() => tasks.save(ended, as("b")))
      now = 1_200
      expect(yield* Effect.promise(() => tasks.load("task-1", as("a")))).toBeUndefined()
      yield* eventually(configs("a"), (left) => left.length === 0)
      expect((yield* configs("b")).map((c) => c.id)).toEqual(["c3"])
    }))
})
