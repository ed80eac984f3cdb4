import { TaskState } from "@a2a-js/sdk"
import { describe, expect, it } from "@effect/vitest"
import * as taskState from "../../../src/internal/wire/taskState.js"
import * as RemoteOutcome from "../../../src/RemoteOutcome.js"

describe("the task-state table", () => {
  it("places every state A2A defines, and none it does not", () => {
    const phases = Object.fromEntries(
      Object.entries(TaskState).filter(([, value]) => typeof value === "number").map(([name, value]) => {
        const state = value as TaskState
        const phase = taskState.isRunning(state)
          ? "running"
          : taskState.isPaused(state)
          ? "paused"
          : taskState.isTerminal(state)
          ? "ended"
          : "none"
        return [name, phase]
      })
    )
    expect(phases).toEqual({
      TASK_STATE_UNSPECIFIED: "none",
      TASK_STATE_SUBMITTED: "running",
      TASK_STATE_WORKING: "running",
      TASK_STATE_COMPLETED: "ended",
      TASK_STATE_FAILED: "ended",
      TASK_STATE_CANCELED: "ended",
      TASK_STATE_INPUT_REQUIRED: "paused",
      TASK_STATE_REJECTED: "ended",
      TASK_STATE_AUTH_REQUIRED: "paused",
      UNRECOGNIZED: "none"
    })
  })

  it("gives each outcome of RemoteOutcome to exactly one state, and one to every settled state", () => {
    const states = Object.values(TaskState).filter((value): value is TaskState => typeof value === "number")
    const tags = states.flatMap((state) => taskState.outcomeTag(state) ?? [])
    expect([...tags].sort()).toEqual(RemoteOutcome.RemoteOutcome.members.map((member) => member._tag).sort())
    for (const state of states) expect(taskState.isSettled(state)).toBe(taskState.outcomeTag(state) !== undefined)
    expect(taskState.outcomeTag(undefined)).toBeUndefined()
    expect(taskState.name(undefined)).toBe("TASK_STATE_UNSPECIFIED")
    expect(taskState.name(TaskState.TASK_STATE_WORKING)).toBe("TASK_STATE_WORKING")
    expect(taskState.runningState(TaskState.TASK_STATE_SUBMITTED)).toBe("Submitted")
    expect(taskState.runningState(TaskState.TASK_STATE_WORKING)).toBe("Working")
  })

  it("names every state to an agent as the client does: each its own name, any other Working", () => {
    const names = Object.fromEntries(
      Object.entries(TaskState).filter(([, value]) => typeof value === "number").map((
        [name, value]
      ) => [name, taskState.literalOf(value as TaskState)])
    )
    expect(names).toEqual({
      TASK_STATE_UNSPECIFIED: "Working",
      TASK_STATE_SUBMITTED: "Submitted",
      TASK_STATE_WORKING: "Working",
      TASK_STATE_COMPLETED: "Completed",
      TASK_STATE_FAILED: "Failed",
      TASK_STATE_CANCELED: "Canceled",
      TASK_STATE_INPUT_REQUIRED: "InputRequired",
      TASK_STATE_REJECTED: "Rejected",
      TASK_STATE_AUTH_REQUIRED: "AuthRequired",
      UNRECOGNIZED: "Working"
    })
  })
})
