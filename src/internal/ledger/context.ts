/**
 * What the parts of one ledger share: its store, its settings and its
 * notifier, and the steps every part takes on them (reading a live row,
 * waiting for a change, holding a lease).
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import { randomUUID } from "node:crypto"
import type * as Ledger from "../../IdempotencyLedger.js"
import { IdempotencyError } from "./errors.js"
import * as Notifier from "./notifier.js"
import { idString, isStale, type RowId, type Store } from "./store.js"

export interface LedgerContext<SE> {
  readonly store: Store<SE>
  readonly owner: string
  readonly retentionMs: number
  readonly defaultLeaseMs: number
  readonly defaultWaitMs: number
  readonly pollMs: number
  readonly notifier: Notifier.Notifier
}

export const millis = (input: Duration.DurationInput | undefined, fallback: Duration.DurationInput): number =>
  Duration.toMillis(Duration.decode(input ?? fallback))

export const makeContext = <SE>(store: Store<SE>, options: Ledger.Options): LedgerContext<SE> => ({
  store,
  owner: options.owner ?? `ledger-${randomUUID()}`,
  retentionMs: millis(options.retention, Duration.hours(24)),
  defaultLeaseMs: millis(options.lease, Duration.seconds(30)),
  defaultWaitMs: millis(options.waitTimeout, Duration.seconds(30)),
  pollMs: Math.max(1, millis(options.pollInterval, Duration.millis(50))),
  notifier: Notifier.make()
})

/** A store operation on the row `id` (none: on many rows). */
export const db = <A, SE>(id: RowId | undefined, effect: Effect.Effect<A, SE>): Effect.Effect<A, IdempotencyError> =>
  Effect.mapError(effect, (cause) =>
    new IdempotencyError({
      reason: "Unavailable",
      ...(id === undefined ? {} : { key: id.key }),
      detail: "the ledger store failed",
      cause
    }))

export const newLease = <SE>(ledger: LedgerContext<SE>, now: number, leaseMs: number): Ledger.Lease => ({
  token: randomUUID(),
  owner: ledger.owner,
  expiresAt: now + leaseMs
})

/** The live (not stale) row of `id`. */
export const read = <SE>(ledger: LedgerContext<SE>, id: RowId, now: number) =>
  db(id, ledger.store.get(id)).pipe(
    Effect.map(Option.filter((row) => !isStale(row, now - ledger.retentionMs, now)))
  )

/** Waits for a change of `id`, at most one poll interval and never past `deadline`. */
export const pause = <SE>(ledger: LedgerContext<SE>, changed: Effect.Effect<void>, now: number, deadline: number) =>
  Effect.timeoutOption(changed, Duration.millis(Math.max(0, Math.min(ledger.pollMs, deadline - now))))

export const timeout = (key: string, waitedMs: number) =>
  new IdempotencyError({ reason: "Timeout", key, detail: `another run still holds the key after ${waitedMs} ms` })

/**
 * Runs `effect` while renewing the lease in the background, at a third of
 * its duration, so two missed renewals still leave it held. The renewer
 * stops when the lease is lost.
 */
export const holding = <SE, A, E, R>(
  ledger: LedgerContext<SE>,
  id: RowId,
  token: string,
  leaseMs: number,
  effect: Effect.Effect<A, E, R>
) => {
  const renewer = Effect.gen(function*() {
    yield* Effect.sleep(Duration.millis(Math.max(1, Math.floor(leaseMs / 3))))
    const now = yield* Clock.currentTimeMillis
    return yield* ledger.store.renew(id, token, now + leaseMs)
  }).pipe(
    Effect.catchAll((error) => Effect.as(Effect.logWarning("idempotency lease renewal failed", error), true)),
    Effect.repeat({ while: (renewed) => renewed }),
    // Another holder took the key over: this run's end will not be recorded.
    Effect.zipRight(
      Effect.logWarning("idempotency lease lost; another holder took the key over").pipe(
        Effect.annotateLogs({ entry: idString(id) })
      )
    )
  )
  return Effect.acquireUseRelease(
    // A forked fiber inherits its parent's mask; the renewer must stay interruptible.
    Effect.forkDaemon(Effect.interruptible(renewer)),
    () => effect,
    (fiber) => Fiber.interrupt(fiber)
  )
}
