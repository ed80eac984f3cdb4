/**
 * The native SQLite and PostgreSQL {@link TaskStore}s: a task is its
 * snapshot, a row of the SDK's own `tasks` table (the `DatabaseTaskStore`
 * layout, written as that store writes it), and the events appended after
 * it, rows of our `effect_a2a_task_store_events` table. An append is one
 * transaction: it reads the snapshot and its events, folds the new events in
 * (`wire/taskFold.ts`) and, while the task runs, inserts them in one
 * statement. When the task settles (paused or ended), the snapshot is
 * rewritten and its events deleted: a settled task is one row, as the SDK's
 * store keeps it. While it runs, every {@link compactAt} events the same
 * happens, a marker row keeping its events' `seq` growing: reading a task
 * folds a bounded number of events. A running task is also kept folded in
 * the process (`Folded`), so that an append reads no more than the
 * snapshot's small columns and its events' numbers. Durable runs keep
 * their rows in two more tables of ours (`sqlDurable.ts`).
 *
 * Why the SDK's table stays the snapshot: tasks written by today's store
 * read unchanged (no data migration), and during a rolling upgrade the old
 * replicas and the new ones work together on one database. An old replica
 * sees every task, a running one as of its last snapshot (its start, its
 * last settled state, or its last compaction), never events it cannot
 * read. When an old replica rewrites a snapshot that has events after it
 * (its `save`, a whole task), those events no longer apply: each event row
 * carries a fingerprint of the snapshot it follows (`base`: its context,
 * status and metadata), and events of another snapshot are skipped, then
 * deleted when the task settles or compacts; the old replica's save wins,
 * as the last save always did. Only `list`'s filter and order by status
 * can read such an event's status until then. (A save that leaves the
 * status, with its timestamp, the metadata and the context as they were
 * keeps the events after it, which then fold onto what it saved.)
 *
 * SQLite runs each transaction synchronously on its connection (its
 * better-sqlite3 handle, which kysely also uses): no await is held inside
 * one, so no other connection of the process waits synchronously on a lock
 * that an awaiting transaction holds.
 *
 * @internal
 */
import { type ListTasksRequest, type ListTasksResponse, type Task, TaskState } from "@a2a-js/sdk"
import type { ServerCallContext } from "@a2a-js/sdk/server"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type { CompiledQuery, Kysely, SqliteDatabase } from "kysely"
import type * as KyselyModule from "kysely"
import * as Path from "node:path"
import { TaskStoreError } from "../../serverErrors.js"
import * as taskFold from "../../wire/taskFold.js"
import * as taskState from "../../wire/taskState.js"
import type { DurableRuns } from "../durable/durableRuns.js"
import * as internalSqlCancels from "./sqlCancels.js"
import * as internalSqlDurable from "./sqlDurable.js"
import { durableRunsTable, durableStepsTable } from "./sqlDurable.js"
import {
  baseOf,
  compactAt,
  decodeEvent,
  type EventRow,
  eventsTable,
  foldRow,
  migrationTable,
  type Owned,
  Raced,
  type Rows,
  type Runner,
  scopeOf,
  scopeProblem,
  snapshotOf,
  type SnapshotRow,
  statements,
  type Steps,
  storeError,
  taskOf,
  tasksTable,
  unstorable
} from "./sqlRows.js"
import type { CancelFeed, TaskStore } from "./store.js"
import * as taskList from "./taskList.js"
import * as internalTaskStore from "./taskStore.js"

export { durableRunsTable, durableStepsTable } from "./sqlDurable.js"
export { compactAt, eventsTable, migrationTable } from "./sqlRows.js"

/** A native store with what the server wires beside it (see `memoryStore.ts`). @internal */
export interface SqlStore extends TaskStore {
  readonly heldElsewhere: (taskId: string, context: ServerCallContext) => Effect.Effect<boolean, TaskStoreError>
  /** The cancels other servers sharing the store append (see `sqlCancels.ts`). */
  readonly cancels: CancelFeed
  /** What durable agents' runs keep in the database (see `sqlDurable.ts`). */
  readonly durable: DurableRuns
}

