import { type Artifact, type Message, Role, type Task, TaskState, type TaskStatus } from "@a2a-js/sdk"
import { AgentEvent, InMemoryTaskStore, ResultManager, ServerCallContext } from "@a2a-js/sdk/server"
import { describe, expect, it } from "@effect/vitest"
import { Effect, FastCheck } from "effect"
import * as taskFold from "../../../src/internal/wire/taskFold.js"

const taskId = "t-1"
const contextId = "c-1"

const message = (messageId: string, text = messageId): Message => ({
  messageId,
  contextId,
  taskId,
  role: Role.ROLE_AGENT,
  parts: [{ content: { $case: "text", value: text }, metadata: {}, filename: "", mediaType: "text/plain" }],
  metadata: {},
  extensions: [],
  referenceTaskIds: []
})

const status = (state: TaskState, said?: Message): TaskStatus => ({
  state,
  message: said,
  timestamp: "2026-12-06T00:00:00.000Z"
})

const task = (over: Partial<Task> = {}): Task => ({
  id: taskId,
  contextId,
  status: status(TaskState.TASK_STATE_WORKING),
  artifacts: [],
  history: [],
  metadata: {},
  ...over
})

const artifact = (artifactId: string, text: string, over: Partial<Artifact> = {}): Artifact => ({
  artifactId,
  name: "",
  description: "",
  parts: [{ content: { $case: "text", value: text }, metadata: {}, filename: "", mediaType: "text/plain" }],
  metadata: {},
  extensions: [],
  ...over
})

const statusUpdate = (state: TaskState, said?: Message, metadata: Record<string, unknown> = {}) =>
  AgentEvent.statusUpdate({ taskId, contextId, status: status(state, said), metadata })

const artifactUpdate = (value: Artifact, append: boolean, metadata: Record<string, unknown> = {}) =>
  AgentEvent.artifactUpdate({ taskId, contextId, artifact: value, append, lastChunk: false, metadata })

