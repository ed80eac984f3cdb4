/**
 * An agent written as an Effect program, and the `@a2a-js/sdk`
 * `AgentExecutor` that runs it.
 *
 * The agent receives the request, may report progress through
 * {@link AgentProgress}, and ends in an {@link AgentResult}. Any failure
 * (typed error, defect, or an interruption that is not a cancel) ends the
 * task FAILED with the text `Agent execution failed. (error_id: <id>)`; the
 * cause is only logged, under that id, on this side.
 *
 * @since 0.1.0
 */
import type { Message as SdkMessage, Task, TaskStatusUpdateEvent } from "@a2a-js/sdk"
import type { AgentExecutor as SdkAgentExecutor } from "@a2a-js/sdk/server"
import type * as Cause from "effect/Cause"
import type * as ConfigError from "effect/ConfigError"
import * as Data from "effect/Data"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import type * as Authentication from "./Authentication.js"
import { lazyModule } from "./internal/lazyModule.js"
import * as internalProgress from "./internal/progress.js"
import * as internalErrors from "./internal/serverErrors.js"
import * as wireParts from "./internal/wire/parts.js"
import * as Part from "./Part.js"
import type * as RemoteOutcome from "./RemoteOutcome.js"

// The executor's code loads when an executor is made or a hook runs: a client that imports the index loads none of it.
const internalExecutor = lazyModule(() => import("./internal/server/run/executor.js"))
const internalFinal = lazyModule(() => import("./internal/server/run/finalStatus.js"))

/**
 * The caller's message, in our types: its parts as {@link Part.Part} (a
 * part with no content is read as a `DataPart` of `null`, as the client
 * reads one), its metadata (`{}` when it sent none) and the tasks it refers
 * to. Its task and context ids are those of the request
 * (`AgentRequest.taskId`, `contextId`), which the SDK resolved.
 *
 * @example
 * ```ts
 * import { AgentExecutor, Part } from "effect-a2a"
 *
 * const flightOf = (message: AgentExecutor.RequestMessage) =>
 *   message.parts.flatMap((part) => part._tag === "Data" ? [part.data] : []).at(0) ?? Part.textOf(message.parts)
 * ```
 * @category models
 * @since 0.1.0
 */
export interface RequestMessage {
  readonly messageId: string
  readonly parts: ReadonlyArray<Part.Part>
  readonly metadata: Part.JsonObject
  readonly referenceTaskIds: ReadonlyArray<string>
}

/**
 * A task's state, named as the client names it: the tag of the outcome a
 * caller reads of it, or how it runs (`Submitted`, `Working`). A state that
 * A2A does not define reads as `Working`, as on the client.
 *
 * @example
 * ```ts
 * import type { AgentExecutor } from "effect-a2a"
 *
 * const paused = (state: AgentExecutor.TaskState) => state === "InputRequired" || state === "AuthRequired"
 * ```
 * @category models
 * @since 0.1.0
 */
export type TaskState = RemoteOutcome.Running["state"] | RemoteOutcome.Tag

/**
 * A message of a task's history or status, in our types, with who wrote it
 * (`Unspecified` when the sender did not say).
 *
 * @example
 * ```ts
 * import { Part } from "effect-a2a"
 * import type { AgentExecutor } from "effect-a2a"
 *
 * const askedBefore = (task: AgentExecutor.RequestTask) =>
 *   task.history.filter((message) => message.role === "Agent").map((message) => Part.textOf(message.parts))
 * ```
 * @category models
 * @since 0.1.0
 */
export interface TaskMessage extends RequestMessage {
  readonly role: "User" | "Agent" | "Unspecified"
}