/** @internal */
export interface Options {
  /** Overrides {@link compactAt}; tests lower it. */
  readonly compactAt?: number | undefined
  /** Whether push is on: the retention then deletes the push configs of the tasks it deletes. */
  readonly withPushConfigs?: boolean | undefined
  /** How many running tasks are kept folded at most (see `Folded`); 0 keeps none. */
  readonly foldedTasks?: number | undefined
}

// ---------------------------------------------------------------------------
// Transactions, as steps shared by both databases

/**
 * The running tasks this store last wrote or read, folded, so that an
 * append or a read of a running task decodes neither its snapshot's history
 * and artifacts nor its events again: what a burst would otherwise pay at
 * every event. An entry holds while the snapshot's fingerprint and the last
 * event's `seq` are the ones it was folded at: within a run `seq` only
 * grows (a compaction keeps the last event's row), a settled task has none
 * and is not kept, and any snapshot rewritten by another writer changes its
 * fingerprint. An append takes its entry out while it writes, so that a
 * read meanwhile never sees what is not committed.
 */
class Folded {
  private readonly entries = new Map<string, { readonly base: string; readonly seq: number; readonly task: Task }>()
  constructor(private readonly capacity: number) {}

  take(key: string, base: string, seq: number): Task | undefined {
    const entry = this.entries.get(key)
    if (entry === undefined) return undefined
    this.entries.delete(key)
    return entry.base === base && entry.seq === seq ? entry.task : undefined
  }

  peek(key: string, base: string, seq: number): Task | undefined {
    const entry = this.entries.get(key)
    return entry !== undefined && entry.base === base && entry.seq === seq ? entry.task : undefined
  }

  keep(key: string, base: string, seq: number, task: Task): void {
    this.entries.delete(key)
    this.entries.set(key, { base, seq, task })
    // The oldest entry goes first: Map iterates in insertion order.
    const oldest = this.entries.keys().next()
    if (this.entries.size > this.capacity && oldest.done !== true) this.entries.delete(oldest.value)
  }

  drop(key: string): void {
    this.entries.delete(key)
  }
}

const keyOf = (scope: Owned, taskId: string) => `${scope.tenant}\u0000${scope.owner}\u0000${taskId}`

interface Current {
  readonly task: Task
  readonly base: string
  /** The last event's `seq`, of this snapshot or not; 0 when none. */
  readonly seq: number
  /** How many events follow this snapshot; the others are older than it, or followed another. */
  readonly current: number
  readonly rows: number
}

/** The task as it is now, from `folded` when it holds, else decoded; undefined when there is none. */
const currentSteps = function*(
  s: ReturnType<typeof statements>,
  scope: Owned,
  taskId: string,
  folded: Folded,
  take: boolean
): Steps<Current | undefined> {
  const [light] = (yield s.light(scope, taskId, take)) as ReadonlyArray<SnapshotRow>
  if (light === undefined) return undefined
  const base = baseOf(light)
  const meta = (yield s.eventMeta(scope, taskId)) as ReadonlyArray<
    { readonly seq: number | string; readonly base: string }
  >
  const last = meta[meta.length - 1]
  const seq = last === undefined ? 0 : Number(last.seq)
  const current = meta.filter((event) => event.base === base).length
  const key = keyOf(scope, taskId)
  const kept = seq === 0 ? undefined : take ? folded.take(key, base, seq) : folded.peek(key, base, seq)
  if (kept !== undefined) return { task: kept, base, seq, current, rows: meta.length }
  const [heavy] = (yield s.heavy(scope, taskId)) as ReadonlyArray<SnapshotRow>
  const task = taskOf(taskId, { ...light, ...heavy })
  if (current > 0) {
    for (const event of (yield s.eventBodies(scope, taskId, base)) as ReadonlyArray<EventRow>) {
      taskFold.apply(task, decodeEvent(event.event))
    }
  }
  if (!take && seq > 0) folded.keep(key, base, seq, task)
  return { task, base, seq, current, rows: meta.length }
}