describe("taskFold", () => {
  it("starts a task only from a task event", () => {
    expect(taskFold.fold(undefined, [statusUpdate(TaskState.TASK_STATE_WORKING)])).toBeUndefined()
    const started = taskFold.fold(undefined, [AgentEvent.task(task()), statusUpdate(TaskState.TASK_STATE_COMPLETED)])
    expect(started?.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
  })

  it("keeps an ended task as it ended", () => {
    const ended = taskFold.fold(undefined, [
      AgentEvent.task(task()),
      statusUpdate(TaskState.TASK_STATE_CANCELED),
      statusUpdate(TaskState.TASK_STATE_COMPLETED, message("late"))
    ])
    expect(ended?.status?.state).toBe(TaskState.TASK_STATE_CANCELED)
    expect(ended?.history.map((said) => said.messageId)).toEqual([])
  })

  it("adds a status message to the history once", () => {
    const said = message("q")
    const folded = taskFold.fold(undefined, [
      AgentEvent.task(task()),
      statusUpdate(TaskState.TASK_STATE_WORKING, said),
      statusUpdate(TaskState.TASK_STATE_INPUT_REQUIRED, said)
    ])
    expect(folded?.history.map((known) => known.messageId)).toEqual(["q"])
  })

  it("appends every message a caller sends to the history, a repeated message id too, as the SDK's handler does", () => {
    const first = { ...message("u", "first"), role: Role.ROLE_USER }
    const second = { ...message("u", "second"), role: Role.ROLE_USER }
    const folded = taskFold.fold(task({ history: [message("a")] }), [
      AgentEvent.message(first),
      AgentEvent.message(second)
    ])
    expect(folded?.history.map((known) => known.parts[0]?.content)).toEqual([
      { $case: "text", value: "a" },
      { $case: "text", value: "first" },
      { $case: "text", value: "second" }
    ])
  })

  it("appends chunks to an artifact and replaces it without append", () => {
    const folded = taskFold.fold(undefined, [
      AgentEvent.task(task()),
      artifactUpdate(artifact("a", "one"), false),
      artifactUpdate(artifact("a", "two", { name: "named" }), true),
      artifactUpdate(artifact("b", "other"), true)
    ])
    expect(folded?.artifacts.map((known) => [known.artifactId, known.name, known.parts.length])).toEqual([
      ["a", "named", 2],
      ["b", "", 1]
    ])
    const replaced = taskFold.fold(folded, [artifactUpdate(artifact("a", "three"), false)])
    expect(replaced?.artifacts[0]?.parts.length).toBe(1)
    // The fold works on its own copy: the task it started from is as it was.
    expect(folded?.artifacts[0]?.parts.length).toBe(2)
  })

  it("never changes an event's objects when it folds a later one", () => {
    const published = artifact("a", "one")
    const folded = taskFold.fold(undefined, [AgentEvent.task(task()), artifactUpdate(published, false)])
    taskFold.fold(folded, [artifactUpdate(artifact("a", "two"), true)])
    expect(published.parts.length).toBe(1)
    if (folded !== undefined) taskFold.apply(folded, artifactUpdate(artifact("a", "three"), true))
    expect(published.parts.length).toBe(1)
  })

  it("keeps a stored task's history and merges its artifacts when a run starts with a task event", () => {
    const stored = task({ history: [message("h")], artifacts: [artifact("a", "old"), artifact("b", "kept")] })
    const folded = taskFold.fold(stored, [AgentEvent.task(task({ artifacts: [artifact("a", "new")] }))])
    expect(folded?.history.map((known) => known.messageId)).toEqual(["h"])
    expect(folded?.artifacts.map((known) => known.parts[0]?.content)).toEqual([
      { $case: "text", value: "new" },
      { $case: "text", value: "kept" }
    ])
  })
})

// Events of one task (and a few of another, which change nothing of it), as an executor may publish them.
const states = FastCheck.constantFrom(
  TaskState.TASK_STATE_SUBMITTED,
  TaskState.TASK_STATE_WORKING,
  TaskState.TASK_STATE_INPUT_REQUIRED,
  TaskState.TASK_STATE_AUTH_REQUIRED,
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_REJECTED
)
const ids = FastCheck.constantFrom("m1", "m2", "m3")
const metadata = FastCheck.option(FastCheck.dictionary(FastCheck.constantFrom("k", "l"), FastCheck.integer()), {
  nil: undefined
})
const anArtifact = FastCheck.record({
  id: FastCheck.constantFrom("a", "b", "c"),
  text: FastCheck.string({ maxLength: 3 }),
  name: FastCheck.constantFrom("", "n"),
  description: FastCheck.constantFrom("", "d"),
  metadata
}).map(({ description, id, metadata, name, text }) => artifact(id, text, { name, description, metadata }))
const events = FastCheck.array(
  FastCheck.oneof(
    FastCheck.record({
      state: states,
      history: FastCheck.array(ids, { maxLength: 2 }),
      artifacts: FastCheck.array(anArtifact, { maxLength: 2 }),
      metadata,
      other: FastCheck.boolean()
    }).map(({ artifacts, history, metadata, other, state }) =>
      AgentEvent.task(
        task({
          id: other ? "t-2" : taskId,
          status: status(state),
          history: history.map((id) => message(id)),
          artifacts,
          metadata
        })
      )
    ),
    FastCheck.record({ state: states, said: FastCheck.option(ids, { nil: undefined }), metadata }).map(
      ({ metadata, said, state }) => statusUpdate(state, said === undefined ? undefined : message(said), metadata)
    ),
    FastCheck.record({ value: anArtifact, append: FastCheck.boolean(), metadata }).map(({ append, metadata, value }) =>
      artifactUpdate(value, append, metadata)
    )
  ),
  { maxLength: 12 }
)

describe("taskFold against the SDK's ResultManager", () => {
  it.effect.prop(
    "folds task, status and artifact events into the task the SDK's handler saved",
    [events],
    ([published]) =>
      Effect.promise(async () => {
        const store = new InMemoryTaskStore()
        const context = new ServerCallContext()
        const manager = new ResultManager(store, context)
        // The manager keeps the events' objects: it is given copies, and the fold the originals.
        for (const event of structuredClone(published)) await manager.processEvent(event)
        for (const id of [taskId, "t-2"]) {
          const ofTask = published.filter((event) => taskFold.taskIdOf(event) === id)
          expect(taskFold.fold(undefined, ofTask)).toEqual(await store.load(id, context))
        }
        // Another task's events change nothing of the task being folded.
        const started = taskFold.fold(undefined, published.filter((event) => taskFold.taskIdOf(event) === taskId))
        if (started !== undefined) {
          expect(taskFold.fold(started, published)).toEqual(
            taskFold.fold(started, published.filter((event) => taskFold.taskIdOf(event) === taskId))
          )
        }
      })
  )
})
