/**
 * The outcome a caller reads of a task in a final state, or of a bare
 * message reply: its parts decoded by the wire, a FAILED one with its error
 * id and failure hint.
 *
 * @internal
 */
import { type Message, type Task, TaskState } from "@a2a-js/sdk"
import * as Option from "effect/Option"
import * as FailureHint from "../../../FailureHint.js"
import * as Part from "../../../Part.js"
import * as RemoteOutcome from "../../../RemoteOutcome.js"
import { build, fromWireArtifact, fromWireParts } from "../../wire/parts.js"
import * as taskState from "../../wire/taskState.js"

const outcomeClasses = {
  Completed: RemoteOutcome.Completed,
  Canceled: RemoteOutcome.Canceled,
  Rejected: RemoteOutcome.Rejected,
  InputRequired: RemoteOutcome.InputRequired,
  AuthRequired: RemoteOutcome.AuthRequired
}

/** The outcome of a task in `state`, or none when the state is not final. */
export const outcomeOf = (
  agent: string,
  taskId: string,
  contextId: string,
  state: TaskState | undefined,
  message: Message | undefined,
  artifacts: ReadonlyArray<Part.Artifact>
): Option.Option<RemoteOutcome.RemoteOutcome> => {
  const parts = fromWireParts(message?.parts)
  const fields = { agent, taskId, contextId, text: Part.textOf(parts), parts, artifacts }
  const tag = taskState.outcomeTag(state)
  switch (tag) {
    case undefined:
      return Option.none()
    case "Failed":
      return Option.some(
        build(RemoteOutcome.Failed, {
          ...fields,
          errorId: RemoteOutcome.extractErrorId(fields.text),
          hint: FailureHint.fromMetadata(message?.metadata)
        })
      )
    default:
      return Option.some(build(outcomeClasses[tag], fields))
  }
}

export const taskOutcome = (agent: string, task: Task): Option.Option<RemoteOutcome.RemoteOutcome> =>
  outcomeOf(
    agent,
    String(task.id ?? ""),
    String(task.contextId ?? ""),
    task.status?.state,
    task.status?.message,
    Array.isArray(task.artifacts) ? task.artifacts.map(fromWireArtifact) : []
  )

/** A bare message reply: the interaction completed without a task. */
export const messageOutcome = (agent: string, message: Message): RemoteOutcome.RemoteOutcome =>
  Option.getOrThrow(
    outcomeOf(
      agent,
      String(message.taskId ?? ""),
      String(message.contextId ?? ""),
      TaskState.TASK_STATE_COMPLETED,
      message,
      []
    )
  )