const appendSteps = function*(
  s: ReturnType<typeof statements>,
  scope: Owned,
  taskId: string,
  batch: ReadonlyArray<taskFold.TaskEvent>,
  compactAfter: number,
  folded: Folded
): Steps<Appended> {
  const now = yield* currentSteps(s, scope, taskId, folded, true)
  if (now === undefined) {
    const task = taskFold.fold(undefined, batch)
    if (task === undefined || task.id !== taskId) return { task: undefined, canceled: false }
    const contextProblem = unstorable([["context id", task.contextId, 36]])
    if (contextProblem !== undefined) throw new Unstorable(contextProblem)
    const inserted = yield s.insertSnapshot(scope, task)
    if (inserted.length === 0) throw new Raced()
    return { task, canceled: false }
  }
  const { task } = now
  const was = task.status?.state
  for (const event of batch) taskFold.apply(task, event)
  // A run elsewhere may hold the task: its server is told (see `sqlCancels.ts`).
  const canceled = was !== TaskState.TASK_STATE_CANCELED && task.status?.state === TaskState.TASK_STATE_CANCELED
  const notice = canceled ? s.canceled(scope, taskId) : undefined
  if (notice !== undefined) yield notice
  const key = keyOf(scope, taskId)
  if (taskState.isSettled(task.status?.state)) {
    yield s.updateSnapshot(scope, task)
    if (now.rows > 0) yield s.deleteEvents(scope, taskId)
  } else if (now.current + batch.length >= compactAfter) {
    // A marker row in place of the events keeps `seq` growing through the run: a reader's folded copy of
    // the task before is told apart, whether the snapshot's fingerprint changed or not.
    const marker = now.seq + Math.max(1, batch.length)
    yield s.updateSnapshot(scope, task)
    yield s.insertMarker(scope, taskId, marker)
    yield s.deleteEvents(scope, taskId, marker)
    folded.keep(key, baseOf(snapshotOf(task)), marker, task)
  } else if (batch.length > 0) {
    yield s.insertEvents(scope, taskId, now.base, now.seq + 1, batch)
    folded.keep(key, now.base, now.seq + batch.length, task)
  } else if (now.seq > 0) {
    folded.keep(key, now.base, now.seq, task)
  }
  return { task: taskList.handOut(task), canceled }
}

/** What an append left: the task, and whether it canceled it. */
interface Appended {
  readonly task: Task | undefined
  readonly canceled: boolean
}

const getSteps = function*(
  s: ReturnType<typeof statements>,
  scope: Owned,
  taskId: string,
  folded: Folded
): Steps<Task | undefined> {
  const now = yield* currentSteps(s, scope, taskId, folded, false)
  return now === undefined ? undefined : taskList.handOut(now.task)
}

const listSteps = function*(
  s: ReturnType<typeof statements>,
  scope: Owned,
  request: ListTasksRequest
): Steps<ListTasksResponse> {
  const pageSize = request.pageSize ?? taskList.defaultPageSize
  const [counted] = yield s.list(scope, request, "count")
  const rows = (yield s.list(scope, request, "page")) as ReadonlyArray<SnapshotRow & { id: string; updated: unknown }>
  const hasMore = rows.length > pageSize
  const shown = hasMore ? rows.slice(0, pageSize) : rows
  const logged = shown.length === 0
    ? []
    : (yield s.events(scope, shown.map((row) => row.id))) as ReadonlyArray<EventRow>
  const byTask = new Map<string, Array<EventRow>>()
  for (const event of logged) {
    const known = byTask.get(event.task_id)
    if (known === undefined) byTask.set(event.task_id, [event])
    else known.push(event)
  }
  const tasks: Array<Task> = []
  for (const row of shown) {
    try {
      const task = foldRow(row.id, row, byTask.get(row.id) ?? [])
      if (!request.includeArtifacts) task.artifacts = []
      if (request.historyLength !== undefined && request.historyLength <= 0) task.history = []
      tasks.push(task)
    } catch {
      // A row that does not read is left out, as the SDK's store leaves it: the page may be shorter.
    }
  }
  const last = shown[shown.length - 1]
  const updated = last === undefined ? 0 : Number(last.updated)
  return {
    tasks,
    nextPageToken: hasMore && last !== undefined
      ? taskList.encodePageToken(updated === 0 ? "" : new Date(updated).toISOString(), last.id)
      : "",
    pageSize,
    totalSize: Number((counted as { total: unknown } | undefined)?.total ?? 0)
  }
}