/**
 * The task a message continues, as stored before this turn, in our types:
 * its state, its status message (on a paused task, what the agent asked),
 * its history and its artifacts, parts as {@link Part.Part}.
 *
 * @example
 * ```ts
 * import { Effect, Option } from "effect"
 * import { AgentExecutor, Part } from "effect-a2a"
 *
 * // the answer to the question the agent asked when it paused the task
 * const seat: AgentExecutor.Agent = (request) =>
 *   Option.exists(request.task, (task) => task.state === "InputRequired")
 *     ? Effect.succeed(AgentExecutor.completedText(`seat ${Part.textOf(request.message.parts)} booked`))
 *     : Effect.succeed(AgentExecutor.InputRequired({ question: "which seat?" }))
 * ```
 * @category models
 * @since 0.1.0
 */
export interface RequestTask {
  readonly id: string
  readonly contextId: string
  readonly state: TaskState
  readonly statusMessage: Option.Option<TaskMessage>
  readonly history: ReadonlyArray<TaskMessage>
  readonly artifacts: ReadonlyArray<Part.Artifact>
  readonly metadata: Part.JsonObject
}

/**
 * What an agent receives: the user's message, the task and context ids, the
 * task the message continues (on a follow-up), and the HTTP request headers.
 * `sdkMessage` and `sdkTask` are the message and the task in the
 * `@a2a-js/sdk` shapes, for what ours leave out (part metadata, extensions).
 *
 * @example
 * ```ts
 * import { AgentExecutor, Part } from "effect-a2a"
 * import { Effect, Option } from "effect"
 *
 * const echo: AgentExecutor.Agent = (request: AgentExecutor.AgentRequest) => {
 *   const text = Part.textOf(request.message.parts)
 *   return Effect.succeed(AgentExecutor.completedText(Option.isSome(request.task) ? `(follow-up) ${text}` : text))
 * }
 * ```
 * @category models
 * @since 0.1.0
 */
export interface AgentRequest {
  readonly message: RequestMessage
  readonly taskId: string
  readonly contextId: string
  readonly task: Option.Option<RequestTask>
  readonly headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
  /** @since 0.1.0 */
  readonly sdkMessage: SdkMessage
  /** The task the message continues, as the SDK stored it. */
  readonly sdkTask: Option.Option<Task>
  /** Who called, when `A2AServer`'s `authenticate` is set. */
  readonly caller: Option.Option<Authentication.Caller>
}

/**
 * Progress reporting available to a running agent. Each call is published
 * to the caller at once (streaming callers see it as it happens).
 *
 * @example
 * ```ts
 * import { AgentExecutor } from "effect-a2a"
 * import { Effect } from "effect"
 *
 * const agent: AgentExecutor.Agent = () =>
 *   Effect.gen(function* () {
 *     yield* AgentExecutor.status("looking it up")
 *     return AgentExecutor.completedText("42")
 *   })
 * ```
 * @category tags
 * @since 0.1.0
 */
export const AgentProgress: typeof internalProgress.AgentProgress = internalProgress.AgentProgress

/**
 * @category tags
 * @since 0.1.0
 */
export type AgentProgress = internalProgress.AgentProgress

/**
 * Publishes a WORKING status with a text message, from inside an agent.
 *
 * @example
 * ```ts
 * import { AgentExecutor } from "effect-a2a"
 * import { Effect } from "effect"
 *
 * const agent: AgentExecutor.Agent = () =>
 *   Effect.zipRight(AgentExecutor.status("checking seat availability"), Effect.succeed(AgentExecutor.completedText("seat 12A")))
 * ```
 * @category accessors
 * @since 0.1.0
 */
export const status = (text: string): Effect.Effect<void, never, AgentProgress> =>
  Effect.flatMap(AgentProgress, (progress) => progress.status(text))

/**
 * Publishes a WORKING status with a data part, for callers that read
 * progress as data. `value` is typed {@link Part.Json}; one typed `any` that
 * is not JSON data ends the run FAILED ({@link InvalidOutput}).
 *
 * @example
 * ```ts
 * import { AgentExecutor } from "effect-a2a"
 * import { Effect } from "effect"
 *
 * const agent: AgentExecutor.Agent = () =>
 *   Effect.gen(function* () {
 *     yield* AgentExecutor.data({ step: 1, of: 3 })
 *     return AgentExecutor.completedText("done")
 *   })
 * ```
 * @category accessors
 * @since 0.1.0
 */
