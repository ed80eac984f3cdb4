/**
 * The A2A task states, in one table: whether a run still goes on, has
 * paused for the caller or has ended, and which outcome a caller reads.
 *
 * @internal
 */
import { TaskState } from "@a2a-js/sdk"
import type * as RemoteOutcome from "../../RemoteOutcome.js"

/** `running`: submitted or working; `paused`: waiting for the caller; `ended`: no further event changes it. */
type Phase = "running" | "paused" | "ended"

interface Row {
  readonly phase: Phase
  /** What a caller reads of a task in this state: its outcome, or how it runs. */
  readonly outcome?: RemoteOutcome.Tag
  readonly running?: RemoteOutcome.Running["state"]
}

const table: ReadonlyMap<TaskState, Row> = new Map<TaskState, Row>([
  [TaskState.TASK_STATE_SUBMITTED, { phase: "running", running: "Submitted" }],
  [TaskState.TASK_STATE_WORKING, { phase: "running", running: "Working" }],
  [TaskState.TASK_STATE_INPUT_REQUIRED, { phase: "paused", outcome: "InputRequired" }],
  [TaskState.TASK_STATE_AUTH_REQUIRED, { phase: "paused", outcome: "AuthRequired" }],
  [TaskState.TASK_STATE_COMPLETED, { phase: "ended", outcome: "Completed" }],
  [TaskState.TASK_STATE_FAILED, { phase: "ended", outcome: "Failed" }],
  [TaskState.TASK_STATE_CANCELED, { phase: "ended", outcome: "Canceled" }],
  [TaskState.TASK_STATE_REJECTED, { phase: "ended", outcome: "Rejected" }]
])

const phaseOf = (state: TaskState | undefined): Phase | undefined =>
  state === undefined ? undefined : table.get(state)?.phase

/** Submitted or working. */
export const isRunning = (state: TaskState | undefined): boolean => phaseOf(state) === "running"

/** A state no further event changes: the task has ended. */
export const isTerminal = (state: TaskState | undefined): boolean => phaseOf(state) === "ended"

/** Paused for the caller: input or auth required. */
export const isPaused = (state: TaskState | undefined): boolean => phaseOf(state) === "paused"

/** A state a run stops in: ended, or paused for input or auth. */
export const isSettled = (state: TaskState | undefined): boolean => {
  const phase = phaseOf(state)
  return phase === "ended" || phase === "paused"
}

/** The outcome a caller reads of a task in `state`; none while it runs, or for a state A2A does not define. */
export const outcomeTag = (state: TaskState | undefined): RemoteOutcome.Tag | undefined =>
  state === undefined ? undefined : table.get(state)?.outcome

/** How a task in a running state runs, as a caller reads it; `Working` for any other state. */
export const runningState = (state: TaskState | undefined): RemoteOutcome.Running["state"] =>
  (state === undefined ? undefined : table.get(state)?.running) ?? "Working"

/** The state as this library names it to an agent: its outcome's tag, else how it runs. */
export const literalOf = (state: TaskState | undefined): RemoteOutcome.Tag | RemoteOutcome.Running["state"] =>
  outcomeTag(state) ?? runningState(state)

/** The state's name, for errors and span attributes. */
export const name = (state: TaskState | undefined): string =>
  state === undefined ? "TASK_STATE_UNSPECIFIED" : TaskState[state] ?? String(state)
