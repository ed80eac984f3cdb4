/**
 * A task as its events make it: how a `task`, status or artifact event
 * changes the task it belongs to, as A2A 1.0 reads them and as the SDK's
 * handler saved them (tasks already stored that way read the same).
 *
 * The fold changes the task it is given, in place: a store folds into its
 * own copy, so that an event costs what it adds, not a copy of the whole
 * task. What it takes from an event it copies one level down, so that
 * folding a later event never changes an earlier event's objects, which
 * subscribers may still hold.
 *
 * @internal
 */
import type { Artifact, Message, Task } from "@a2a-js/sdk"
import type { AgentExecutionEvent } from "@a2a-js/sdk/server"
import * as taskState from "./taskState.js"

/**
 * What a task's store folds: the executor's events, where `message` is a
 * message joining the task's history (the caller's message that continues
 * it). An agent's bare message answer is no task's and never reaches a store.
 *
 * @internal
 */
export type TaskEvent = AgentExecutionEvent

/** The id of the task `event` belongs to. @internal */
export const taskIdOf = (event: TaskEvent): string =>
  event.kind === "task" ? event.data.id : event.kind === "message" ? event.data.taskId : event.data.taskId

const withMessage = (history: Array<Message>, message: Message): Array<Message> => {
  for (const known of history) if (known.messageId === message.messageId) return history
  history.push(message)
  return history
}

// Absent metadata stays absent until an event brings some, as the SDK's handler saved it.
const merged = (
  into: Task["metadata"],
  from: Task["metadata"] | undefined
): Task["metadata"] => (from === undefined ? into : { ...into, ...from })

const copyOfMetadata = (metadata: Task["metadata"]): Task["metadata"] =>
  metadata === undefined ? undefined : { ...metadata }

const copyOf = (artifact: Artifact): Artifact => ({ ...artifact, parts: [...artifact.parts] })

/** `incoming` over `stored` by artifact id: stored ones keep their place, new ones follow. */
const mergedArtifacts = (stored: ReadonlyArray<Artifact>, incoming: ReadonlyArray<Artifact>): Array<Artifact> => {
  const byId = new Map(incoming.map((artifact) => [artifact.artifactId, artifact]))
  const result = stored.map((artifact) => copyOf(byId.get(artifact.artifactId) ?? artifact))
  const seen = new Set(stored.map((artifact) => artifact.artifactId))
  for (const artifact of incoming) if (!seen.has(artifact.artifactId)) result.push(copyOf(artifact))
  return result
}

/**
 * A new task from its first event, or undefined when that event cannot
 * start one (only a `task` event does).
 *
 * @internal
 */
export const start = (event: TaskEvent): Task | undefined =>
  event.kind === "task"
    ? {
      ...event.data,
      history: [...(event.data.history ?? [])],
      artifacts: (event.data.artifacts ?? []).map(copyOf),
      metadata: copyOfMetadata(event.data.metadata)
    }
    : undefined

/**
 * `task` with `event` folded in, changed in place. A status event for an
 * ended task changes nothing unless it repeats its state: an ended task
 * stays as it ended. An event of another task changes nothing.
 *
 * @internal
 */
export const apply = (task: Task, event: TaskEvent): Task => {
  switch (event.kind) {
    case "task": {
      const next = event.data
      if (next.id !== task.id) return task
      // A run starts with the whole task as it sees it: its history and artifacts are kept, merged by id.
      task.contextId = next.contextId
      task.status = next.status
      if ((next.history ?? []).length > 0) task.history = [...next.history]
      task.artifacts = mergedArtifacts(task.artifacts ?? [], next.artifacts ?? [])
      task.metadata = merged(task.metadata, next.metadata)
      return task
    }
    case "message": {
      if (event.data.taskId !== task.id) return task
      // Every message a caller sends joins the history, as the SDK's handler adds it: a repeated message id
      // too (the TCK sends one id for every message of a session), unlike an agent's status messages.
      task.history = [...(task.history ?? []), event.data]
      return task
    }
    case "statusUpdate": {
      const update = event.data
      if (update.taskId !== task.id) return task
      const stored = task.status?.state
      if (taskState.isTerminal(stored) && update.status?.state !== stored) return task
      task.status = update.status
      task.metadata = merged(task.metadata, update.metadata)
      const message = update.status?.message
      if (message !== undefined) task.history = withMessage(task.history ?? [], message)
      return task
    }
    case "artifactUpdate": {
      const { append, artifact, metadata, taskId } = event.data
      if (taskId !== task.id || artifact === undefined) return task
      const artifacts = task.artifacts ?? []
      const at = artifacts.findIndex((known) => known.artifactId === artifact.artifactId)
      const known = at === -1 ? undefined : artifacts[at]
      if (known === undefined) artifacts.push(copyOf(artifact))
      else if (!append) artifacts[at] = copyOf(artifact)
      else {
        artifacts[at] = {
          ...known,
          ...(artifact.name ? { name: artifact.name } : {}),
          ...(artifact.description ? { description: artifact.description } : {}),
          parts: [...known.parts, ...artifact.parts],
          metadata: merged(known.metadata, artifact.metadata)
        }
      }
      task.artifacts = artifacts
      task.metadata = merged(task.metadata, metadata)
      return task
    }
  }
}

/**
 * The task `events` make, in order, from `base` (a stored task) or from
 * their first `task` event; undefined when neither gives one.
 *
 * @internal
 */
export const fold = (base: Task | undefined, events: Iterable<TaskEvent>): Task | undefined => {
  let task = base === undefined ? undefined : copy(base)
  for (const event of events) task = task === undefined ? start(event) : apply(task, event)
  return task
}

/**
 * A copy of `task` whose arrays and metadata a fold or a reader may change
 * without changing `task`: what a store hands out of what it keeps.
 *
 * @internal
 */
export const copy = (task: Task): Task => ({
  ...task,
  history: [...(task.history ?? [])],
  artifacts: (task.artifacts ?? []).map(copyOf),
  metadata: copyOfMetadata(task.metadata)
})
