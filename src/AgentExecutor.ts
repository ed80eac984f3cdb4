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
import type { Message, Task, TaskStatus, TaskStatusUpdateEvent } from "@a2a-js/sdk"
import { TaskState } from "@a2a-js/sdk"
import {
  AgentEvent,
  type AgentExecutionEvent,
  type AgentExecutor as SdkAgentExecutor,
  type ExecutionEventBus,
  type RequestContext,
  ResultManager,
  type ServerCallContext,
  type TaskStore
} from "@a2a-js/sdk/server"
import { A2AError } from "@a2a-js/sdk/errors"
import type * as ConfigError from "effect/ConfigError"
import { identity } from "effect/Function"
import {
  Cause,
  Context,
  Data,
  Duration,
  Effect,
  Exit,
  Fiber,
  FiberId,
  FiberRef,
  FiberRefs,
  HashMap,
  Option,
  Runtime,
  Schedule,
  Schema
} from "effect"
import type * as Scope from "effect/Scope"
import * as Tracer from "effect/Tracer"
import * as FailureHint from "./FailureHint.js"
import { withoutStackTrace } from "./internal/errors.js"
import * as internalMetrics from "./internal/observability/metrics.js"
import * as internalFailure from "./internal/server/failure.js"
import * as internalParts from "./internal/server/handler.js"
import * as internalTracing from "./internal/observability/tracing.js"
import * as ErrorId from "./internal/wire/errorId.js"
import * as json from "./internal/wire/json.js"
import * as wireParts from "./internal/wire/parts.js"
import * as taskState from "./internal/wire/taskState.js"
import * as Observability from "./Observability.js"
import * as Part from "./Part.js"

/**
 * What an agent receives: the user's message, the task and context ids, the
 * task as stored before this turn (on a follow-up), and the HTTP request
 * headers.
 *
 * @example
 * ```ts
 * import { AgentExecutor } from "effect-a2a"
 * import { Effect, Option } from "effect"
 *
 * const echo: AgentExecutor.Agent = (request: AgentExecutor.AgentRequest) => {
 *   const text = request.message.parts.map((part) => part.content?.$case === "text" ? part.content.value : "").join("")
 *   return Effect.succeed(AgentExecutor.completedText(Option.isSome(request.task) ? `(follow-up) ${text}` : text))
 * }
 * ```
 * @since 0.1.0
 */
export interface AgentRequest {
  readonly message: Message
  readonly taskId: string
  readonly contextId: string
  readonly task: Option.Option<Task>
  readonly headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
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
 * @since 0.1.0
 */
export class AgentProgress extends Context.Tag("effect-a2a/AgentExecutor/AgentProgress")<
  AgentProgress,
  {
    /** A WORKING status update with a text message. */
    readonly status: (text: string) => Effect.Effect<void>
    /** A WORKING status update with a data part. */
    readonly data: (data: unknown) => Effect.Effect<void>
    /** An artifact update. */
    readonly artifact: (artifact: Part.Artifact) => Effect.Effect<void>
  }
>() {}

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
 * @since 0.1.0
 */
export const status = (text: string): Effect.Effect<void, never, AgentProgress> =>
  Effect.flatMap(AgentProgress, (progress) => progress.status(text))

/**
 * Publishes a WORKING status with a data part, for callers that read
 * progress as data. A value that is not JSON data ends the run FAILED
 * ({@link InvalidOutput}).
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
 * @since 0.1.0
 */
export const data = (value: unknown): Effect.Effect<void, never, AgentProgress> =>
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
 * @since 0.1.0
 */
export const artifact = (value: Part.Artifact): Effect.Effect<void, never, AgentProgress> =>
  Effect.flatMap(AgentProgress, (progress) => progress.artifact(value))

/**
 * How an agent run ends when it does not fail.
 *
 * @example
 * ```ts
 * import { AgentExecutor } from "effect-a2a"
 *
 * AgentExecutor.InputRequired({ question: "Which account?" })
 * AgentExecutor.Rejected({ reason: "out of scope" })
 * ```
 * @since 0.1.0
 */
export type AgentResult = Data.TaggedEnum<{
  Completed: { readonly parts: ReadonlyArray<Part.Part>; readonly artifacts: ReadonlyArray<Part.Artifact> }
  InputRequired: { readonly question: string }
  AuthRequired: { readonly text: string }
  Rejected: { readonly reason: string }
}>

/**
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
 * @since 0.1.0
 */
export const Rejected = AgentResult.Rejected

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
 *   status and is logged with the error id. It runs once per run. A cancel
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
 * and the task store. `A2AServer` passes its own options on.
 *
 * @example
 * ```ts
 * import { AgentExecutor } from "effect-a2a"
 * import { InMemoryTaskStore } from "@a2a-js/sdk/server"
 *
 * const options: AgentExecutor.Options = {
 *   name: "booking",
 *   taskStore: new InMemoryTaskStore(),
 *   finalSaveTimeout: "1 minute"
 * }
 * ```
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
   * The task store of the request handler. When given, the final state is
   * written to it even if no caller is listening any more (a dropped
   * stream), so no task stays WORKING; and a cancel that another replica
   * wrote to it stops a run here within about a second.
   */
  readonly taskStore?: TaskStore | undefined
  /**
   * How long a final state that no caller's handler saved (the store was
   * down, or the stream was dropped) is retried while the task store
   * fails, before a warning is logged and the task is left as stored. A
   * shutdown stops retrying at its deadline. Default: 30 seconds.
   */
  readonly finalSaveTimeout?: Duration.DurationInput | undefined
}

