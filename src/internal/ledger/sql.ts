/**
 * The store over `@effect/sql`'s `SqlClient`: one implementation for SQLite
 * and PostgreSQL. Every primitive is a single statement (`INSERT … ON
 * CONFLICT`, guarded `UPDATE`/`DELETE … RETURNING`), so two connections or
 * two replicas racing on one key are ordered by the database itself.
 *
 * @internal
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { Row, RowId, Store } from "./store.js"

/** PostgreSQL returns BIGINT as a string, SQLite as a number. */
const Millis = Schema.Union(Schema.Number, Schema.NumberFromString)

const SqlRow = Schema.Struct({
  scope: Schema.Literal("request", "tool"),
  tenant: Schema.String,
  principal: Schema.String,
  idem_key: Schema.String,
  fingerprint: Schema.String,
  task_id: Schema.NullOr(Schema.String),
  state: Schema.Literal("running", "finished"),
  result: Schema.NullOr(Schema.String),
  lease_token: Schema.NullOr(Schema.String),
  lease_owner: Schema.NullOr(Schema.String),
  lease_expires_at: Schema.NullOr(Millis),
  created_at: Millis,
  finished_at: Schema.NullOr(Millis)
})

const decodeRows = (rows: ReadonlyArray<unknown>): Effect.Effect<ReadonlyArray<Row>, SqlError> =>
  Schema.decodeUnknown(Schema.Array(SqlRow))(rows).pipe(
    Effect.map((decoded) =>
      decoded.map((row): Row => ({
        scope: row.scope,
        tenant: row.tenant,
        principal: row.principal,
        key: row.idem_key,
        fingerprint: row.fingerprint,
        taskId: row.task_id,
        state: row.state,
        result: row.result,
        leaseToken: row.lease_token,
        leaseOwner: row.lease_owner,
        leaseExpiresAt: row.lease_expires_at,
        createdAt: row.created_at,
        finishedAt: row.finished_at
      }))
    ),
    Effect.mapError((cause) => new SqlError({ cause, message: "Invalid idempotency ledger row" }))
  )

/** The default table name. */
export const defaultTable = "effect_a2a_idempotency"

/**
 * Creates the table and its indexes. Safe to run any number of times, also
 * from several replicas at once: on PostgreSQL concurrent `CREATE … IF NOT
 * EXISTS` can still collide in the catalog, so it runs under an advisory lock.
 */
export const migrate = (table: string): Effect.Effect<void, SqlError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const lock = sql.onDialectOrElse({
      pg: () => sql`SELECT pg_advisory_xact_lock(hashtext(${table}))`.pipe(Effect.asVoid),
      orElse: () => Effect.void
    })
    yield* Effect.all([
      lock,
      sql`CREATE TABLE IF NOT EXISTS ${sql(table)} (
        scope TEXT NOT NULL,
        tenant TEXT NOT NULL,
        principal TEXT NOT NULL,
        idem_key TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        task_id TEXT,
        state TEXT NOT NULL,
        result TEXT,
        lease_token TEXT,
        lease_owner TEXT,
        lease_expires_at BIGINT,
        created_at BIGINT NOT NULL,
        finished_at BIGINT,
        PRIMARY KEY (scope, tenant, principal, idem_key)
      )`,
      sql`CREATE INDEX IF NOT EXISTS ${sql(`${table}_created_at`)} ON ${sql(table)} (created_at)`,
      sql`CREATE INDEX IF NOT EXISTS ${sql(`${table}_lease`)} ON ${sql(table)} (state, lease_expires_at)`
    ], { discard: true }).pipe(sql.withTransaction)
  })

export const make = (table: string): Effect.Effect<Store<SqlError>, never, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const t = sql(table)
    const where = (id: RowId) =>
      sql`scope = ${id.scope} AND tenant = ${id.tenant} AND principal = ${id.principal} AND idem_key = ${id.key}`
    const changed = (rows: ReadonlyArray<unknown>) => rows.length > 0

    const store: Store<SqlError> = {
      insert: (row, staleBefore, now) =>
        sql`INSERT INTO ${t} ${
          sql.insert({
            scope: row.scope,
            tenant: row.tenant,
            principal: row.principal,
            idem_key: row.key,
            fingerprint: row.fingerprint,
            task_id: row.taskId,
            state: row.state,
            result: row.result,
            lease_token: row.leaseToken,
            lease_owner: row.leaseOwner,
            lease_expires_at: row.leaseExpiresAt,
            created_at: row.createdAt,
            finished_at: row.finishedAt
          })
        }
        ON CONFLICT (scope, tenant, principal, idem_key) DO UPDATE SET
          fingerprint = excluded.fingerprint, task_id = excluded.task_id, state = excluded.state,
          result = excluded.result, lease_token = excluded.lease_token, lease_owner = excluded.lease_owner,
          lease_expires_at = excluded.lease_expires_at, created_at = excluded.created_at,
          finished_at = excluded.finished_at
        WHERE ${t}.created_at < ${staleBefore}
          AND (${t}.state = 'finished' OR ${t}.lease_expires_at <= ${now})
        RETURNING idem_key`.pipe(Effect.map(changed)),
      get: (id) =>
        sql`SELECT * FROM ${t} WHERE ${where(id)}`.pipe(
          Effect.flatMap(decodeRows),
          Effect.map((rows) => Option.fromNullable(rows[0]))
        ),
      finish: (id, result, finishedAt, guard) =>
        sql`UPDATE ${t} SET state = 'finished', result = ${result}, finished_at = ${finishedAt},
            lease_token = NULL, lease_expires_at = NULL
          WHERE ${where(id)} AND state = 'running'
            ${guard.token === undefined ? sql`` : sql`AND lease_token = ${guard.token}`}
            ${guard.expiredAt === undefined ? sql`` : sql`AND lease_expires_at <= ${guard.expiredAt}`}
          RETURNING idem_key`.pipe(Effect.map(changed)),
      renew: (id, token, expiresAt) =>
        sql`UPDATE ${t} SET lease_expires_at = ${expiresAt}
          WHERE ${where(id)} AND state = 'running' AND lease_token = ${token}
          RETURNING idem_key`.pipe(Effect.map(changed)),
      takeover: (id, oldToken, lease, now) =>
        sql`UPDATE ${t} SET lease_token = ${lease.token}, lease_owner = ${lease.owner},
            lease_expires_at = ${lease.expiresAt}
          WHERE ${where(id)} AND state = 'running' AND lease_token = ${oldToken} AND lease_expires_at <= ${now}
          RETURNING idem_key`.pipe(Effect.map(changed)),
      release: (id, token) =>
        sql`DELETE FROM ${t} WHERE ${where(id)} AND state = 'running' AND lease_token = ${token}
          RETURNING idem_key`.pipe(Effect.map(changed)),
      listExpired: (scope, now, limit) =>
        sql`SELECT * FROM ${t}
          WHERE scope = ${scope} AND state = 'running' AND lease_expires_at <= ${now}
          ORDER BY lease_expires_at LIMIT ${limit}`.pipe(Effect.flatMap(decodeRows)),
      deleteStale: (before, now) =>
        sql`DELETE FROM ${t}
          WHERE created_at < ${before} AND (state = 'finished' OR lease_expires_at <= ${now})
          RETURNING idem_key`.pipe(Effect.map((rows) => rows.length))
    }
    return store
  })
