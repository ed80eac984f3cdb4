/**
 * What a burst of statuses on one task costs the task store (issue #43,
 * point 6): 2,000 WORKING statuses, each with a message of about 300 bytes
 * that joins the task's history, then COMPLETED; bytes written to the store
 * and the time taken, for today's store (the SDK's `DatabaseTaskStore`
 * through `fromSdk`, which loads and saves the whole task at every append)
 * and the native store (`sqlStore.ts`), one event per append and in
 * batches of 50.
 *
 * SQLite: `write_bytes` of /proc/self/io (bytes this process caused to be
 * written to storage) around the burst, on a fresh file each. PostgreSQL:
 * the WAL the burst wrote, `pg_current_wal_lsn()` before and after, on
 * DATABASE_URL or a throwaway embedded server.
 *
 *   npx tsx bench/task-store-burst.ts            (BURST_EVENTS, BURST_RUNS to change the figures)
 */
import { Role, type Task, TaskState } from "@a2a-js/sdk"
import { ServerCallContext, UnauthenticatedUser } from "@a2a-js/sdk/server"
import { Effect, Exit, Scope } from "effect"
import { randomBytes, randomUUID } from "node:crypto"
import * as Fs from "node:fs"
import { createRequire } from "node:module"
import * as Os from "node:os"
import * as Path from "node:path"
import * as sqlStore from "../src/internal/server/store/sqlStore.js"
import * as store from "../src/internal/server/store/store.js"
import * as internalTaskStore from "../src/internal/server/store/taskStore.js"
import type * as taskFold from "../src/internal/wire/taskFold.js"
import { startPostgres } from "../test/fixtures/postgres.js"

const events = Number(process.env["BURST_EVENTS"] ?? 2000)
const runs = Number(process.env["BURST_RUNS"] ?? 2)
// An experiment: the SQLite files in write-ahead-log mode (persistent in the file) rather than the default rollback journal.
const sqliteWal = process.env["BURST_SQLITE_WAL"] === "1"
// better-sqlite3 ships no types of its own: what of it this script uses.
const Database = createRequire(import.meta.url)("better-sqlite3") as new(filename: string) => {
  readonly pragma: (text: string) => unknown
  readonly close: () => void
}
const context = new ServerCallContext({ user: new UnauthenticatedUser() })
// Random text, as the messages of a real run are: repeated text would shrink in PostgreSQL's compression of large values.
const padding = () => randomBytes(165).toString("base64")

const statusOf = (taskId: string, n: number, state: TaskState): taskFold.TaskEvent => ({
  kind: "statusUpdate",
  data: {
    taskId,
    contextId: "ctx",
    status: {
      state,
      timestamp: new Date(Date.UTC(2026, 0, 1) + n).toISOString(),
      message: {
        messageId: `${taskId}-${n}`,
        contextId: "ctx",
        taskId,
        role: Role.ROLE_AGENT,
        parts: [{
          content: { $case: "text", value: `status ${n} ${padding()}` },
          metadata: undefined,
          filename: "",
          mediaType: ""
        }],
        metadata: undefined,
        extensions: [],
        referenceTaskIds: []
      }
    },
    metadata: undefined
  }
})

const taskOf = (id: string): Task => ({
  id,
  contextId: "ctx",
  status: {
    state: TaskState.TASK_STATE_SUBMITTED,
    message: undefined,
    timestamp: new Date(Date.UTC(2026, 0, 1)).toISOString()
  },
  artifacts: [],
  history: [],
  metadata: undefined
})

/** The burst on `target`, `batch` events an append; the task as it ended. */
const burst = (target: store.TaskStore, batch: number) =>
  Effect.gen(function*() {
    const id = randomUUID()
    yield* target.append(id, [{ kind: "task", data: taskOf(id) }], context)
    const all = Array.from({ length: events }, (_, n) => statusOf(id, n + 1, TaskState.TASK_STATE_WORKING))
    all.push(statusOf(id, events + 1, TaskState.TASK_STATE_COMPLETED))
    for (let at = 0; at < all.length; at += batch) yield* target.append(id, all.slice(at, at + batch), context)
    const task = yield* target.get(id, context)
    if (task?.status?.state !== TaskState.TASK_STATE_COMPLETED || task.history.length !== events + 1) {
      throw new Error(`the burst's task did not end as sent: ${task?.status?.state}, ${task?.history.length}`)
    }
  })

