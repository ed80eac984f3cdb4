/**
 * The executor's side of a durable agent's run (see `durable/durableRun.ts`):
 * its options checked, its agent run on the run's first request, whether a
 * stop leaves it for a resume, and its row deleted once its end is stored.
 *
 * @internal
 */
import type { RequestContext } from "@a2a-js/sdk/server"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import type * as AgentExecutor from "../../../AgentExecutor.js"
import { ConfigurationError } from "../../serverErrors.js"
import * as internalDurable from "../durable/durableRun.js"
import { type AgentProgress, DurableEvents, type RunEvents } from "./runEvents.js"

/** What the server handed a durable agent's executor, checked: none for an agent that is not durable. */
export const wiringOf = <R>(
  options: AgentExecutor.Options<R>
): Effect.Effect<internalDurable.DurableWiring | undefined, ConfigurationError> => {
  const durable = (options as internalDurable.DurableOptions)[internalDurable.durableOption]
  if (options.durable !== undefined && options.durable !== false && durable === undefined) {
    return new ConfigurationError({
      reason: "InvalidOption",
      message: "A durable agent needs A2AServer with a task store on SQLite or PostgreSQL, where its runs are kept."
    })
  }
  if (durable !== undefined && !(Number.isInteger(durable.maxResumes) && durable.maxResumes >= 0)) {
    return new ConfigurationError({
      reason: "InvalidOption",
      message: `durable.maxResumes must be a whole number of at least 0, not ${durable.maxResumes}`
    })
  }
  return Effect.succeed(durable)
}

/**
 * A durable agent's run: its durable side read from the store first, its
 * agent given the request the run first started with (`requestOf`), and a
 * stop to ask a question ending it INPUT_REQUIRED with that question.
 */
export const agentRun = <R>(
  agent: AgentExecutor.Agent<unknown, R>,
  wiring: internalDurable.DurableWiring,
  context: RequestContext,
  request: AgentExecutor.AgentRequest,
  events: DurableEvents,
  requestOf: (context: RequestContext) => AgentExecutor.AgentRequest
): Effect.Effect<AgentExecutor.AgentResult, unknown, R | AgentProgress> =>
  Effect.flatMap(internalDurable.start(wiring, context), ({ origin, run }) => {
    events.run = run
    const agentRequest = origin === undefined ? request : requestOf(internalDurable.originContext(context, origin))
    // The first to end: the agent, or its question, which interrupts the agent from outside.
    return Effect.raceFirst(
      Effect.suspend(() => agent(agentRequest)),
      Effect.map(
        Deferred.await(run.asked),
        (question) => ({ _tag: "InputRequired", question }) as AgentExecutor.AgentResult
      )
    )
  })

/**
 * Whether a run stopped by a shutdown is a durable one left to be resumed, noted
 * so when it is: one that has its row in the store (it began, or it is a
 * resume) and was not canceled. Stopped before it began (in its
 * `beforeExecute` hook), it has nothing to resume from and ends as a plain run.
 */
export const leaves = (
  events: RunEvents,
  wiring: internalDurable.DurableWiring | undefined,
  context: RequestContext,
  canceled: boolean
): boolean => {
  const left = wiring !== undefined && events instanceof DurableEvents && !canceled &&
    (events.run !== undefined || internalDurable.isResume(context))
  if (left) internalDurable.leave(context)
  return left
}

/**
 * Deletes the run's row once its end is in the store, unless it waits on its
 * question: a death before that leaves the run to a resume, which finds it
 * ended. Its own row only: a message to its paused task may have begun the
 * next run meanwhile.
 */
export const ended = (
  wiring: internalDurable.DurableWiring,
  events: DurableEvents,
  context: RequestContext
): Effect.Effect<void> => {
  if (events.run?.asking !== undefined) return Effect.void
  const key = internalDurable.keyOf(context)
  return Effect.catchAll(
    wiring.runs.end(key, events.run?.request),
    (error) =>
      Effect.logWarning("Could not delete an ended durable run; the next start deletes it").pipe(
        Effect.annotateLogs({ taskId: key.taskId, cause: error.message })
      )
  )
}
