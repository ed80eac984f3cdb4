/**
 * The events a run publishes on its task's bus: status updates, whole
 * artifacts, and the progress an agent reports while it runs. Output that is
 * not JSON data is refused before anything of it is published.
 *
 * @internal
 */
import { type Message, type Task, TaskState, type TaskStatusUpdateEvent } from "@a2a-js/sdk"
import { AgentEvent, type ExecutionEventBus } from "@a2a-js/sdk/server"
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Part from "../../../Part.js"
import * as internalProgress from "../../progress.js"
import { AgentProgress, InvalidOutput } from "../../progress.js"
import * as json from "../../wire/json.js"
import * as wireParts from "../../wire/parts.js"
import * as internalDurable from "../durable/durableRun.js"

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
 * A run's bus and what it publishes on it; also the run's `AgentProgress`.
 * One object per run, its progress functions made only when an agent takes
 * one: a run mostly waits, and every closure it holds meanwhile is held once
 * per run in flight.
 */
export class RunEvents implements Context.Tag.Service<AgentProgress> {
  constructor(
    readonly bus: ExecutionEventBus,
    readonly taskId: string,
    readonly contextId: string,
    /**
     * The task of a run that may still answer with a bare message (see
     * `AgentExecutor.Options.messageReplies`): published before the run's
     * first event of a task, then gone. Undefined once the task is out.
     */
    public unpublished: Task | undefined
  ) {}

  /** A WORKING status update with a text message. */
  get status() {
    return (text: string): Effect.Effect<void> =>
      Effect.sync(() => this.progress(textStatus(this.taskId, this.contextId, TaskState.TASK_STATE_WORKING, text)))
  }

  /** A WORKING status update with a data part. */
  get data() {
    return (value: Part.Json): Effect.Effect<void> =>
      Effect.zipRight(
        checked(json.notJson(value, "progress.data")),
        Effect.sync(() =>
          this.progress(
            statusEvent(
              this.taskId,
              this.contextId,
              TaskState.TASK_STATE_WORKING,
              wireParts.agentMessage(this.taskId, this.contextId, [
                wireParts.toWirePart(wireParts.build(Part.DataPart, { data: value }))
              ])
            )
          )
        )
      )
  }

  /** An artifact update. */
  get artifact() {
    return (value: Part.Artifact): Effect.Effect<void> =>
      Effect.zipRight(
        checked(json.partsNotJson(value.parts, "progress.artifact.parts")),
        Effect.sync(() => this.progressArtifact(value))
      )
  }

  /** Publishes a progress report (a durable run's places it first: `durable/durableRun.ts`). */
  progress(event: TaskStatusUpdateEvent): void {
    publishStatusUpdate(this, event)
  }

  /** Publishes an artifact reported as progress. */
  progressArtifact(value: Part.Artifact, metadata: { readonly [key: string]: unknown } = {}): void {
    publishArtifact(this, value, metadata)
  }
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

/** Publishes a whole artifact of the run's task, in one chunk. */
export const publishArtifact = (
  events: RunEvents,
  value: Part.Artifact,
  metadata: { readonly [key: string]: unknown } = {}
): void => {
  openTask(events)
  events.bus.publish(AgentEvent.artifactUpdate({
    taskId: events.taskId,
    contextId: events.contextId,
    artifact: wireParts.toWireArtifact(value),
    append: false,
    lastChunk: true,
    metadata: { ...metadata }
  }))
}

/**
 * The events of a durable run: each progress report placed, and dropped
 * when the store has its place already. Its `AgentProgress` carries the
 * run's steps and questions.
 *
 * @internal
 */
export class DurableEvents extends RunEvents {
  /** Set as the agent starts, once the store told where the run is. */
  run: internalDurable.DurableRun | undefined

  get [internalProgress.durable](): internalProgress.Durable | undefined {
    return this.run
  }

  override progress(event: TaskStatusUpdateEvent): void {
    const place = this.run?.next()
    if (place !== undefined) {
      super.progress({ ...event, metadata: { ...event.metadata, [internalDurable.placeKey]: place } })
    }
  }

  override progressArtifact(value: Part.Artifact): void {
    const place = this.run?.next()
    if (place !== undefined) super.progressArtifact(value, { [internalDurable.placeKey]: place })
  }
}
