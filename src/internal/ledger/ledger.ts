/**
 * The ledger service: its tag, the assembly of every part over one store
 * (so the decisions are the same for memory, SQLite and PostgreSQL), the
 * request-level entries of a server (begin, leases, finish, await), and the
 * effects that use the service from the context (`sweep`, `once`).
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Idempotency from "../../Idempotency.js"
import type * as Ledger from "../../IdempotencyLedger.js"
import { db, holding, type LedgerContext, makeContext, millis, newLease, pause, read, timeout } from "./context.js"
import { BeginOutcome, requestId, requestRow, resultText, runningRow, toEntry } from "./entry.js"
import { IdempotencyConflict, IdempotencyError } from "./errors.js"
import * as Expire from "./expire.js"
import * as Once from "./once.js"
import type { Store } from "./store.js"

export class IdempotencyLedger
  extends Context.Tag("effect-a2a/IdempotencyLedger")<IdempotencyLedger, Ledger.Service>()
{}

/** Builds a ledger over a store. Every layer goes through here. */
export const make = <SE>(store: Store<SE>, options: Ledger.Options = {}): Ledger.Service => {
  const ledger = makeContext(store, options)
  return {
    owner: ledger.owner,
    ...requests(ledger),
    ...Expire.make(ledger),
    once: Once.make(ledger)
  }
}

const requests = <SE>(ledger: LedgerContext<SE>): Pick<
  Ledger.Service,
  "begin" | "renewLease" | "withLease" | "finish" | "abandon" | "get" | "await"
> => {
  const { defaultLeaseMs, defaultWaitMs, notifier, retentionMs, store } = ledger

  // Its lease came from `begin`, which checked the key.
  const withLease: Ledger.Service["withLease"] = (request, effect) =>
    holding(
      ledger,
      requestRow(request),
      request.lease.token,
      millis(request.duration, Duration.millis(defaultLeaseMs)),
      effect
    )

  const begin: Ledger.Service["begin"] = (request) =>
    Effect.gen(function*() {
      const id = yield* requestId(request)
      const leaseMs = millis(request.lease, Duration.millis(defaultLeaseMs))
      // A row can vanish between the insert and the read (abandon, cleanup); then try again.
      for (let attempt = 0; attempt < 5; attempt++) {
        const now = yield* Clock.currentTimeMillis
        const lease = newLease(ledger, now, leaseMs)
        const inserted = yield* db(
          id,
          store.insert(runningRow(id, request.fingerprint, request.taskId, lease, now), now - retentionMs, now)
        )
        if (inserted) return BeginOutcome.Started({ taskId: request.taskId, lease })
        const existing = yield* read(ledger, id, now)
        if (Option.isNone(existing)) continue
        const row = existing.value
        if (row.fingerprint !== request.fingerprint) {
          return yield* new IdempotencyConflict({ reason: "PayloadMismatch", key: request.key })
        }
        const entry = toEntry(row)
        if (row.state === "finished") {
          return BeginOutcome.Finished({ taskId: entry.taskId, result: Option.getOrNull(entry.result), entry })
        }
        return (row.leaseExpiresAt ?? 0) <= now
          ? BeginOutcome.Interrupted({ taskId: entry.taskId, entry })
          : BeginOutcome.Running({ taskId: entry.taskId, entry })
      }
      return yield* new IdempotencyError({
        reason: "Unavailable",
        key: request.key,
        detail: "the entry kept disappearing while it was read"
      })
    })

  const renewLease: Ledger.Service["renewLease"] = (request) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const leaseMs = millis(request.duration, Duration.millis(defaultLeaseMs))
      const id = yield* requestId(request)
      return yield* db(id, store.renew(id, request.lease.token, now + leaseMs))
    })

  const finish: Ledger.Service["finish"] = (request) =>
    Effect.gen(function*() {
      const id = yield* requestId(request)
      const now = yield* Clock.currentTimeMillis
      const text = yield* resultText(request.key, request.result)
      const done = yield* db(id, store.finish(id, text, now, { token: request.lease?.token }))
      if (done) yield* notifier.signal(id)
      return done
    })

  const abandon: Ledger.Service["abandon"] = (request) =>
    Effect.gen(function*() {
      const id = yield* requestId(request)
      const done = yield* db(id, store.release(id, request.lease.token))
      if (done) yield* notifier.signal(id)
      return done
    })

  const get: Ledger.Service["get"] = (ref) =>
    Effect.flatMap(Effect.zip(requestId(ref), Clock.currentTimeMillis), ([id, now]) => read(ledger, id, now)).pipe(
      Effect.map(Option.map(toEntry))
    )

  const await_: Ledger.Service["await"] = (ref) =>
    Effect.gen(function*() {
      const id = yield* requestId(ref)
      const waitMs = millis(ref.timeout, Duration.millis(defaultWaitMs))
      const deadline = (yield* Clock.currentTimeMillis) + waitMs
      while (true) {
        const outcome = yield* notifier.watch(id, (changed) =>
          Effect.gen(function*() {
            const now = yield* Clock.currentTimeMillis
            const existing = yield* read(ledger, id, now)
            if (Option.isNone(existing)) {
              return yield* new IdempotencyError({ reason: "NotFound", key: ref.key, detail: "no such entry" })
            }
            const entry = toEntry(existing.value)
            if (entry.state === "finished") {
              return Option.some<Ledger.AwaitOutcome>(
                BeginOutcome.Finished({ taskId: entry.taskId, result: Option.getOrNull(entry.result), entry })
              )
            }
            if ((existing.value.leaseExpiresAt ?? 0) <= now) {
              return Option.some<Ledger.AwaitOutcome>(BeginOutcome.Interrupted({ taskId: entry.taskId, entry }))
            }
            if (now >= deadline) return yield* timeout(ref.key, waitMs)
            yield* pause(ledger, changed, now, deadline)
            return Option.none<Ledger.AwaitOutcome>()
          }))
        if (Option.isSome(outcome)) return outcome.value
      }
    })

  return { begin, renewLease, withLease, finish, abandon, get, await: await_ }
}

