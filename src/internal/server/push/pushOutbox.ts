/**
 * The push outbox: with a SQLite or PostgreSQL task store, every delivery
 * waiting to be sent is a row of a table in the same database, written before
 * its first attempt and deleted once it is delivered or given up. A server
 * that stops leaves its rows behind, and the next one to start (or another
 * replica) takes them over.
 *
 * A row is held by one replica at a time through a lease (its id and an
 * expiry) that the replica renews while it runs and frees when it stops;
 * rows whose lease is free or expired are claimed by one statement (under an
 * advisory lock on PostgreSQL), so that each is sent by one replica. A row is
 * claimed only when no earlier row of its task and config is held or waiting
 * for a retry, so that a task's events reach a webhook in order.
 *
 * Rows keep what an attempt sends, the auth headers included: they sit in the
 * database as the configs themselves do.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type { Kysely } from "kysely"
import { randomUUID } from "node:crypto"
import * as internalTaskStore from "../store/taskStore.js"

/** The outbox table. */
export const table = "effect_a2a_push_outbox"

/** A delivery to make: one event of a task, serialized for one config. @internal */
export interface Entry {
  readonly tenant: string
  /** The SDK's user scope of the config's caller (`resolveUserScope`). */
  readonly owner: string
  readonly taskId: string
  readonly configId: string
  readonly url: string
  readonly contentType: string
  readonly body: string
  /** The config's auth headers. */
  readonly headers: Readonly<Record<string, string>>
  readonly traceparent: string | undefined
  /** When its time budget started. */
  readonly createdAt: number
}

/** A row of the outbox. @internal */
export interface Row extends Entry {
  readonly id: number
  /** Attempts made so far. */
  readonly attempts: number
}

/** @internal */
export interface Outbox {
  /**
   * Writes `entry`: its row id, and whether this replica holds it, to send
   * now; otherwise an earlier row of its task and config is not this
   * replica's to send, and a sweep sends this one after it.
   */
  readonly add: (entry: Entry) => Effect.Effect<{ readonly id: number; readonly held: boolean }, unknown>
  /** Records a failed attempt, and when the next one is due. */
  readonly attempted: (id: number, attempts: number, nextAttemptAt: number) => Effect.Effect<void, unknown>
  /** Deletes delivered or given-up rows. */
  readonly remove: (ids: ReadonlyArray<number>) => Effect.Effect<void, unknown>
  /** Renews the rows this replica holds, then claims up to `limit` due rows that nobody holds, oldest first. */
  readonly claim: (limit: number) => Effect.Effect<ReadonlyArray<Row>, unknown>
}

/** How long a claim lasts without renewal: a replica that stops without freeing its rows holds them this long. */
const lease = Duration.seconds(30)

// PostgreSQL returns BIGINT (and BIGSERIAL) as a string.
const toNumber = (value: unknown): number => typeof value === "number" ? value : Number(value)

const rowOf = (raw: Record<string, unknown>): Row => ({
  id: toNumber(raw["id"]),
  tenant: String(raw["tenant"]),
  owner: String(raw["owner"]),
  taskId: String(raw["task_id"]),
  configId: String(raw["config_id"]),
  url: String(raw["url"]),
  contentType: String(raw["content_type"]),
  body: String(raw["body"]),
  headers: JSON.parse(String(raw["headers"])) as Record<string, string>,
  traceparent: raw["traceparent"] === null || raw["traceparent"] === undefined ? undefined : String(raw["traceparent"]),
  attempts: toNumber(raw["attempts"]),
  createdAt: toNumber(raw["created_at"])
})

/**
 * The outbox in the database `config` names, on its own connection: its
 * table created when missing, this replica's rows freed when the scope
 * closes (before the connection does), for the next server to take up at
 * once.
 *
 * @internal
 */
