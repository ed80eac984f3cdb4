/**
 * The server's bound on work in flight (`maxInFlight`, `maxInFlightPerCaller`):
 * a request that would start or follow a run is admitted while there is room,
 * and otherwise shed before anything runs.
 *
 * A hold is taken when a request is admitted. The run that its message
 * starts (the executor finds it by the message's id) shares the hold, so a
 * non-blocking send keeps its place until its run ends, not only until it is
 * answered; a subscription, which starts no run, keeps it while its stream
 * is open. The hold is let go when both have ended.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as internalMetrics from "../../observability/metrics.js"
import { ConfigurationError } from "../run/executor.js"

/** The methods that start or follow a run, v1.0 and v0.3 names. */
const countedMethods: ReadonlySet<unknown> = new Set([
  "SendMessage",
  "SendStreamingMessage",
  "SubscribeToTask",
  "message/send",
  "message/stream",
  "tasks/resubscribe"
])

interface Hold {
  readonly caller: string
  readonly messageId: string | undefined
  /** The request and, once it starts, the run. */
  holders: number
}

/** @internal */
export interface Limits {
  readonly maxInFlight?: number | undefined
  readonly maxInFlightPerCaller?: number | undefined
}

/** @internal */
export interface Load {
  /**
   * Admits a request (its parsed body) from `caller`: a release to call when
   * its answer has ended, or `"shed"`. Requests that start or follow no run
   * are let through uncounted.
   */
  readonly admit: (body: unknown, caller: string) => (() => void) | "shed" | undefined
  /**
   * Admits a request that starts or follows a run, as the transport read it
   * (its message's id, if it has one): a release, or `"shed"`.
   */
  readonly admitRun: (messageId: string | undefined, caller: string) => (() => void) | "shed"
  /** A run starts for the message `messageId`: the release of its share of the request's hold, if any. */
  readonly run: (messageId: string) => (() => void) | undefined
}

const messageIdOf = (body: unknown): string | undefined => {
  const params = (body as { readonly params?: { readonly message?: { readonly messageId?: unknown } } }).params
  const id = typeof params === "object" && params !== null ? params.message?.messageId : undefined
  return typeof id === "string" ? id : undefined
}

const isBound = (value: number | undefined) => value === undefined || (Number.isSafeInteger(value) && value > 0)

/**
 * The bound of a server; undefined when it has none, so that nothing is
 * counted. A bound that is not a positive integer is refused.
 *
 * @internal
 */
export const make = (limits: Limits, agent: string): Effect.Effect<Load | undefined, ConfigurationError> => {
  const { maxInFlight, maxInFlightPerCaller } = limits
  if (!isBound(maxInFlight) || !isBound(maxInFlightPerCaller)) {
    return Effect.fail(
      new ConfigurationError({
        reason: "InvalidOption",
        message:
          `maxInFlight and maxInFlightPerCaller must be positive integers (got ${maxInFlight} and ${maxInFlightPerCaller})`
      })
    )
  }
  if (maxInFlight === undefined && maxInFlightPerCaller === undefined) return Effect.succeed(undefined)
  return Effect.sync(() => bounded(maxInFlight, maxInFlightPerCaller, agent))
}

const bounded = (maxInFlight: number | undefined, maxInFlightPerCaller: number | undefined, agent: string): Load => {
  const shedServer = internalMetrics.tagged(internalMetrics.serverShed, { agent, bound: "server" })
  const shedCaller = internalMetrics.tagged(internalMetrics.serverShed, { agent, bound: "caller" })
  let inFlight = 0
  const perCaller = new Map<string, number>()
  // Admitted requests whose run has not started yet, by message id.
  const waiting = new Map<string, Array<Hold>>()

  const unwait = (hold: Hold) => {
    if (hold.messageId === undefined) return
    const holds = waiting.get(hold.messageId)
    const at = holds?.indexOf(hold) ?? -1
    if (holds === undefined || at < 0) return
    holds.splice(at, 1)
    if (holds.length === 0) waiting.delete(hold.messageId)
  }
  const releaseOnce = (hold: Hold) => {
    let released = false
    return () => {
      if (released) return
      released = true
      if (--hold.holders > 0) return
      inFlight--
      const count = (perCaller.get(hold.caller) ?? 1) - 1
      if (count === 0) perCaller.delete(hold.caller)
      else perCaller.set(hold.caller, count)
    }
  }

  const admitRun = (messageId: string | undefined, caller: string): (() => void) | "shed" => {
    if (maxInFlight !== undefined && inFlight >= maxInFlight) {
      shedServer.unsafeUpdate(1, [])
      return "shed"
    }
    const callerCount = perCaller.get(caller) ?? 0
    if (maxInFlightPerCaller !== undefined && callerCount >= maxInFlightPerCaller) {
      shedCaller.unsafeUpdate(1, [])
      return "shed"
    }
    inFlight++
    perCaller.set(caller, callerCount + 1)
    const hold: Hold = { caller, messageId, holders: 1 }
    if (hold.messageId !== undefined) {
      const holds = waiting.get(hold.messageId)
      if (holds === undefined) waiting.set(hold.messageId, [hold])
      else holds.push(hold)
    }
    const release = releaseOnce(hold)
    return () => {
      unwait(hold)
      release()
    }
  }

  return {
    admit: (body, caller) =>
      typeof body !== "object" || body === null || !countedMethods.has((body as { method?: unknown }).method)
        ? undefined
        : admitRun(messageIdOf(body), caller),
    admitRun,
    run: (messageId) => {
      const hold = waiting.get(messageId)?.[0]
      if (hold === undefined) return undefined
      unwait(hold)
      hold.holders++
      return releaseOnce(hold)
    }
  }
}
