/**
 * How a run ends: the final status of each ending (a result, a failure, an
 * interruption), the `afterExecute` hook that may replace it, and the
 * ready-made hook that attaches failure hints. A failure's cause goes to the
 * server log under its error id; the caller gets the id alone.
 *
 * @internal
 */
import { type Message, TaskState } from "@a2a-js/sdk"
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { absurd, identity } from "effect/Function"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as AgentExecutor from "../../../AgentExecutor.js"
import * as FailureHint from "../../../FailureHint.js"
import * as internalCauses from "../../observability/causes.js"
import * as ErrorId from "../../wire/errorId.js"
import * as json from "../../wire/json.js"
import * as wireParts from "../../wire/parts.js"
import * as taskState from "../../wire/taskState.js"
import * as internalFailure from "./failure.js"
import { checked, publishArtifact, type RunEvents, statusEvent, textStatus } from "./runEvents.js"

type FinalStatus = AgentExecutor.FinalStatus
type AgentRequest = AgentExecutor.AgentRequest

/** What a run ends with when the admission hook refused it: CANCELED before the agent ran. */
export const admissionRefused = Symbol.for("effect-a2a/AgentExecutor/admissionRefused")

/**
 * The server-only log line of a failure: the full cause under its error
 * id. It runs in the run's fiber, whose logs already carry the task id,
 * context id, trace id and agent.
 */
const logFailure = (message: string, failure: internalFailure.Failure) =>
  internalCauses.logErrorOffSpan(message, internalFailure.failureAnnotations(failure))

/** The message of a failed run's log line, which names its error id. */
export const failureLogMessage = (errorId: string): string => ErrorId.logMessage("Runner failed to execute", errorId)

const final = (event: FinalStatus["event"]): FinalStatus => ({ event, failure: Option.none() })

/** A run answered with a bare message: no task, no final status. */
export interface Reply {
  readonly reply: Message
}

/** How a run ends: its task's final status, or a bare message. */
export type RunEnd = FinalStatus | Reply

export const isReply = (end: RunEnd): end is Reply => "reply" in end

/**
 * How a result ends the run, its artifacts published first: a final
 * status, or a bare message while the run's task is not out yet.
 */
