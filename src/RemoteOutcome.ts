/**
 * How a remote task ended, as a value: `Completed`, `Failed`, `Canceled`,
 * `Rejected`, `InputRequired` or `AuthRequired`. A FAILED task is an outcome
 * on the success channel, never an error.
 *
 * @since 0.1.0
 */
import * as Match from "effect/Match"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as FailureHint from "./FailureHint.js"
import * as ErrorId from "./internal/wire/errorId.js"
import { Artifact, Part } from "./Part.js"

const fields = {
  agent: Schema.String,
  /** Empty when the peer answered with a bare message and created no task. */
  taskId: Schema.String,
  contextId: Schema.String,
  /** The text of the final status message. */
  text: Schema.String,
  /** All parts of the final status message. */
  parts: Schema.Array(Part),
  artifacts: Schema.Array(Artifact)
}

/**
 * The task ended COMPLETED: its answer is in `text` and `parts`, its outputs
 * in `artifacts`.
 *
 * @example
 * ```ts
 * import { RemoteOutcome } from "effect-a2a"
 *
 * // what a stub agent in a test may answer
 * const booked = RemoteOutcome.Completed.make({
 *   agent: "booking", taskId: "t1", contextId: "c1", text: "Booked flight 4821", parts: [], artifacts: []
 * })
 * ```
 * @category models
 * @since 0.1.0
 */
export class Completed extends Schema.TaggedClass<Completed>("effect-a2a/Completed")("Completed", fields) {}

/**
 * The remote agent ran and failed. `errorId` is the opaque id the remote
 * side logged the cause under, when it sent one.
 *
 * @example
 * ```ts
 * import { Effect, Option } from "effect"
 * import { RemoteOutcome } from "effect-a2a"
 *
 * const report = (failed: RemoteOutcome.Failed) =>
 *   Effect.logError(`booking failed: ${failed.text}`).pipe(
 *     Effect.annotateLogs("retryable", Option.exists(failed.hint, (hint) => hint.retryable))
 *   )
 * ```
 * @category models
 * @since 0.1.0
 */
export class Failed extends Schema.TaggedClass<Failed>("effect-a2a/Failed")("Failed", {
  ...fields,
  errorId: Schema.Option(Schema.String),
  hint: Schema.Option(FailureHint.FailureHint)
}) {}

/**
 * The task was canceled before it ended: by a `cancel`, or by the agent's
 * side.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { RemoteAgent } from "effect-a2a"
 *
 * const stop = (agent: RemoteAgent.RemoteAgent, taskId: string) =>
 *   agent.cancel(taskId).pipe(Effect.map((view) => view._tag === "Canceled"))
 * ```
 * @category models
 * @since 0.1.0
 */
export class Canceled extends Schema.TaggedClass<Canceled>("effect-a2a/Canceled")("Canceled", fields) {}

/**
 * The agent refused the task; `text` holds its reason.
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { RemoteOutcome } from "effect-a2a"
 *
 * declare const outcome: RemoteOutcome.RemoteOutcome
 * if (Schema.is(RemoteOutcome.Rejected)(outcome)) console.log(`the agent refused: ${outcome.text}`)
 * ```
 * @category models
 * @since 0.1.0
 */
export class Rejected extends Schema.TaggedClass<Rejected>("effect-a2a/Rejected")("Rejected", fields) {}

/**
 * The agent needs more input; `text` holds its question.
 *
 * @example
 * ```ts
 * import { Part, RemoteAgent, RemoteOutcome } from "effect-a2a"
 *
 * // answers the question in the same task
 * const answer = (agent: RemoteAgent.RemoteAgent, asked: RemoteOutcome.InputRequired, reply: string) =>
 *   agent.send({ parts: [Part.TextPart.make({ text: reply })], taskId: asked.taskId, contextId: asked.contextId })
 * ```
 * @category models
 * @since 0.1.0
 */
export class InputRequired extends Schema.TaggedClass<InputRequired>("effect-a2a/InputRequired")(
  "InputRequired",
  fields
) {}

/**
 * The agent needs the user to sign in or to grant access before it goes on.
 *
 * @example
 * ```ts
 * import { Part, RemoteAgent, RemoteOutcome } from "effect-a2a"
 *
 * // goes on with the task once the user signed in
 * const resume = (agent: RemoteAgent.RemoteAgent, asked: RemoteOutcome.AuthRequired, token: string) =>
 *   agent.send(
 *     { parts: [Part.TextPart.make({ text: "signed in" })], taskId: asked.taskId, contextId: asked.contextId },
 *     { headers: { authorization: `Bearer ${token}` } }
 *   )
 * ```
 * @category models
 * @since 0.1.0
 */
export class AuthRequired extends Schema.TaggedClass<AuthRequired>("effect-a2a/AuthRequired")(
  "AuthRequired",
  fields
) {}

/**
 * @category models
 * @since 0.1.0
 */
export const RemoteOutcome = Schema.Union(Completed, Failed, Canceled, Rejected, InputRequired, AuthRequired)