export const data = (value: Part.Json): Effect.Effect<void, never, AgentProgress> =>
  Effect.flatMap(AgentProgress, (progress) => progress.data(value))

/**
 * Publishes an artifact while the run goes on, before its result.
 *
 * @example
 * ```ts
 * import { AgentExecutor, Part } from "effect-a2a"
 * import { Effect } from "effect"
 *
 * const draft = Part.Artifact.make({ artifactId: "draft", name: "draft.txt", description: "", parts: [Part.TextPart.make({ text: "..." })] })
 * const agent: AgentExecutor.Agent = () =>
 *   Effect.as(AgentExecutor.artifact(draft), AgentExecutor.completedText("draft ready"))
 * ```
 * @category accessors
 * @since 0.1.0
 */
export const artifact = (value: Part.Artifact): Effect.Effect<void, never, AgentProgress> =>
  Effect.flatMap(AgentProgress, (progress) => progress.artifact(value))

/**
 * How an agent run ends when it does not fail: a task's final state, or
 * (`Message`) an answer that is a message, not a task.
 *
 * @example
 * ```ts
 * import { AgentExecutor } from "effect-a2a"
 *
 * AgentExecutor.InputRequired({ question: "Which account?" })
 * AgentExecutor.Rejected({ reason: "out of scope" })
 * ```
 * @category models
 * @since 0.1.0
 */
export type AgentResult = Data.TaggedEnum<{
  Completed: { readonly parts: ReadonlyArray<Part.Part>; readonly artifacts: ReadonlyArray<Part.Artifact> }
  InputRequired: { readonly question: string }
  AuthRequired: { readonly text: string }
  Rejected: { readonly reason: string }
  Message: { readonly parts: ReadonlyArray<Part.Part> }
}>

/**
 * @category models
 * @since 0.1.0
 */
export const AgentResult = Data.taggedEnum<AgentResult>()

