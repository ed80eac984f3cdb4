import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { vi } from "vitest"
import * as Idempotency from "../../../src/Idempotency.js"
import * as IdempotencyLedger from "../../../src/IdempotencyLedger.js"

// The drivers are imported only when their layer is built: a driver that cannot be loaded
// (a missing package, a native addon built for another Node) fails that layer, typed.
vi.mock("@effect/sql-sqlite-node/SqliteClient", () => {
  throw new Error("better-sqlite3 was compiled against a different Node.js version")
})
vi.mock("@effect/sql-pg/PgClient", () => {
  throw new Error("Cannot find package '@effect/sql-pg'")
})

describe("IdempotencyLedger layers", () => {
  it.scoped("layerSqlite fails with MissingPackage, naming what to install", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Layer.build(IdempotencyLedger.layerSqlite({ filename: ":memory:" })))
      expect(error).toBeInstanceOf(IdempotencyLedger.IdempotencyError)
      expect((error as IdempotencyLedger.IdempotencyError).reason).toBe("MissingPackage")
      const detail = (error as IdempotencyLedger.IdempotencyError).detail
      expect(detail).toContain(
        "install @effect/sql, @effect/sql-sqlite-node and better-sqlite3 to use IdempotencyLedger.layerSqlite (npm install @effect/sql@^"
      )
    }))

  it.scoped("layerPg fails with MissingPackage, naming what to install", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Layer.build(IdempotencyLedger.layerPg({ url: "postgres://localhost/none" })))
      expect(error).toBeInstanceOf(IdempotencyLedger.IdempotencyError)
      expect(error.reason).toBe("MissingPackage")
      expect(error.detail).toContain(
        "install @effect/sql and @effect/sql-pg to use IdempotencyLedger.layerPg (npm install"
      )
    }))

  it.effect("layerMemory needs neither driver", () =>
    Effect.gen(function*() {
      let runs = 0
      const charge = Effect.sync(() => ++runs)
      const first = yield* Idempotency.once("order-17", charge, { success: Schema.Number })
      const again = yield* Idempotency.once("order-17", charge, { success: Schema.Number })
      expect([first, again, runs]).toEqual([1, 1, 1])
    }).pipe(Effect.provide(IdempotencyLedger.layerMemory())))
})