/**
 * A configuration the executor refuses to start with.
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
 * @since 0.1.0
 */
export class ConfigurationError extends Schema.TaggedError<ConfigurationError>("effect-a2a/ConfigurationError")(
  "ConfigurationError",
  {
    reason: Schema.Literal("DebugErrorsInProduction"),
    message: Schema.String
  }
) {}

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
 * @since 0.1.0
 */
export class InvalidOutput extends Schema.TaggedError<InvalidOutput>("effect-a2a/InvalidOutput")("InvalidOutput", {
  path: Schema.String,
  found: Schema.String
}) {
  override get message(): string {
    return `The agent's output is not JSON data at ${this.path}: ${this.found}`
  }
}

/** Dies with {@link InvalidOutput} when `problem` is set: output is checked before anything of it is published. */
const checked = (problem: json.NotJson | undefined): Effect.Effect<void> =>
  problem === undefined ? Effect.void : Effect.die(new InvalidOutput(problem))

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
   * The `taskStore` option, watched: give this one to the request handler.
   * Seeing the handler save a run's final state spares the executor a read
   * of the store to check that it did; with the bare store it still works,
   * checking the store about 100 ms after each run.
   */
  readonly taskStore: TaskStore | undefined
  /**
   * Holds a task for one message that continues it, until the returned
   * release is called (when that request ends); undefined while a run of the
   * task is in progress here or another message holds it. The SDK runs every
   * message to a task that is not in a terminal state on the task's one
   * event bus, so a second run would settle both callers with whichever run
   * ended first: `A2AServer` refuses such a message instead (-32004).
   */
  readonly claim: (taskId: string) => (() => void) | undefined
}

interface Run {
  readonly fiber: Fiber.RuntimeFiber<FinalStatus, unknown>
  canceled: boolean
  /** Ends the watch for a cancel from another replica (see `watchForCancel`). */
  stopWatching: () => void
  /** Ends the task FAILED without waiting for the fiber, which a shutdown could not stop. */
  readonly abandon: () => Promise<void>
}

// A custom store's call that throws instead of rejecting, as a rejection: every call it began then ends.
const settled = <A>(call: () => Promise<A>): Promise<A> => {
  try {
    return call()
  } catch (error) {
    return Promise.reject(error)
  }
}

// On the context of a request: its store calls in flight, and when the last one ended.
const activityKey = Symbol("effect-a2a/StoreActivity")
interface Active {
  [activityKey]?: { inFlight: number; lastEnded: number }
}
// How long a run's final save is waited for once its request's store calls are quiet, and in all.
const saveIdle = 100
const saveWaitLimit = 30_000
// Writing a final state the handler did not: retried while the store is down, at most 5 s apart.
const persistRetry = (timeout: Duration.DurationInput) =>
  Schedule.exponential("100 millis").pipe(Schedule.either(Schedule.spaced("5 seconds")), Schedule.upTo(timeout))

/** Why a run that did not stop at a shutdown ended FAILED: its fiber could not be interrupted in time. */
class ShutdownTimeout extends Data.TaggedError("ShutdownTimeout")<{ readonly message: string }> {}

const admissionRefused = Symbol.for("effect-a2a/AgentExecutor/admissionRefused")

const shutdownFiberId = FiberId.make(-1, 0)

const cancelWatchMillis = 1000

// What a run returns when its final status went out without anything left to
// wait for: one settled promise, so that `execute` knows it by identity.
const publishedNow: Promise<void> = Promise.resolve()

