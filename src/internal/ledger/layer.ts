/**
 * The ledger's layers: one per backend, each a store under the same
 * decisions. The SQL drivers are loaded only when their layer is built, so
 * that importing the ledger (as every client does) loads neither
 * better-sqlite3's native addon nor `pg`.
 *
 * @internal
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import type * as Ledger from "../../IdempotencyLedger.js"
import { IdempotencyError } from "./errors.js"
import { IdempotencyLedger, make } from "./ledger.js"
import * as Memory from "./memory.js"

// The SQL store (and `@effect/sql` under it) loads when a SQL ledger is built, as the drivers do: the memory ledger,
// and a client that only imports the package, load none of it.
const loadSql = () => import("./sql.js")

export const layerMemory = (options?: Ledger.Options): Layer.Layer<IdempotencyLedger> =>
  Layer.sync(IdempotencyLedger, () => make(Memory.make(), options))

const migrationFailed = (cause: SqlError) =>
  new IdempotencyError({ reason: "Unavailable", detail: "the ledger table could not be created", cause })

export const layerSql = (
  options?: Ledger.SqlOptions
): Layer.Layer<IdempotencyLedger, IdempotencyError, SqlClient.SqlClient> =>
  Layer.effect(
    IdempotencyLedger,
    Effect.gen(function*() {
      const Sql = yield* Effect.tryPromise({
        try: loadSql,
        catch: (cause) => new IdempotencyError({ reason: "Unavailable", detail: "layerSql needs the @effect/sql package", cause })
      })
      const table = options?.table ?? Sql.defaultTable
      yield* Effect.mapError(Sql.migrate(table), migrationFailed)
      return make(yield* Sql.make(table), options)
    })
  )

/** A SQL ledger over a driver module loaded when the layer is built; `missing` says what could not be loaded. */
const layerDriver = <M>(
  options: Ledger.SqlOptions,
  load: () => Promise<M>,
  missing: string,
  client: (driver: M) => Layer.Layer<SqlClient.SqlClient, IdempotencyError>
): Layer.Layer<IdempotencyLedger, IdempotencyError> =>
  Layer.unwrapEffect(
    Effect.tryPromise({
      try: load,
      catch: (cause) => new IdempotencyError({ reason: "Unavailable", detail: missing, cause })
    }).pipe(
      Effect.map((driver) => layerSql(options).pipe(Layer.provide(client(driver))))
    )
  )

const sqliteClient = (filename: string) => (SqliteClient: typeof import("@effect/sql-sqlite-node/SqliteClient")) =>
  SqliteClient.layer({ filename }).pipe(
    // Opening the file throws (a missing directory, a file that is not a database).
    Layer.catchAllCause((cause) =>
      Layer.fail(
        new IdempotencyError({
          reason: "Unavailable",
          detail: `could not open the SQLite ledger at ${filename}`,
          cause: Cause.squash(cause)
        })
      )
    )
  )

export const layerSqlite = (
  options: Ledger.SqlOptions & { readonly filename: string }
): Layer.Layer<IdempotencyLedger, IdempotencyError> =>
  layerDriver(
    options,
    () => import("@effect/sql-sqlite-node/SqliteClient"),
    "layerSqlite needs the @effect/sql-sqlite-node package and its better-sqlite3 addon",
    sqliteClient(options.filename)
  )

const pgClient = (url: string | Redacted.Redacted, maxConnections: number | undefined) =>
(PgClient: typeof import("@effect/sql-pg/PgClient")) =>
  PgClient.layer({
    url: typeof url === "string" ? Redacted.make(url) : url,
    ...(maxConnections === undefined ? {} : { maxConnections })
  }).pipe(
    Layer.mapError((cause) => new IdempotencyError({ reason: "Unavailable", detail: "could not connect to PostgreSQL", cause }))
  )

export const layerPg = (
  options: Ledger.SqlOptions & {
    readonly url: string | Redacted.Redacted
    readonly maxConnections?: number | undefined
  }
): Layer.Layer<IdempotencyLedger, IdempotencyError> =>
  layerDriver(options, () => import("@effect/sql-pg/PgClient"), "layerPg needs the @effect/sql-pg package", pgClient(options.url, options.maxConnections))
