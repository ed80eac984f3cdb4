/**
 * The ledger's layers: one per backend, each a store under the same
 * decisions. The SQL modules (`@effect/sql` and a driver) are optional peers,
 * loaded only when their layer is built, so that importing the ledger (as
 * every client does) loads none of them, nor better-sqlite3's native addon.
 *
 * @internal
 */
import type * as PgClientModule from "@effect/sql-pg/PgClient"
import type * as SqliteClientModule from "@effect/sql-sqlite-node/SqliteClient"
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import type * as Ledger from "../../IdempotencyLedger.js"
import * as Peer from "../peer.js"
import { IdempotencyError } from "./errors.js"
import { IdempotencyLedger, make } from "./ledger.js"
import * as Memory from "./memory.js"
import type * as Sql from "./sql.js"

export const layerMemory = (options?: Ledger.Options): Layer.Layer<IdempotencyLedger> =>
  Layer.sync(IdempotencyLedger, () => make(Memory.make(), options))

const migrationFailed = (cause: SqlError) =>
  new IdempotencyError({ reason: "Unavailable", detail: "the ledger table could not be created", cause })

const missing = (failure: Peer.Missing) =>
  new IdempotencyError({ reason: "MissingPackage", detail: failure.message, cause: failure.cause })

/** The store over `@effect/sql`, whose module loads it. */
const loadSql = (): Promise<typeof Sql> => import("./sql.js")

const layerOver = (
  sql: typeof Sql,
  options: Ledger.SqlOptions | undefined
): Layer.Layer<IdempotencyLedger, IdempotencyError, SqlClient.SqlClient> =>
  Layer.effect(
    IdempotencyLedger,
    Effect.gen(function*() {
      const table = options?.table ?? sql.defaultTable
      yield* Effect.mapError(sql.migrate(table), migrationFailed)
      return make(yield* sql.make(table), options)
    })
  )

export const layerSql = (
  options?: Ledger.SqlOptions
): Layer.Layer<IdempotencyLedger, IdempotencyError, SqlClient.SqlClient> =>
  Layer.unwrapEffect(
    Peer.load(["@effect/sql"], "IdempotencyLedger.layerSql", loadSql).pipe(
      Effect.mapBoth({ onFailure: missing, onSuccess: (sql) => layerOver(sql, options) })
    )
  )

/** A SQL ledger over a driver module loaded, with `@effect/sql`, when the layer is built; `packages` are what `use` needs. */
const layerDriver = <M>(
  options: Ledger.SqlOptions,
  packages: ReadonlyArray<string>,
  use: string,
  load: () => Promise<M>,
  client: (driver: M) => Layer.Layer<SqlClient.SqlClient, IdempotencyError>
): Layer.Layer<IdempotencyLedger, IdempotencyError> =>
  Layer.unwrapEffect(
    Peer.load(packages, use, () => Promise.all([loadSql(), load()])).pipe(
      Effect.mapBoth({
        onFailure: missing,
        onSuccess: ([sql, driver]) => layerOver(sql, options).pipe(Layer.provide(client(driver)))
      })
    )
  )

const sqliteClient = (filename: string) => (SqliteClient: typeof SqliteClientModule) =>
  SqliteClient.layer({ filename }).pipe(
    // Opening the file throws (a missing directory, a file that is not a database).
    Layer.catchAllCause((cause) => {
      const error = Cause.squash(cause)
      return Layer.fail(
        new IdempotencyError({
          reason: "Unavailable",
          detail: `could not open the SQLite ledger at ${filename}: ${
            error instanceof Error ? error.message : String(error)
          }`,
          cause: error
        })
      )
    })
  )

export const layerSqlite = (
  options: Ledger.SqlOptions & { readonly filename: string }
): Layer.Layer<IdempotencyLedger, IdempotencyError> =>
  layerDriver(
    options,
    ["@effect/sql", "@effect/sql-sqlite-node", "better-sqlite3"],
    "IdempotencyLedger.layerSqlite",
    // The addon first: the driver's module loads without it, and would fail only when opening the file.
    () => Peer.betterSqlite3().then(() => import("@effect/sql-sqlite-node/SqliteClient")),
    sqliteClient(options.filename)
  )

const pgClient =
  (url: string | Redacted.Redacted, maxConnections: number | undefined) => (PgClient: typeof PgClientModule) =>
    PgClient.layer({
      url: typeof url === "string" ? Redacted.make(url) : url,
      ...(maxConnections === undefined ? {} : { maxConnections })
    }).pipe(
      Layer.mapError((cause) =>
        new IdempotencyError({ reason: "Unavailable", detail: "could not connect to PostgreSQL", cause })
      )
    )

export const layerPg = (
  options: Ledger.SqlOptions & {
    readonly url: string | Redacted.Redacted
    readonly maxConnections?: number | undefined
  }
): Layer.Layer<IdempotencyLedger, IdempotencyError> =>
  layerDriver(
    options,
    ["@effect/sql", "@effect/sql-pg"],
    "IdempotencyLedger.layerPg",
    () => import("@effect/sql-pg/PgClient"),
    pgClient(options.url, options.maxConnections)
  )