/** See `IdempotencyLedger.sweep`. */
export const sweep = <E, R>(options: {
  readonly onExpired: (entry: Ledger.Entry) => Effect.Effect<unknown, E, R>
  readonly every?: Duration.DurationInput | undefined
}): Effect.Effect<never, never, IdempotencyLedger | R> =>
  Effect.flatMap(IdempotencyLedger, (ledger) => {
    // Each step on its own: entries that cannot be expired do not keep old ones from being deleted.
    const logged = (step: string) => <A, E2, R2>(effect: Effect.Effect<A, E2, R2>) =>
      Effect.catchAllCause(effect, (cause) =>
        Cause.isInterruptedOnly(cause)
          ? Effect.interrupt
          : Effect.logWarning(`idempotency ledger sweep: ${step} failed`, cause))
    return ledger.expireLeases({ onExpired: options.onExpired }).pipe(
      logged("expiring leases"),
      Effect.zipRight(logged("cleanup")(ledger.cleanup())),
      Effect.zipRight(Effect.sleep(options.every ?? Duration.seconds(5))),
      Effect.forever
    )
  })

/** See `Idempotency.once`: the ledger's `once`, data-first (the effect or the key first) or as a pipeable. */
export const once: typeof Idempotency.once = <A, I, E, R>(
  first: string | Effect.Effect<A, E, R>,
  second: string | Effect.Effect<A, E, R> | Ledger.OnceOptions<A, I, E>,
  options?: Ledger.OnceOptions<A, I, E>
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- one body behind Idempotency.once's three signatures: no one return type is each of theirs
): any => {
  const run = <R2>(key: string, effect: Effect.Effect<A, E, R2>, opts: Ledger.OnceOptions<A, I, E>) =>
    Effect.flatMap(IdempotencyLedger, (ledger) => ledger.once(key, effect, opts))
  // Every data-first form has its options third; the key is the string of the first two.
  if (Effect.isEffect(first)) return run(second as string, first, options as Ledger.OnceOptions<A, I, E>)
  if (Effect.isEffect(second)) return run(first, second, options as Ledger.OnceOptions<A, I, E>)
  return <R2>(effect: Effect.Effect<A, E, R2>) => run(first, effect, second as Ledger.OnceOptions<A, I, E>)
}