export const ofResult = (
  events: RunEvents,
  request: AgentRequest,
  result: AgentExecutor.AgentResult | typeof admissionRefused
): RunEnd => {
  const { contextId, taskId } = request
  if (result === admissionRefused) {
    return final(textStatus(taskId, contextId, TaskState.TASK_STATE_CANCELED, "Task canceled before execution."))
  }
  switch (result._tag) {
    case "Completed": {
      for (const value of result.artifacts) publishArtifact(events, value)
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
    case "Message": {
      const parts = result.parts.map(wireParts.toWirePart)
      // A message outside any task names none.
      return events.unpublished !== undefined
        ? { reply: wireParts.agentMessage("", contextId, parts) }
        : final(
          statusEvent(
            taskId,
            contextId,
            TaskState.TASK_STATE_COMPLETED,
            wireParts.agentMessage(taskId, contextId, parts)
          )
        )
    }
  }
}

/** A `Completed` or `Message` result's output that is not JSON data, or none. */
export const outputProblem = (
  result: AgentExecutor.AgentResult | typeof admissionRefused
): json.NotJson | undefined => {
  if (result === admissionRefused) return undefined
  switch (result._tag) {
    case "Completed":
      return json.partsNotJson(result.parts, "result.parts") ??
        json.artifactsNotJson(result.artifacts, "result.artifacts")
    case "Message":
      return json.partsNotJson(result.parts, "result.parts")
    case "InputRequired":
    case "AuthRequired":
    case "Rejected":
      return undefined
    default:
      // A result added to `AgentResult` must be checked here: this stops compiling until it is.
      return absurd(result)
  }
}

/** The endings of the runs of one executor, with its hook and its debug setting. */
export interface Finals<R> {
  /**
   * FAILED with a new error id (and, with debug on, the cause described in
   * the text); its cause is for the log, under that id
   * (`failure.logFailureOf`), which is the caller's to write.
   */
  readonly failed: (request: AgentRequest, cause: Cause.Cause<unknown>) => FinalStatus
  /** As {@link ofInterruption}, its failure's cause left to log as `failed`'s. */
  readonly ended: (request: AgentRequest, canceled: boolean, cause: Cause.Cause<unknown>) => FinalStatus
  /** FAILED with a new error id, the cause logged under it (and, with debug on, described in the text). */
  readonly ofFailure: (request: AgentRequest, cause: Cause.Cause<unknown>) => Effect.Effect<FinalStatus>
  /**
   * The final status of a run that was interrupted (a cancel, a shutdown,
   * or the agent's own interruption); the other endings are settled in the
   * run's fiber.
   */
  readonly ofInterruption: (
    request: AgentRequest,
    canceled: boolean,
    cause: Cause.Cause<unknown>
  ) => Effect.Effect<FinalStatus>
  /**
   * The final status after the `afterExecute` hook, which runs once per
   * run (`hook.entered`): an interrupted hook is not run again for the
   * status the interruption leads to. `restore` makes it interruptible
   * where the run's fiber settles its status, so a cancel or a shutdown
   * does not wait for it; its time limit bounds it everywhere.
   */
  readonly after: (
    request: AgentRequest,
    final: FinalStatus,
    hook: { entered: boolean },
    restore?: <A, E, R1>(effect: Effect.Effect<A, E, R1>) => Effect.Effect<A, E, R1>
  ) => Effect.Effect<FinalStatus, never, R>
}

export const makeFinals = <R>(options: AgentExecutor.Hooks<R>, debug: boolean): Finals<R> => {
  const failed = (request: AgentRequest, cause: Cause.Cause<unknown>): FinalStatus => {
    const errorId = ErrorId.make()
    const text = ErrorId.failureText(errorId) +
      (debug ? `: ${internalCauses.describeCause(cause)}` : "")
    return {
      event: textStatus(request.taskId, request.contextId, TaskState.TASK_STATE_FAILED, text),
      failure: Option.some({ errorId, cause })
    }
  }

  const ended = (request: AgentRequest, canceled: boolean, cause: Cause.Cause<unknown>): FinalStatus =>
    canceled && Cause.isInterrupted(cause)
      ? final(textStatus(request.taskId, request.contextId, TaskState.TASK_STATE_CANCELED, "Task canceled."))
      : failed(request, cause)

  // The failure's cause is logged in the fiber that settles it.
  const logged = (status: FinalStatus): Effect.Effect<FinalStatus> =>
    Option.isNone(status.failure)
      ? Effect.succeed(status)
      : Effect.as(logFailure(failureLogMessage(status.failure.value.errorId), status.failure.value), status)

  const ofFailure = (request: AgentRequest, cause: Cause.Cause<unknown>) =>
    Effect.suspend(() => logged(failed(request, cause)))

  const ofInterruption = (request: AgentRequest, canceled: boolean, cause: Cause.Cause<unknown>) =>
    Effect.suspend(() => logged(ended(request, canceled, cause)))

  const afterTimeout = Duration.decode(options.afterExecuteTimeout ?? Duration.seconds(10))
  const after: Finals<R>["after"] = (request, final, hook, restore = identity) => {
    const hookOf = options.afterExecute
    if (hookOf === undefined || hook.entered) return Effect.succeed(final)
    hook.entered = true
    return restore(
      Effect.suspend(() => hookOf(request, final)).pipe(
        Effect.timeoutFail({
          duration: afterTimeout,
          onTimeout: () =>
            new Cause.TimeoutException(`afterExecute did not finish within ${Duration.format(afterTimeout)}`)
        })
      )
    ).pipe(
      Effect.tap((replaced) => {
        const state = replaced?.event?.status?.state
        return taskState.isSettled(state)
          ? checked(json.statusNotJson(replaced.event, "afterExecute.event"))
          : Effect.dieMessage(
            `afterExecute returned a status update in state ${taskState.name(state)}, which is not final`
          )
      }),
      Effect.catchAllCause((cause) => {
        const errorId = Option.match(final.failure, {
          onNone: ErrorId.make,
          onSome: (failure) => failure.errorId
        })
        const message = Cause.isInterruptedOnly(cause)
          ? "afterExecute hook interrupted by a cancel or a shutdown; the run ends as interrupted"
          : "afterExecute hook failed; the original final status is kept"
        return Effect.as(logFailure(message, { errorId, cause }), final)
      })
    )
  }

  return { failed, ended, ofFailure, ofInterruption, after }
}

/** See `AgentExecutor.failureHints`. */
export const failureHints =
  (decide: (cause: Cause.Cause<unknown>) => AgentExecutor.HintDecision) =>
  (_request: AgentRequest, final: FinalStatus): Effect.Effect<FinalStatus, unknown> => {
    const status = final.event.status
    if (Option.isNone(final.failure) || status?.state !== TaskState.TASK_STATE_FAILED) {
      return Effect.succeed(final)
    }
    const failure = final.failure.value
    return Effect.gen(function*() {
      const decision = decide(failure.cause)
      const hint = yield* Schema.decodeUnknown(FailureHint.FailureHint)({
        errorId: failure.errorId,
        retryable: decision.retryable,
        ...(decision.contact === undefined ? {} : { contact: decision.contact })
      })
      const encoded = yield* Schema.encode(FailureHint.FailureHint)(hint)
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
