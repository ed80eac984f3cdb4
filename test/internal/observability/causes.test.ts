import { describe, expect, it } from "@effect/vitest"
import { Cause, Data, Effect, Exit, FiberId, Logger, LogLevel, Schema } from "effect"
import * as internalCauses from "../../../src/internal/observability/causes.js"

class PoolExhausted extends Schema.TaggedError<PoolExhausted>()("PoolExhausted", {
  pool: Schema.String,
  inUse: Schema.Number
}) {}
class Quiet extends Data.TaggedError("Quiet")<{ readonly code: number }> {}

/** The cause of an effect, raised where an agent raises it: inside a span. */
const causeOf = (effect: Effect.Effect<unknown, unknown>): Cause.Cause<unknown> => {
  const exit = Effect.runSyncExit(effect.pipe(Effect.withSpan("agent")))
  if (Exit.isSuccess(exit)) throw new Error("expected a failure")
  return exit.cause
}

describe("observability/causes.renderCause", () => {
  it("renders a failure raised inside a span as the error itself: name, message, frames, fields, causes", () => {
    const text = internalCauses.renderCause(
      causeOf(Effect.suspend(() => Effect.fail(new PoolExhausted({ pool: "payments-db", inUse: 20 }))))
    )
    expect(text).toMatch(/^PoolExhausted: /)
    expect(text).toContain("observability/causes.test.ts")
    expect(text).toContain("fields: {\"_tag\":\"PoolExhausted\",\"pool\":\"payments-db\",\"inUse\":20}")

    const chained = internalCauses.renderCause(
      causeOf(
        Effect.suspend(() => Effect.fail(new Error("outer", { cause: new Error("middle", { cause: "the root" }) })))
      )
    )
    expect(chained).toMatch(/^Error: outer\n {4}at /)
    expect(chained).toContain("\n  [cause]: Error: middle\n      at ")
    expect(chained).toContain("\n    [cause]: string: the root\n  }\n}")
  })

  it("writes an unread stack as Node writes it, where Node would write it plainly; an application's hook is kept", () => {
    // Node's own hook, or none (its own writer then): an application's hook replaces it.
    const hooks = Error as { prepareStackTrace?: ErrorConstructor["prepareStackTrace"] | undefined }
    const hook = hooks.prepareStackTrace
    // Twins: the same frames, one stack read by Node, the other first by the renderer.
    const [byNode, byRenderer] = [0, 1].map(() => new Error("twin", { cause: new RangeError("inner") }))
    try {
      hooks.prepareStackTrace = undefined
      expect([byNode!.stack, (byNode!.cause as Error).stack]).toHaveLength(2)
      expect(internalCauses.renderCause(Cause.die(byRenderer))).toBe(internalCauses.renderCause(Cause.die(byNode)))
      expect(hooks.prepareStackTrace).toBeUndefined()
      const application = (error: Error) => `${error.name} mapped by the application`
      Error.prepareStackTrace = application
      expect(internalCauses.renderCause(Cause.die(new Error("mapped")))).toBe("Error: mapped")
      expect(new Error("after").stack).toBe("Error mapped by the application")
      expect(Error.prepareStackTrace).toBe(application)
    } finally {
      hooks.prepareStackTrace = hook
    }
    expect(byNode!.stack).toMatch(/^Error: twin\n {4}at /)
  })

  it("names a tagged error without a message", () => {
    const text = internalCauses.renderCause(causeOf(Effect.suspend(() => new Quiet({ code: 7 }))))
    expect(text).toMatch(/^Quiet: An error has occurred\n/)
    expect(text).toContain("fields: {\"_tag\":\"Quiet\",\"code\":7}")
  })

  it("keeps the frames of the agent, not those of the Effect runtime nor of the error's constructors", () => {
    const error = new Error("first line\n    second line")
    error.stack = [
      "Error: first line",
      "    second line",
      "    at new BaseEffectError (effect/Data.js:1:1)",
      "    at agent (agent.js:3:7)",
      "    at async handler (agent.js:9:1)",
      "    at Object.effect_internal_function (effect/Utils.js:1:1)",
      "    at runLoop (effect/fiberRuntime.js:1:1)"
    ].join("\n")
    expect(internalCauses.renderCause(Cause.die(error))).toBe(
      "Error: first line\n    second line\n    at agent (agent.js:3:7)\n    at async handler (agent.js:9:1)"
    )
    error.stack =
      "Error: first line\n    at agent (agent.js:3:7)\n    at Generator.next (<anonymous>)\n    at runLoop (x.js:1:1)"
    expect(internalCauses.renderCause(Cause.die(error))).toBe(
      "Error: first line\n    second line\n    at agent (agent.js:3:7)"
    )
  })

  it("renders every failure and defect of a cause, and a loop of causes ends", () => {
    const looping = new Error("looping")
    looping.cause = looping
    const text = internalCauses.renderCause(
      Cause.parallel(Cause.fail({ reason: "typed", amount: 10n }), Cause.sequential(Cause.die(looping), Cause.die(42)))
    )
    expect(text).toContain("object: {\"reason\":\"typed\",\"amount\":\"10\"}")
    expect(internalCauses.renderCause(Cause.fail({ _tag: "Declined", message: "over the limit", limit: 300 })))
      .toBe("Declined: {\"_tag\":\"Declined\",\"message\":\"over the limit\",\"limit\":300}")
    expect(text).toContain("number: 42")
    expect(text.match(/\[cause\]: Error: looping/g)?.length).toBe(8)
    expect(text).toContain("[cause]: (deeper causes cut)")
  })

  it("says when the run was only interrupted, and when the cause holds nothing", () => {
    expect(internalCauses.renderCause(Cause.interrupt(FiberId.none))).toBe("All fibers interrupted without errors.")
    expect(internalCauses.renderCause(Cause.sequential(Cause.empty, Cause.interrupt(FiberId.none))))
      .toBe("All fibers interrupted without errors.")
    expect(internalCauses.renderCause(Cause.empty)).toBe("Unknown: unknown failure")
  })
})

