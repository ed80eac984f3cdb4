/**
 * The task store a server is configured with, and what its database ones
 * share with the push-config store, the push outbox and replication: the
 * drivers, the connection, and the SDK's own migrations of its tables (what
 * `a2a-db upgrade --store tasks` runs; `sqlStore.ts` keeps the SDK's `tasks`
 * table as its snapshot table). The stores themselves are `makeStore.ts`'s.
 *
 * `kysely`, `better-sqlite3` and `pg` are optional peers, of the SDK's and
 * ours: they are loaded only when a database store is asked for, and their
 * absence fails that store naming them.
 *
 * @internal
 */
import { TaskState } from "@a2a-js/sdk"
import type * as SdkDatabase from "@a2a-js/sdk/server/database"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Runtime from "effect/Runtime"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import type { Kysely, sql as Sql, SqliteDatabase } from "kysely"
import type * as KyselyModule from "kysely"
import { createRequire } from "node:module"
import * as Path from "node:path"
import { pathToFileURL } from "node:url"
import * as Peer from "../../peer.js"
import { TaskStoreError } from "../../serverErrors.js"
import * as taskState from "../../wire/taskState.js"

type Retention = { readonly retention?: Duration.DurationInput | undefined }

/** @internal */
export type DatabaseConfig =
  | { readonly _tag: "Sqlite"; readonly filename: string } & Retention
  | { readonly _tag: "Postgres"; readonly url: string; readonly poolSize?: number | undefined } & Retention

/** @internal */
export type Config =
  | {
    readonly _tag: "Memory"
    readonly maxFinished?: number | undefined
    readonly interruptedRetention?: Duration.DurationInput | undefined
  } & Retention
  | { readonly _tag: "Unbounded" }
  | DatabaseConfig

/** The store of a server whose options name none. */
export const defaultConfig: Config = { _tag: "Memory" }

/** A store on the SDK's table, whose columns bound the length of ids. */
export const isDatabase = (config: Config): config is DatabaseConfig =>
  config._tag === "Sqlite" || config._tag === "Postgres"

/** @internal */
export interface Failure {
  readonly reason: TaskStoreError["reason"]
  readonly message: string
}

export { TaskStoreError }

/** The optional peers a database store needs, by database. */
const peers = { Sqlite: ["kysely", "better-sqlite3"], Postgres: ["kysely", "pg"] } as const

/** What a store on `config` is, in the messages that say what to install for it. @internal */
export const useOf = (config: DatabaseConfig): string => `A2AServer's TaskStoreConfig.${config._tag}`

/** What replication's own tables (its event log, its run claims) are, in those messages. @internal */
export const replicationUse = "A2AServer's replication"

/** kysely and the database's driver module. @internal */
export interface Drivers {
  readonly kysely: typeof KyselyModule
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- better-sqlite3 and pg ship no types of their own
  readonly driver: any
}

/** The modules a store on the database `tag` names needs, or a failure naming what to install to `use` it. @internal */
export const drivers = (tag: DatabaseConfig["_tag"], use: string): Effect.Effect<Drivers, Failure> =>
  Peer.load(peers[tag], use, async () => ({
    kysely: await import("kysely"),
    driver: tag === "Sqlite" ? await Peer.betterSqlite3() : await Peer.untyped("pg")
  })).pipe(Effect.mapError((missing): Failure => ({ reason: "MissingPackage", message: missing.message })))

export const fail = (reason: Failure["reason"], what: string) => (error: unknown): Failure => ({
  reason,
  message: `${what}: ${error instanceof Error ? error.message : String(error)}`
})

interface MigrationCli {
  readonly run: (
    argv: ReadonlyArray<string>,
    env: Record<string, string | undefined>,
    output: { readonly log: (...args: Array<unknown>) => void; readonly error: (...args: Array<unknown>) => void }
  ) => Promise<number>
}

/**
 * A table of the SDK's database stores: its `a2a-db` store id, and what our
 * messages call the store.
 *
 * @internal
 */
export interface Table {
  readonly store: "tasks" | "push-notification-configs"
  readonly what: string
}

/** The SDK's task table, which the SQL stores keep as their snapshot table. @internal */
export const tasks: Table = { store: "tasks", what: "task store" }

/** The SDK's push-config table, beside the tasks. @internal */
export const pushConfigs: Table = { store: "push-notification-configs", what: "push-config store" }