const variants = [
  { name: "today: fromSdk(DatabaseTaskStore), 1 event per append", native: false, batch: 1 },
  { name: "native, 1 event per append", native: true, batch: 1 },
  { name: "native, 50 events per append", native: true, batch: 50 }
] as const

const open = (config: internalTaskStore.DatabaseConfig, native: boolean) =>
  native
    ? sqlStore.make(config)
    : Effect.map(
      Effect.mapError(internalTaskStore.open(config, internalTaskStore.tasks), (failure) => new Error(failure.message)),
      ({ db, sdk }) => store.fromSdk(new sdk.DatabaseTaskStore(db))
    )

const ioWritten = (): number => {
  const line = Fs.readFileSync("/proc/self/io", "utf8").split("\n").find((each) => each.startsWith("write_bytes:"))
  return Number(line?.split(":")[1] ?? Number.NaN)
}

const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`

const measure = <E>(
  label: string,
  config: () => internalTaskStore.DatabaseConfig,
  written: (config: internalTaskStore.DatabaseConfig) => Effect.Effect<() => Effect.Effect<number, E>, E, Scope.Scope>
) =>
  Effect.gen(function*() {
    for (const variant of variants) {
      const figures: Array<string> = []
      for (let run = 0; run < runs; run++) {
        const scope = yield* Scope.make()
        const chosen = config()
        const target = yield* Scope.extend(open(chosen, variant.native), scope)
        const since = yield* Scope.extend(written(chosen), scope)
        const started = performance.now()
        yield* burst(target, variant.batch)
        const seconds = (performance.now() - started) / 1000
        const bytes = yield* since()
        yield* Scope.close(scope, Exit.void)
        figures.push(`${mb(bytes)} in ${seconds.toFixed(1)} s`)
      }
      console.log(`${label} | ${variant.name} | ${figures.join("; ")}`)
    }
  })

const program = Effect.gen(function*() {
  console.log(
    `${events} WORKING statuses of about 300 bytes (each joining the history), then COMPLETED; ${runs} runs each`
  )
  const directory = Fs.mkdtempSync(Path.join(Os.tmpdir(), "effect-a2a-burst-"))
  yield* Effect.addFinalizer(() => Effect.sync(() => Fs.rmSync(directory, { recursive: true, force: true })))
  yield* measure(
    `SQLite write_bytes${sqliteWal ? " (WAL mode)" : ""}`,
    () => {
      const filename = Path.join(directory, `${randomUUID()}.db`)
      if (sqliteWal) {
        const database = new Database(filename)
        database.pragma("journal_mode = WAL")
        database.close()
      }
      return { _tag: "Sqlite", filename }
    },
    () =>
      Effect.sync(() => {
        const before = ioWritten()
        return () => Effect.sync(() => ioWritten() - before)
      })
  )
  const postgres = yield* Effect.acquireRelease(
    Effect.promise(() => startPostgres()),
    (pg) => Effect.promise(() => pg.stop())
  )
  yield* measure(
    "PostgreSQL WAL",
    () => ({ _tag: "Postgres", url: postgres.url, poolSize: 2 }),
    (config) =>
      Effect.gen(function*() {
        const { db, sql } = yield* internalTaskStore.connection(config, "burst", () => Effect.void)
        const lsn = () =>
          Effect.promise(() => sql<{ lsn: string }>`select pg_current_wal_lsn()::text as lsn`.execute(db)).pipe(
            Effect.map(({ rows }) => rows[0]!.lsn)
          )
        const before = yield* lsn()
        return () =>
          Effect.flatMap(lsn(), (after) =>
            Effect.promise(() =>
              sql<{ bytes: string }>`select pg_wal_lsn_diff(${after}, ${before})::text as bytes`.execute(db)
            ).pipe(Effect.map(({ rows }) =>
              Number(rows[0]!.bytes)
            )))
      })
  )
})

Effect.runPromise(Effect.scoped(program)).catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
