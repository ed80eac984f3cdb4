/**
 * The SQL task store's rows and statements (see `sqlStore.ts`): the SDK's
 * `tasks` table as the snapshot, in the columns its `DatabaseTaskStore`
 * writes, our events table after it, and each statement both databases run.
 *
 * @internal
 */
import {
  type ListTasksRequest,
  Message,
  Task,
  TaskArtifactUpdateEvent,
  TaskState,
  taskStateToJSON,
  TaskStatusUpdateEvent
} from "@a2a-js/sdk"
import type { CompiledQuery, Kysely, RawBuilder, sql as Sql } from "kysely"
import { createHash } from "node:crypto"
import { storedTextProblem } from "../../ledger/storedText.js"
import { TaskStoreError } from "../../serverErrors.js"
import * as taskFold from "../../wire/taskFold.js"
import * as taskList from "./taskList.js"

/** Our events table, beside the SDK's `tasks`. @internal */
export const eventsTable = "effect_a2a_task_store_events"

/** The ledger of our migrations (kysely's `Migrator`), and its lock table. @internal */
export const migrationTable = "effect_a2a_task_store_migrations"

/**
 * The NOTIFY channel of the PostgreSQL store's cancels, one for every task:
 * a channel per task would cost two statements per run on the one LISTEN
 * connection (listen, unlisten), and a channel's name (63 bytes) could not
 * hold a task's scope; cancels are few, and each server drops those of tasks
 * it does not run. The payload names the task ({@link cancelKeyOf}).
 *
 * @internal
 */
export const canceledChannel = "effect_a2a_task_canceled"

/** How many events a snapshot has after it at most, before an append rewrites it. @internal */
export const compactAt = 100

/** The SDK's `tasks` table and the payload format it writes in `protocol_version`. */
export const tasksTable = "tasks"
const payloadFormat = "1.0"

/** The fingerprint of the marker row a compaction leaves, which no snapshot has. */
const compacted = "compacted"

// ---------------------------------------------------------------------------
// Rows

export interface Owned {
  readonly tenant: string
  readonly owner: string
}

export interface SnapshotRow {
  readonly context_id: string
  readonly status: string | null
  readonly artifacts?: string | null
  readonly history?: string | null
  readonly metadata: string | null
}

export interface EventRow {
  readonly task_id: string
  readonly seq: number | string
  readonly base: string
  readonly event: string
}

export type Rows = ReadonlyArray<unknown>

export { scopeOf } from "../caller/authentication.js"

// The SDK's column widths (varchar(255) and varchar(36)), which PostgreSQL enforces, and text it cannot store
// as given: what cannot be stored is refused before a write, and is never found by a read.
export const unstorable = (values: ReadonlyArray<readonly [string, string, number]>): string | undefined => {
  for (const [name, value, limit] of values) {
    const problem = storedTextProblem(value)
    if (problem !== undefined) return `${name} ${problem}`
    if ([...value].length > limit) return `${name} must be at most ${limit} characters`
  }
  return undefined
}

/** A task's name in a cancel's notice: at most about 3.3 KB of JSON, under NOTIFY's 8,000 bytes. @internal */
export const cancelKeyOf = (scope: Owned, taskId: string): string => JSON.stringify([scope.tenant, scope.owner, taskId])

export const scopeProblem = (scope: Owned, taskId: string) =>
  unstorable([["tenant", scope.tenant, 255], ["owner", scope.owner, 255], ["task id", taskId, 36]])

const statusLastUpdated = (timestamp: string | undefined): number => {
  if (!timestamp) return 0
  const parsed = Date.parse(timestamp)
  return Number.isNaN(parsed) ? 0 : parsed
}

const encode = (value: unknown): string | null => (value === undefined ? null : JSON.stringify(value))
const decode = (value: string | null | undefined): unknown => (value ? JSON.parse(value) : undefined)

/** The snapshot's columns as the SDK's `DatabaseTaskStore` writes them, so that its readers read ours. */
export const snapshotOf = (task: Task) => {
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

export const taskOf = (id: string, row: SnapshotRow): Task =>
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
export const baseOf = (row: SnapshotRow): string =>
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

export const decodeEvent = (text: string): taskFold.TaskEvent => {
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
export const foldRow = (id: string, row: SnapshotRow, events: ReadonlyArray<EventRow>): Task => {
  const base = baseOf(row)
  const task = taskOf(id, row)
  for (const event of events) if (event.base === base) taskFold.apply(task, decodeEvent(event.event))
  return task
}

// ---------------------------------------------------------------------------
// Statements

/** A transaction's steps: each yields a statement and is given its rows. */
export type Steps<A> = Generator<CompiledQuery, A, Rows>

/** A database as the store's transactions and the durable runs' (`sqlDurable.ts`) run on it (see `sqlStore.ts`). */
export interface Runner {
  readonly db: Kysely<unknown>
  readonly sql: typeof Sql
  readonly postgres: boolean
  /** `steps` as one transaction: writing ones take the write lock first. */
  readonly transaction: <A>(steps: () => Steps<A>, writes: boolean) => Promise<A>
}

/** A failure of the database, named by what failed. */
export const storeError = (what: string) => (error: unknown) =>
  new TaskStoreError({
    reason: "Driver",
    message: `${what}: ${error instanceof Error ? error.message : String(error)}`
  })

/** A new task's snapshot met one a concurrent append inserted first: the transaction runs again. */
export class Raced extends Error {
  override readonly message = "Another append created the task at the same time"
}

export const statements = (db: Kysely<unknown>, sql: typeof Sql, postgres: boolean) => {
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
    /** On PostgreSQL, the notice of a cancel, sent when its transaction commits; none on SQLite. */
    canceled: (scope: Owned, taskId: string) =>
      postgres ? compile(sql`select pg_notify(${canceledChannel}, ${cancelKeyOf(scope, taskId)})`) : undefined,
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