// The SDK's migrations are reachable only through its `a2a-db` CLI, whose
// `run` is a plain function: calling it in-process is the same idempotent
// `upgrade` (ledger table plus Kysely's migration lock, so replicas starting
// together are safe) without a child process.
// On SQLite, Kysely's migration lock is a no-op: servers starting together on one file can both find a
// migration to run, and all but one fail on the table the first created. Tried again, they find it done.
const migrate = (config: DatabaseConfig, table: Table): Effect.Effect<void, Failure> =>
  config._tag === "Sqlite"
    ? Effect.retry(migrateOnce(`sqlite:${config.filename}`, table), {
      schedule: Schedule.spaced(Duration.millis(50)),
      times: 3
    })
    : migrateOnce(config.url, table)

const migrateOnce = (url: string, table: Table): Effect.Effect<void, Failure> =>
  Effect.tryPromise({
    try: async () => {
      const sdkEntry = createRequire(import.meta.url).resolve("@a2a-js/sdk")
      const cli = (await import(pathToFileURL(Path.join(Path.dirname(sdkEntry), "cli", "run.js")).href)) as MigrationCli
      const errors: Array<string> = []
      const code = await cli.run(["upgrade", "--store", table.store, "--url", url], {}, {
        log: () => undefined,
        error: (...args) => errors.push(args.map(String).join(" "))
      })
      if (code !== 0) throw new Error(errors.join("\n") || `a2a-db upgrade exited with ${code}`)
    },
    catch: fail("Migration", `Could not create the table of the ${table.what}`)
  })

const connect = (
  config: DatabaseConfig,
  { driver, kysely }: Drivers,
  what: string,
  onIdleError: (error: unknown) => void
): Effect.Effect<Kysely<unknown>, Failure> =>
  Effect.try({
    try: () => {
      if (config._tag === "Sqlite") {
        const database = new driver.default(config.filename) as SqliteDatabase
        return new kysely.Kysely<unknown>({ dialect: new kysely.SqliteDialect({ database }) })
      }
      const Pool = (driver.default ?? driver).Pool
      const pool = new Pool({ connectionString: config.url, max: config.poolSize ?? 10 })
      // An idle connection the database ends (a restart, a failover, an idle timeout) is an `error` event
      // of the pool, which drops that connection; unhandled, the event would end the process.
      pool.on("error", onIdleError)
      // The pool listens only to its idle clients: one checked out between two queries (a transaction, a driver's
      // step) when the database ends the connection would emit `error` with no listener, and end the process.
      // Its query, if any, fails on its own.
      pool.on("connect", (client: { on: (event: "error", listener: (error: unknown) => void) => void }) =>
        client.on("error", () =>
          undefined))
      return new kysely.Kysely<unknown>({ dialect: new kysely.PostgresDialect({ pool }) })
    },
    catch: fail("Driver", `Could not open the ${config._tag} ${what}`)
  })

// The names the SDK's table gives the states a run ends in, in its `status_state` column.
const terminalStateNames = Object.values(TaskState)
  .filter((state): state is TaskState => typeof state === "number" && taskState.isTerminal(state))
  .map(taskState.name)

// The SQL stores have no eviction of their own: a delete of the ended tasks
// whose last status is older than the retention, at start-up and then at
// least every minute, in a fiber of the server's scope. A failed round is
// logged; the next one deletes what it missed. With `configs` (push on), the
// push configs of those tasks go first, matched by the task's own tenant,
// owner and id (never another caller's config of a task of the same id): a
// round cut short between the two leaves a task past retention, which the
// next one deletes, rather than configs no round would find. PostgreSQL runs
// both in one transaction; SQLite does not, since a transaction held across
// the awaits between them would block the other connections of the process
// (the push-config store, the outbox), whose better-sqlite3 calls wait for
// the lock synchronously.
/** @internal */
export const sweepEnded = (
  db: Kysely<unknown>,
  sql: typeof Sql,
  table: string,
  retention: Duration.DurationInput,
  config: DatabaseConfig,
  configs: string | undefined
) =>
  Effect.gen(function*() {
    const retentionMs = Duration.toMillis(retention)
    const round = (now: number) => {
      const ended = (alias: string) =>
        sql`${sql.ref(`${alias}.status_state`)} in (${sql.join(terminalStateNames)}) and ${
          sql.ref(`${alias}.status_last_updated`)
        } < ${now - retentionMs}`
      const body = async (db: Kysely<unknown>) => {
        if (configs !== undefined) {
          await sql`delete from ${sql.table(configs)} where exists (
            select 1 from ${sql.table(table)} t
            where t.tenant = ${sql.ref(`${configs}.tenant`)} and t.owner = ${sql.ref(`${configs}.owner`)}
              and t.id = ${sql.ref(`${configs}.task_id`)} and ${ended("t")}
          )`.execute(db)
        }
        await sql`delete from ${sql.table(table)} where ${ended(table)}`.execute(db)
      }
      return config._tag === "Postgres" && configs !== undefined ? db.transaction().execute(body) : body(db)
    }
    const sweep = Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.tryPromise(() => round(now))).pipe(
      Effect.catchAll((error) =>
        Effect.logWarning(`Could not delete the ended tasks past retention from the ${config._tag} task store`).pipe(
          Effect.annotateLogs({ cause: String(error.error) })
        )
      )
    )
    const every = Duration.min(Duration.millis(retentionMs), Duration.minutes(1))
    yield* Effect.forkScoped(Effect.repeat(sweep, Schedule.spaced(every)))
  })