/** Ids or text the database cannot keep as given: the append is refused before it writes. */
class Unstorable extends Error {}

// ---------------------------------------------------------------------------
// The databases

const tasksOf: internalTaskStore.Table = { store: "tasks", what: "task store" }

const sqlite = (
  given: internalTaskStore.DatabaseConfig & { readonly _tag: "Sqlite" },
  also: ReadonlyArray<internalTaskStore.Table>
) =>
  Effect.gen(function*() {
    if (given.filename === "" || given.filename === ":memory:") {
      return yield* Effect.fail<internalTaskStore.Failure>({
        reason: "Connection",
        message: "A SQLite task store needs a file; use the in-memory store for a throwaway one."
      })
    }
    const config = { ...given, filename: Path.resolve(given.filename) }
    // The SDK's table, created by its own migration as today's store creates it; its connection closes at once.
    yield* Effect.scoped(internalTaskStore.open(config, tasksOf, also))
    const { driver, kysely } = yield* internalTaskStore.drivers("Sqlite", internalTaskStore.useOf(config))
    const handle = yield* Effect.try({
      try: () => new driver.default(config.filename) as BetterSqlite3,
      catch: internalTaskStore.fail("Driver", "Could not open the Sqlite task store")
    })
    const db = yield* Effect.acquireRelease(
      Effect.sync(() =>
        new kysely.Kysely<unknown>({
          // eslint-disable-next-line no-restricted-syntax -- one better-sqlite3 handle, typed by what each of its users calls
          dialect: new kysely.SqliteDialect({ database: handle as unknown as SqliteDatabase })
        })
      ),
      (db) => Effect.promise(() => db.destroy().catch(() => undefined))
    )
    const prepared = new Map<string, BetterSqlite3Statement>()
    const run = (query: CompiledQuery): Rows => {
      let statement = prepared.get(query.sql)
      if (statement === undefined) {
        statement = handle.prepare(query.sql)
        prepared.set(query.sql, statement)
      }
      const parameters = query.parameters as Array<unknown>
      if (statement.reader) return statement.all(...parameters) as Rows
      statement.run(...parameters)
      return []
    }
    const drive = <A>(steps: Steps<A>): A => {
      let next = steps.next()
      while (next.done !== true) next = steps.next(run(next.value))
      return next.value
    }
    const writing = handle.transaction(<A>(steps: () => Steps<A>) => drive(steps()))
    const reading = handle.transaction(<A>(steps: () => Steps<A>) => drive(steps()))
    const runner: Runner = {
      db,
      sql: kysely.sql,
      postgres: false,
      // Synchronous from the first statement to the commit: see the module's comment.
      transaction: (steps, writes) =>
        new Promise((resolve) => resolve(writes ? writing.immediate(steps) : reading.deferred(steps)))
    }
    return { runner, config, cancels: internalSqlCancels.sqlite(config.filename) }
  })

const postgres = (
  config: internalTaskStore.DatabaseConfig & { readonly _tag: "Postgres" },
  also: ReadonlyArray<internalTaskStore.Table>
) =>
  Effect.gen(function*() {
    const { db, driver, sql } = yield* internalTaskStore.open(config, tasksOf, also)
    const runner: Runner = {
      db,
      sql,
      postgres: true,
      transaction: async (steps, writes) => {
        for (let attempt = 1;; attempt++) {
          try {
            // Reads see one snapshot of the database; writes lock the task's snapshot row (`for update`).
            return await db.transaction().setIsolationLevel(writes ? "read committed" : "repeatable read").execute(
              async (trx) => {
                const running = steps()
                let next = running.next()
                while (next.done !== true) next = running.next((await trx.executeQuery(next.value)).rows as Rows)
                return next.value
              }
            )
          } catch (error) {
            if (!(error instanceof Raced) || attempt === 3) throw error
          }
        }
      }
    }
    return { runner, config, cancels: yield* internalSqlCancels.postgres(config.url, driver) }
  })

