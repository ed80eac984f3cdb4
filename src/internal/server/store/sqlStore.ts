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
 * snapshot's small columns and its events' numbers.
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
import {
  type ListTasksRequest,
  type ListTasksResponse,
  Message,
  Task,
  TaskArtifactUpdateEvent,
  TaskState,
  taskStateToJSON,
  TaskStatusUpdateEvent
} from "@a2a-js/sdk"
import { resolveUserScope, type ServerCallContext } from "@a2a-js/sdk/server"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type { CompiledQuery, Kysely, RawBuilder, sql as Sql, SqliteDatabase } from "kysely"
import type * as KyselyModule from "kysely"
import { createHash } from "node:crypto"
import * as Path from "node:path"
import { storedTextProblem } from "../../ledger/storedText.js"
import { TaskStoreError } from "../../serverErrors.js"
import * as taskFold from "../../wire/taskFold.js"
import * as taskState from "../../wire/taskState.js"
import type { TaskStore } from "./store.js"
import * as taskList from "./taskList.js"
import * as internalTaskStore from "./taskStore.js"

/** Our events table, beside the SDK's `tasks`. @internal */
export const eventsTable = "effect_a2a_task_store_events"

/** The ledger of our migrations (kysely's `Migrator`), and its lock table. @internal */
export const migrationTable = "effect_a2a_task_store_migrations"

/** How many events a snapshot has after it at most, before an append rewrites it. @internal */
export const compactAt = 100

/** The SDK's `tasks` table and the payload format it writes in `protocol_version`. */
const tasksTable = "tasks"
const payloadFormat = "1.0"

/** The fingerprint of the marker row a compaction leaves, which no snapshot has. */
const compacted = "compacted"