/**
 * `body` in a transaction under an advisory lock named by `table`: replicas
 * that start together create their tables in turn, as concurrent `create …
 * if not exists` can still collide in PostgreSQL's catalog.
 *
 * @internal
 */
export const exclusivelyPg = <A>(
  db: Kysely<unknown>,
  sql: typeof Sql,
  table: string,
  body: (db: Kysely<unknown>) => Promise<A>
): Promise<A> =>
  db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(hashtext(${table}))`.execute(trx)
    return body(trx)
  })

/**
 * A connection to the database `given` names, for the store `what`, after
 * `prepare` (its tables' creation) ran on the same resolved file or URL; the
 * connection closes with the scope. Its modules load first: a missing one
 * fails naming what to install to `use` the store.
 *
 * @internal
 */
export const connection = <E>(
  given: DatabaseConfig,
  what: string,
  prepare: (config: DatabaseConfig) => Effect.Effect<void, E>,
  use: string = useOf(given)
): Effect.Effect<
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- better-sqlite3 and pg ship no types of their own
  { readonly db: Kysely<unknown>; readonly config: DatabaseConfig; readonly sql: typeof Sql; readonly driver: any },
  Failure | E,
  Scope.Scope
> =>
  Effect.gen(function*() {
    if (given._tag === "Sqlite" && (given.filename === "" || given.filename === ":memory:")) {
      return yield* Effect.fail<Failure>({
        reason: "Connection",
        message: `A SQLite ${what} needs a file; use the in-memory store for a throwaway one.`
      })
    }
    const loaded = yield* drivers(given._tag, use)
    // One absolute path for both the migration and the connection: the migration reads its file from a
    // `sqlite:` URL, where a path starting with `//` would name another file than the one opened.
    const config: DatabaseConfig = given._tag === "Sqlite"
      ? { ...given, filename: Path.resolve(given.filename) }
      : given
    yield* prepare(config)
    const runFork = Runtime.runFork(yield* Effect.runtime<never>())
    const onIdleError = (error: unknown) =>
      runFork(Effect.logWarning(
        `The ${config._tag} ${what} lost an idle connection; a new one opens when needed: ${
          error instanceof Error ? error.message : String(error)
        }`
      ))
    const db = yield* Effect.acquireRelease(
      connect(config, loaded, what, onIdleError),
      (db) => Effect.promise(() => db.destroy().catch(() => undefined))
    )
    return { db, config, sql: loaded.kysely.sql, driver: loaded.driver }
  })

/**
 * The database `given` names, opened for one of the SDK's stores: its table
 * created when missing, the connection closing with the scope, and reached
 * once, so that an unreachable database fails at start-up rather than on the
 * first request.
 *
 * @internal
 */
export const open = (
  given: DatabaseConfig,
  table: Table,
  /** Other tables of the SDK's created beside it, for statements that reach them too. */
  also: ReadonlyArray<Table> = []
): Effect.Effect<
  {
    readonly db: Kysely<unknown>
    readonly sql: typeof Sql
    readonly sdk: typeof SdkDatabase
    readonly tableName: string
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- better-sqlite3 and pg ship no types of their own
    readonly driver: any
  },
  Failure,
  Scope.Scope
> =>
  Effect.gen(function*() {
    const { db, driver, sql } = yield* connection(given, table.what, (config) =>
      Effect.forEach([table, ...also], (each) =>
        migrate(config, each), { discard: true }))
    const sdk = yield* Effect.tryPromise({
      try: () =>
        import("@a2a-js/sdk/server/database"),
      catch: fail("Driver", "Could not load @a2a-js/sdk/server/database")
    })
    const tableName = table.store === "tasks" ? sdk.TASK_TABLE : sdk.PUSH_NOTIFICATION_TABLE
    yield* Effect.tryPromise({
      try: () => sql`select 1 from ${sql.table(tableName)} limit 1`.execute(db),
      catch: fail("Connection", `Could not reach the ${given._tag} ${table.what}`)
    })
    return { db, sql, sdk, tableName, driver }
  })
