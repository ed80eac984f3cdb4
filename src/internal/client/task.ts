/**
 * What the operations of one agent share, the view of a task an answer
 * holds, and the operations on a task by its id (GetTask, CancelTask).
 *
 * @internal
 */
import type { Task } from "@a2a-js/sdk"
import type { Client } from "@a2a-js/sdk/client"
import type { Duration } from "effect"
import { Either, Option } from "effect"
import type * as A2AClientError from "../../A2AClientError.js"
import * as Part from "../../Part.js"
import type { CallOptions } from "../../RemoteAgent.js"
import * as RemoteOutcome from "../../RemoteOutcome.js"
import * as wireParts from "../wire/parts.js"
import * as taskState from "../wire/taskState.js"
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
}

/** A task's view, or why the task an `operation` answered cannot be read. @internal */
export const view = (agent: string, operation: A2AClientError.Operation) =>
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
  return Either.left(clientCall.invalid(agent, operation, `the task is in an unrecognised state (${taskState.name(state)})`, ids))
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
          : Either.left(clientCall.invalid(agent, "GetTask", `asked for task ${taskId}, the answer is about task ${String(task.id)}`, ids)),
      done
    )
  const getTask = (taskId: string, options: CallOptions | undefined) =>
    operate<RemoteOutcome.TaskView>("GetTask", options, (exchange, done) => {
      const problem = unsendable(options)
      if (problem !== undefined) return done(Either.left(invalidRequest(agent, "GetTask", { taskId }, problem)))
      readTask(exchange, taskId, { taskId }, done)
    })
  const viewCanceled = view(agent, "CancelTask")
  const cancel = (taskId: string, options: CallOptions | undefined) =>
    operate<RemoteOutcome.TaskView>("CancelTask", options, (exchange, done) => {
      const problem = unsendable(options)
      if (problem !== undefined) return done(Either.left(invalidRequest(agent, "CancelTask", { taskId }, problem)))
      request(exchange, "CancelTask", { taskId }, (o) => client.cancelTask({ tenant: "", id: taskId, metadata: undefined }, o), viewCanceled, done)
    })
  return { readTask, getTask, cancel }
}