/**
 * A successful end: the answer's parts and the task's artifacts;
 * {@link completedText} covers the text-only case.
 *
 * @example
 * ```ts
 * import { AgentExecutor, Part } from "effect-a2a"
 *
 * AgentExecutor.Completed({
 *   parts: [Part.TextPart.make({ text: "booked" }), Part.DataPart.make({ data: { booking: "4821" } })],
 *   artifacts: []
 * })
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const Completed = AgentResult.Completed

/**
 * Ends the turn INPUT_REQUIRED with `question`; the caller answers with a
 * follow-up message on the same task.
 *
 * @example
 * ```ts
 * import { AgentExecutor } from "effect-a2a"
 * import { Effect, Option } from "effect"
 *
 * const agent: AgentExecutor.Agent = (request) =>
 *   Effect.succeed(Option.isNone(request.task)
 *     ? AgentExecutor.InputRequired({ question: "Which date?" })
 *     : AgentExecutor.completedText("booked"))
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const InputRequired = AgentResult.InputRequired

/**
 * Ends the turn AUTH_REQUIRED; `text` tells the caller how to authenticate.
 *
 * @example
 * ```ts
 * import { AgentExecutor } from "effect-a2a"
 * import { Effect } from "effect"
 *
 * const agent: AgentExecutor.Agent = (request) =>
 *   Effect.succeed(request.headers["authorization"] === undefined
 *     ? AgentExecutor.AuthRequired({ text: "Sign in to your bank account first" })
 *     : AgentExecutor.completedText("balance: 120 EUR"))
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const AuthRequired = AgentResult.AuthRequired

/**
 * Ends the task REJECTED: the agent declines the request, with `reason`.
 *
 * @example
 * ```ts
 * import { AgentExecutor } from "effect-a2a"
 * import { Effect } from "effect"
 *
 * const agent: AgentExecutor.Agent = () => Effect.succeed(AgentExecutor.Rejected({ reason: "I only book flights" }))
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const Rejected = AgentResult.Rejected

/**
 * Answers with a bare A2A Message instead of a task, as `SendMessage` may
 * (A2A §3.1.1): the caller gets the message, and no task is created or
 * stored. That takes the executor's `messageReplies` option, and holds
 * while the run has published nothing: a run that reported progress or an
 * artifact has a task already, as has a follow-up of a task or a send that
 * asked to be answered at once (`returnImmediately`). The task then ends
 * COMPLETED with the message as its status message, as without the option.
 *
 * A message answer has no final status: the `afterExecute` hook does not
 * run for it. It counts as completed in the metrics, and the run's span
 * carries `a2a.reply: "message"` instead of `a2a.task_state`. An idempotent
 * repeat gets the same message back.
 *
 * @example
 * ```ts
 * import { AgentExecutor, Part } from "effect-a2a"
 * import { Effect } from "effect"
 *
 * // a quick answer as a message; anything else as a task
 * const agent: AgentExecutor.Agent = (request) =>
 *   Effect.succeed(Part.textOf(request.message.parts) === "ping"
 *     ? AgentExecutor.Message({ parts: [Part.TextPart.make({ text: "pong" })] })
 *     : AgentExecutor.completedText("booked"))
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const Message = AgentResult.Message

/**
 * A {@link Message} answer with one text part.
 *
 * @example
 * ```ts
 * import { AgentExecutor } from "effect-a2a"
 * import { Effect } from "effect"
 *
 * const agent: AgentExecutor.Agent = () => Effect.succeed(AgentExecutor.messageText("pong"))
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const messageText = (text: string): AgentResult =>
  // `text` is typed: the class needs no validation here.
  Message({ parts: [wireParts.build(Part.TextPart, { text })] })

/**
 * A `Completed` result with one text part.
 *
 * @example
 * ```ts
 * import { AgentExecutor, Part } from "effect-a2a"
 *
 * declare const report: Part.Artifact
 * AgentExecutor.completedText("booked flight 4821", [report])
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const completedText = (text: string, artifacts: ReadonlyArray<Part.Artifact> = []): AgentResult =>
  // `text` is typed: the class needs no validation here.
  Completed({ parts: [wireParts.build(Part.TextPart, { text })], artifacts })

/**
 * An agent: an Effect program from the request to its result. Its error
 * channel is free; every failure is reported to the caller only as an error
 * id.
 *
 * @example
 * ```ts
 * import { AgentExecutor } from "effect-a2a"
 * import { Data, Effect } from "effect"
 *
 * class Overbooked extends Data.TaggedError("Overbooked")<{ readonly flight: string }> {}
 * // the caller sees FAILED with an error id; the Overbooked cause is logged here
 * const booking: AgentExecutor.Agent<Overbooked> = () => Effect.fail(new Overbooked({ flight: "4821" }))
 * ```
 * @category models
 * @since 0.1.0
 */
export type Agent<E = never, R = never> = (request: AgentRequest) => Effect.Effect<AgentResult, E, R | AgentProgress>

/**
 * A failure of a run: the id it was logged under and its cause (server side
 * only, never sent).
 *
 * @example
 * ```ts
 * import { AgentExecutor } from "effect-a2a"
 * import { Effect } from "effect"
 *
 * const alert = (failure: AgentExecutor.Failure) =>
 *   Effect.logError("run failed", failure.cause).pipe(Effect.annotateLogs("errorId", failure.errorId))
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Failure {
  readonly errorId: string
  readonly cause: Cause.Cause<unknown>
}

/**
 * The final status update of a run, as it will be published, with the
 * failure behind it when the run failed.
 *
 * @example
 * ```ts
 * import { AgentExecutor } from "effect-a2a"
 * import { Effect } from "effect"
 *
 * // an afterExecute hook that stamps every final status with the serving region
 * const afterExecute = (_request: AgentExecutor.AgentRequest, final: AgentExecutor.FinalStatus) =>
 *   Effect.succeed({ ...final, event: { ...final.event, metadata: { ...final.event.metadata, region: "eu-west-1" } } })
 * ```
 * @category models
 * @since 0.1.0
 */
