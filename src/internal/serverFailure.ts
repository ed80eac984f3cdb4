/**
 * How a failure is turned into the opaque text a caller sees, and how the
 * debug detail is read.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Config from "effect/Config"
import * as Data from "effect/Data"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"

/** @internal */
export const makeErrorId = (): string => {
  // The first 12 hex digits of a version 4 UUID are all random (its fixed digits come later).
  const uuid = crypto.randomUUID()
  return uuid.slice(0, 8) + uuid.slice(9, 13)
}

/** @internal */
export const failureText = (errorId: string): string => `Agent execution failed. (error_id: ${errorId})`

/** @internal */
export const internalErrorText = (errorId: string): string => `Internal error. (error_id: ${errorId})`

/** Whether a message is exactly an {@link internalErrorText}. */
export const isInternalErrorText = (message: string): boolean => /^Internal error\. \(error_id: [0-9a-f]{12}\)$/.test(message)

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

const nameOf = (error: unknown): string => {
  if (Predicate.hasProperty(error, "_tag") && typeof error._tag === "string") return error._tag
  if (error instanceof Error) return error.name
  return typeof error
}

const messageOf = (error: unknown): string => {
  if (error instanceof Error) return error.message
  if (Predicate.hasProperty(error, "message") && typeof error.message === "string") return error.message
  try {
    return typeof error === "string" ? error : JSON.stringify(error) ?? String(error)
  } catch {
    return String(error)
  }
}

/**
 * `<error name>: <message>` of the first failure or defect in a cause, for
 * the debug detail only.
 *
 * @internal
 */
export const describeCause = (cause: Cause.Cause<unknown>): string => {
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure)) return `${nameOf(failure.value)}: ${messageOf(failure.value)}`
  const defect = Cause.dieOption(cause)
  if (Option.isSome(defect)) return `${nameOf(defect.value)}: ${messageOf(defect.value)}`
  return Cause.isInterruptedOnly(cause) ? "Interrupted: the agent was interrupted" : "Unknown: unknown failure"
}

/**
 * What the span of a failed run ends with: the error id, nothing of the
 * cause, which only the log holds.
 *
 * @internal
 */
export class RunFailed extends Data.TaggedError("RunFailed")<{ readonly errorId: string }> {
  override get message(): string {
    return failureText(this.errorId)
  }
}

const fieldsOf = (error: unknown): Option.Option<string> => {
  if (typeof error !== "object" || error === null) return Option.none()
  // A plain Error has no enumerable fields: the common case, answered without copying.
  let enumerable = false
  for (const _ in error) {
    enumerable = true
    break
  }
  if (!enumerable) return Option.none()
  // `_tag` first: it names what failed.
  const own = Object.entries(error)
    .filter(([key]) => key !== "stack" && key !== "message")
    .sort(([a], [b]) => Number(b === "_tag") - Number(a === "_tag"))
  if (own.length === 0) return Option.none()
  try {
    return Option.some(JSON.stringify(Object.fromEntries(own), (_, v) => (typeof v === "bigint" ? v.toString() : v)))
  } catch {
    return Option.none()
  }
}

/**
 * The full cause for the server log: `Cause.pretty`, plus the fields of each
 * typed failure, which `Cause.pretty` leaves out (a tagged error without a
 * message would otherwise log as "An error has occurred").
 */
export const renderCause = (cause: Cause.Cause<unknown>): string => {
  const pretty = Cause.pretty(cause, { renderErrorCause: true })
  const fields = Array.from(Cause.failures(cause)).flatMap((error) => Option.toArray(fieldsOf(error)))
  return fields.length === 0 ? pretty : `${pretty}\nfailure fields: ${fields.join("\n")}`
}
