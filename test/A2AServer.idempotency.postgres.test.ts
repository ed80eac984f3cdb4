/**
 * Two A2AServer replicas sharing one PostgreSQL (idempotency ledger and task
 * store): a retry that lands on the other replica is deduplicated, and
 * concurrent first requests with one key on both replicas run the task once.
 */
import { SendMessageRequest, TaskState } from "@a2a-js/sdk"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { randomBytes } from "node:crypto"
import * as A2AServer from "../src/A2AServer.js"
import * as AgentExecutor from "../src/AgentExecutor.js"
import * as Idempotency from "../src/Idempotency.js"
import * as IdempotencyLedger from "../src/IdempotencyLedger.js"
import { databaseUrl } from "./fixtures/databaseUrl.js"
import { keyed, rpc, sendTo, textOf } from "./fixtures/serverAgents.js"

const card = { name: "replicated", description: "Two replicas on one PostgreSQL" }

/** Two replicas, each with its own ledger connection and owner, on one table and one task store. */
const replicas = (runs: Map<string, number>) =>
  Effect.gen(function*() {
    const url = databaseUrl()
    const table = `idem_srv_${randomBytes(5).toString("hex")}`
    const agent: AgentExecutor.Agent = (request) =>
      Effect.gen(function*() {
        const key = String(request.message.metadata?.[Idempotency.metadataKey] ?? "")
        runs.set(key, (runs.get(key) ?? 0) + 1)
        yield* Effect.sleep("200 millis")
        return AgentExecutor.completedText(`booked ${key}`)
      })
    const replica = (owner: string) =>
      Effect.gen(function*() {
        // Built in the test's scope: the ledger's pool must outlive `make`, as long as the server.
        const ledger = yield* Layer.build(
          IdempotencyLedger.layerPg({ url, table, owner, maxConnections: 3, pollInterval: "20 millis" })
        )
        return yield* A2AServer.make({
          agent,
          card,
          taskStore: A2AServer.TaskStoreConfig.Postgres({ url, poolSize: 2 }),
          idempotency: {}
        }).pipe(Effect.provide(ledger))
      })
    // The first one creates the ledger table; the second finds it.
    const a = yield* replica("replica-a")
    const b = yield* replica("replica-b")
    return { a, b }
  })

describe("A2AServer idempotency on two replicas sharing PostgreSQL", () => {
  it.scopedLive(
    "a retry that lands on the other replica gets the same task without running again",
    () =>
      Effect.gen(function*() {
        const runs = new Map<string, number>()
        const { a, b } = yield* replicas(runs)
        const first = yield* sendTo(a.url, keyed("book", "pg-k-1"))
        const retry = yield* sendTo(b.url, keyed("book", "pg-k-1"))
        expect(first.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
        expect(retry.id).toBe(first.id)
        expect(retry.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
        expect(textOf(retry)).toBe("booked pg-k-1")
        expect(runs.get("pg-k-1")).toBe(1)
      }),
    { timeout: 60_000 }
  )

  it.scopedLive(
    "concurrent first requests with one key on both replicas run the task once",
    () =>
      Effect.gen(function*() {
        const runs = new Map<string, number>()
        const { a, b } = yield* replicas(runs)
        for (const key of ["pg-k-2", "pg-k-3", "pg-k-4"]) {
          const [fromA, fromB] = yield* Effect.all([
            sendTo(a.url, keyed("book", key)),
            sendTo(b.url, keyed("book", key))
          ], {
            concurrency: 2
          })
          expect(fromB.id).toBe(fromA.id)
          expect(fromA.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
          expect(fromB.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
          expect(runs.get(key)).toBe(1)
        }
      }),
    { timeout: 60_000 }
  )

  it.scopedLive(
    "a key or tenant PostgreSQL cannot store or keep apart (NUL, a lone surrogate, too long) is refused as invalid params, not as an outage",
    () =>
      Effect.gen(function*() {
        const runs = new Map<string, number>()
        const { a } = yield* replicas(runs)
        const refused = [["", "pg-k\u0000-5", "NUL"], ["ac\u0000me", "pg-k-6", "NUL"], [
          "",
          "pg-k-\uD800",
          "lone surrogate"
        ], ["", "k".repeat(3000), "2000 bytes"]] as const
        for (const [tenant, key, why] of refused) {
          const params = SendMessageRequest.toJSON({
            tenant,
            message: keyed("book", key),
            configuration: undefined,
            metadata: {}
          })
          const { text } = yield* rpc(`${a.url}/a2a/jsonrpc`, "SendMessage", params)
          expect(JSON.parse(text)).toMatchObject({ error: { code: -32602, message: expect.stringContaining(why) } })
        }
        expect(runs.size).toBe(0)
      }),
    { timeout: 60_000 }
  )
})