/**
 * @example
 * ```ts
 * import { Option } from "effect"
 * import { RemoteOutcome } from "effect-a2a"
 *
 * const describe = RemoteOutcome.$match({
 *   Completed: (o) => o.text,
 *   Failed: (o) => `failed, error id ${Option.getOrElse(o.errorId, () => "none")}`,
 *   Canceled: () => "canceled",
 *   Rejected: (o) => `rejected: ${o.text}`,
 *   InputRequired: (o) => `asks: ${o.text}`,
 *   AuthRequired: () => "needs auth"
 * })
 * ```
 * @category models
 * @since 0.1.0
 */
export type RemoteOutcome = typeof RemoteOutcome.Type

/**
 * The tags of {@link RemoteOutcome}.
 *
 * @example
 * ```ts
 * import { RemoteOutcome } from "effect-a2a"
 *
 * const notDone: ReadonlyArray<RemoteOutcome.Tag> = ["Failed", "Canceled", "Rejected"]
 * const actionNotDone = (outcome: RemoteOutcome.RemoteOutcome) => notDone.includes(outcome._tag)
 * ```
 * @category models
 * @since 0.1.0
 */
export type Tag = RemoteOutcome["_tag"]

/**
 * Exhaustive matching over outcomes: leaving a case out does not compile.
 *
 * @example
 * ```ts
 * import { Option } from "effect"
 * import { RemoteOutcome } from "effect-a2a"
 *
 * const worthRetrying = RemoteOutcome.$match({
 *   Completed: () => false,
 *   Failed: (o) => Option.exists(o.hint, (hint) => hint.retryable),
 *   Canceled: () => false,
 *   Rejected: () => false,
 *   InputRequired: () => false,
 *   AuthRequired: () => false
 * })
 * ```
 * @category pattern matching
 * @since 0.1.0
 */
export const $match = Match.typeTags<RemoteOutcome>()

/**
 * The `error_id: <id>` in a status text, when it holds exactly one: an id
 * of 12 lowercase hex digits (ours, ADK Java's) or 8 (ADK Python's), with
 * or without a debug suffix after it.
 *
 * @example
 * ```ts
 * import { RemoteOutcome } from "effect-a2a"
 * RemoteOutcome.extractErrorId("Agent execution failed. (error_id: 3f9c0a7b12de)") // Option.some("3f9c0a7b12de")
 * RemoteOutcome.extractErrorId("Agent execution failed. (error_id: 3f9c0a7b): ValueError: boom") // Option.some("3f9c0a7b")
 * ```
 * @category utils
 * @since 0.1.0
 */
export const extractErrorId: (text: string) => Option.Option<string> = ErrorId.extract

/**
 * The error id of an outcome, when it is a `Failed` that carries one: the
 * one in its text, else the one in its failure hint (a peer may send the
 * hint with a text of its own).
 *
 * @example
 * ```ts
 * import { Option } from "effect"
 * import { RemoteOutcome } from "effect-a2a"
 *
 * declare const outcome: RemoteOutcome.RemoteOutcome
 * const hint = Option.match(RemoteOutcome.errorIdOf(outcome), {
 *   onNone: () => "",
 *   onSome: (id) => `the agent's owners can run: effect-a2a find-error ${id}`
 * })
 * ```
 * @category utils
 * @since 0.1.0
 */
export const errorIdOf = (outcome: RemoteOutcome): Option.Option<string> =>
  outcome._tag === "Failed"
    ? Option.orElse(outcome.errorId, () => Option.map(outcome.hint, (hint) => hint.errorId))
    : Option.none()

/**
 * A task that has not ended yet (submitted or working), as `getTask` and
 * `cancel` may find it. Not an outcome.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { RemoteAgent } from "effect-a2a"
 *
 * const progress = (agent: RemoteAgent.RemoteAgent, taskId: string) =>
 *   agent.getTask(taskId).pipe(
 *     Effect.map((view) => view._tag === "Running" ? `${view.state}: ${view.text}` : `ended ${view._tag}`)
 *   )
 * ```
 * @category models
 * @since 0.1.0
 */
export class Running extends Schema.TaggedClass<Running>("effect-a2a/Running")("Running", {
  agent: Schema.String,
  taskId: Schema.String,
  contextId: Schema.String,
  state: Schema.Literal("Submitted", "Working"),
  /** The text of its status message. */
  text: Schema.String,
  /** All parts of its status message. */
  parts: Schema.Array(Part)
}) {}

/**
 * What `getTask` and `cancel` see: an outcome, or a task still running.
 *
 * @example
 * ```ts
 * import { Option } from "effect"
 * import type { RemoteOutcome } from "effect-a2a"
 *
 * const outcomeOf = (view: RemoteOutcome.TaskView): Option.Option<RemoteOutcome.RemoteOutcome> =>
 *   view._tag === "Running" ? Option.none() : Option.some(view)
 * ```
 * @category models
 * @since 0.1.0
 */
export type TaskView = RemoteOutcome | Running