export interface FinalStatus {
  readonly event: TaskStatusUpdateEvent
  readonly failure: Option.Option<Failure>
}

/**
 * Hooks around every run.
 *
 * - `beforeExecute`: `true` cancels the task before the agent runs (the
 *   caller sees CANCELED); a failing hook fails the task with an error id.
 * - `afterExecute`: may replace the final status with another final one
 *   (completed, failed, canceled, rejected, input or auth required); it
 *   cannot drop it. A hook that fails, throws, returns a state that is not
 *   final or runs longer than `afterExecuteTimeout` keeps the original
 *   status and is logged with the error id. It runs once per run, except
 *   a run answered with a bare {@link Message}, which has no status. A cancel
 *   or a shutdown that comes while it runs interrupts it, and the task then
 *   ends CANCELED (a cancel) or FAILED with an error id (a shutdown) like
 *   any interrupted run. For a run a cancel ended it runs within
 *   `afterExecuteTimeout`; the runs a shutdown ends are settled without it.
 *
 * @example
 * ```ts
 * import { AgentExecutor } from "effect-a2a"
 * import { Effect } from "effect"
 *
 * const hooks: AgentExecutor.Hooks = {
 *   // no tenant header: the task is CANCELED before the agent runs
 *   beforeExecute: (request) => Effect.succeed(request.headers["x-tenant"] === undefined),
 *   afterExecute: AgentExecutor.failureHints(() => ({ retryable: true })),
 *   afterExecuteTimeout: "2 seconds"
 * }
 * ```
 * @category hooks
 * @since 0.1.0
 */
export interface Hooks<R = never> {
  readonly beforeExecute?: ((request: AgentRequest) => Effect.Effect<boolean, unknown, R>) | undefined
  readonly afterExecute?:
    | ((request: AgentRequest, final: FinalStatus) => Effect.Effect<FinalStatus, unknown, R>)
    | undefined
  /** How long `afterExecute` may run. Default: 10 seconds. */
  readonly afterExecuteTimeout?: Duration.DurationInput | undefined
}

/**
 * What {@link make} takes besides the agent: the {@link Hooks}, the name,
 * and how replies are shaped. `A2AServer` passes its own options on.
 *
 * The executor keeps no task store of its own: the request handler saves
 * what a run publishes, its final state included. `A2AServer`'s handler
 * appends that final state itself, retried while its store fails, so no
 * task stays WORKING; in the SDK's own `DefaultRequestHandler` the final
 * state is saved as the SDK saves any executor's events, and a caller that
 * leaves a stream early may leave it unsaved.
 *
 * @example
 * ```ts
 * import { AgentExecutor } from "effect-a2a"
 *
 * const options: AgentExecutor.Options = {
 *   name: "booking",
 *   messageReplies: true
 * }
 * ```
 * @category options
 * @since 0.1.0
 */
