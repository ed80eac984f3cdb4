/**
 * What a durable agent's runs keep in the task store's database, so that a
 * run outlives its process: a row per run in progress (the request it
 * started with, how often it was resumed, the question it waits on) and the
 * recorded result of each of its steps. Both go when the run ends; the
 * retention's sweep deletes what a crash left of a task it deletes.
 *
 * @internal
 */
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { TaskStoreError } from "../../serverErrors.js"

/** A run, named as the store names its task. @internal */
export interface RunKey {
  readonly tenant: string
  readonly owner: string
  readonly taskId: string
}

/** A run in progress. @internal */
export interface RunRow extends RunKey {
  /** What the run started from, as JSON text (written and read by `durableRun.ts` alone). */
  readonly request: string
  /** How often it was started again after its process died. */
  readonly resumes: number
  /** The number of the question it waits on (`ask`), if it waits. */
  readonly asking: number | undefined
}

/** A run in progress and the records of its steps, by step name, as JSON text. @internal */
export interface Recorded {
  readonly row: RunRow
  readonly steps: ReadonlyMap<string, string>
}

/** @internal */
export interface DurableRuns {
  /** The run of a task and its steps' records, read in one transaction. */
  readonly load: (key: RunKey) => Effect.Effect<Option.Option<Recorded>, TaskStoreError>
  /** Notes a run's start; a run already noted is kept as it is. */
  readonly begin: (key: RunKey, request: string) => Effect.Effect<void, TaskStoreError>
  /** Counts one more start after a death: the count now, `undefined` when no row is left. */
  readonly resumed: (key: RunKey) => Effect.Effect<number | undefined, TaskStoreError>
  /**
   * Records a step's result unless one is recorded already: the record
   * kept, the first one written (two processes running one step both end
   * with the same record).
   */
  readonly record: (key: RunKey, step: string, record: string) => Effect.Effect<string, TaskStoreError>
  /** Notes that the run waits on question `n`. */
  readonly ask: (key: RunKey, n: number) => Effect.Effect<void, TaskStoreError>
  /**
   * Records `record` as the answer to question `n`, the run's step `ask/<n>`,
   * and notes that it waits no more, in one transaction; false when the run
   * does not wait on question `n` (nothing written).
   */
  readonly answer: (key: RunKey, n: number, record: string) => Effect.Effect<boolean, TaskStoreError>
  /**
   * Deletes the run and its records; with `request`, only the run that
   * started with it (a later run of the task, begun meanwhile, stays).
   */
  readonly end: (key: RunKey, request?: string) => Effect.Effect<void, TaskStoreError>
  /** Every run in progress (for the runs to resume at a start). */
  readonly all: Effect.Effect<ReadonlyArray<RunRow>, TaskStoreError>
}
