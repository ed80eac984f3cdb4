/**
 * A failure's cause as the server log writes it: whole, each failure and
 * defect with its stack and chain of causes, or in one line for a debug
 * detail; and an error line handed to the loggers off the current span, so
 * that a span that may be exported never carries a cause.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as DefaultServices from "effect/DefaultServices"
import * as Effect from "effect/Effect"
import type * as FiberId from "effect/FiberId"
import * as FiberRef from "effect/FiberRef"
import * as FiberRefs from "effect/FiberRefs"
import * as HashMap from "effect/HashMap"
import * as Inspectable from "effect/Inspectable"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"

const nameOf = (error: unknown): string => {
  if (Predicate.hasProperty(error, "_tag") && typeof error._tag === "string") return error._tag
  if (error instanceof Error) return error.name
  return typeof error
}

// JSON that a bigint does not stop; undefined for what JSON cannot hold (a cycle).
const jsonOf = (value: unknown): string | undefined => {
  try {
    return JSON.stringify(value, (_, v) => (typeof v === "bigint" ? v.toString() : v))
  } catch {
    return undefined
  }
}

// A value that is not an error, shown whole.
const shownOf = (value: unknown): string =>
  typeof value === "object" && value !== null ? jsonOf(value) ?? String(value) : String(value)

// The own fields of an error, but its stack and message.
const ownFields = (error: object): Array<[string, unknown]> =>
  Object.entries(error).filter(([key]) => key !== "stack" && key !== "message")

const noMessage = "An error has occurred"

const messageOf = (error: unknown): string => {
  if (error instanceof Error) {
    if (error.message !== "") return error.message
    // A tagged error without a message is known by its fields; its tag is already its name.
    const fields = ownFields(error).filter(([key]) => key !== "_tag")
    return fields.length === 0 ? noMessage : jsonOf(Object.fromEntries(fields)) ?? noMessage
  }
  if (Predicate.hasProperty(error, "message") && typeof error.message === "string") return error.message
  return shownOf(error)
}

const describeValue = (raw: unknown): string => {
  const value = Cause.originalError(raw)
  return `${nameOf(value)}: ${messageOf(value)}`
}

/**
 * `<error name>: <message>` of the first failure or defect in a cause, for
 * the debug detail only; for an error without a message (a tagged error of
 * fields only), `<tag>: <its fields as JSON>`.
 *
 * @internal
 */
export const describeCause = (cause: Cause.Cause<unknown>): string => {
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure)) return describeValue(failure.value)
  const defect = Cause.dieOption(cause)
  if (Option.isSome(defect)) return describeValue(defect.value)
  return Cause.isInterruptedOnly(cause) ? "Interrupted: the agent was interrupted" : "Unknown: unknown failure"
}

const fieldsOf = (error: object): string | undefined => {
  // `_tag` first: it names what failed.
  const own = ownFields(error).sort(([a], [b]) => Number(b === "_tag") - Number(a === "_tag"))
  return own.length === 0 ? undefined : jsonOf(Object.fromEntries(own))
}

// Frames at and below the first line holding one of these are the Effect
// runtime's, not the agent's.
const runtimeMarkers = ["effect_internal_function", "Generator.next"]
const constructorFrame = (line: string): boolean =>
  line.includes(" at new BaseEffectError") || line.includes(" at new YieldableError")

/**
 * The frames of a stack (each line starting with a newline), without its
 * header, which repeats the message, perhaps over several lines. Cut with
 * searches over the whole text rather than line by line: this runs once
 * per failed request.
 */
const framesOf = (stack: string): string => {
  const start = stack.indexOf("\n    at ")
  if (start === -1) return ""
  let end = stack.length
  for (const marker of runtimeMarkers) {
    const at = stack.indexOf(marker, start)
    if (at !== -1 && at < end) end = stack.lastIndexOf("\n", at)
  }
  const frames = stack.slice(start, end)
  return frames.includes(" at new ") ? frames.split("\n").filter((line) => !constructorFrame(line)).join("\n") : frames
}

/** As Node writes a stack when nothing maps it: the error's `toString()`, then a line per frame. */
const plainStack = (error: Error, frames: ReadonlyArray<NodeJS.CallSite>): string => {
  let text = Error.prototype.toString.call(error)
  for (const frame of frames) text += `\n    at ${frame}`
  return text
}

/**
 * An error's stack, the same text Node would write. Node writes it when it
 * is first read, and its own writer took twice as long as
 * {@link plainStack} for the same text (a failed request reads one), so
 * that one writes it where Node's would: Node's own hook in place (no hook
 * of the application's) and no source maps to apply.
 */