export interface Options<R = never> extends Hooks<R> {
  /**
   * The agent's name: the `agent` tag of the server metrics and the
   * `a2a.agent` span attribute. Default: the card name when `A2AServer`
   * builds the executor, otherwise `agent`.
   */
  readonly name?: string | undefined
  /** Lets debug error detail run with `NODE_ENV=production` (a warning is logged). */
  readonly allowDebugErrorsInProduction?: boolean | undefined
  /**
   * Lets the agent answer with a bare {@link Message} instead of a task: a
   * run that starts a new task publishes it at its first event (a progress
   * report, an artifact, its end) rather than as it starts, so that its
   * answer can be a message. A streaming caller's first event then waits
   * for that; a send with `returnImmediately` still gets its task at once.
   * Default false: every run publishes its task as it starts, and a
   * `Message` result ends the task COMPLETED with that message.
   */
  readonly messageReplies?: boolean | undefined
  /**
   * Makes the agent durable: its run outlives the process that started it.
   * Its steps ({@link step}) are recorded in the server's task store, a run
   * whose process died starts again from the start with the same request,
   * its recorded steps answered from their records, and it may wait for an
   * answer in place ({@link ask}). Needs `A2AServer` with a task store on
   * SQLite or PostgreSQL. Default off: a run whose process died ends FAILED,
   * the only safe ending when its side effects are not recorded steps.
   */
  readonly durable?: boolean | DurableOptions | undefined
}

/**
 * The options of a durable agent (`Options.durable`).
 *
 * @example
 * ```ts
 * import type { AgentExecutor } from "effect-a2a"
 *
 * const durable: AgentExecutor.DurableOptions = { maxResumes: 5 }
 * ```
 * @category models
 * @since 0.1.0
 */
export interface DurableOptions {
  /**
   * How often a run may start again after its process died; once spent, its
   * task ends FAILED with an error id. Default 3.
   */
  readonly maxResumes?: number | undefined
}

/**
 * How a step's result, and its typed error when it is to be recorded too,
 * are written to the store and read back on another process.
 *
 * @example
 * ```ts
 * import type { AgentExecutor } from "effect-a2a"
 * import { Schema } from "effect"
 *
 * const seat: AgentExecutor.StepSchemas<string, string, never, never> = { success: Schema.String }
 * ```
 * @category models
 * @since 0.1.0
 */
export interface StepSchemas<A, I, E, IE> {
  readonly success: Schema.Schema<A, I>
  /** Without it a typed failure is not recorded: the step runs again on a resume. */
  readonly error?: Schema.Schema<E, IE> | undefined
}

/**
 * A recorded step of a durable agent: its result (or its typed error, with
 * an `error` schema) is recorded once per task, and a run that starts again
 * after its process died gets the record without running the step. Put in a
 * step whatever has a side effect or a cost (a model call, a booking);
 * what is not in a step runs again on a resume. The run must take its steps
 * in the same order each time: steps are known by name and by how often
 * that name came before. A process that dies inside a step runs it again
 * from its start: give a side effect in a step its own idempotency key.
 * Outside a durable agent it is `effect` as it is.
 *
 * @example
 * ```ts
 * import { AgentExecutor } from "effect-a2a"
 * import { Effect, Schema } from "effect"
 *
 * declare const reserveSeat: (flight: string) => Effect.Effect<string>
 * const agent: AgentExecutor.Agent = () =>
 *   Effect.gen(function* () {
 *     const seat = yield* AgentExecutor.step("reserve-seat", reserveSeat("LH400"), { success: Schema.String })
 *     return AgentExecutor.completedText(`seat ${seat}`)
 *   })
 * ```
 * @category accessors
 * @since 0.1.0
 */
export const step: <A, I, E = never, IE = never, R = never>(
  name: string,
  effect: Effect.Effect<A, E, R>,
  schemas: StepSchemas<A, I, E, IE>
) => Effect.Effect<A, E, R> = internalProgress.step

/**
 * Asks the caller a question from inside a durable agent's run and waits
 * for the answer: the task goes INPUT_REQUIRED with `question`, the
 * caller's next message to the task is the answer, and the run goes on from
 * here, in whatever process then runs it (its steps so far answered from
 * their records). Asking stops the whole run, whatever wraps the call (a
 * race against a timer, `Effect.exit`, a forked fiber): the agent is
 * interrupted, and the answer runs it again from its start. Inside a run
 * that is not durable it dies.
 *
 * @example
 * ```ts
 * import { AgentExecutor, Part } from "effect-a2a"
 * import { Effect } from "effect"
 *
 * const agent: AgentExecutor.Agent = () =>
 *   Effect.gen(function* () {
 *     const answer = yield* AgentExecutor.ask("Which date?")
 *     return AgentExecutor.completedText(`booked for ${Part.textOf(answer.parts)}`)
 *   })
 * ```
 * @category accessors
 * @since 0.1.0
 */
