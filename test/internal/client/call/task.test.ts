import { type Task, TaskState } from "@a2a-js/sdk"
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { view } from "../../../../src/internal/client/call/task.js"
import * as wireParts from "../../../../src/internal/wire/parts.js"

const task = (id: string, state: TaskState, text = ""): Task => ({
  id,
  contextId: "ctx-1",
  status: {
    state,
    message: wireParts.agentMessage(id, "ctx-1", [wireParts.textPart(text)]),
    timestamp: new Date().toISOString()
  },
  artifacts: [],
  history: [],
  metadata: {}
})

describe("the view of a task", () => {
  const viewed = view("booking", "GetTask")

  it("reads a running task as Running, with its status text", () => {
    const running = Either.getOrThrow(viewed(task("t1", TaskState.TASK_STATE_SUBMITTED, "queued")))
    expect(running).toMatchObject({
      _tag: "Running",
      agent: "booking",
      taskId: "t1",
      contextId: "ctx-1",
      state: "Submitted",
      text: "queued"
    })
    expect(Either.getOrThrow(viewed(task("t1", TaskState.TASK_STATE_WORKING)))).toMatchObject({ state: "Working" })
  })

  it("reads an ended task as its outcome", () => {
    expect(Either.getOrThrow(viewed(task("t1", TaskState.TASK_STATE_COMPLETED, "booked")))).toMatchObject({
      _tag: "Completed",
      text: "booked"
    })
  })

  it("refuses a task without an id, or in a state A2A does not define, naming the operation", () => {
    const noId = Either.flip(viewed(task("", TaskState.TASK_STATE_COMPLETED)))
    expect(Either.getOrThrow(noId)).toMatchObject({
      reason: "InvalidResponse",
      operation: "GetTask",
      detail: "the response holds a task without an id"
    })
    const unknown = Either.getOrThrow(Either.flip(view("booking", "CancelTask")(task("t1", 99 as TaskState))))
    expect(unknown).toMatchObject({
      reason: "InvalidResponse",
      operation: "CancelTask",
      taskId: "t1",
      detail: "the task is in an unrecognised state (99)"
    })
  })
})