// Our tables, by migrations of ours in kysely's Migrator with ledger and lock tables of its own:
// idempotent, and on PostgreSQL replicas starting together take its lock in turn. On SQLite the lock is a
// no-op: servers starting together on one file can both run it; `if not exists` makes the tables' creation
// safe, and the one whose ledger row collides finds it done when it tries again.
const migrate = (runner: Runner, kysely: typeof KyselyModule) =>
  Effect.tryPromise({
    try: async () => {
      const { db, postgres, sql } = runner
      const collated = (width: number) => sql.raw(`varchar(${width}) ${postgres ? "collate \"C\"" : "collate binary"}`)
      const migrator = new kysely.Migrator({
        db,
        migrationTableName: migrationTable,
        migrationLockTableName: `${migrationTable}_lock`,
        provider: {
          getMigrations: async () => ({
            "0001_task_store_events": {
              up: async (db: Kysely<unknown>) => {
                await sql`create table if not exists ${sql.table(eventsTable)} (
                  tenant ${collated(255)} not null,
                  owner ${collated(255)} not null,
                  task_id ${collated(36)} not null,
                  seq integer not null,
                  base varchar(16) not null,
                  status_state ${collated(255)},
                  status_last_updated bigint,
                  event text not null,
                  primary key (tenant, owner, task_id, seq)
                )`.execute(db)
              }
            },
            // Durable runs (`sqlDurable.ts`): a row per run in progress, a record per step of it.
            "0002_durable_runs": {
              up: async (db: Kysely<unknown>) => {
                await sql`create table if not exists ${sql.table(durableRunsTable)} (
                  tenant ${collated(255)} not null,
                  owner ${collated(255)} not null,
                  task_id ${collated(36)} not null,
                  request text not null,
                  resumes integer not null default 0,
                  asking integer,
                  primary key (tenant, owner, task_id)
                )`.execute(db)
                await sql`create table if not exists ${sql.table(durableStepsTable)} (
                  tenant ${collated(255)} not null,
                  owner ${collated(255)} not null,
                  task_id ${collated(36)} not null,
                  step ${collated(255)} not null,
                  record text not null,
                  primary key (tenant, owner, task_id, step)
                )`.execute(db)
              }
            }
          })
        }
      })
      const result = await migrator.migrateToLatest()
      if (result.error !== undefined) throw result.error
    },
    catch: internalTaskStore.fail("Migration", "Could not create the task store's tables (events, durable runs)")
  }).pipe(Effect.retry({ times: runner.postgres ? 0 : 3 }))

/**
 * The native store on the database `config` names: the SDK's table and
 * ours created when missing (each by its own migration), the connection
 * closing with the scope, and, with a retention, the ended tasks past it
 * deleted as today's database store deletes them.
 *
 * @internal
 */
