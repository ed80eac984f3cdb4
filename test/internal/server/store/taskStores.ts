/**
 * What every native task store must do, whatever holds it (memory, SQLite,
 * PostgreSQL): appends folded into the task, copies handed out, tasks
 * scoped by tenant and owner, and `ListTasks` as the SDK's stores answer it.
 * Each test works in a tenant of its own, so that a shared database keeps
 * no state between tests or runs.
 */
import {
  type Artifact,
  type ListTasksRequest,
  type Message,
  Role,
  Task,
  type TaskArtifactUpdateEvent,
  TaskState,
  type TaskStatusUpdateEvent
} from "@a2a-js/sdk"
import { RequestMalformedError } from "@a2a-js/sdk/errors"
import { InMemoryTaskStore, ServerCallContext, UnauthenticatedUser } from "@a2a-js/sdk/server"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Option, type Scope } from "effect"
import { randomUUID } from "node:crypto"
import type { TaskStore } from "../../../../src/internal/server/store/store.js"
import type { TaskStoreError } from "../../../../src/internal/serverErrors.js"
import type * as taskFold from "../../../../src/internal/wire/taskFold.js"
import { listAll } from "../../../fixtures/serverAgents.js"

export const contextOf = (tenant: string, userName?: string) =>
  new ServerCallContext({
    user: userName === undefined ? new UnauthenticatedUser() : { isAuthenticated: true, userName },
    ...(tenant === "" ? {} : { tenant })
  })

/** A tenant of the test's own. */
export const freshTenant = () => randomUUID()

export const at = (second: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, second)).toISOString()

const text = (value: string) => ({
  content: { $case: "text" as const, value },
  metadata: undefined,
  filename: "",
  mediaType: ""
})

export const messageOf = (taskId: string, messageId: string, role = Role.ROLE_AGENT): Message => ({
  messageId,
  contextId: "ctx",
  taskId,
  role,
  parts: [text(messageId)],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: []
})

export const artifactOf = (artifactId: string, ...values: Array<string>): Artifact => ({
  artifactId,
  name: "",
  description: "",
  parts: values.map(text),
  metadata: undefined,
  extensions: []
})

export const taskOf = (id: string, state: TaskState, second = 0, extra: Partial<Task> = {}): Task => ({
  id,
  contextId: "ctx",
  status: { state, message: undefined, timestamp: at(second) },
  artifacts: [],
  history: [messageOf(id, `${id}-m0`, Role.ROLE_USER)],
  metadata: undefined,
  ...extra
})

export const started = (task: Task): taskFold.TaskEvent => ({ kind: "task", data: task })

export const status = (
  taskId: string,
  state: TaskState,
  second: number,
  message?: Message,
  metadata?: TaskStatusUpdateEvent["metadata"]
): taskFold.TaskEvent => ({
  kind: "statusUpdate",
  data: { taskId, contextId: "ctx", status: { state, message, timestamp: at(second) }, metadata }
})

export const artifact = (
  taskId: string,
  value: Artifact,
  append = false,
  lastChunk = false
): taskFold.TaskEvent => ({
  kind: "artifactUpdate",
  data: { taskId, contextId: "ctx", artifact: value, append, lastChunk, metadata: undefined } as TaskArtifactUpdateEvent
})

export const message = (taskId: string, messageId: string): taskFold.TaskEvent => ({
  kind: "message",
  data: messageOf(taskId, messageId, Role.ROLE_USER)
})

const empty = (metadata: Task["metadata"]) => metadata === undefined || Object.keys(metadata).length === 0

/**
 * A task as the SDK's proto-JSON codec reads it back, what a database store
 * hands out; no metadata and empty metadata are one, on the task and on its
 * artifacts (the fold may start them empty).
 */
export const normal = (task: Task | undefined): Task | undefined => {
  if (task === undefined) return undefined
  const read = Task.fromJSON(Task.toJSON(task))
  return {
    ...read,
    metadata: empty(read.metadata) ? undefined : read.metadata,
    artifacts: read.artifacts.map((each) => empty(each.metadata) ? { ...each, metadata: undefined } : each)
  }
}

type Make = () => Effect.Effect<TaskStore, TaskStoreError, Scope.Scope>

