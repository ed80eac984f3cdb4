/**
 * The pure state machine behind `CircuitBreaker`: every transition is a
 * function of the previous state, the clock time and one call's verdict, so
 * that a single `Ref.modify` applies it atomically.
 */

/** @internal */
export type Policy =
  | { readonly _tag: "ConsecutiveFailures"; readonly threshold: number }
  | {
    readonly _tag: "FailureRate"
    readonly threshold: number
    readonly window: number
    readonly minimumCalls: number
  }

/** @internal */
export interface Config {
  readonly policy: Policy
  readonly probes: number
  readonly probeSuccesses: number
}

/**
 * `probing` counts the probe calls still running, whatever round admitted
 * them: a probe of a round that already re-opened the breaker still occupies
 * the remote, so it still holds its slot.
 *
 * `epoch` changes on every transition. A call remembers the epoch it was
 * admitted in, so that a call admitted while closed and ending after the
 * breaker moved on can neither trip it again nor count as a probe.
 *
 * @internal
 */
export type State =
  | {
    readonly _tag: "Closed"
    readonly epoch: number
    readonly probing: number
    readonly consecutive: number
    /** The last `window` verdicts, `true` for a failure (failure-rate policy only). */
    readonly window: ReadonlyArray<boolean>
    readonly failures: number
  }
  | {
    readonly _tag: "Open"
    readonly epoch: number
    readonly probing: number
    readonly trips: number
    /** When it opened and until when it stays open, in the clock's milliseconds. */
    readonly openedAt: number
    readonly until: number
  }
  | {
    readonly _tag: "HalfOpen"
    readonly epoch: number
    readonly probing: number
    readonly trips: number
    readonly successes: number
  }

/** @internal */
export interface Permit {
  readonly epoch: number
  readonly probe: boolean
}

/** @internal */
export interface Change {
  readonly from: State["_tag"]
  readonly to: State
  /** Milliseconds the breaker stays open, when `to` is open. */
  readonly openFor: number
}

/** @internal */
export type Verdict = "Failure" | "Success" | "Ignored"

/** @internal */
export type Admission =
  | { readonly _tag: "Admitted"; readonly permit: Permit; readonly change: Change | undefined }
  | {
    readonly _tag: "Rejected"
    readonly state: "Open" | "HalfOpen"
    readonly retryAfter: number
    readonly change: Change | undefined
  }

/** @internal */
export const closed = (epoch: number, probing: number): State => ({
  _tag: "Closed",
  epoch,
  probing,
  consecutive: 0,
  window: [],
  failures: 0
})

const open = (
  from: State,
  probing: number,
  now: number,
  trips: number,
  delayFor: (trip: number) => number
): [Change, State] => {
  const openFor = Math.max(0, delayFor(trips))
  const to: State = { _tag: "Open", epoch: from.epoch + 1, probing, trips, openedAt: now, until: now + openFor }
  return [{ from: from._tag, to, openFor }, to]
}

/** @internal */
export const admit = (config: Config, state: State, now: number): [Admission, State] => {
  switch (state._tag) {
    case "Closed":
      return [{ _tag: "Admitted", permit: { epoch: state.epoch, probe: false }, change: undefined }, state]
    case "Open": {
      // A wall clock stepped back (an NTP correction) restarts the wait instead of stretching it past its length.
      const current = now < state.openedAt
        ? { ...state, openedAt: now, until: now + (state.until - state.openedAt) }
        : state
      if (now < current.until) {
        return [{ _tag: "Rejected", state: "Open", retryAfter: current.until - now, change: undefined }, current]
      }
      const to: State = {
        _tag: "HalfOpen",
        epoch: state.epoch + 1,
        probing: state.probing,
        trips: state.trips,
        successes: 0
      }
      const change: Change = { from: "Open", to, openFor: 0 }
      const [admission, next] = admit(config, to, now)
      // probes of an earlier round may still hold every slot
      return [{ ...admission, change }, next]
    }
    case "HalfOpen": {
      if (state.probing >= config.probes) {
        return [{ _tag: "Rejected", state: "HalfOpen", retryAfter: 0, change: undefined }, state]
      }
      return [
        { _tag: "Admitted", permit: { epoch: state.epoch, probe: true }, change: undefined },
        { ...state, probing: state.probing + 1 }
      ]
    }
  }
}

const tripsClosed = (policy: Policy, state: Extract<State, { _tag: "Closed" }>, failed: boolean): State | "Trip" => {
  switch (policy._tag) {
    case "ConsecutiveFailures": {
      if (!failed) return state.consecutive === 0 ? state : { ...state, consecutive: 0 }
      const consecutive = state.consecutive + 1
      return consecutive >= policy.threshold ? "Trip" : { ...state, consecutive }
    }
    case "FailureRate": {
      const full = state.window.length >= policy.window
      const dropped = full && state.window[0] === true ? 1 : 0
      const window = full ? [...state.window.slice(1), failed] : [...state.window, failed]
      const failures = state.failures - dropped + (failed ? 1 : 0)
      if (failed && window.length >= policy.minimumCalls && failures / window.length >= policy.threshold) {
        return "Trip"
      }
      return { ...state, window, failures }
    }
  }
}

/**
 * Applies the verdict of a call that was admitted with `permit`.
 *
 * @internal
 */
export const record = (
  config: Config,
  state: State,
  permit: Permit,
  verdict: Verdict,
  now: number,
  delayFor: (trip: number) => number
): [Change | undefined, State] => {
  const probing = permit.probe ? state.probing - 1 : state.probing
  const released: State = probing === state.probing ? state : { ...state, probing }
  if (permit.epoch !== state.epoch) return [undefined, released]
  switch (state._tag) {
    case "Closed": {
      if (verdict === "Ignored") return [undefined, released]
      const next = tripsClosed(config.policy, state, verdict === "Failure")
      // a permit of a closed epoch is never a probe, so `probing` is unchanged
      return next === "Trip" ? open(state, probing, now, 1, delayFor) : [undefined, next]
    }
    case "HalfOpen": {
      if (!permit.probe) return [undefined, released]
      switch (verdict) {
        case "Failure":
          return open(state, probing, now, state.trips + 1, delayFor)
        case "Ignored":
          return [undefined, released]
        case "Success": {
          const successes = state.successes + 1
          if (successes >= config.probeSuccesses) {
            const to = closed(state.epoch + 1, probing)
            return [{ from: "HalfOpen", to, openFor: 0 }, to]
          }
          return [undefined, { ...state, probing, successes }]
        }
      }
    }
    case "Open":
      // an open breaker admits no call of its own epoch
      return [undefined, released]
  }
}
