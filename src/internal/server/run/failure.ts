/**
 * How a failure is turned into the opaque text a caller sees, and how the
 * debug detail is read.
 *
 * @internal
 */
import * as Config from "effect/Config"
import * as Data from "effect/Data"
import type * as Fiber from "effect/Fiber"
import type * as AgentExecutor from "../../../AgentExecutor.js"
import * as internalCauses from "../../observability/causes.js"
import * as ErrorId from "../../wire/errorId.js"

/**
 * `ADK_DEBUG_ERRORS` is on for `1` or `true` in any case; anything else,
 * including absence, is off.
 *
 * @internal
 */
export const debugErrorsConfig: Config.Config<boolean> = Config.string("ADK_DEBUG_ERRORS").pipe(
  Config.map((value) => /^(1|true)$/i.test(value.trim())),
  Config.withDefault(false)
)

/** @internal */
export const productionConfig: Config.Config<boolean> = Config.string("NODE_ENV").pipe(
  Config.map((value) => value.trim() === "production"),
  Config.withDefault(false)
)

/**
 * What the span of a failed run ends with: the error id, nothing of the
 * cause, which only the log holds.
 *
 * @internal
 */
export class RunFailed extends Data.TaggedError("RunFailed")<{ readonly errorId: string }> {
  override get message(): string {
    return ErrorId.failureText(this.errorId)
  }
}

/** A failure of a run: its error id and its cause. */
export type Failure = AgentExecutor.Failure

/** What a failure's log line carries beside the run's own annotations: its id and its whole cause. */
export const failureAnnotations = (failure: Failure): Record<string, string> => ({
  errorId: failure.errorId,
  cause: internalCauses.renderCause(failure.cause)
})

/**
 * The log line of a failed run, written from its ended fiber (whose logs
 * carry the task id, context id, trace id and agent) once the caller has
 * its answer: its cause is rendered then, off the request's path.
 *
 * @internal
 */
export const logFailureOf = (fiber: Fiber.RuntimeFiber<unknown, unknown>, message: string, failure: Failure): void => {
  setImmediate(() => {
    // Outside any fiber: a logger (or a cause's getter) that throws here would end the process.
    try {
      internalCauses.logErrorWith(fiber.getFiberRefs(), fiber.id(), message, failureAnnotations(failure))
    } catch (error) {
      process.emitWarning(`A failed run's log line could not be written: ${String(error)}`)
    }
  })
}