const stackOf = (error: Error): unknown => {
  const hook = Error.prepareStackTrace
  if ((hook !== undefined && hook.name !== "ErrorPrepareStackTrace") || process.sourceMapsEnabled) return error.stack
  Error.prepareStackTrace = plainStack
  try {
    return error.stack
  } finally {
    Error.prepareStackTrace = hook
  }
}

// Beyond this a chain of causes is cut: it may loop back on itself.
const maxCauseDepth = 8

const renderValue = (raw: unknown, typed: boolean, depth: number): string => {
  // A failure raised inside a span comes wrapped in a proxy that adds the span: every read through it is slow.
  const value = Cause.originalError(raw)
  if (!(value instanceof Error)) return `${nameOf(value)}: ${shownOf(value)}`
  let text = `${value.name}: ${value.message === "" ? noMessage : value.message}`
  const stack = stackOf(value)
  if (typeof stack === "string") text += framesOf(stack)
  const fields = typed ? fieldsOf(value) : undefined
  if (fields !== undefined) text += `\nfields: ${fields}`
  if (value.cause !== undefined) {
    const inner = depth < maxCauseDepth ? renderValue(value.cause, false, depth + 1) : "(deeper causes cut)"
    text += ` {\n  [cause]: ${inner.replaceAll("\n", "\n  ")}\n}`
  }
  return text
}

/**
 * The full cause for the server log: each failure and defect with its
 * stack, its chain of causes, and the fields of a typed failure (a tagged
 * error without a message would otherwise log only its name).
 *
 * Written out rather than `Cause.pretty`, which builds a new `Error` per
 * failure, walks its spans and reads the failure through the span's proxy:
 * that cost about a tenth of a failed request.
 */
export const renderCause = (cause: Cause.Cause<unknown>): string => {
  let text = ""
  let interrupted = false
  // Depth first, left before right, as `Cause.pretty` lists them; a loop rather than `Cause.reduce`.
  const pending: Array<Cause.Cause<unknown>> = [cause]
  for (let node = pending.pop(); node !== undefined; node = pending.pop()) {
    switch (node._tag) {
      case "Fail":
        text += (text === "" ? "" : "\n") + renderValue(node.error, true, 0)
        break
      case "Die":
        text += (text === "" ? "" : "\n") + renderValue(node.defect, false, 0)
        break
      case "Interrupt":
        interrupted = true
        break
      case "Sequential":
      case "Parallel":
        pending.push(node.right, node.left)
        break
    }
  }
  if (text !== "") return text
  return interrupted ? "All fibers interrupted without errors." : "Unknown: unknown failure"
}

/**
 * Hands an error line to the loggers of `refs` (a fiber's), as the fiber
 * would, with the tracer's logger left out: a span may be exported, the
 * cause must stay in the log. `annotations` are added to those of `refs`.
 * It does so itself instead of setting the fiber's annotations and then
 * restoring them: each of those copies the fiber's refs, which cost more
 * than the line.
 *
 * @internal
 */
export const logErrorWith = (
  refs: FiberRefs.FiberRefs,
  fiberId: FiberId.FiberId,
  message: string,
  annotations: Record<string, string>
): void => {
  const logLevel = LogLevel.Error
  if (LogLevel.greaterThan(FiberRefs.getOrDefault(refs, FiberRef.currentMinimumLogLevel), logLevel)) return
  let withExtra = FiberRefs.getOrDefault(refs, FiberRef.currentLogAnnotations)
  for (const [key, value] of Object.entries(annotations)) withExtra = HashMap.set(withExtra, key, value)
  const options: Logger.Logger.Options<unknown> = {
    fiberId,
    logLevel,
    // As `Effect.log` passes it: the list of its arguments.
    message: [message],
    cause: Cause.empty,
    context: refs,
    spans: FiberRefs.getOrDefault(refs, FiberRef.currentLogSpan),
    annotations: withExtra,
    date: new Date(
      Context.get(FiberRefs.getOrDefault(refs, DefaultServices.currentServices), Clock.Clock).unsafeCurrentTimeMillis()
    )
  }
  Inspectable.withRedactableContext(refs, () => {
    for (const logger of FiberRefs.getOrDefault(refs, FiberRef.currentLoggers)) {
      if (logger !== Logger.tracerLogger) logger.log(options)
    }
  })
}

/**
 * `Effect.logError(message)` inside `Effect.annotateLogs(annotations)`,
 * with the line kept off the current span (see {@link logErrorWith}).
 *
 * @internal
 */
export const logErrorOffSpan = (message: string, annotations: Record<string, string>): Effect.Effect<void> =>
  Effect.withFiberRuntime((fiber) => {
    logErrorWith(fiber.getFiberRefs(), fiber.id(), message, annotations)
    return Effect.void
  })
