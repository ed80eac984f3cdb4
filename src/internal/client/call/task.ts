/**
 * What the operations of one agent share, the view of a task an answer
 * holds, and the operations on a task by its id (GetTask, CancelTask).
 *
 * @internal
 */
import type { Task } from "@a2a-js/sdk"
import type { Client } from "@a2a-js/sdk/client"
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import type * as A2AClientError from "../../../A2AClientError.js"
import * as Part from "../../../Part.js"
import type { CallOptions } from "../../../RemoteAgent.js"
import * as RemoteOutcome from "../../../RemoteOutcome.js"
import * as wireParts from "../../wire/parts.js"
import * as taskState from "../../wire/taskState.js"
import * as clientCall from "./call.js"
import type { CallRecord } from "./classify.js"
import { invalidRequest, type Unsendable } from "./input.js"
import * as outcomes from "./outcome.js"

/** What the operations of one agent share; built once per agent. @internal */
export interface AgentContext {
  readonly agent: string
  readonly client: Client
  /** The agent's timeout, for calls that give none. */
  readonly timeout: Duration.Duration
  readonly track: (signal: AbortSignal) => CallRecord
  readonly engine: clientCall.Engine
  readonly unsendable: Unsendable
  /** The agent's `cancelOnInterrupt`, for calls that give none. */
  readonly cancelOnInterrupt: boolean
  /** Whether the card declares the resume extension: a cut stream then resumes after its last event. */
  readonly resumable: boolean
}

/** A task's view, or why the task an `operation` answered cannot be read. @internal */
export const view =
  (agent: string, operation: A2AClientError.Operation) =>
  (task: Task): Either.Either<RemoteOutcome.TaskView, A2AClientError.A2AClientError> => {
    const ids = { taskId: task.id, contextId: task.contextId }
    if (typeof task.id !== "string" || task.id === "") {
      return Either.left(clientCall.invalid(agent, operation, "the response holds a task without an id", ids))
    }
    const outcome = outcomes.taskOutcome(agent, task)
    if (Option.isSome(outcome)) return Either.right(outcome.value)
    const state = task.status?.state
    if (taskState.isRunning(state)) {
      const parts = wireParts.fromWireParts(task.status?.message?.parts)
      return Either.right(
        wireParts.build(RemoteOutcome.Running, {
          agent,
          taskId: task.id,
          contextId: String(task.contextId ?? ""),
          state: taskState.runningState(state),
          text: Part.textOf(parts),
          parts
        })
      )
    }
    return Either.left(
      clientCall.invalid(agent, operation, `the task is in an unrecognised state (${taskState.name(state)})`, ids)
    )
  }

/** One GetTask request of an exchange. @internal */
export type ReadTask = (
  exchange: clientCall.Exchange,
  taskId: string,
  ids: clientCall.Ids,
  done: clientCall.Done<RemoteOutcome.TaskView>
) => void

/** The operations on a task by its id. @internal */
export const make = (context: AgentContext) => {
  const { agent, client, unsendable } = context
  const { operate, request } = context.engine
  const viewTask = view(agent, "GetTask")
  /**
   * One GetTask request of an exchange (a call of its own, or a poll of
   * another call). An answer about another task is no answer about this one.
   */
  const readTask: ReadTask = (exchange, taskId, ids, done) =>
    request(
      exchange,
      "GetTask",
      ids,
      (o) => client.getTask({ tenant: "", id: taskId }, o),
      (task) =>
        task.id === taskId
          ? viewTask(task)
          : Either.left(
            clientCall.invalid(
              agent,
              "GetTask",
              `asked for task ${taskId}, the answer is about task ${String(task.id)}`,
              ids
            )
          ),
      done
    )
  const getTask = (taskId: string, options: CallOptions | undefined) =>
    operate<RemoteOutcome.TaskView>("GetTask", options, (exchange, done) => {
      const problem = unsendable(options)
      if (problem !== undefined) return done(Either.left(invalidRequest(agent, "GetTask", { taskId }, problem)))
      readTask(exchange, taskId, { taskId }, done)
    })
  const cancelTask = cancelRequest(context)
  const cancel = (taskId: string, options: CallOptions | undefined) =>
    operate<RemoteOutcome.TaskView>("CancelTask", options, (exchange, done) => {
      const problem = unsendable(options)
      if (problem !== undefined) return done(Either.left(invalidRequest(agent, "CancelTask", { taskId }, problem)))
      cancelTask(exchange, taskId, done)
    })
  return { readTask, getTask, cancel }
}

/** One CancelTask request of an exchange. */
const cancelRequest = (context: AgentContext) => {
  const viewCanceled = view(context.agent, "CancelTask")
  return (exchange: clientCall.Exchange, taskId: string, done: clientCall.Done<RemoteOutcome.TaskView>) =>
    context.engine.request(
      exchange,
      "CancelTask",
      { taskId },
      (o) => context.client.cancelTask({ tenant: "", id: taskId, metadata: undefined }, o),
      viewCanceled,
      done
    )
}

/**
 * Cancels the task of a call given up on, when the call asked for it.
 * Forked as a daemon: the interruption it follows is not delayed, and the
 * cancel outlives the caller's fiber and scope. Bounded by the call's
 * timeout, at most `abandonTimeout`; best effort, so quiet: not the call's
 * outcome, it counts nothing, and its end is logged at Debug.
 *
 * @internal
 */
export const makeAbandon = (context: AgentContext) => {
  const { agent } = context
  const cancelTask = cancelRequest(context)
  return (taskId: string, options: CallOptions | undefined): Effect.Effect<void> => {
    const timeout = Duration.min(Duration.decode(options?.timeout ?? context.timeout), abandonTimeout)
    const canceled = context.engine.operate<RemoteOutcome.TaskView>(
      "CancelTask",
      { headers: options?.headers, timeout },
      (exchange, done) => cancelTask(exchange, taskId, done),
      false
    )
    return canceled.pipe(
      Effect.matchEffect({
        onSuccess: (task) =>
          Effect.logDebug(`remote agent ${agent}: canceled task ${taskId}, abandoned by its call (now ${task._tag})`),
        onFailure: (error) =>
          Effect.logDebug(
            `remote agent ${agent}: could not cancel task ${taskId}, abandoned by its call: ${error.message}`
          ).pipe(
            Effect.annotateLogs({ reason: error.reason, delivery: error.delivery })
          )
      }),
      Effect.annotateLogs({ agent, taskId }),
      Effect.withSpan("RemoteAgent.cancelOnInterrupt", {
        attributes: { "a2a.agent": agent, "a2a.task_id": taskId },
        kind: "client"
      }),
      Effect.forkDaemon,
      Effect.asVoid
    )
  }
}

/** The longest a cancel of an abandoned task may take. */
const abandonTimeout = Duration.seconds(5)

/** Whether a call cancels its task when given up on: its own choice, else its agent's. @internal */
export const cancelsOnInterrupt = (context: AgentContext, options: CallOptions | undefined): boolean =>
  options?.cancelOnInterrupt ?? context.cancelOnInterrupt

/** Whether a call was given up on: interrupted, or out of time. @internal */
export const abandoned = (exit: Exit.Exit<unknown, A2AClientError.A2AClientError>): boolean =>
  Exit.isFailure(exit) &&
  (Cause.isInterrupted(exit.cause) ||
    Option.exists(Cause.failureOption(exit.cause), (error) => error.reason === "Timeout"))

/** Cancels an abandoned task. @internal */
export type Abandon = ReturnType<typeof makeAbandon>