describe("observability/causes.describeCause", () => {
  it("names the first failure or defect with its message; a tagged error without one, with its fields as JSON", () => {
    class Declined extends Data.TaggedError("Declined")<{ readonly message: string; readonly limit: number }> {}
    const describe = (effect: Effect.Effect<unknown, unknown>) => internalCauses.describeCause(causeOf(effect))
    expect(describe(Effect.suspend(() => new Quiet({ code: 7 })))).toBe("Quiet: {\"code\":7}")
    expect(describe(Effect.fail(new Declined({ message: "over the limit", limit: 300 })))).toBe(
      "Declined: over the limit"
    )
    expect(describe(Effect.die(new Error()))).toBe("Error: An error has occurred")
    expect(describe(Effect.die(new Error("boom")))).toBe("Error: boom")
    expect(describe(Effect.fail({ reason: "typed" }))).toBe("object: {\"reason\":\"typed\"}")
  })
})

describe("observability/causes.logErrorOffSpan", () => {
  const record = () => {
    const lines: Array<Logger.Logger.Options<unknown>> = []
    const logger = Logger.make<unknown, void>((options) => {
      lines.push(options)
    })
    return { lines, layer: Logger.replace(Logger.defaultLogger, logger) }
  }

  it.effect("logs like Effect.logError inside annotateLogs: the fiber's annotations and log spans, plus the given ones", () => {
    const { layer, lines } = record()
    return Effect.gen(function*() {
      yield* internalCauses.logErrorOffSpan("Runner failed to execute", { errorId: "0123456789ab", cause: "boom" })
        .pipe(
          Effect.annotateLogs({ taskId: "t-1", errorId: "replaced" }),
          Effect.withLogSpan("run")
        )
      yield* Effect.logError("Runner failed to execute").pipe(
        Effect.annotateLogs({ taskId: "t-1", errorId: "0123456789ab", cause: "boom" }),
        Effect.withLogSpan("run")
      )
      expect(lines).toHaveLength(2)
      const [ours, effects] = lines.map((line) => ({
        level: line.logLevel,
        message: line.message,
        annotations: Object.fromEntries(line.annotations),
        spans: Array.from(line.spans, (span) => span.label)
      }))
      expect(ours).toEqual(effects)
      expect(ours?.annotations).toEqual({ taskId: "t-1", errorId: "0123456789ab", cause: "boom" })
    }).pipe(Effect.provide(layer))
  })

  it.effect("logs nothing under the minimum log level, and leaves the fiber's annotations as they were", () => {
    const { layer, lines } = record()
    return Effect.gen(function*() {
      yield* internalCauses.logErrorOffSpan("hidden", { errorId: "0123456789ab" }).pipe(
        Logger.withMinimumLogLevel(LogLevel.Fatal)
      )
      expect(lines).toHaveLength(0)
      yield* internalCauses.logErrorOffSpan("shown", { errorId: "0123456789ab" })
      yield* Effect.logError("after")
      expect(lines.map((line) => Object.fromEntries(line.annotations))).toEqual([{ errorId: "0123456789ab" }, {}])
    }).pipe(Effect.provide(layer))
  })
})