export const make = (
  config: internalTaskStore.DatabaseConfig
): Effect.Effect<Outbox, internalTaskStore.Failure, Scope.Scope> =>
  Effect.gen(function*() {
    const { db, sql } = yield* internalTaskStore.connection(config, "push outbox", () => Effect.void)
    const postgres = config._tag === "Postgres"
    const t = sql.table(table)
    const exclusive = <A>(db: Kysely<unknown>, body: (db: Kysely<unknown>) => Promise<A>): Promise<A> =>
      postgres ? internalTaskStore.exclusivelyPg(db, sql, table, body) : body(db)
    const create = (db: Kysely<unknown>) =>
      Effect.tryPromise({
        try: () =>
          exclusive(db, async (db) => {
            await sql`create table if not exists ${t} (
              id ${sql.raw(postgres ? "bigserial primary key" : "integer primary key autoincrement")},
              tenant text not null,
              owner text not null,
              task_id text not null,
              config_id text not null,
              url text not null,
              content_type text not null,
              body text not null,
              headers text not null,
              traceparent text,
              attempts integer not null,
              next_attempt_at bigint not null,
              created_at bigint not null,
              lease_owner text,
              lease_expires_at bigint not null
            )`.execute(db)
            await sql`create index if not exists ${sql.id(`${table}_lane`)} on ${t} (task_id, config_id, id)`.execute(
              db
            )
            await sql`create index if not exists ${sql.id(`${table}_due`)} on ${t} (lease_expires_at, next_attempt_at)`
              .execute(db)
          }),
        catch: internalTaskStore.fail("Migration", "Could not create the table of the push outbox")
      })
    yield* create(db)

    const replica = randomUUID()
    const leaseMillis = Duration.toMillis(lease)
    const now = () => Date.now()
    const run = <A>(query: () => Promise<A>) => Effect.tryPromise(query)

    yield* Effect.addFinalizer(() =>
      run(() =>
        sql`update ${t} set lease_owner = null, lease_expires_at = 0 where lease_owner = ${replica}`.execute(db)
      )
        .pipe(
          Effect.catchAll((error) =>
            Effect.logWarning("Could not free the push outbox's rows; another server takes them when their lease ends")
              .pipe(Effect.annotateLogs({ cause: String(error.error) }))
          )
        )
    )

    return {
      add: (entry) =>
        run(() => {
          const at = now()
          // Behind a row of its task and config that this replica does not hold (another's, or one waiting for a
          // sweep), the row is left free: a sweep sends it after those, in order.
          const behind = sql`exists (
            select 1 from ${t} e
            where e.tenant = ${entry.tenant} and e.owner = ${entry.owner} and e.task_id = ${entry.taskId}
              and e.config_id = ${entry.configId}
              and (e.lease_owner is null or e.lease_owner <> ${replica} or e.lease_expires_at <= ${at})
          )`
          return sql<{ id: unknown; lease_owner: unknown }>`insert into ${t} (tenant, owner, task_id, config_id, url,
              content_type, body, headers, traceparent, attempts, next_attempt_at, created_at, lease_owner,
              lease_expires_at)
            values (${entry.tenant}, ${entry.owner}, ${entry.taskId}, ${entry.configId}, ${entry.url},
              ${entry.contentType}, ${entry.body}, ${JSON.stringify(entry.headers)}, ${entry.traceparent ?? null}, 0,
              ${at}, ${entry.createdAt}, (select case when ${behind} then null else ${replica} end),
              (select case when ${behind} then cast(0 as bigint) else cast(${at + leaseMillis} as bigint) end))
            returning id, lease_owner`.execute(db)
        }).pipe(Effect.map((result) => ({
          id: toNumber(result.rows[0]?.id),
          held: result.rows[0]?.lease_owner === replica
        }))),
      attempted: (id, attempts, nextAttemptAt) =>
        run(() =>
          sql`update ${t} set attempts = ${attempts}, next_attempt_at = ${Math.round(nextAttemptAt)} where id = ${id}`
            .execute(db)
        ).pipe(Effect.asVoid),
      remove: (ids) =>
        ids.length === 0
          ? Effect.void
          : run(() => sql`delete from ${t} where id in (${sql.join(ids)})`.execute(db)).pipe(Effect.asVoid),
      claim: (limit) =>
        run(() =>
          exclusive(db, async (db) => {
            const at = now()
            await sql`update ${t} set lease_expires_at = ${at + leaseMillis} where lease_owner = ${replica}`.execute(db)
            return sql<Record<string, unknown>>`update ${t} set lease_owner = ${replica},
                lease_expires_at = ${at + leaseMillis}
              where id in (
                select o.id from ${t} o
                where o.lease_expires_at <= ${at} and o.next_attempt_at <= ${at}
                  and not exists (
                    select 1 from ${t} e
                    where e.tenant = o.tenant and e.owner = o.owner and e.task_id = o.task_id
                      and e.config_id = o.config_id and e.id < o.id
                      and (e.lease_expires_at > ${at} or e.next_attempt_at > ${at})
                  )
                order by o.id
                limit ${limit}
              )
              returning *`.execute(db)
          })
        ).pipe(Effect.map((result) => result.rows.map(rowOf).sort((a, b) => a.id - b.id)))
    }
  })
