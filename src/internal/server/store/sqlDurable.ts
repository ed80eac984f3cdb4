/**
 * {@link DurableRuns} on the native store's database (`sqlStore.ts`), SQLite
 * or PostgreSQL: a row per run in progress in {@link durableRunsTable} and
 * a record per step in {@link durableStepsTable}, both named as the store
 * names a task (tenant, owner, task id) and created by its migration
 * `0002_durable_runs`. Each operation is one transaction of the store's
 * `Runner`.
 *
 * Two processes may run one step at once (one resumed the run while the
 * other still ran it): a record is inserted only when none is there, and
 * both read back the one kept. An answer is written only while the run
 * waits on its question, and takes the question back in the same
 * transaction: of two answers to one question, one is recorded.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { TaskStoreError } from "../../serverErrors.js"
import type { DurableRuns, Recorded, RunKey, RunRow } from "../durable/durableRuns.js"
import { type Runner, scopeProblem, type Steps, storeError, unstorable } from "./sqlRows.js"

/** A row per run in progress. @internal */
export const durableRunsTable = "effect_a2a_durable_runs"

/** A record per step of a run in progress. @internal */
export const durableStepsTable = "effect_a2a_durable_steps"

interface StoredRun {
  readonly tenant: string
  readonly owner: string
  readonly task_id: string
  readonly request: string
  readonly resumes: number | string
  readonly asking: number | string | null
}

const rowOf = (row: StoredRun): RunRow => ({
  tenant: row.tenant,
  owner: row.owner,
  taskId: row.task_id,
  request: row.request,
  resumes: Number(row.resumes),
  asking: row.asking === null ? undefined : Number(row.asking)
})

/** The durable runs kept on `runner`'s database. @internal */
export const make = (runner: Runner): DurableRuns => {
  const { db, sql } = runner
  const runs = sql.table(durableRunsTable)
  const steps = sql.table(durableStepsTable)
  const isKey = (key: RunKey) => sql`tenant = ${key.tenant} and owner = ${key.owner} and task_id = ${key.taskId}`
  const insertStep = (key: RunKey, step: string, record: string) =>
    sql`insert into ${steps} (tenant, owner, task_id, step, record)
      values (${key.tenant}, ${key.owner}, ${key.taskId}, ${step}, ${record})
      on conflict (tenant, owner, task_id, step) do nothing`.compile(db)

  /**
   * `body` as one transaction. A key the store cannot keep (see `sqlRows.ts`) names no task, so no run:
   * the operation answers `none` as it would on a missing row, unless it writes one, which is refused.
   */
  const transaction = <A>(
    what: string,
    key: RunKey,
    none: Option.Option<A>,
    texts: ReadonlyArray<readonly [string, string, number]>,
    body: () => Steps<A>,
    writes: boolean
  ): Effect.Effect<A, TaskStoreError> => {
    const failed = storeError(`${what} of task ${key.taskId}`)
    const keyProblem = scopeProblem(key, key.taskId)
    if (keyProblem !== undefined && Option.isSome(none)) return Effect.succeed(none.value)
    const problem = keyProblem ?? unstorable(texts)
    return problem !== undefined
      ? Effect.fail(failed(new Error(problem)))
      : Effect.tryPromise({ try: () => runner.transaction(body, writes), catch: failed })
  }

  return {
    load: (key) =>
      transaction("Loading the durable run", key, Option.some(Option.none()), [], function*(): Steps<
        Option.Option<Recorded>
      > {
        const [row] = (yield sql`select tenant, owner, task_id, request, resumes, asking from ${runs}
            where ${isKey(key)}`.compile(db)) as ReadonlyArray<StoredRun>
        if (row === undefined) return Option.none()
        const records = (yield sql`select step, record from ${steps} where ${isKey(key)}`.compile(db)) as ReadonlyArray<
          { readonly step: string; readonly record: string }
        >
        return Option.some({ row: rowOf(row), steps: new Map(records.map(({ record, step }) => [step, record])) })
      }, false),
    begin: (key, request) =>
      transaction("Beginning the durable run", key, Option.none(), [["request", request, Infinity]], function*() {
        yield sql`insert into ${runs} (tenant, owner, task_id, request)
          values (${key.tenant}, ${key.owner}, ${key.taskId}, ${request})
          on conflict (tenant, owner, task_id) do nothing`.compile(db)
      }, true),
    resumed: (key) =>
      transaction("Counting a resume of the durable run", key, Option.some(undefined), [], function*() {
        const [row] = (yield sql`update ${runs} set resumes = resumes + 1 where ${isKey(key)}
          returning resumes`.compile(db)) as ReadonlyArray<{ readonly resumes: number | string }>
        return row === undefined ? undefined : Number(row.resumes)
      }, true),
    record: (key, step, record) =>
      transaction(
        `Recording step ${JSON.stringify(step)}`,
        key,
        Option.none(),
        [["step", step, 255], ["record", record, Infinity]],
        function*() {
          yield insertStep(key, step, record)
          const [kept] = (yield sql`select record from ${steps} where ${isKey(key)} and step = ${step}`
            .compile(db)) as ReadonlyArray<{ readonly record: string }>
          // Only an `end` in between (the run deleted by another process) leaves none: what was written stands.
          return kept === undefined ? record : kept.record
        },
        true
      ),
    ask: (key, n) =>
      transaction(`Noting question ${n}`, key, Option.some(undefined), [], function*() {
        yield sql`update ${runs} set asking = ${n} where ${isKey(key)}`.compile(db)
      }, true),
    answer: (key, n, record) =>
      transaction(
        `Recording the answer to question ${n}`,
        key,
        Option.some(false),
        [["record", record, Infinity]],
        function*() {
          // The row taken first: on PostgreSQL a second answer waits on its lock, then finds the question gone.
          const taken = yield sql`update ${runs} set asking = null where ${isKey(key)} and asking = ${n}
            returning asking`.compile(db)
          if (taken.length === 0) return false
          yield insertStep(key, `ask/${n}`, record)
          return true
        },
        true
      ),
    end: (key, request) =>
      transaction("Ending the durable run", key, Option.some(undefined), [], function*() {
        const ended = yield (request === undefined
          ? sql`delete from ${runs} where ${isKey(key)} returning task_id`
          : sql`delete from ${runs} where ${isKey(key)} and request = ${request} returning task_id`).compile(db)
        if (ended.length > 0) yield sql`delete from ${steps} where ${isKey(key)}`.compile(db)
      }, true),
    all: Effect.tryPromise({
      try: () =>
        runner.transaction(function*() {
          const rows = (yield sql`select tenant, owner, task_id, request, resumes, asking from ${runs}
            order by tenant, owner, task_id`.compile(db)) as ReadonlyArray<StoredRun>
          return rows.map(rowOf)
        }, false),
      catch: storeError("Listing the durable runs")
    })
  }
}