/** A native store with what the server wires beside it (see `memoryStore.ts`). @internal */
export interface SqlStore extends TaskStore {
  readonly heldElsewhere: (taskId: string, context: ServerCallContext) => Effect.Effect<boolean, TaskStoreError>
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
// Rows

interface Owned {
  readonly tenant: string
  readonly owner: string
}

interface SnapshotRow {
  readonly context_id: string
  readonly status: string | null
  readonly artifacts?: string | null
  readonly history?: string | null
  readonly metadata: string | null
}

interface EventRow {
  readonly task_id: string
  readonly seq: number | string
  readonly base: string
  readonly event: string
}

type Rows = ReadonlyArray<unknown>

const scopeOf = (context: ServerCallContext): Owned => ({
  tenant: context.tenant ?? "",
  owner: resolveUserScope(context)
})

// The SDK's column widths (varchar(255) and varchar(36)), which PostgreSQL enforces, and text it cannot store
// as given: what cannot be stored is refused before a write, and is never found by a read.
const unstorable = (values: ReadonlyArray<readonly [string, string, number]>): string | undefined => {
  for (const [name, value, limit] of values) {
    const problem = storedTextProblem(value)
    if (problem !== undefined) return `${name} ${problem}`
    if ([...value].length > limit) return `${name} must be at most ${limit} characters`
  }
  return undefined
}

const scopeProblem = (scope: Owned, taskId: string) =>
  unstorable([["tenant", scope.tenant, 255], ["owner", scope.owner, 255], ["task id", taskId, 36]])

const statusLastUpdated = (timestamp: string | undefined): number => {
  if (!timestamp) return 0
  const parsed = Date.parse(timestamp)
  return Number.isNaN(parsed) ? 0 : parsed
}

const encode = (value: unknown): string | null => (value === undefined ? null : JSON.stringify(value))
const decode = (value: string | null | undefined): unknown => (value ? JSON.parse(value) : undefined)

/** The snapshot's columns as the SDK's `DatabaseTaskStore` writes them, so that its readers read ours. */
const snapshotOf = (task: Task) => {
  const payload = Task.toJSON(task) as Record<string, unknown>
  return {
    context_id: task.contextId || "",
    status_last_updated: statusLastUpdated(task.status?.timestamp),
    status_state: task.status ? taskStateToJSON(task.status.state) : null,
    status: encode(payload["status"]),
    artifacts: encode(payload["artifacts"]),
    history: encode(payload["history"]),
    metadata: encode(payload["metadata"]),
    protocol_version: payloadFormat
  }
}

const taskOf = (id: string, row: SnapshotRow): Task =>
  Task.fromJSON({
    id,
    contextId: row.context_id,
    status: decode(row.status),
    artifacts: decode(row.artifacts),
    history: decode(row.history),
    metadata: decode(row.metadata)
  })

/**
 * What the events after a snapshot follow: its context, status and
 * metadata, which a whole-task save by another writer (an old replica)
 * changes; its artifacts and history are left out, so that a list, which
 * may not read them, can tell it too.
 */
const baseOf = (row: SnapshotRow): string =>
  createHash("sha256").update(JSON.stringify([row.context_id, row.status, row.metadata])).digest("hex").slice(0, 16)

const encodeEvent = (event: taskFold.TaskEvent): string => {
  switch (event.kind) {
    case "task":
      return JSON.stringify({ kind: event.kind, data: Task.toJSON(event.data) })
    case "message":
      return JSON.stringify({ kind: event.kind, data: Message.toJSON(event.data) })
    case "statusUpdate":
      return JSON.stringify({ kind: event.kind, data: TaskStatusUpdateEvent.toJSON(event.data) })
    case "artifactUpdate":
      return JSON.stringify({ kind: event.kind, data: TaskArtifactUpdateEvent.toJSON(event.data) })
  }
}

const decodeEvent = (text: string): taskFold.TaskEvent => {
  const { data, kind } = JSON.parse(text) as { readonly kind: taskFold.TaskEvent["kind"]; readonly data: unknown }
  switch (kind) {
    case "task":
      return { kind, data: Task.fromJSON(data) }
    case "message":
      return { kind, data: Message.fromJSON(data) }
    case "statusUpdate":
      return { kind, data: TaskStatusUpdateEvent.fromJSON(data) }
    case "artifactUpdate":
      return { kind, data: TaskArtifactUpdateEvent.fromJSON(data) }
  }
}

/** The status an event sets, for `list`'s filter and order while the task runs; none for the others. */
const statusOf = (event: taskFold.TaskEvent) =>
  event.kind === "statusUpdate" ? event.data.status : event.kind === "task" ? event.data.status : undefined

/** `row`'s task with the events that follow it folded in; events of another snapshot are skipped. */
const foldRow = (id: string, row: SnapshotRow, events: ReadonlyArray<EventRow>): Task => {
  const base = baseOf(row)
  const task = taskOf(id, row)
  for (const event of events) if (event.base === base) taskFold.apply(task, decodeEvent(event.event))
  return task
}

// ---------------------------------------------------------------------------
// Statements

/** A transaction's steps: each yields a statement and is given its rows. */
type Steps<A> = Generator<CompiledQuery, A, Rows>

/** A new task's snapshot met one a concurrent append inserted first: the transaction runs again. */
class Raced extends Error {
  override readonly message = "Another append created the task at the same time"
}

const statements = (db: Kysely<unknown>, sql: typeof Sql, postgres: boolean) => {
  const tasks = sql.table(tasksTable)
  const events = sql.table(eventsTable)
  const compile = (query: RawBuilder<unknown>) => query.compile(db)
  const inScope = (scope: Owned, alias: string, idColumn: string) =>
    sql`${sql.ref(`${alias}.tenant`)} = ${scope.tenant} and ${sql.ref(`${alias}.owner`)} = ${scope.owner} and ${
      sql.ref(`${alias}.${idColumn}`)
    }`
  return {
    /** The snapshot's small columns, which its fingerprint reads; locked for an append. */
    light: (scope: Owned, taskId: string, lock: boolean) =>
      compile(sql`select context_id, status, metadata from ${tasks} t
        where ${inScope(scope, "t", "id")} = ${taskId}${sql.raw(lock && postgres ? " for update" : "")}`),
    heavy: (scope: Owned, taskId: string) =>
      compile(sql`select artifacts, history from ${tasks} t where ${inScope(scope, "t", "id")} = ${taskId}`),
    /** Which events follow the snapshot, without their bodies. */
    eventMeta: (scope: Owned, taskId: string) =>
      compile(sql`select seq, base from ${events} e where ${inScope(scope, "e", "task_id")} = ${taskId} order by seq`),
    eventBodies: (scope: Owned, taskId: string, base: string) =>
      compile(sql`select task_id, seq, base, event from ${events} e
        where ${inScope(scope, "e", "task_id")} = ${taskId} and base = ${base} order by seq`),
    events: (scope: Owned, taskIds: ReadonlyArray<string>) =>
      compile(sql`select task_id, seq, base, event from ${events} e
        where ${inScope(scope, "e", "task_id")} in (${sql.join(taskIds)}) order by task_id, seq`),
    insertSnapshot: (scope: Owned, task: Task) => {
      const row = { tenant: scope.tenant, owner: scope.owner, id: task.id, ...snapshotOf(task) }
      return compile(sql`insert into ${tasks} (${sql.join(Object.keys(row).map((column) => sql.ref(column)))})
        values (${sql.join(Object.values(row))}) on conflict (tenant, owner, id) do nothing returning id`)
    },
    updateSnapshot: (scope: Owned, task: Task) => {
      const columns = snapshotOf(task)
      return compile(
        sql`update ${tasks} set ${
          sql.join(Object.entries(columns).map(([column, value]) => sql`${sql.ref(column)} = ${value}`))
        } where tenant = ${scope.tenant} and owner = ${scope.owner} and id = ${task.id}`
      )
    },
    insertEvents: (
      scope: Owned,
      taskId: string,
      base: string,
      from: number,
      batch: ReadonlyArray<taskFold.TaskEvent>
    ) =>
      compile(sql`insert into ${events} (tenant, owner, task_id, seq, base, status_state, status_last_updated, event)
        values ${
        sql.join(batch.map((event, at) => {
          const status = statusOf(event)
          return sql`(${scope.tenant}, ${scope.owner}, ${taskId}, ${from + at}, ${base}, ${
            status === undefined ? null : taskStateToJSON(status.state)
          }, ${status === undefined ? null : statusLastUpdated(status.timestamp)}, ${encodeEvent(event)})`
        }))
      }`),
    /** The events before `below`, or all. */
    deleteEvents: (scope: Owned, taskId: string, below?: number) =>
      compile(
        sql`delete from ${events} where tenant = ${scope.tenant} and owner = ${scope.owner} and task_id = ${taskId}${
          below === undefined ? sql`` : sql` and seq < ${below}`
        }`
      ),
    /** The row that keeps a compacted run's `seq` growing: no event, and the fingerprint of no snapshot. */
    insertMarker: (scope: Owned, taskId: string, seq: number) =>
      compile(sql`insert into ${events} (tenant, owner, task_id, seq, base, status_state, status_last_updated, event)
        values (${scope.tenant}, ${scope.owner}, ${taskId}, ${seq}, ${compacted}, null, null, '{}')`),
    heldElsewhere: (scope: Owned, taskId: string) =>
      compile(
        sql`select 1 as held from ${tasks} where tenant = ${scope.tenant} and id = ${taskId} and owner <> ${scope.owner}
        limit 1`
      ),
    /** The caller's tasks with the status their latest event gives them, as `list` filters and orders them. */
    list: (scope: Owned, request: ListTasksRequest, what: "count" | "page") => {
      const latest = (column: string) =>
        sql`(select ${sql.ref(`e.${column}`)} from ${events} e where e.tenant = t.tenant and e.owner = t.owner
          and e.task_id = t.id and e.status_state is not null order by e.seq desc limit 1)`
      const columns = [
        "id",
        "context_id",
        "status",
        "metadata",
        ...(request.includeArtifacts ? ["artifacts"] : []),
        ...(request.historyLength !== undefined && request.historyLength <= 0 ? [] : ["history"])
      ]
      const current = sql`select ${sql.join(columns.map((column) => sql.ref(`t.${column}`)))},
          coalesce(${latest("status_state")}, t.status_state) as state,
          coalesce(${latest("status_last_updated")}, t.status_last_updated) as updated
        from ${tasks} t where t.tenant = ${scope.tenant} and t.owner = ${scope.owner}${
        request.contextId ? sql` and t.context_id = ${request.contextId}` : sql``
      }`
      const conditions: Array<RawBuilder<unknown>> = [sql`1 = 1`]
      if (request.status !== undefined && request.status !== TaskState.TASK_STATE_UNSPECIFIED) {
        conditions.push(sql`state = ${taskStateToJSON(request.status)}`)
      }
      if (request.statusTimestampAfter) {
        conditions.push(sql`updated > ${Date.parse(request.statusTimestampAfter)}`)
      }
      if (what === "count") {
        return compile(sql`select count(*) as total from (${current}) x where ${sql.join(conditions, sql` and `)}`)
      }
      if (request.pageToken) {
        const cursor = taskList.decodePageToken(request.pageToken)
        const at = statusLastUpdated(cursor.timestamp)
        conditions.push(sql`(updated < ${at} or (updated = ${at} and id < ${cursor.id}))`)
      }
      const pageSize = request.pageSize ?? taskList.defaultPageSize
      return compile(sql`select * from (${current}) x where ${sql.join(conditions, sql` and `)}
        order by updated desc, id desc limit ${pageSize + 1}`)
    }
  }
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
): Steps<Task | undefined> {
  const now = yield* currentSteps(s, scope, taskId, folded, true)
  if (now === undefined) {
    const task = taskFold.fold(undefined, batch)
    if (task === undefined || task.id !== taskId) return undefined
    const contextProblem = unstorable([["context id", task.contextId, 36]])
    if (contextProblem !== undefined) throw new Unstorable(contextProblem)
    const inserted = yield s.insertSnapshot(scope, task)
    if (inserted.length === 0) throw new Raced()
    return task
  }
  const { task } = now
  for (const event of batch) taskFold.apply(task, event)
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
  return taskList.handOut(task)
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

interface Runner {
  readonly db: Kysely<unknown>
  readonly sql: typeof Sql
  readonly postgres: boolean
  /** `steps` as one transaction: writing ones take the write lock first. */
  readonly transaction: <A>(steps: () => Steps<A>, writes: boolean) => Promise<A>
}

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
    return { runner, config }
  })