export const ask: (question: string) => Effect.Effect<RequestMessage, never, AgentProgress> = internalProgress.ask

/**
 * A configuration the executor refuses to start with: debug error detail in
 * production (`DebugErrorsInProduction`), or an option out of its range
 * (`InvalidOption`, such as a `maxInFlight` of `A2AServer` that is not a
 * positive integer).
 *
 * @example
 * ```ts
 * import { AgentExecutor } from "effect-a2a"
 * import { Effect } from "effect"
 *
 * declare const agent: AgentExecutor.Agent
 * // ADK_DEBUG_ERRORS on with NODE_ENV=production, and allowDebugErrorsInProduction not set
 * const executor = AgentExecutor.make(agent).pipe(
 *   Effect.tapErrorTag("ConfigurationError", (error) => Effect.logError(error.message))
 * )
 * ```
 * @category errors
 * @since 0.1.0
 */
export const ConfigurationError: typeof internalErrors.ConfigurationError = internalErrors.ConfigurationError

/**
 * @category errors
 * @since 0.1.0
 */
export type ConfigurationError = internalErrors.ConfigurationError

/**
 * Output of an agent (a data part, an artifact, metadata set by an
 * `afterExecute` hook) that is not JSON data, so the wire could not carry
 * it. The run ends FAILED with an error id, like any defect, and this error,
 * with the path to the offending value, is what the server log shows;
 * nothing of the output is stored or sent.
 *
 * @example
 * ```ts
 * import { AgentExecutor } from "effect-a2a"
 *
 * new AgentExecutor.InvalidOutput({ path: "result.parts[0].data.total", found: "a bigint" }).message
 * // "The agent's output is not JSON data at result.parts[0].data.total: a bigint"
 * ```
 * @category errors
 * @since 0.1.0
 */
export const InvalidOutput: typeof internalProgress.InvalidOutput = internalProgress.InvalidOutput

/**
 * @category errors
 * @since 0.1.0
 */
export type InvalidOutput = internalProgress.InvalidOutput

/**
 * The `@a2a-js/sdk` executor, plus what a server needs to stop it.
 *
 * @example
 * ```ts
 * import { AgentExecutor } from "effect-a2a"
 * import { Effect } from "effect"
 *
 * const drain = (executor: AgentExecutor.EffectAgentExecutor) =>
 *   Effect.gen(function* () {
 *     yield* Effect.log(`waiting for ${yield* executor.running} runs`)
 *     yield* executor.shutdown("1 minute")
 *   })
 * ```
 * @category models
 * @since 0.1.0
 */
export interface EffectAgentExecutor extends SdkAgentExecutor {
  /** How many runs are in progress. */
  readonly running: Effect.Effect<number>
  /**
   * Waits up to `deadline` for the runs in progress, then interrupts the
   * rest; they end FAILED with an error id. A run that is still not done
   * 5 seconds later (in an uninterruptible step) ends FAILED without it,
   * logged as `ShutdownTimeout`. New runs fail at once; a second call waits
   * for the first.
   */
  readonly shutdown: (deadline: Duration.DurationInput) => Effect.Effect<void>
  /**
   * Holds a task for one message that continues it, until the returned
   * release is called (when that request ends); undefined while a run of the
   * task is in progress here or another message holds it. The SDK runs every
   * message to a task that is not in a terminal state on the task's one
   * event bus, so a second run would settle both callers with whichever run
   * ended first: `A2AServer` refuses such a message instead (-32004).
   */
  readonly claim: (taskId: string) => (() => void) | undefined
  /**
   * Interrupts the runs of a task in progress here, as a shutdown does: they
   * end FAILED with an error id. For a replica that lost its hold on the task
   * (see `A2AServer`'s `replication`).
   */
  readonly interrupt: (taskId: string) => void
}

