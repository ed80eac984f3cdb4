/**
 * What a concern does around each run the request handler starts: the load
 * bound's hold, the push sender, the replication log. The handler calls
 * each stage (`Options.runStages`) before the run starts, at each of its
 * events and when it ends; the executor itself is never wrapped.
 *
 * @internal
 */
import type { AgentExecutionEvent, ExecutionEventBus, RequestContext } from "@a2a-js/sdk/server"
import * as Effect from "effect/Effect"
import type { Failure } from "./core.js"

/** A run about to start. @internal */
export interface Run {
  readonly requestContext: RequestContext
  /** The task's channel the run publishes on (see `channel.ts`). */
  readonly bus: ExecutionEventBus
}

/** What a stage does during one run, from its start. @internal */
export interface RunHooks {
  /**
   * Each event of the run, once the store has it (a bare message, which no
   * store takes, at once; one the store gave up on, then) and before anyone
   * else is handed it: what it
   * notes of the event is there when the caller's stream takes it. Plain
   * and synchronous: it is on every event's path.
   */
  readonly event?: ((event: AgentExecutionEvent) => void) | undefined
  /** Once the run has ended and its last event is in the store. */
  readonly end?: Effect.Effect<void> | undefined
}

/** @internal */
export type RunStage =
  | {
    /**
     * Before the run starts. A failure refuses it: the request fails with
     * it, and the stages started before it end.
     */
    readonly start: (run: Run) => Effect.Effect<RunHooks | undefined, Failure>
  }
  | {
    /**
     * Before the run starts, for a stage that neither waits nor refuses: a
     * run whose stages are all such starts with no fiber of its own.
     */
    readonly startNow: (run: Run) => RunHooks | undefined
  }

/** The stages of one run, started. @internal */
export interface Started {
  readonly event: ((event: AgentExecutionEvent) => void) | undefined
  /** Each stage's end, the last started first; undefined when none has one. */
  readonly end: Effect.Effect<void> | undefined
}

/** No stages: nothing to do around a run. @internal */
export const none: Started = { event: undefined, end: undefined }

// One stage's end going wrong leaves the others to end.
const endOf = (end: Effect.Effect<void>) =>
  Effect.catchAllCause(end, (cause) => Effect.logWarning("A run stage could not end", cause))

const eventOf = (
  events: ReadonlyArray<(event: AgentExecutionEvent) => void>
): ((event: AgentExecutionEvent) => void) | undefined =>
  events.length === 0 ? undefined : events.length === 1 ? events[0] : (event) => {
    for (const onEvent of events) onEvent(event)
  }

const endsOf = (ends: ReadonlyArray<Effect.Effect<void>>): Effect.Effect<void> | undefined =>
  ends.length === 0 ? undefined : Effect.suspend(() => Effect.forEach([...ends].reverse(), endOf, { discard: true }))

/**
 * Starts `stages` for `run` at once, when none of them waits or refuses
 * (`startNow`, as most runs' stages); undefined otherwise.
 *
 * @internal
 */
export const startNow = (stages: ReadonlyArray<RunStage>, run: Run): Started | undefined => {
  if (stages.length === 0) return none
  if (!stages.every((stage) => "startNow" in stage)) return undefined
  const events: Array<(event: AgentExecutionEvent) => void> = []
  const ends: Array<Effect.Effect<void>> = []
  for (const stage of stages) {
    const hooks = (stage as Extract<RunStage, { startNow: unknown }>).startNow(run)
    if (hooks?.event !== undefined) events.push(hooks.event)
    if (hooks?.end !== undefined) ends.push(hooks.end)
  }
  return { event: eventOf(events), end: endsOf(ends) }
}

/**
 * Starts `stages` for `run`, in order. When one fails (or the start is
 * interrupted), those started end before the failure is handed on.
 *
 * @internal
 */
export const start = (stages: ReadonlyArray<RunStage>, run: Run): Effect.Effect<Started, Failure> =>
  Effect.suspend(() => {
    const events: Array<(event: AgentExecutionEvent) => void> = []
    const ends: Array<Effect.Effect<void>> = []
    const end = Effect.suspend(() => endsOf(ends) ?? Effect.void)
    const started = Effect.forEach(
      stages,
      (stage) =>
        Effect.map("start" in stage ? stage.start(run) : Effect.sync(() => stage.startNow(run)), (hooks) => {
          if (hooks?.event !== undefined) events.push(hooks.event)
          if (hooks?.end !== undefined) ends.push(hooks.end)
        }),
      { discard: true }
    )
    return Effect.map(
      Effect.onError(started, () => end),
      (): Started => ({ event: eventOf(events), end: endsOf(ends) })
    )
  })