export const make = (
  config: internalTaskStore.DatabaseConfig,
  options: Options = {}
): Effect.Effect<SqlStore, TaskStoreError, Scope.Scope> =>
  Effect.gen(function*() {
    // The push-config table exists before the first sweep, which deletes the configs of the tasks it deletes.
    const sweepsConfigs = options.withPushConfigs === true && config.retention !== undefined
    const also = sweepsConfigs ? [internalTaskStore.pushConfigs] : []
    const { cancels, runner } = yield* (config._tag === "Sqlite" ? sqlite(config, also) : postgres(config, also))
    const kysely = yield* Effect.promise(() => import("kysely"))
    yield* migrate(runner, kysely)
    if (config.retention !== undefined) {
      yield* internalTaskStore.sweepEnded(
        runner.db,
        runner.sql,
        tasksTable,
        config.retention,
        config,
        sweepsConfigs ? "push_notification_configs" : undefined
      )
      // Events whose snapshot is gone: those of a task an old replica ended over them (its whole-task save)
      // and then deleted past retention. A task's snapshot is written before its first event, never after.
      // Durable runs likewise: a process that died leaves its run's row and records, whose task the retention
      // deletes in time. A run is begun once its task is stored, never before.
      const { db, sql } = runner
      const orphansOf = (table: string, what: string) =>
        Effect.tryPromise(() =>
          sql`delete from ${sql.table(table)} where not exists (select 1 from ${sql.table(tasksTable)} t
            where t.tenant = ${sql.ref(`${table}.tenant`)} and t.owner = ${sql.ref(`${table}.owner`)}
              and t.id = ${sql.ref(`${table}.task_id`)})`.execute(db)
        ).pipe(
          Effect.catchAll((error) =>
            Effect.logWarning(`Could not delete the task store's ${what} of deleted tasks`).pipe(
              Effect.annotateLogs({ cause: String(error.error) })
            )
          )
        )
      const orphans = Effect.all([
        orphansOf(eventsTable, "events"),
        orphansOf(durableRunsTable, "durable runs"),
        orphansOf(durableStepsTable, "durable runs' step records")
      ], { discard: true })
      yield* orphans
      yield* Effect.forkScoped(Effect.forever(Effect.zipRight(Effect.sleep(Duration.minutes(10)), orphans)))
    }
    const s = statements(runner.db, runner.sql, runner.postgres)
    const compactAfter = options.compactAt ?? compactAt
    const folded = new Folded(options.foldedTasks ?? 1_000)
    const transaction = <A>(what: string, steps: () => Steps<A>, writes: boolean) =>
      Effect.tryPromise({ try: () => runner.transaction(steps, writes), catch: (error) => error }).pipe(
        // The SDK's error for a page token that does not decode stays what it is: the caller's mistake.
        Effect.catchIf((error) => error instanceof Error && error.name === "RequestMalformedError", Effect.die),
        Effect.mapError(storeError(what))
      )
    const store: SqlStore = {
      get: (taskId, context) => {
        const scope = scopeOf(context)
        return scopeProblem(scope, taskId) !== undefined
          ? Effect.succeed(undefined)
          : transaction(`Loading task ${taskId}`, () => getSteps(s, scope, taskId, folded), false)
      },
      list: (request, context) => {
        const scope = scopeOf(context)
        const pageSize = request.pageSize ?? taskList.defaultPageSize
        const unreadable = unstorable([
          ["tenant", scope.tenant, 255],
          ["owner", scope.owner, 255],
          ["context id", request.contextId ?? "", 36]
        ])
        return unreadable !== undefined
          ? Effect.succeed({ tasks: [], nextPageToken: "", pageSize, totalSize: 0 })
          : transaction("Listing tasks", () => listSteps(s, scope, request), false)
      },
      append: (taskId, events, context) => {
        const scope = scopeOf(context)
        const problem = scopeProblem(scope, taskId)
        return problem !== undefined
          ? Effect.fail(storeError(`Saving task ${taskId}`)(new Unstorable(problem)))
          : transaction(
            `Saving task ${taskId}`,
            () => appendSteps(s, scope, taskId, events, compactAfter, folded),
            true
          ).pipe(Effect.map(({ canceled, task }) => {
            if (canceled) cancels.told?.(cancels.feed.keyOf(taskId, context))
            return task
          }))
      },
      cancels: cancels.feed,
      durable: internalSqlDurable.make(runner),
      heldElsewhere: (taskId, context) => {
        const scope = scopeOf(context)
        return scopeProblem(scope, taskId) !== undefined
          ? Effect.succeed(false)
          : transaction("Looking for the task elsewhere", function*() {
            return (yield s.heldElsewhere(scope, taskId)).length > 0
          }, false)
      }
    }
    return store
  }).pipe(
    Effect.mapError((failure) => failure instanceof TaskStoreError ? failure : new TaskStoreError(failure))
  )

// better-sqlite3 ships no types of its own: what of it this file uses.
interface BetterSqlite3Statement {
  readonly reader: boolean
  readonly all: (...parameters: Array<unknown>) => unknown
  readonly run: (...parameters: Array<unknown>) => unknown
}

interface BetterSqlite3 {
  readonly prepare: (sql: string) => BetterSqlite3Statement
  readonly transaction: <F extends (...args: Array<never>) => unknown>(body: F) => F & {
    readonly deferred: F
    readonly immediate: F
  }
}