/**
 * Builds the executor for an agent. Reads `ADK_DEBUG_ERRORS` and `NODE_ENV`
 * through `Config`; fails with {@link ConfigurationError} when debug detail
 * is on in production without `allowDebugErrorsInProduction`. Runs still in
 * progress when the scope closes end FAILED.
 *
 * Every run is a span, `A2AServer.execute`, child of the caller's span
 * named by the request's `traceparent` header (the agent's own spans are
 * its children); every log of a run, the agent's included, is annotated
 * with `taskId`, `contextId`, `traceId` and `agent`, and a failure's log
 * with `errorId`. Runs update the metrics of {@link Observability}.
 *
 * @example
 * ```ts
 * import type { AgentCard } from "@a2a-js/sdk"
 * import { AgentExecutor } from "effect-a2a"
 * import { DefaultRequestHandler, InMemoryTaskStore } from "@a2a-js/sdk/server"
 * import { Effect } from "effect"
 *
 * declare const card: AgentCard
 * const program = Effect.gen(function* () {
 *   const executor = yield* AgentExecutor.make(() => Effect.succeed(AgentExecutor.completedText("hi")))
 *   // Runs end when they pause (input or auth required): close the bus then, or such streams stay open.
 *   const closePaused = { keepBusAliveStates: [] }
 *   // The SDK's handler saves the run's events, its final state included, as it does any executor's.
 *   return new DefaultRequestHandler(card, new InMemoryTaskStore(), executor, undefined, undefined, undefined, undefined, undefined, closePaused)
 * })
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const make: <E, R>(
  agent: Agent<E, R>,
  options?: Options<R>
) => Effect.Effect<EffectAgentExecutor, ConfigurationError | ConfigError.ConfigError, R | Scope.Scope> = (
  agent,
  options
) => Effect.flatMap(internalExecutor, (internal) => internal.make(agent, options))

/**
 * The failure hints to attach to a failed run.
 *
 * @example
 * ```ts
 * import { AgentExecutor } from "effect-a2a"
 * import { Cause } from "effect"
 *
 * const decide = (cause: Cause.Cause<unknown>): AgentExecutor.HintDecision =>
 *   Cause.isInterruptedOnly(cause) ? { retryable: true } : { retryable: false, contact: "booking-oncall" }
 * const afterExecute = AgentExecutor.failureHints(decide)
 * ```
 * @category hooks
 * @since 0.1.0
 */
export interface HintDecision {
  readonly retryable: boolean
  readonly contact?: string | undefined
}

/**
 * A ready-made `afterExecute` hook: on a FAILED run it asks `decide` (from
 * the cause, server side) whether a retry makes sense and whom to contact,
 * appends the suffix `[retryable=false; contact=payments-oncall]` to the
 * failure text and puts `{ errorId, retryable, contact? }` under
 * `effect-a2a/failure` in the status message metadata, as
 * `FailureHint.FailureHint` encodes it. Other endings pass through.
 *
 * @example
 * ```ts
 * import { AgentExecutor } from "effect-a2a"
 * import { Cause } from "effect"
 *
 * const afterExecute = AgentExecutor.failureHints((cause) =>
 *   Cause.isDie(cause) ? { retryable: false, contact: "payments-oncall" } : { retryable: true }
 * )
 * ```
 * @category hooks
 * @since 0.1.0
 */
export const failureHints: (
  decide: (cause: Cause.Cause<unknown>) => HintDecision
) => (request: AgentRequest, final: FinalStatus) => Effect.Effect<FinalStatus, unknown> =
  (decide) => (request, final) =>
    Effect.flatMap(internalFinal, (internal) => internal.failureHints(decide)(request, final))