const postgres = (
  config: internalTaskStore.DatabaseConfig & { readonly _tag: "Postgres" },
  also: ReadonlyArray<internalTaskStore.Table>
) =>
  Effect.gen(function*() {
    const { db, sql } = yield* internalTaskStore.open(config, tasksOf, also)
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
    return { runner, config }
  })

// The events table, by a migration of ours in kysely's Migrator with ledger and lock tables of its own:
// idempotent, and on PostgreSQL replicas starting together take its lock in turn. On SQLite the lock is a
// no-op: servers starting together on one file can both run it; `if not exists` makes the table's creation
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
            }
          })
        }
      })
      const result = await migrator.migrateToLatest()
      if (result.error !== undefined) throw result.error
    },
    catch: internalTaskStore.fail("Migration", "Could not create the table of the task store's events")
  }).pipe(Effect.retry({ times: runner.postgres ? 0 : 3 }))

const storeError = (what: string) => (error: unknown) =>
  new TaskStoreError({
    reason: "Driver",
    message: `${what}: ${error instanceof Error ? error.message : String(error)}`
  })

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
    const { runner } = yield* (config._tag === "Sqlite" ? sqlite(config, also) : postgres(config, also))
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
      const { db, sql } = runner
      const orphans = Effect.tryPromise(() =>
        sql`delete from ${sql.table(eventsTable)} where not exists (select 1 from ${sql.table(tasksTable)} t
          where t.tenant = ${sql.ref(`${eventsTable}.tenant`)} and t.owner = ${sql.ref(`${eventsTable}.owner`)}
            and t.id = ${sql.ref(`${eventsTable}.task_id`)})`.execute(db)
      ).pipe(
        Effect.catchAll((error) =>
          Effect.logWarning("Could not delete the task store's events of deleted tasks").pipe(
            Effect.annotateLogs({ cause: String(error.error) })
          )
        )
      )
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
          )
      },
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
