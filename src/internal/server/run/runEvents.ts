/**
 * The events a run publishes on its task's bus: status updates, whole
 * artifacts, and the progress an agent reports while it runs. Output that is
 * not JSON data is refused before anything of it is published.
 *
 * @internal
 */
import { type Message, type Task, TaskState, type TaskStatusUpdateEvent } from "@a2a-js/sdk"
import { AgentEvent, type AgentExecutionEvent, type ExecutionEventBus } from "@a2a-js/sdk/server"
import * as Effect from "effect/Effect"
import * as Part from "../../../Part.js"
import { AgentProgress, InvalidOutput } from "../../agent/progress.js"
import * as json from "../../wire/json.js"
import * as wireParts from "../../wire/parts.js"

export { AgentProgress, InvalidOutput }

/** Dies with {@link InvalidOutput} when `problem` is set: output is checked before anything of it is published. */
export const checked = (problem: json.NotJson | undefined): Effect.Effect<void> =>
  problem === undefined ? Effect.void : Effect.die(new InvalidOutput(problem))

export const statusEvent = (
  taskId: string,
  contextId: string,
  state: TaskState,
  message: Message | undefined
): TaskStatusUpdateEvent => ({
  taskId,
  contextId,
  status: { state, message, timestamp: new Date().toISOString() },
  metadata: {}
})

export const textStatus = (taskId: string, contextId: string, state: TaskState, text: string): TaskStatusUpdateEvent =>
  statusEvent(taskId, contextId, state, wireParts.agentMessage(taskId, contextId, [wireParts.textPart(text)]))

/**
 * A run's bus, and the artifact updates and status messages the run published on it: what a final state written
 * ahead of a lagging handler saves with it, as the handler drops every event it processes after a terminal state.
 */
export interface RunEvents {
  readonly bus: ExecutionEventBus
  readonly artifacts: Array<AgentExecutionEvent>
  readonly messages: Array<Message>
  /**
   * The task of a run that may still answer with a bare message (see
   * `AgentExecutor.Options.messageReplies`): published before the run's
   * first event of a task, then gone. Undefined once the task is out.
   */
  unpublished: Task | undefined
}

/** Publishes the run's task if it is not out yet: the SDK requires it before any event of the task. */
export const openTask = (events: RunEvents): void => {
  const task = events.unpublished
  if (task === undefined) return
  events.unpublished = undefined
  events.bus.publish(AgentEvent.task(task))
}

/** Publishes a status update of the run's task, the task first if it is not out yet. */
export const publishStatusUpdate = (events: RunEvents, event: TaskStatusUpdateEvent): void => {
  openTask(events)
  events.bus.publish(AgentEvent.statusUpdate(event))
}

const publishStatus = (events: RunEvents, event: TaskStatusUpdateEvent): void => {
  if (event.status?.message !== undefined) events.messages.push(event.status.message)
  publishStatusUpdate(events, event)
}

/** A whole artifact, in one chunk. */
const artifactEvent = (taskId: string, contextId: string, value: Part.Artifact) =>
  AgentEvent.artifactUpdate({
    taskId,
    contextId,
    artifact: wireParts.toWireArtifact(value),
    append: false,
    lastChunk: true,
    metadata: {}
  })

export const publishArtifact = (events: RunEvents, taskId: string, contextId: string, value: Part.Artifact): void => {
  const event = artifactEvent(taskId, contextId, value)
  events.artifacts.push(event)
  openTask(events)
  events.bus.publish(event)
}

/** The progress of one run: each report goes out on its bus at once. */
export const makeProgress = (taskId: string, contextId: string, events: RunEvents) =>
  AgentProgress.of({
    status: (text) =>
      Effect.sync(() => publishStatus(events, textStatus(taskId, contextId, TaskState.TASK_STATE_WORKING, text))),
    data: (value) =>
      Effect.zipRight(
        checked(json.notJson(value, "progress.data")),
        Effect.sync(() =>
          publishStatus(
            events,
            statusEvent(
              taskId,
              contextId,
              TaskState.TASK_STATE_WORKING,
              wireParts.agentMessage(taskId, contextId, [
                wireParts.toWirePart(wireParts.build(Part.DataPart, { data: value }))
              ])
            )
          )
        )
      ),
    artifact: (value) =>
      Effect.zipRight(
        checked(json.partsNotJson(value.parts, "progress.artifact.parts")),
        Effect.sync(() => publishArtifact(events, taskId, contextId, value))
      )
  })
