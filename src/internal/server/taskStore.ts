/**
 * The SDK's `DatabaseTaskStore` on SQLite or PostgreSQL, its table created
 * by the SDK's own migrations (what `a2a-db upgrade --store tasks` runs).
 *
 * `kysely`, `better-sqlite3` and `pg` are optional peers of the SDK: they are
 * loaded only when a database store is asked for.
 *
 * @internal
 */
import type { TaskStore } from "@a2a-js/sdk/server"
import { Effect, Runtime, Schema } from "effect"
import type * as Scope from "effect/Scope"
import type { Kysely, PostgresPool, SqliteDatabase } from "kysely"
import { createRequire } from "node:module"
import * as Path from "node:path"
import { pathToFileURL } from "node:url"

/** @internal */
export type Config =
  | { readonly _tag: "Sqlite"; readonly filename: string }
  | { readonly _tag: "Postgres"; readonly url: string; readonly poolSize?: number | undefined }

/** @internal */
export interface Failure {
  readonly reason: "Driver" | "Migration" | "Connection"
  readonly message: string
}

/** @internal */
export class TaskStoreError extends Schema.TaggedError<TaskStoreError>("effect-a2a/TaskStoreError")(
  "TaskStoreError",
  {
    reason: Schema.Literal("Driver", "Migration", "Connection"),
    message: Schema.String
  }
) {}

// A non-literal specifier: the drivers ship no types of their own, and are
// only loaded when asked for.
const load = (name: string): Promise<any> => import(name)

const fail = (reason: Failure["reason"], what: string) => (error: unknown): Failure => ({
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

// The SDK's migrations are reachable only through its `a2a-db` CLI, whose
// `run` is a plain function: calling it in-process is the same idempotent
// `upgrade` (ledger table plus Kysely's migration lock, so replicas starting
// together are safe) without a child process.
const migrate = (url: string): Effect.Effect<void, Failure> =>
  Effect.tryPromise({
    try: async () => {
      const sdkEntry = createRequire(import.meta.url).resolve("@a2a-js/sdk")
      const cli = (await import(pathToFileURL(Path.join(Path.dirname(sdkEntry), "cli", "run.js")).href)) as MigrationCli
      const errors: Array<string> = []
      const code = await cli.run(["upgrade", "--store", "tasks", "--url", url], {}, {
        log: () => undefined,
        error: (...args) => errors.push(args.map(String).join(" "))
      })
      if (code !== 0) throw new Error(errors.join("\n") || `a2a-db upgrade exited with ${code}`)
    },
    catch: fail("Migration", "Could not create the task table")
  })

const connect = (config: Config, onIdleError: (error: unknown) => void): Effect.Effect<Kysely<unknown>, Failure> =>
  Effect.tryPromise({
    try: async () => {
      const kysely = await import("kysely")
      if (config._tag === "Sqlite") {
        const Database = (await load("better-sqlite3")).default
        const database = new Database(config.filename) as SqliteDatabase
        return new kysely.Kysely<unknown>({ dialect: new kysely.SqliteDialect({ database }) })
      }
      const pg = await load("pg")
      const Pool = (pg.default ?? pg).Pool
      const pool = new Pool({ connectionString: config.url, max: config.poolSize ?? 10 })
      // An idle connection the database ends (a restart, a failover, an idle timeout) is an `error` event
      // of the pool, which drops that connection; unhandled, the event would end the process.
      pool.on("error", onIdleError)
      return new kysely.Kysely<unknown>({ dialect: new kysely.PostgresDialect({ pool: pool as PostgresPool }) })
    },
    catch: fail("Driver", `Could not open the ${config._tag} task store`)
  })

/**
 * Creates the table when missing, opens the database and returns the SDK's
 * `DatabaseTaskStore` on it; the connection closes with the scope.
 *
 * @internal
 */
export const make = (given: Config): Effect.Effect<TaskStore, Failure, Scope.Scope> =>
  Effect.gen(function* () {
    if (given._tag === "Sqlite" && (given.filename === "" || given.filename === ":memory:")) {
      return yield* Effect.fail<Failure>({
        reason: "Connection",
        message: "A SQLite task store needs a file; use the in-memory store for a throwaway one."
      })
    }
    // One absolute path for both the migration and the connection: the migration reads its file from a
    // `sqlite:` URL, where a path starting with `//` would name another file than the one opened.
    const config: Config = given._tag === "Sqlite" ? { ...given, filename: Path.resolve(given.filename) } : given
    yield* migrate(config._tag === "Sqlite" ? `sqlite:${config.filename}` : config.url)
    const runFork = Runtime.runFork(yield* Effect.runtime<never>())
    const onIdleError = (error: unknown) =>
      runFork(Effect.logWarning(
        `The ${config._tag} task store lost an idle connection; a new one opens when needed: ${
          error instanceof Error ? error.message : String(error)
        }`
      ))
    const db = yield* Effect.acquireRelease(
      connect(config, onIdleError),
      (db) => Effect.promise(() => db.destroy().catch(() => undefined))
    )
    // Fail at start-up, not on the first request, when the database is unreachable.
    const { DatabaseTaskStore, TASK_TABLE } = yield* Effect.tryPromise({
      try: () => import("@a2a-js/sdk/server/database"),
      catch: fail("Driver", "Could not load @a2a-js/sdk/server/database")
    })
    yield* Effect.tryPromise({
      try: async () => {
        const { sql } = await import("kysely")
        await sql`select 1 from ${sql.table(TASK_TABLE)} limit 1`.execute(db)
      },
      catch: fail("Connection", `Could not reach the ${config._tag} task store`)
    })
    return new DatabaseTaskStore(db)
  })