export const taskStoreContract = (name: string, make: Make) =>
  describe(`the ${name} task store`, () => {
    it.scoped("a task starts with its task event; other events start none", () =>
      Effect.gen(function*() {
        const store = yield* make()
        const context = contextOf(freshTenant())
        const id = randomUUID()
        expect(yield* store.append(id, [status(id, TaskState.TASK_STATE_WORKING, 1)], context)).toBeUndefined()
        expect(yield* store.get(id, context)).toBeUndefined()
        const first = yield* store.append(id, [started(taskOf(id, TaskState.TASK_STATE_SUBMITTED))], context)
        expect(normal(first)).toEqual(normal(taskOf(id, TaskState.TASK_STATE_SUBMITTED)))
        expect(normal(yield* store.get(id, context))).toEqual(normal(first))
      }))

    it.scoped("status, message and artifact events fold into the task, as the fold reads them", () =>
      Effect.gen(function*() {
        const store = yield* make()
        const context = contextOf(freshTenant(), "alice")
        const id = randomUUID()
        yield* store.append(id, [started(taskOf(id, TaskState.TASK_STATE_SUBMITTED))], context)
        yield* store.append(id, [
          status(id, TaskState.TASK_STATE_WORKING, 1, messageOf(id, "thinking"), { step: 1 }),
          artifact(id, artifactOf("a", "one"))
        ], context)
        yield* store.append(id, [artifact(id, artifactOf("a", "two"), true)], context)
        yield* store.append(
          id,
          [artifact(id, artifactOf("b", "first")), artifact(id, artifactOf("b", "second"))],
          context
        )
        yield* store.append(id, [artifact(id, artifactOf("a", "three"), true, true), message(id, "follow-up")], context)
        // A caller's message joins the history each time it is sent, its id repeated too, as the SDK's handler adds it.
        const last = yield* store.append(
          id,
          [message(id, "follow-up"), status(id, TaskState.TASK_STATE_WORKING, 2)],
          context
        )
        const expected = taskOf(id, TaskState.TASK_STATE_WORKING, 2, {
          artifacts: [artifactOf("a", "one", "two", "three"), artifactOf("b", "second")],
          history: [
            messageOf(id, `${id}-m0`, Role.ROLE_USER),
            messageOf(id, "thinking"),
            messageOf(id, "follow-up", Role.ROLE_USER),
            messageOf(id, "follow-up", Role.ROLE_USER)
          ],
          metadata: { step: 1 }
        })
        expect(normal(last)).toEqual(normal(expected))
        expect(normal(yield* store.get(id, context))).toEqual(normal(expected))
        // An ended task stays as it ended.
        yield* store.append(id, [status(id, TaskState.TASK_STATE_COMPLETED, 3)], context)
        const ended = yield* store.append(id, [status(id, TaskState.TASK_STATE_WORKING, 4)], context)
        expect(ended?.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
        expect((yield* store.get(id, context))?.status?.timestamp).toBe(at(3))
        expect((yield* store.get(id, context))?.artifacts.length).toBe(2)
      }))

    it.scoped("a paused task continues: its later events fold onto it", () =>
      Effect.gen(function*() {
        const store = yield* make()
        const context = contextOf(freshTenant())
        const id = randomUUID()
        yield* store.append(id, [
          started(taskOf(id, TaskState.TASK_STATE_SUBMITTED)),
          status(id, TaskState.TASK_STATE_INPUT_REQUIRED, 1, messageOf(id, "which?"))
        ], context)
        expect((yield* store.get(id, context))?.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED)
        yield* store.append(id, [message(id, "this one"), status(id, TaskState.TASK_STATE_WORKING, 2)], context)
        yield* store.append(
          id,
          [artifact(id, artifactOf("r", "done")), status(id, TaskState.TASK_STATE_COMPLETED, 3)],
          context
        )
        const task = yield* store.get(id, context)
        expect(task?.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
        expect(task?.history.map((each) => each.messageId)).toEqual([`${id}-m0`, "which?", "this one"])
        expect(normal(task)?.artifacts).toEqual(
          normal(taskOf(id, 0, 0, { artifacts: [artifactOf("r", "done")] }))?.artifacts
        )
      }))

    it.scoped("what get, list and append hand out is a copy: changing it changes nothing kept", () =>
      Effect.gen(function*() {
        const store = yield* make()
        const context = contextOf(freshTenant())
        const id = randomUUID()
        const given = taskOf(id, TaskState.TASK_STATE_WORKING, 1, { artifacts: [artifactOf("a", "x")] })
        const appended = (yield* store.append(id, [started(given)], context))!
        const kept = normal(given)
        given.history.length = 0
        given.artifacts[0]!.parts.length = 0
        appended.history.length = 0
        appended.artifacts.length = 0
        const got = (yield* store.get(id, context))!
        expect(normal(got)).toEqual(kept)
        got.history.push(messageOf(id, "extra"))
        got.artifacts[0]!.parts.push(got.artifacts[0]!.parts[0]!)
        got.status!.state = TaskState.TASK_STATE_FAILED
        const listed = (yield* store.list(listAll({ includeArtifacts: true }), context)).tasks[0]!
        expect(normal(listed)).toEqual(kept)
        listed.artifacts.length = 0
        expect(normal(yield* store.get(id, context))).toEqual(kept)
      }))

    it.scoped("tasks are scoped by tenant and owner: the same id is another task elsewhere", () =>
      Effect.gen(function*() {
        const store = yield* make()
        const tenant = freshTenant()
        const alice = contextOf(tenant, "alice")
        const bob = contextOf(tenant, "bob")
        const otherTenant = contextOf(freshTenant(), "alice")
        const id = randomUUID()
        yield* store.append(id, [started(taskOf(id, TaskState.TASK_STATE_WORKING))], alice)
        expect(yield* store.get(id, bob)).toBeUndefined()
        expect(yield* store.get(id, otherTenant)).toBeUndefined()
        expect((yield* store.list(listAll(), bob)).tasks).toEqual([])
        expect((yield* store.list(listAll(), otherTenant)).totalSize).toBe(0)
        // Bob's events for the id start nothing of Alice's, and his own task is his.
        expect(yield* store.append(id, [status(id, TaskState.TASK_STATE_FAILED, 1)], bob)).toBeUndefined()
        yield* store.append(id, [started(taskOf(id, TaskState.TASK_STATE_COMPLETED, 2))], bob)
        expect((yield* store.get(id, alice))?.status?.state).toBe(TaskState.TASK_STATE_WORKING)
        expect((yield* store.get(id, bob))?.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
        expect((yield* store.list(listAll(), alice)).tasks.map((task) => task.id)).toEqual([id])
      }))

    it.scoped("ListTasks filters, orders and pages as the SDK's store, running tasks by their latest status", () =>
      Effect.gen(function*() {
        const store = yield* make()
        const context = contextOf(freshTenant(), "lister")
        const sdk = new InMemoryTaskStore()
        const states = [
          TaskState.TASK_STATE_WORKING,
          TaskState.TASK_STATE_COMPLETED,
          TaskState.TASK_STATE_INPUT_REQUIRED,
          TaskState.TASK_STATE_SUBMITTED
        ]
        // Twelve tasks, some on the same second, some moved on by later events, some ending.
        for (let i = 0; i < 12; i++) {
          const id = `task-${String(i).padStart(2, "0")}`
          const contextId = i % 3 === 0 ? "c1" : "c2"
          const events = [
            started(taskOf(id, TaskState.TASK_STATE_SUBMITTED, i % 4, {
              contextId,
              artifacts: [artifactOf(`${id}-a`, "x")]
            }))
          ]
          const state = states[i % states.length]!
          if (state !== TaskState.TASK_STATE_SUBMITTED) events.push(status(id, state, 10 + (i % 5)))
          if (i % 2 === 0) events.push(status(id, TaskState.TASK_STATE_WORKING, 20 + (i % 3)))
          const [first, ...rest] = events
          yield* store.append(id, [first!], context)
          for (const event of rest) yield* store.append(id, [event], context)
          const folded = yield* store.get(id, context)
          yield* Effect.promise(() => sdk.save(folded!, context))
        }
        const requests: Array<Partial<ListTasksRequest>> = [
          {},
          { pageSize: 5 },
          { pageSize: 1 },
          { contextId: "c1", pageSize: 2 },
          { status: TaskState.TASK_STATE_WORKING, pageSize: 3 },
          { status: TaskState.TASK_STATE_COMPLETED },
          { statusTimestampAfter: at(12), pageSize: 2 },
          { includeArtifacts: true, pageSize: 4 }
        ]
        for (const request of requests) {
          let token = ""
          let pages = 0
          do {
            const ours = yield* store.list(listAll({ ...request, pageToken: token }), context)
            const theirs = yield* Effect.promise(() => sdk.list(listAll({ ...request, pageToken: token }), context))
            expect({ ...ours, tasks: ours.tasks.map(normal) }).toEqual({ ...theirs, tasks: theirs.tasks.map(normal) })
            token = ours.nextPageToken
            pages++
          } while (token !== "" && pages < 20)
          expect(token).toBe("")
        }
      }))

    it.scoped("a page token that does not decode is the caller's mistake, as the SDK's stores say", () =>
      Effect.gen(function*() {
        const store = yield* make()
        const exit = yield* Effect.exit(
          store.list(listAll({ pageToken: "bm90LWEtdG9rZW4=" }), contextOf(freshTenant()))
        )
        expect(Exit.isFailure(exit) && Option.getOrUndefined(Cause.dieOption(exit.cause))).toBeInstanceOf(
          RequestMalformedError
        )
      }))
  })