const statusEvent = (
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

/** A whole artifact, in one chunk. */
const artifactEvent = (taskId: string, contextId: string, value: Part.Artifact) =>
  AgentEvent.artifactUpdate({
    taskId,
    contextId,
    artifact: wireParts.toWireArtifact(value),
    append: false,
    lastChunk: true,
    metadata: {}
  })

/** A run's bus, and the artifact updates the run published on it. */
interface RunEvents {
  readonly bus: ExecutionEventBus
  readonly artifacts: Array<AgentExecutionEvent>
}

const publishArtifact = (events: RunEvents, taskId: string, contextId: string, value: Part.Artifact): void => {
  const event = artifactEvent(taskId, contextId, value)
  events.artifacts.push(event)
  events.bus.publish(event)
}

const textStatus = (taskId: string, contextId: string, state: TaskState, text: string): TaskStatusUpdateEvent =>
  statusEvent(taskId, contextId, state, wireParts.agentMessage(taskId, contextId, [wireParts.textPart(text)]))

/** How many pauses written ahead of a lagging handler are kept from being overwritten at once. */
const maxPausedAhead = 10_000


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
 *   const executor = yield* AgentExecutor.make(() => Effect.succeed(AgentExecutor.completedText("hi")), {
 *     taskStore: new InMemoryTaskStore()
 *   })
 *   // Runs end when they pause (input or auth required): close the bus then, or such streams stay open.
 *   const closePaused = { keepBusAliveStates: [] }
 *   return new DefaultRequestHandler(card, executor.taskStore!, executor, undefined, undefined, undefined, undefined, undefined, closePaused)
 * })
 * ```
 * @since 0.1.0
 */
export const make = <E, R>(
  agent: Agent<E, R>,
  options: Options<R> = {}
): Effect.Effect<
  EffectAgentExecutor,
  ConfigurationError | ConfigError.ConfigError,
  R | Scope.Scope
> =>
  Effect.gen(function* () {
    const debug = yield* internalFailure.debugErrorsConfig
    const production = yield* internalFailure.productionConfig
    if (debug && production) {
      if (options.allowDebugErrorsInProduction !== true) {
        return yield* new ConfigurationError({
          reason: "DebugErrorsInProduction",
          message:
            "ADK_DEBUG_ERRORS is on with NODE_ENV=production: failure details would reach callers. Turn it off or set allowDebugErrorsInProduction."
        })
      }
      yield* Effect.logWarning(
        "ADK_DEBUG_ERRORS is on in production: error names and messages of failures are sent to callers"
      )
    }

    const runtime = yield* Effect.runtime<R>()
    const clock = yield* Effect.clock
    const tracer = yield* Effect.tracer
    const exporting = internalTracing.exportsSpans(tracer)
    // What a failed run's span ends with when it goes nowhere: one shared
    // value instead of a new error per run.
    const unexportedFailure = Exit.fail(new internalFailure.RunFailed({ errorId: "unknown" }))
    // Each run's span is made before its fiber, and handed to it in its context.
    const spanSettings = internalTracing.spanSettings((ref) => FiberRefs.getOrDefault(runtime.fiberRefs, ref), tracer, clock)
    const agentName = options.name ?? "agent"
    const logAnnotations = HashMap.set(
      FiberRefs.getOrDefault(runtime.fiberRefs, FiberRef.currentLogAnnotations),
      "agent",
      agentName
    )
    const agentTag = { agent: agentName }
    const metrics = {
      completed: internalMetrics.tagged(internalMetrics.serverCompleted, agentTag),
      failed: internalMetrics.tagged(internalMetrics.serverFailed, agentTag),
      canceledByAdmission: internalMetrics.tagged(internalMetrics.serverCanceledByAdmission, agentTag),
      latency: internalMetrics.tagged(internalMetrics.serverLatency, agentTag)
    }
    const runPromise = Runtime.runPromise(runtime)
    const runFork = Runtime.runFork(runtime)
    const runs = new Map<string, Set<Run>>()
    // The context id of a paused task, by the bus a handler may keep open for it: gone with the bus.
    const pausedContexts = new WeakMap<ExecutionEventBus, string>()
    const executions = new Set<Promise<void>>()
    let closing = false

    /**
     * The server-only log line of a failure: the full cause under its error
     * id. It runs in the run's fiber, whose logs already carry the task id,
     * context id, trace id and agent.
     */
    const logFailure = (message: string, errorId: string, cause: Cause.Cause<unknown>) =>
      internalFailure.logErrorOffSpan(message, { errorId, cause: internalFailure.renderCause(cause) })

    const failureFinal = (request: AgentRequest, cause: Cause.Cause<unknown>): Effect.Effect<FinalStatus> => {
      const errorId = ErrorId.make()
      const text = ErrorId.failureText(errorId) +
        (debug ? `: ${internalFailure.describeCause(cause)}` : "")
      return logFailure("Runner failed to execute", errorId, cause).pipe(
        Effect.as<FinalStatus>({
          event: textStatus(request.taskId, request.contextId, TaskState.TASK_STATE_FAILED, text),
          failure: Option.some({ errorId, cause })
        })
      )
    }

    const publishResult = (
      events: RunEvents,
      request: AgentRequest,
      result: AgentResult | typeof admissionRefused
    ): FinalStatus => {
      const { contextId, taskId } = request
      const final = (event: TaskStatusUpdateEvent): FinalStatus => ({ event, failure: Option.none() })
      if (result === admissionRefused) {
        return final(textStatus(taskId, contextId, TaskState.TASK_STATE_CANCELED, "Task canceled before execution."))
      }
      switch (result._tag) {
        case "Completed": {
          for (const value of result.artifacts) publishArtifact(events, taskId, contextId, value)
          const message = result.parts.length === 0
            ? undefined
            : wireParts.agentMessage(taskId, contextId, result.parts.map(wireParts.toWirePart))
          return final(statusEvent(taskId, contextId, TaskState.TASK_STATE_COMPLETED, message))
        }
        case "InputRequired":
          return final(textStatus(taskId, contextId, TaskState.TASK_STATE_INPUT_REQUIRED, result.question))
        case "AuthRequired":
          return final(textStatus(taskId, contextId, TaskState.TASK_STATE_AUTH_REQUIRED, result.text))
        case "Rejected":
          return final(textStatus(taskId, contextId, TaskState.TASK_STATE_REJECTED, result.reason))
      }
    }

    // Writes the final state when the caller's own event processing did not
    // (it stops when a stream is dropped), so no task stays WORKING, with the
    // run's artifacts (each replaces its earlier copy, if one was saved).
    const persistFinal = (context: RequestContext, events: RunEvents, initial: Task, event: TaskStatusUpdateEvent) => {
      const store = options.taskStore
      if (store === undefined) return Effect.void
      const state = event.status?.state
      const attempt = (createMissing: boolean) =>
        Effect.tryPromise(async () => {
          const loaded = await store.load(context.taskId, context.context)
          if (loaded === undefined && !createMissing) return false
          if (loaded !== undefined && (loaded.status?.state === state || taskState.isTerminal(loaded.status?.state))) return true
          const manager = new ResultManager(store, context.context)
          if (loaded === undefined) await manager.processEvent(AgentEvent.task(initial))
          for (const artifact of events.artifacts) await manager.processEvent(artifact)
          await manager.processEvent(AgentEvent.statusUpdate(event))
          return true
        })
      // A store that is down for a while (a failover) is waited for, within bounds; a shutdown stops waiting.
      const retried = (createMissing: boolean) => Effect.retry(attempt(createMissing), finalSaveRetry)
      const ids = { taskId: context.taskId, contextId: context.contextId }
      return retried(false).pipe(
        Effect.flatMap((done) => done ? Effect.void : Effect.zipRight(Effect.sleep("100 millis"), retried(true))),
        Effect.catchAllCause((cause) =>
          Effect.logWarning("Could not persist the final task state").pipe(
            Effect.annotateLogs({ ...ids, cause: internalFailure.renderCause(cause) })
          )
        ),
        Effect.onInterrupt(() =>
          Effect.logWarning("Could not persist the final task state before the server shut down: the task store was unavailable")
            .pipe(Effect.annotateLogs(ids))
        )
      )
    }

    // The request handler's saves, watched: on the usual path the SDK saves
    // the final state itself, and seeing that save spares a store read.
    const awaitingSave = new Map<string, { readonly state: TaskState | undefined; readonly saved: () => void }>()
    const store = options.taskStore
    // A store failure reaches the SDK, which would write its message into the
    // task's status text (SQL, driver detail): give it an opaque id instead.
    const storeFailure = (operation: string, taskId: string) => (error: unknown): never => {
      // The caller's own mistake, as the SDK's stores report it (a page token that does not decode): -32602 as is.
      if (error instanceof A2AError) throw error
      const errorId = ErrorId.make()
      runFork(
        internalFailure.logErrorOffSpan(`Task store ${operation} failed`, {
          errorId,
          taskId,
          cause: internalFailure.renderCause(Cause.die(error))
        })
      )
      throw new Error(ErrorId.internalErrorText(errorId))
    }
    // The store calls in flight, and when the last one ended: while the
    // handler is still working through a run's events (a slow store, many
    // events), its final save is waited for, not written ahead of them.
    // Counted per request: the handler works through a run's events under
    // the context of the request that started it, while readers of the task
    // (GetTask, a cancel from another replica) come with their own.
    const tracked = <A>(callContext: ServerCallContext | undefined, call: () => Promise<A>): Promise<A> => {
      if (callContext === undefined) return settled(call)
      const activity = ((callContext as Active)[activityKey] ??= { inFlight: 0, lastEnded: 0 })
      activity.inFlight++
      const ended = () => {
        activity.inFlight--
        activity.lastEnded = performance.now()
      }
      return settled(call).finally(ended)
    }
    // Pauses (input or auth required) the executor wrote itself because the handler fell behind (a
    // stream reader that stalls): the handler then goes on saving the run's earlier events, and the SDK
    // keeps only terminal states from being overwritten. Its saves of those, no newer than the pause,
    // keep the pause. Dropped once the handler catches up or a newer run moves the task on.
    const pausedAhead = new Map<string, TaskStatus>()
    const keepPause = (task: Task): Task => {
      const paused = pausedAhead.get(task.id)
      if (paused === undefined) return task
      const state = task.status?.state
      const stale = (state === TaskState.TASK_STATE_WORKING || state === TaskState.TASK_STATE_SUBMITTED) &&
        (task.status?.timestamp ?? "") <= (paused.timestamp ?? "")
      if (!stale) {
        pausedAhead.delete(task.id)
        return task
      }
      const question = paused.message
      const history = task.history ?? []
      return {
        ...task,
        status: paused,
        history: question === undefined || history.some((message) => message.messageId === question.messageId)
          ? history
          : [...history, question]
      }
    }
    const rememberPause = (taskId: string, status: TaskStatus): void => {
      // Bounded: a task whose handler never catches up (its reader left) holds its entry.
      if (pausedAhead.size >= maxPausedAhead) pausedAhead.delete(pausedAhead.keys().next().value!)
      pausedAhead.set(taskId, status)
    }
    const watchedStore: TaskStore | undefined = store === undefined ? undefined : {
      save: (saving, callContext) => {
        const task = keepPause(saving)
        return tracked(callContext, () => store.save(task, callContext)).then(() => {
          const waiting = awaitingSave.get(task.id)
          const state = task.status?.state
          if (waiting !== undefined && (state === waiting.state || taskState.isTerminal(state))) {
            awaitingSave.delete(task.id)
            waiting.saved()
          }
        }, storeFailure("save", task.id))
      },
      load: (taskId, callContext) => tracked(callContext, () => store.load(taskId, callContext)).then(undefined, storeFailure("load", taskId)),
      list: (params, callContext) => store.list(params, callContext).then(undefined, storeFailure("list", ""))
    }
    // Resolves true once the final state is saved through the watched store,
    // false once the request's store calls have been quiet for a while
    // (nobody is processing the events) or after `saveWaitLimit` in all.
    const finalSaved = (taskId: string, state: TaskState | undefined, callContext: ServerCallContext | undefined): Promise<boolean> =>
      new Promise((resolve) => {
        const startedAt = performance.now()
        let timer: ReturnType<typeof setTimeout>
        const check = () => {
          const now = performance.now()
          const activity = callContext === undefined ? undefined : (callContext as Active)[activityKey]
          const busy = activity !== undefined && activity.inFlight > 0
          const quietFor = now - Math.max(activity?.lastEnded ?? 0, startedAt)
          if (now - startedAt < saveWaitLimit && (busy || quietFor < saveIdle)) {
            timer = setTimeout(check, busy ? saveIdle : saveIdle - quietFor)
            return
          }
          if (awaitingSave.get(taskId) === waiting) awaitingSave.delete(taskId)
          resolve(false)
        }
        const waiting = {
          state,
          saved: () => {
            clearTimeout(timer)
            resolve(true)
          }
        }
        awaitingSave.set(taskId, waiting)
        timer = setTimeout(check, saveIdle)
      })

    const makeRequest = (context: RequestContext): AgentRequest => ({
      message: context.userMessage,
      taskId: context.taskId,
      contextId: context.contextId,
      task: Option.fromNullable(context.task),
      headers: internalParts.headersOf(context.context)
    })

    const makeProgress = (taskId: string, contextId: string, events: RunEvents) =>
      AgentProgress.of({
        status: (text) =>
          Effect.sync(() =>
            events.bus.publish(AgentEvent.statusUpdate(textStatus(taskId, contextId, TaskState.TASK_STATE_WORKING, text)))
          ),
        data: (value) =>
          Effect.zipRight(
            checked(json.notJson(value, "progress.data")),
            Effect.sync(() =>
              events.bus.publish(AgentEvent.statusUpdate(statusEvent(
                taskId,
                contextId,
                TaskState.TASK_STATE_WORKING,
                wireParts.agentMessage(taskId, contextId, [
                  wireParts.toWirePart(Part.DataPart.make({ data: value }))
                ])
              )))
            )
          ),
        artifact: (value) =>
          Effect.zipRight(
            checked(json.partsNotJson(value.parts, "progress.artifact.parts")),
            Effect.sync(() => publishArtifact(events, taskId, contextId, value))
          )
      })

    // The final status of a run that was interrupted (a cancel, a shutdown, or
    // the agent's own interruption); the other endings are settled in the run's fiber.
    const settleInterrupted = (request: AgentRequest, run: Run, cause: Cause.Cause<unknown>) =>
      run.canceled && Cause.isInterrupted(cause)
        ? Effect.succeed<FinalStatus>({
          event: textStatus(request.taskId, request.contextId, TaskState.TASK_STATE_CANCELED, "Task canceled."),
          failure: Option.none()
        })
        : failureFinal(request, cause)

    const afterTimeout = Duration.decode(options.afterExecuteTimeout ?? Duration.seconds(10))
    const finalSaveRetry = persistRetry(options.finalSaveTimeout ?? Duration.seconds(30))
    /**
     * The final status after the `afterExecute` hook, which runs once per
     * run (`hook.entered`): an interrupted hook is not run again for the
     * status the interruption leads to. `restore` makes it interruptible
     * where the run's fiber settles its status, so a cancel or a shutdown
     * does not wait for it; its time limit bounds it everywhere.
     */
    const applyAfter = (
      request: AgentRequest,
      final: FinalStatus,
      hook: { entered: boolean },
      restore: <A, E, R1>(effect: Effect.Effect<A, E, R1>) => Effect.Effect<A, E, R1> = identity
    ): Effect.Effect<FinalStatus, never, R> => {
      const after = options.afterExecute
      if (after === undefined || hook.entered) return Effect.succeed(final)
      hook.entered = true
      return restore(
        Effect.suspend(() => after(request, final)).pipe(
          Effect.timeoutFail({
            duration: afterTimeout,
            onTimeout: () => new Cause.TimeoutException(`afterExecute did not finish within ${Duration.format(afterTimeout)}`)
          })
        )
      ).pipe(
        Effect.tap((replaced) => {
          const state = replaced?.event?.status?.state
          return taskState.isSettled(state)
            ? checked(json.statusNotJson(replaced.event, "afterExecute.event"))
            : Effect.dieMessage(`afterExecute returned a status update in state ${taskState.name(state)}, which is not final`)
        }),
        Effect.catchAllCause((cause) => {
          const errorId = Option.match(final.failure, {
            onNone: ErrorId.make,
            onSome: (failure) => failure.errorId
          })
          const message = Cause.isInterruptedOnly(cause)
            ? "afterExecute hook interrupted by a cancel or a shutdown; the run ends as interrupted"
            : "afterExecute hook failed; the original final status is kept"
          return logFailure(message, errorId, cause).pipe(
            Effect.as(final)
          )
        })
      )
    }

    // Final states written by the executor itself, on their own fibers: a shutdown stops them at its deadline.
    const persisting = new Set<Fiber.RuntimeFiber<void>>()
    const persisted = (persist: Effect.Effect<void>): Promise<void> =>
      new Promise((resolve) => {
        const fiber = runFork(persist)
        persisting.add(fiber)
        fiber.addObserver(() => {
          persisting.delete(fiber)
          resolve()
        })
      })

    const publishFinal = (
      context: RequestContext,
      events: RunEvents,
      initial: Task,
      published: FinalStatus
    ): Promise<void> => {
      const bus = events.bus
      const { contextId, taskId } = context
      const event: TaskStatusUpdateEvent = { ...published.event, taskId, contextId }
      const state = event.status?.state
      if (state === TaskState.TASK_STATE_INPUT_REQUIRED || state === TaskState.TASK_STATE_AUTH_REQUIRED) {
        pausedContexts.set(bus, contextId)
      }
      if (store === undefined) {
        bus.publish(AgentEvent.statusUpdate(event))
        return publishedNow
      }
      const saved = finalSaved(taskId, state, context.context)
      bus.publish(AgentEvent.statusUpdate(event))
      return saved.then((done) => {
        if (done) return
        if (!taskState.isTerminal(state) && event.status !== undefined) rememberPause(taskId, event.status)
        return persisted(persistFinal(context, events, initial, event))
      })
    }

    // Plain promises around one fiber per run.
    const run = (context: RequestContext, bus: ExecutionEventBus): Promise<void> => {
      const { contextId, taskId } = context
      const request = makeRequest(context)
      const now = new Date().toISOString()
      // The SDK requires a task (or message) as the first event of every turn.
      const initial: Task = context.task !== undefined
        ? { ...context.task, status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: now } }
        : {
          id: taskId,
          contextId,
          status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: now },
          artifacts: [],
          history: [context.userMessage],
          metadata: {}
        }
      bus.publish(AgentEvent.task(initial))

      const startedAt = clock.unsafeCurrentTimeMillis()
      const parentSpan = internalTracing.parentOfHeaders(request.headers)
      const span = !spanSettings.enabled
        ? undefined
        : exporting
        ? internalTracing.startSpan(spanSettings, Observability.executeSpanName, parentSpan, "server", {
          "a2a.task_id": taskId,
          "a2a.context_id": contextId,
          "a2a.agent": agentName
        })
        : new internalTracing.UnexportedSpan(Observability.executeSpanName, parentSpan, "server")
      // The run's fiber starts with its span, progress and log annotations in
      // place, instead of providing each around the agent: this runs per request.
      const annotations = HashMap.mutate(logAnnotations, (map) => {
        HashMap.set(map, "taskId", taskId)
        HashMap.set(map, "contextId", contextId)
        if (span !== undefined) HashMap.set(map, "traceId", span.traceId)
      })
      const events: RunEvents = { bus, artifacts: [] }
      const progress = makeProgress(taskId, contextId, events)
      // One copy of the services instead of one per `Context.add`.
      const services = new Map(runtime.context.unsafeMap)
      services.set(AgentProgress.key, progress)
      if (span !== undefined) services.set(Tracer.ParentSpan.key, span)
      const runRuntime = Runtime.make({
        context: Context.unsafeMake<R | AgentProgress>(services),
        runtimeFlags: runtime.runtimeFlags,
        fiberRefs: FiberRefs.updateAs(runtime.fiberRefs, {
          fiberId: FiberId.none,
          fiberRef: FiberRef.currentLogAnnotations,
          value: annotations
        })
      })
      let refused = false
      // Once the final status is known: the metrics, and the end of the span,
      // which carries the error id of a failure but never its cause.
      const finish = (published: FinalStatus): void => {
        const state = published.event.status?.state
        const errorId = Option.getOrUndefined(Option.map(published.failure, (failure) => failure.errorId))
        if (state === TaskState.TASK_STATE_COMPLETED) metrics.completed.unsafeUpdate(1, [])
        else if (state === TaskState.TASK_STATE_FAILED) metrics.failed.unsafeUpdate(1, [])
        else if (state === TaskState.TASK_STATE_CANCELED && refused) metrics.canceledByAdmission.unsafeUpdate(1, [])
        metrics.latency.unsafeUpdate(clock.unsafeCurrentTimeMillis() - startedAt, [])
        if (span === undefined) return
        const failed = state === TaskState.TASK_STATE_FAILED
        if (!exporting) return span.end(0n, failed ? unexportedFailure : Exit.void)
        span.attribute("a2a.task_state", taskState.name(state))
        if (errorId !== undefined) {
          span.attribute("a2a.error_id", errorId)
          span.event("a2a.failure", clock.unsafeCurrentTimeNanos(), { "a2a.error_id": errorId })
        }
        internalTracing.endSpan(
          spanSettings,
          span,
          failed
            ? Exit.fail(withoutStackTrace(() => new internalFailure.RunFailed({ errorId: errorId ?? "unknown" })))
            : Exit.void
        )
      }

      const before = options.beforeExecute
      // Suspended, both: an agent or a hook that throws while building its Effect fails the run like any defect.
      const agentRun: Effect.Effect<AgentResult | typeof admissionRefused, unknown, R | AgentProgress> = Effect
        .suspend(() => agent(request))
      const work = (before === undefined
        ? agentRun
        : Effect.flatMap(Effect.suspend(() => before(request)), (refuse) => {
          if (!refuse) return agentRun
          refused = true
          return Effect.succeed(admissionRefused)
        })) as Effect.Effect<AgentResult | typeof admissionRefused, unknown, R>
      // One fiber per run: it also settles the final status, without being
      // interruptible once the agent is done; interruptions end it as they come.
      const hook = { entered: false }
      const settled: Effect.Effect<FinalStatus, unknown, R> = Effect.uninterruptibleMask((restore) => {
        const failed = (cause: Cause.Cause<unknown>) =>
          Effect.flatMap(failureFinal(request, cause), (final) => applyAfter(request, final, hook, restore))
        return Effect.matchCauseEffect(restore(work), {
          onSuccess: (result) => {
            const problem = result !== admissionRefused && result._tag === "Completed"
              ? json.partsNotJson(result.parts, "result.parts") ?? json.artifactsNotJson(result.artifacts, "result.artifacts")
              : undefined
            return problem === undefined
              ? applyAfter(request, publishResult(events, request, result), hook, restore)
              : failed(Cause.die(new InvalidOutput(problem)))
          },
          onFailure: (cause) => Cause.isInterrupted(cause) ? Effect.failCause(cause) : failed(cause)
        })
      })

      const fiber = Runtime.runFork(runRuntime)(settled)
      // Set when a shutdown gave up on the fiber and ended the task itself.
      let abandoned = false
      const run: Run = {
        fiber,
        canceled: false,
        stopWatching: () => {},
        abandon: () => {
          if (abandoned) return Promise.resolve()
          abandoned = true
          run.stopWatching()
          const cause = Cause.die(withoutStackTrace(() =>
            new ShutdownTimeout({ message: "the run did not stop when the server shut down (an uninterruptible step?)" })
          ))
          return Runtime.runPromise(runRuntime)(failureFinal(request, cause)).then((final) => {
            finish(final)
            return publishFinal(context, events, initial, final)
          })
        }
      }
      const complete = (exit: Exit.Exit<FinalStatus, unknown>): Promise<void> => {
        if (abandoned) return Promise.resolve()
        if (Exit.isSuccess(exit)) {
          finish(exit.value)
          return publishFinal(context, events, initial, exit.value)
        }
        return Runtime.runPromise(runRuntime)(
          // A shutdown has a deadline to keep: the runs it ends are settled without the hook.
          Effect.flatMap(settleInterrupted(request, run, exit.cause), (final) =>
            closing ? Effect.succeed(final) : applyAfter(request, final, hook))
        ).then((published) => {
          finish(published)
          return publishFinal(context, events, initial, published)
        })
      }
      // A run that never waited has ended already: its final status goes out
      // in this step, as a plain SDK executor's does. A promise step in
      // between costs the server several percent of its throughput.
      const ended = fiber.unsafePoll()
      if (ended !== null) return complete(ended)
      const forTask = runs.get(taskId) ?? new Set<Run>()
      forTask.add(run)
      runs.set(taskId, forTask)
      if (closing) fiber.unsafeInterruptAsFork(shutdownFiberId)
      run.stopWatching = watchForCancel(context, run)
      return new Promise<Exit.Exit<FinalStatus, unknown>>((resolve) => fiber.addObserver(resolve)).then((exit) => {
        run.stopWatching()
        forTask.delete(run)
        if (forTask.size === 0) runs.delete(taskId)
        return complete(exit)
      })
    }

    /**
     * With a task store, which replicas may share: a cancel that reached
     * another replica is written straight to the store (the SDK finds no run
     * there to stop). Checked every second while the run waits, it stops the
     * run here as a local cancel would; otherwise the agent would go on to
     * its end, side effects included, and its end be dropped. Returns the
     * stop of the watch.
     */
    const watchForCancel = (context: RequestContext, run: Run): () => void => {
      const store = options.taskStore
      if (store === undefined) return () => {}
      let timer: ReturnType<typeof setTimeout> | undefined
      let watching = true
      let warned = false
      // Once per run: the watch goes on, and every second would repeat the same line.
      const failed = (error: unknown) => {
        if (!warned) {
          warned = true
          runFork(
            Effect.logWarning("Could not read the task's state to see whether it was canceled; still checking").pipe(
              Effect.annotateLogs({
                taskId: context.taskId,
                contextId: context.contextId,
                cause: internalFailure.renderCause(Cause.die(error))
              })
            )
          )
        }
        next()
      }
      const check = () => {
        // `settled`: a store that throws instead of rejecting must not throw out of a timer.
        settled(() => store.load(context.taskId, context.context)).then(
          (task) => {
            if (!watching) return
            if (task?.status?.state !== TaskState.TASK_STATE_CANCELED) return next()
            run.canceled = true
            run.fiber.unsafeInterruptAsFork(FiberId.none)
          },
          failed
        )
      }
      const next = () => {
        // Unref'd: the run, not its watch, is what keeps the process up.
        if (watching) timer = setTimeout(check, cancelWatchMillis).unref()
      }
      next()
      return () => {
        watching = false
        clearTimeout(timer)
      }
    }

    const execute = (context: RequestContext, bus: ExecutionEventBus): Promise<void> => {
      let started: Promise<void>
      try {
        started = run(context, bus)
      } catch (defect) {
        started = Promise.reject(defect)
      }
      // The run ended and its final status went out in this step: nothing is left to wait for.
      if (started === publishedNow) return started
      const done: Promise<void> = started.catch((defect) => {
        // Only reachable on a bug in this module: still never leave the task WORKING.
        const errorId = ErrorId.make()
        metrics.failed.unsafeUpdate(1, [])
        bus.publish(AgentEvent.statusUpdate(
          textStatus(context.taskId, context.contextId, TaskState.TASK_STATE_FAILED, ErrorId.failureText(errorId))
        ))
        return runPromise(
          internalFailure.logErrorOffSpan("Runner failed to execute", {
            errorId,
            taskId: context.taskId,
            contextId: context.contextId,
            cause: internalFailure.renderCause(Cause.die(defect))
          })
        )
      }).finally(() => {
        executions.delete(done)
      })
      executions.add(done)
      return done
    }

    const cancelTask = (taskId: string, bus: ExecutionEventBus): Promise<void> => {
      const forTask = runs.get(taskId)
      if (forTask !== undefined && forTask.size > 0) {
        for (const run of forTask) {
          run.canceled = true
          run.fiber.unsafeInterruptAsFork(FiberId.none)
        }
      } else {
        // A paused task has no run. A2AServer's handler closes its bus, and the SDK cancels it in the store;
        // a handler that keeps paused tasks' buses open calls here, so end it on that bus.
        bus.publish(AgentEvent.statusUpdate(
          textStatus(taskId, pausedContexts.get(bus) ?? "", TaskState.TASK_STATE_CANCELED, "Task canceled.")
        ))
      }
      return Promise.resolve()
    }

    // Interruptible: shutdown runs in a finalizer, where the timeouts below must still fire.
    const awaitAll = Effect.interruptible(Effect.promise(() => Promise.all(executions)))

    const allRuns = () => Array.from(runs.values()).flatMap((forTask) => Array.from(forTask))
    const stopPersisting = () => {
      for (const fiber of persisting) fiber.unsafeInterruptAsFork(shutdownFiberId)
    }
    const stop = (deadline: Duration.DurationInput) =>
      Effect.gen(function* () {
        yield* Effect.timeoutOption(awaitAll, deadline)
        for (const run of allRuns()) run.fiber.unsafeInterruptAsFork(shutdownFiberId)
        stopPersisting()
        // Interrupted runs still publish FAILED and persist it.
        yield* Effect.timeoutOption(awaitAll, Duration.seconds(5))
        // Those that cannot be interrupted yet are ended without them: no task stays WORKING.
        const left = allRuns()
        if (left.length > 0) {
          yield* Effect.timeoutOption(
            Effect.interruptible(Effect.promise(() => Promise.allSettled(left.map((run) => run.abandon())))),
            Duration.seconds(5)
          )
        }
        // Final saves begun since (of interrupted or abandoned runs) stop with the shutdown too.
        stopPersisting()
      })
    // Runs once, on its own fiber: a caller that stops waiting (a timeout) does not stop it, and a second
    // shutdown (the scope's, after the server's) waits for the first instead of starting over.
    let stopping: Fiber.RuntimeFiber<void> | undefined
    const shutdown = (deadline: Duration.DurationInput): Effect.Effect<void> =>
      Effect.suspend(() => {
        closing = true
        return stopping === undefined
          ? Effect.flatMap(Effect.forkDaemon(stop(deadline)), (fiber) => {
            stopping = fiber
            return Fiber.join(fiber)
          })
          : Fiber.join(stopping)
      })

    yield* Effect.addFinalizer(() => shutdown(Duration.zero))

    const claimed = new Set<string>()
    const claim = (taskId: string): (() => void) | undefined => {
      if (claimed.has(taskId) || runs.has(taskId)) return undefined
      claimed.add(taskId)
      let held = true
      return () => {
        if (held) claimed.delete(taskId)
        held = false
      }
    }

    return {
      execute,
      cancelTask,
      running: Effect.sync(() => executions.size),
      shutdown,
      taskStore: watchedStore,
      claim
    } satisfies EffectAgentExecutor
  })

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
 * @since 0.1.0
 */
export const failureHints = (decide: (cause: Cause.Cause<unknown>) => HintDecision) =>
(_request: AgentRequest, final: FinalStatus): Effect.Effect<FinalStatus, unknown> => {
  if (Option.isNone(final.failure) || final.event.status?.state !== TaskState.TASK_STATE_FAILED) {
    return Effect.succeed(final)
  }
  const failure = final.failure.value
  return Effect.gen(function* () {
    const decision = decide(failure.cause)
    const hint = yield* Schema.decodeUnknown(FailureHint.FailureHint)({
      errorId: failure.errorId,
      retryable: decision.retryable,
      ...(decision.contact === undefined ? {} : { contact: decision.contact })
    })
    const encoded = yield* Schema.encode(FailureHint.FailureHint)(hint)
    const status = final.event.status!
    const message = status.message
    const parts = message?.parts ?? []
    const textIndex = parts.findIndex((part) => part.content?.$case === "text")
    const suffix = FailureHint.suffix(hint)
    const newParts = textIndex === -1
      ? [...parts, wireParts.textPart(suffix)]
      : parts.map((part, index) =>
        index === textIndex && part.content?.$case === "text"
          ? { ...part, content: { $case: "text" as const, value: `${part.content.value} ${suffix}` } }
          : part
      )
    const newMessage: Message = {
      ...(message ??
        wireParts.agentMessage(final.event.taskId, final.event.contextId, [])),
      parts: newParts,
      metadata: { ...message?.metadata, [FailureHint.key]: encoded }
    }
    return { ...final, event: { ...final.event, status: { ...status, message: newMessage } } }
  })
}
