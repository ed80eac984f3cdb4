import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect } from "effect"
import { createRequire } from "node:module"
import * as internalRunClaims from "../../../../src/internal/server/replication/runClaims.js"
import { databaseUrl } from "../../../fixtures/databaseUrl.js"

/** Runs `statement` on the test's PostgreSQL, as another replica would. */
const query = (statement: string, values: Array<unknown>) =>
  Effect.promise(async () => {
    const pg = createRequire(import.meta.url)("pg")
    const client = new (pg.default ?? pg).Client({ connectionString: databaseUrl() })
    await client.connect()
    try {
      return (await client.query(statement, values)).rows as Array<Record<string, unknown>>
    } finally {
      await client.end()
    }
  })

describe("run claims", () => {
  it.scopedLive("a replica whose claim another swept (it stalled past its lease) stops that run at its next renewal", () =>
    Effect.gen(function*() {
      const lost = yield* Deferred.make<ReadonlyArray<string>>()
      const claims = yield* internalRunClaims.make({
        url: databaseUrl(),
        lease: "900 millis",
        sweep: "1 hour",
        onLapsed: () => Effect.void,
        onLost: (taskIds) => Deferred.succeed(lost, taskIds)
      })
      const taskId = crypto.randomUUID()
      const kept = crypto.randomUUID()
      expect(yield* claims.acquire(taskId, { tenant: "", owner: "a" })).toBe(true)
      expect(yield* claims.acquire(kept, { tenant: "", owner: "a" })).toBe(true)
      yield* query(`delete from ${internalRunClaims.table} where task_id = $1`, [taskId])
      expect(yield* Effect.timeout(Deferred.await(lost), "3 seconds")).toEqual([taskId])
      // The other claim is still this replica's, renewed.
      const rows = yield* query(`select replica from ${internalRunClaims.table} where task_id = $1`, [kept])
      expect(rows).toEqual([{ replica: claims.replica }])
    }))

  it.scopedLive("a claim let lapse is found by the next sweep, on any replica", () =>
    Effect.gen(function*() {
      const found = yield* Deferred.make<string>()
      const a = yield* internalRunClaims.make({
        url: databaseUrl(),
        sweep: "1 hour",
        onLapsed: () => Effect.void,
        onLost: () => Effect.void
      })
      const taskId = crypto.randomUUID()
      yield* internalRunClaims.make({
        url: databaseUrl(),
        sweep: "100 millis",
        onLapsed: (lapsed) => lapsed.taskId === taskId ? Deferred.succeed(found, lapsed.replica) : Effect.void,
        onLost: () => Effect.void
      })
      expect(yield* a.acquire(taskId, { tenant: "", owner: "a" })).toBe(true)
      yield* a.lapse(taskId)
      expect(yield* Effect.timeout(Deferred.await(found), "3 seconds")).toBe(a.replica)
    }))
})
