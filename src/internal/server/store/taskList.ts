/**
 * `ListTasks` as the SDK's stores answer it, for the native stores: its
 * page token (base64 of `timestamp|id`, which the SDK does not export), its
 * default page size, and the listing of tasks held in memory (the SDK's
 * `InMemoryTaskStore.list`: newest status first, ties by id, descending).
 *
 * A token that does not decode is the caller's mistake (-32602), as the
 * SDK's stores report it: the native stores raise it as the SDK's
 * `RequestMalformedError`, a defect of their `list`, which the handler
 * answers as the SDK's handler does.
 *
 * @internal
 */
import { type ListTasksRequest, type ListTasksResponse, type Task, TaskState } from "@a2a-js/sdk"
import { RequestMalformedError } from "@a2a-js/sdk/errors"
import * as taskFold from "../../wire/taskFold.js"

/** The SDK's page size when none is asked for. @internal */
export const defaultPageSize = 50

/** @internal */
export const encodePageToken = (timestamp: string, id: string): string =>
  Buffer.from(`${timestamp}|${id}`).toString("base64")

/** @internal */
export const decodePageToken = (pageToken: string): { readonly timestamp: string; readonly id: string } => {
  const [timestamp = "", ...idParts] = Buffer.from(pageToken, "base64").toString("utf-8").split("|")
  if (idParts.length === 0) throw new RequestMalformedError("Invalid page token format.")
  return { timestamp, id: idParts.join("|") }
}

/**
 * A copy of a task kept in memory, for a reader who may change it: the
 * fold's copy (arrays and metadata), and the status, which the fold
 * replaces whole but a reader may change in place.
 *
 * @internal
 */
export const handOut = (task: Task): Task => {
  const copy = taskFold.copy(task)
  if (task.status !== undefined) copy.status = { ...task.status }
  return copy
}

/** What a listed task shows of what is kept: no artifacts unless asked for, as the SDK's stores list. @internal */
export const listed = (task: Task, request: ListTasksRequest): Task => {
  const copy = handOut(task)
  if (!request.includeArtifacts) copy.artifacts = []
  return copy
}

/**
 * One page of `tasks` (those of the caller's scope), as the SDK's
 * `InMemoryTaskStore` lists them; each a copy.
 *
 * @internal
 */
export const page = (tasks: Iterable<Task>, request: ListTasksRequest): ListTasksResponse => {
  const { contextId, pageSize = defaultPageSize, pageToken, status, statusTimestampAfter } = request
  let matching = Array.from(tasks)
  if (contextId) matching = matching.filter((task) => task.contextId === contextId)
  if (status !== undefined && status !== TaskState.TASK_STATE_UNSPECIFIED) {
    matching = matching.filter((task) => task.status?.state === status)
  }
  if (statusTimestampAfter) {
    const after = new Date(statusTimestampAfter).getTime()
    matching = matching.filter((task) => task.status?.timestamp && new Date(task.status.timestamp).getTime() > after)
  }
  matching.sort((a, b) => {
    const timeA = a.status?.timestamp || ""
    const timeB = b.status?.timestamp || ""
    return timeB !== timeA ? timeB.localeCompare(timeA) : b.id.localeCompare(a.id)
  })
  const totalSize = matching.length
  if (pageToken) {
    const cursor = decodePageToken(pageToken)
    const index = matching.findIndex((task) =>
      (task.status?.timestamp || "") === cursor.timestamp && task.id === cursor.id
    )
    matching = index === -1 ? [] : matching.slice(index + 1)
  }
  const shown = matching.slice(0, pageSize)
  const last = shown[shown.length - 1]
  return {
    tasks: shown.map((task) => listed(task, request)),
    nextPageToken: last !== undefined && matching.length > shown.length
      ? encodePageToken(last.status?.timestamp || "", last.id)
      : "",
    pageSize,
    totalSize
  }
}
