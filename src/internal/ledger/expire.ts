/**
 * Entries whose lease expired, and entries past retention: recording the
 * first as interrupted, once, whichever replica sweeps; deleting the second.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type * as Ledger from "../../IdempotencyLedger.js"
import { db, holding, type LedgerContext, millis, newLease, read } from "./context.js"
import { requestId, resultText, toEntry } from "./entry.js"
import type { IdempotencyError } from "./errors.js"
import type { Row } from "./store.js"

/**
 * Records an expired row with what `onExpired` gives it: none when the row
 * was no longer expired (its owner renewed or finished it, another sweep
 * took it). The row is claimed first, with a lease of this ledger's
 * length, so that only one sweep runs `onExpired` for it and its owner can
 * no longer renew or finish it. A failure of `onExpired` (or a result that
 * is not JSON) is returned as a `Left` and ends the claim at once, for the
 * next sweep; a store failure fails.
 */
const expireRow = <SE, E, R>(
  ledger: LedgerContext<SE>,
  row: Row,
  onExpired: (entry: Ledger.Entry) => Effect.Effect<unknown, E, R>
) =>
  Effect.uninterruptibleMask((restore) =>
    Effect.gen(function*() {
      const { defaultLeaseMs, notifier, store } = ledger
      const none = Either.right(Option.none<Ledger.Expired>())
      if (row.leaseToken === null) return none
      const now = yield* Clock.currentTimeMillis
      const claim = newLease(ledger, now, defaultLeaseMs)
      if (!(yield* db(row, store.takeover(row, row.leaseToken, claim, now)))) return none
      const entry = toEntry(row)
      // Renewed while `onExpired` runs, like a run's lease: a slow one must not be taken over and run twice.
      const written = yield* holding(
        ledger,
        row,
        claim.token,
        defaultLeaseMs,
        restore(
          Effect.flatMap(
            onExpired(entry),
            (result) => Effect.map(resultText(row.key, result), (text) => ({ result, text }))
          )
        )
      ).pipe(
        // Ended now, the claim leaves the entry expired again; should that fail, the claim runs out after its lease.
        Effect.onError(() =>
          Effect.ignore(Effect.flatMap(Clock.currentTimeMillis, (at) => store.renew(row, claim.token, at)))
        ),
        Effect.either
      )
      if (Either.isLeft(written)) return Either.left(written.left)
      const at = yield* Clock.currentTimeMillis
      const done = yield* db(row, store.finish(row, written.right.text, at, { token: claim.token }))
      if (done) yield* notifier.signal(row)
      return Either.right(
        done ? Option.some<Ledger.Expired>({ entry, result: written.right.result }) : Option.none<Ledger.Expired>()
      )
    })
  )

export const make = <SE>(
  ledger: LedgerContext<SE>
): Pick<Ledger.Service, "expireLeases" | "expireLease" | "cleanup"> => {
  const { retentionMs, store } = ledger

  const expireLeases: Ledger.Service["expireLeases"] = (options) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const candidates = yield* db(undefined, store.listExpired("request", now, options.limit ?? 100))
      const recorded: Array<Ledger.Expired> = []
      let failures: Cause.Cause<IdempotencyError | Effect.Effect.Error<ReturnType<typeof options.onExpired>>> =
        Cause.empty
      for (const row of candidates) {
        const expired = yield* expireRow(ledger, row, options.onExpired).pipe(
          Effect.catchAll((error) => Effect.failCause(Cause.parallel(failures, Cause.fail(error))))
        )
        if (Either.isLeft(expired)) failures = Cause.parallel(failures, Cause.fail(expired.left))
        else if (Option.isSome(expired.right)) recorded.push(expired.right.value)
      }
      return Cause.isEmpty(failures) ? recorded : yield* Effect.failCause(failures)
    })

  const expireLease: Ledger.Service["expireLease"] = (ref) =>
    Effect.gen(function*() {
      const id = yield* requestId(ref)
      const now = yield* Clock.currentTimeMillis
      const existing = yield* read(ledger, id, now)
      if (Option.isNone(existing)) return Option.none()
      const row = existing.value
      if (row.state !== "running" || (row.leaseExpiresAt ?? 0) > now) return Option.none()
      return yield* Effect.flatten(expireRow(ledger, row, ref.onExpired))
    })

  const cleanup: Ledger.Service["cleanup"] = (options) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      return yield* db(
        undefined,
        store.deleteStale(now - millis(options?.retention, Duration.millis(retentionMs)), now)
      )
    })

  return { expireLeases, expireLease, cleanup }
}
