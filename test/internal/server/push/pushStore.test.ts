import { DefaultRequestHandler, InMemoryTaskStore, type PushNotificationStore } from "@a2a-js/sdk/server"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import * as internalPushStore from "../../../../src/internal/server/push/pushStore.js"
import * as internalMakeStore from "../../../../src/internal/server/store/makeStore.js"
import type * as internalTaskStore from "../../../../src/internal/server/store/taskStore.js"
import { agentMessage, cardFor, ScriptedExecutor, sdkRequest } from "../../../fixtures/peers.js"
import {
  callerA,
  callerB,
  configOf,
  expectRefused,
  policy,
  pushStoreContract,
  refusalOf
} from "../../../fixtures/pushStores.js"

const tempDir = Effect.acquireRelease(
  Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "effect-a2a-push-"))),
  (dir) => Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
)

const sqliteAt = (filename: string): internalTaskStore.Config => ({ _tag: "Sqlite", filename })

const memory = () => internalPushStore.make("memory", policy)

pushStoreContract("memory", memory, { database: false })
pushStoreContract(
  "SQLite",
  () => Effect.flatMap(tempDir, (dir) => internalPushStore.make(sqliteAt(path.join(dir, "tasks.db")), policy)),
  { database: true }
)

describe("memory: which tasks have configs", () => {
  const url = "http://127.0.0.2:9/hook"

  it.scoped("a task has configs while any caller keeps one: saved, replaced, deleted, or forgotten with its task", () =>
    Effect.gen(function*() {
      const store = yield* memory()
      const save = (taskId: string, caller: typeof callerA, id: string) =>
        Effect.promise(() => store.save(taskId, caller, configOf(url, id, taskId)))
      expect(store.mayHaveConfigs("t1")).toBe(false)
      yield* save("t1", callerA, "c1")
      yield* save("t1", callerA, "c1")
      yield* save("t1", callerA, "c2")
      yield* save("t1", callerB, "c3")
      expect([store.mayHaveConfigs("t1"), store.mayHaveConfigs("t2")]).toEqual([true, false])
      // A refused save keeps nothing, and marks nothing.
      yield* refusalOf(store.save("t2", callerA, configOf("http://10.0.0.1/h", "x", "t2")))
      expect(store.mayHaveConfigs("t2")).toBe(false)

      // a's last config of t1 goes; b's keeps the task marked until b's task is forgotten.
      yield* Effect.promise(() => store.delete("t1", callerA, "c1"))
      yield* Effect.promise(() => store.delete("t1", callerA, "c2"))
      expect(yield* Effect.promise(() => store.load("t1", callerA))).toEqual([])
      expect(store.mayHaveConfigs("t1")).toBe(true)
      store.forgetTask!("t1", "", "a")
      expect(store.mayHaveConfigs("t1")).toBe(true)
      store.forgetTask!("t1", "", "b")
      expect(store.mayHaveConfigs("t1")).toBe(false)
      expect(yield* Effect.promise(() => store.load("t1", callerB))).toEqual([])

      // Saved again after it all went: marked again.
      yield* save("t1", callerA, "c4")
      expect(store.mayHaveConfigs("t1")).toBe(true)
      expect((yield* Effect.promise(() => store.loadWithMetadata!("t1", callerA))).map((s) => s.config.id)).toEqual([
        "c4"
      ])
    }))

  it.scoped("a database store, which other servers save to as well, never says a task has none", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const store = yield* internalPushStore.make(sqliteAt(path.join(dir, "tasks.db")), policy)
      expect(store.mayHaveConfigs("never-saved")).toBe(true)
      expect(store.forgetTask).toBeUndefined()
    }))
})

describe("SQLite", () => {
  it.scoped("keeps configs across a reopen, beside the task table in the same file", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const config = sqliteAt(path.join(dir, "tasks.db"))
      const saved = configOf("http://127.0.0.2:9/hook", "kept")
      const first = yield* Scope.make()
      const store = yield* Scope.extend(internalPushStore.make(config, policy), first)
      yield* Effect.promise(() => store.save("t1", callerA, saved))
      yield* Scope.close(first, Exit.void)
      // The task store opens the same file, its own table migrated beside the push table.
      yield* internalMakeStore.make(config)
      const reopened = yield* internalPushStore.make(config, policy)
      expect(yield* Effect.promise(() => reopened.load("t1", callerA))).toEqual([saved])
    }))

  it.scoped("refuses an in-memory file, naming the push-config store", () =>
    Effect.gen(function*() {
      const failure = yield* Effect.flip(internalPushStore.make(sqliteAt(":memory:"), policy))
      expect(failure.reason).toBe("Connection")
      expect(failure.message).toMatch(/push-config store/)
    }))
})

describe("through the SDK's request handler", () => {
  const handlerWith = (store: PushNotificationStore) => {
    const tasks = new InMemoryTaskStore()
    const card = cardFor("http://127.0.0.1:9/rpc")
    const handler = new DefaultRequestHandler(
      { ...card, capabilities: { streaming: true, pushNotifications: true, extensions: [] } },
      tasks,
      new ScriptedExecutor(tasks),
      undefined,
      store
    )
    return { handler, tasks }
  }

  it.scoped("refuses SendMessage's config before the agent runs", () =>
    Effect.gen(function*() {
      const store = yield* memory()
      const { handler, tasks } = handlerWith(store)
      const request = sdkRequest("complete")
      const refused = yield* refusalOf(handler.sendMessage({
        ...request,
        configuration: {
          acceptedOutputModes: [],
          taskPushNotificationConfig: configOf("http://10.0.0.1/h"),
          returnImmediately: false
        }
      }, callerA))
      expectRefused(refused, /^push URL host 10\.0\.0\.1 is a private address/)
      const listed = yield* Effect.promise(() =>
        tasks.list({
          tenant: "",
          contextId: "",
          status: 0,
          pageSize: 10,
          pageToken: "",
          historyLength: undefined,
          statusTimestampAfter: undefined,
          includeArtifacts: false
        }, callerA)
      )
      expect(listed.tasks).toEqual([])
    }))

  it.scoped("refuses the create call, and stores an allowed one", () =>
    Effect.gen(function*() {
      const store = yield* memory()
      const { handler, tasks } = handlerWith(store)
      yield* Effect.promise(() =>
        tasks.save({
          id: "t1",
          contextId: "ctx",
          status: { state: 2, message: agentMessage("working"), timestamp: new Date().toISOString() },
          artifacts: [],
          history: [],
          metadata: undefined
        }, callerA)
      )
      expectRefused(
        yield* refusalOf(handler.createTaskPushNotificationConfig(configOf("http://[::ffff:7f00:1]/h"), callerA)),
        /is a loopback address/
      )
      const created = yield* Effect.promise(() =>
        handler.createTaskPushNotificationConfig(configOf("http://127.0.0.2:9/hook", "ok"), callerA)
      )
      expect(created.url).toBe("http://127.0.0.2:9/hook")
      expect((yield* Effect.promise(() => store.load("t1", callerA))).map((config) => config.id)).toEqual(["ok"])
    }))
})
