/**
 * The push outbox on PostgreSQL, shared by replicas, on the database of the
 * `test/globalSetup.postgres.ts` global setup or `DATABASE_URL`.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import { createRequire } from "node:module"
import * as A2AServer from "../src/A2AServer.js"
import * as internalPushOutbox from "../src/internal/server/push/pushOutbox.js"
import { callerOn, keyOf, serve, taskOf } from "./fixtures/callers.js"
import { databaseUrl } from "./fixtures/databaseUrl.js"
import { eventually } from "./fixtures/serverAgents.js"
import { type Received, switchable } from "./fixtures/webhook.js"

/** The outbox rows of the webhook tokens `tokens`, read straight from the database. */
const pendingOf = (tokens: ReadonlySet<string>): Effect.Effect<number> =>
  Effect.promise(async () => {
    const pg = createRequire(import.meta.url)("pg")
    const client = new (pg.default ?? pg).Client({ connectionString: databaseUrl() })
    await client.connect()
    try {
      const result = await client.query(`select headers from ${internalPushOutbox.table}`)
      return (result.rows as Array<{ headers: string }>).filter((row) =>
        tokens.has(JSON.parse(row.headers)["X-A2A-Notification-Token"])
      ).length
    } finally {
      await client.end()
    }
  })

describe("A2AServer's push outbox on PostgreSQL", () => {
  it.live(
    "two replicas on one database, both sweeping: every event reaches the webhook once, those a stopped pair left behind too",
    () =>
      Effect.gen(function*() {
        const outer = yield* Scope.make()
        const hook = yield* Scope.extend(switchable, outer)
        hook.setUp(true)
        const options = {
          taskStore: A2AServer.TaskStoreConfig.Postgres({ url: databaseUrl(), poolSize: 2 }),
          push: { allowPushTargets: ["127.0.0.1"] }
        }
        const tokenOf = (received: Received) => String(received.headers["x-a2a-notification-token"] ?? "")
        const deliveredTo = (tokens: ReadonlySet<string>) =>
          hook.delivered().filter((received) => tokens.has(tokenOf(received)))
        const finalOf = (received: Received) =>
          JSON.parse(received.body).statusUpdate?.status?.state === "TASK_STATE_FAILED"
        // A failing task on each replica, in turn, each with its own webhook token.
        const sendOn = (servers: ReadonlyArray<{ readonly url: string }>, tokens: Set<string>, count: number) =>
          Effect.forEach(Array.from({ length: count }, (_, i) => servers[i % servers.length]!), (server) =>
            Effect.gen(function*() {
              const token = `tok-${crypto.randomUUID()}`
              tokens.add(token)
              const a = yield* callerOn(server.url, "JSONRPC", keyOf("a"))
              taskOf(
                yield* a.sendWith("fail", {
                  taskPushNotificationConfig: {
                    tenant: "",
                    id: "",
                    taskId: "",
                    url: hook.url,
                    token,
                    authentication: undefined
                  }
                })
              )
            }))
        const onceEach = (tokens: ReadonlySet<string>) => {
          const bodies = deliveredTo(tokens).map((received) =>
            received.body
          )
          expect(new Set(bodies).size).toBe(bodies.length)
          for (const token of tokens) {
            expect(deliveredTo(new Set([token])).filter(finalOf)).toHaveLength(1)
          }
        }

        // Both replicas up and sweeping: each delivery is sent by the replica that wrote it, once.
        const pair = yield* Scope.make()
        const [a, b] = yield* Effect.all([serve(options), serve(options)], { concurrency: 2 }).pipe(Scope.extend(pair))
        const live = new Set<string>()
        yield* sendOn([a.server, b.server], live, 6)
        yield* eventually(
          Effect.sync(() => [...live].every((token) => deliveredTo(new Set([token])).some(finalOf))),
          (done) => done,
          1000
        )
        yield* eventually(pendingOf(live), (n) => n === 0, 500)
        onceEach(live)

        // The webhook down: the pair leaves deliveries behind when it stops.
        hook.setUp(false)
        const left = new Set<string>()
        yield* sendOn([a.server, b.server], left, 6)
        yield* eventually(
          Effect.sync(() => hook.received.filter((r) => left.has(tokenOf(r))).length),
          (n) => n >= 6,
          500
        )
        yield* Scope.close(pair, Exit.void)
        const pending = yield* pendingOf(left)
        expect(pending).toBeGreaterThanOrEqual(6)
        expect(deliveredTo(left)).toHaveLength(0)

        // Two new replicas start together and race for the rows: each is sent by one of them.
        hook.setUp(true)
        const next = yield* Scope.make()
        yield* Effect.all([serve(options), serve(options)], { concurrency: 2 }).pipe(Scope.extend(next))
        yield* eventually(pendingOf(left), (n) => n === 0, 1500)
        yield* Effect.sleep("500 millis")
        expect(deliveredTo(left)).toHaveLength(pending)
        onceEach(left)
        yield* Scope.close(next, Exit.void)
        yield* Scope.close(outer, Exit.void)
      }),
    90_000
  )
})
