/**
 * Tool-level idempotency: a side effect run at most once per key, its
 * outcome stored for later calls, in this process or another sharing the
 * ledger.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as Ledger from "../../IdempotencyLedger.js"
import { db, holding, type LedgerContext, millis, newLease, pause, read, timeout } from "./context.js"
import { anonymous, checkedId, runningRow } from "./entry.js"
import { IdempotencyError } from "./errors.js"

/** What one look at the store decided. */
type Step =
  | { readonly _tag: "Again" }
  | { readonly _tag: "Run"; readonly lease: Ledger.Lease }
  | { readonly _tag: "Stored"; readonly text: string }

/**
 * The stored form of tool-level outcomes, cached per schema pair: Schema
 * compiles its parsers once per schema instance, and a new codec per call
 * made every `once` pay for a compile.
 */
const makeCodecs = () => {
  const codecs = new WeakMap<object, WeakMap<object, unknown>>()
  return <A, I, E, EI>(
    success: Schema.Schema<A, I>,
    failure: Schema.Schema<E, EI> | undefined
  ): Schema.Schema<Either.Either<A, E>, string> => {
    const left = failure ?? Schema.Never
    let bySuccess = codecs.get(success)
    if (bySuccess === undefined) {
      bySuccess = new WeakMap()
      codecs.set(success, bySuccess)
    }
    // The entry of this pair of schemas was made below from this pair, so it has their types.
    let codec = bySuccess.get(left) as Schema.Schema<Either.Either<A, E>, string> | undefined
    if (codec === undefined) {
      codec = Schema.parseJson(Schema.Either({ right: success, left }))
      bySuccess.set(left, codec)
    }
    return codec
  }
}

/** `Service.once` of a ledger. */
export const make = <SE>(ledger: LedgerContext<SE>): Ledger.Service["once"] => {
  const { defaultLeaseMs, defaultWaitMs, notifier, retentionMs, store } = ledger
  const storedCodec = makeCodecs()

  return <A, I, E, R>(
    key: string,
    effect: Effect.Effect<A, E, R>,
    onceOptions: Ledger.OnceOptions<A, I, E>
  ) =>
    Effect.gen(function*() {
      const identity = onceOptions.identity ?? anonymous
      const id = yield* checkedId({ scope: "tool", tenant: identity.tenant, principal: identity.user, key })
      const leaseMs = millis(onceOptions.lease, Duration.millis(defaultLeaseMs))
      const waitMs = millis(onceOptions.waitTimeout, Duration.millis(defaultWaitMs))
      const storeFailure = onceOptions.failure !== undefined
      const codec = storedCodec(onceOptions.success, onceOptions.failure)
      const invalid = (detail: string) => (cause: unknown) =>
        new IdempotencyError({ reason: "InvalidResult", key, detail, cause })

      /** Runs the effect under `lease` and records how it ended. */
      const run = (held: Ledger.Lease): Effect.Effect<A, E | IdempotencyError, R> =>
        Effect.uninterruptibleMask((restore) =>
          Effect.gen(function*() {
            const exit = yield* Effect.exit(holding(ledger, id, held.token, leaseMs, restore(effect)))
            const now = yield* Clock.currentTimeMillis
            const record = (value: Either.Either<A, E>) =>
              Schema.encode(codec)(value).pipe(
                Effect.mapError(invalid("the result could not be encoded")),
                // Read back before it is stored: JSON turns NaN and Infinity into null, which may not decode.
                Effect.tap((text) =>
                  Effect.mapError(Schema.decode(codec)(text), invalid("the result would not decode from JSON"))
                ),
                Effect.flatMap((text) => db(id, store.finish(id, text, now, { token: held.token }))),
                Effect.flatMap((done) =>
                  done ? Effect.void : Effect.logWarning("idempotency lease was lost before the result was recorded")
                )
              )
            if (Exit.isSuccess(exit)) {
              const recorded = yield* Effect.either(record(Either.right(exit.value)))
              yield* notifier.signal(id)
              if (Either.isLeft(recorded)) {
                if (recorded.left.reason === "InvalidResult") {
                  // The side effect happened but later callers cannot be told its result:
                  // leave the entry to expire, so they see Interrupted rather than run it again.
                  yield* Effect.ignore(store.renew(id, held.token, now))
                  return yield* recorded.left
                }
                yield* Effect.logWarning("idempotency result could not be recorded", recorded.left)
              }
              return exit.value
            }
            const cause = exit.cause
            const failure = Cause.failureOption(cause)
            if (Option.isSome(failure) && !Cause.isDie(cause) && !Cause.isInterrupted(cause)) {
              const recorded = storeFailure
                ? record(Either.left(failure.value))
                : Effect.asVoid(db(id, store.release(id, held.token)))
              // Unrecorded, the entry would hold its lease to the end: end it now, so later callers
              // learn at once that the outcome is unknown.
              yield* Effect.catchAll(recorded, (error) =>
                Effect.zipRight(
                  Effect.logWarning("idempotency failure could not be recorded", error),
                  Effect.ignore(store.renew(id, held.token, now))
                ))
            } else {
              // A defect or an interruption: the side effect may have happened. End the lease now
              // so later callers learn at once that the outcome is unknown.
              yield* Effect.ignore(store.renew(id, held.token, now))
            }
            yield* notifier.signal(id)
            return yield* exit
          })
        )

      const deadline = (yield* Clock.currentTimeMillis) + waitMs
      while (true) {
        const step: Step = yield* notifier.watch(id, (changed) =>
          Effect.gen(function*() {
            const now = yield* Clock.currentTimeMillis
            const fresh = newLease(ledger, now, leaseMs)
            if (yield* db(id, store.insert(runningRow(id, "", null, fresh, now), now - retentionMs, now))) {
              return { _tag: "Run", lease: fresh } as const
            }
            const existing = yield* read(ledger, id, now)
            if (Option.isNone(existing)) return { _tag: "Again" } as const
            const row = existing.value
            if (row.state === "finished") return { _tag: "Stored", text: row.result ?? "null" } as const
            if ((row.leaseExpiresAt ?? 0) <= now) {
              if (onceOptions.takeover !== true) {
                return yield* new IdempotencyError({
                  reason: "Interrupted",
                  key,
                  detail: "a previous run stopped before recording its outcome; it may or may not have taken effect"
                })
              }
              const taken = yield* db(id, store.takeover(id, row.leaseToken ?? "", fresh, now))
              return taken ? { _tag: "Run", lease: fresh } as const : { _tag: "Again" } as const
            }
            if (now >= deadline) return yield* timeout(key, waitMs)
            yield* pause(ledger, changed, now, deadline)
            return { _tag: "Again" } as const
          }))
        switch (step._tag) {
          case "Again":
            continue
          case "Run":
            return yield* run(step.lease)
          case "Stored": {
            const stored = yield* Schema.decode(codec)(step.text).pipe(
              Effect.mapError(invalid("the stored result could not be decoded"))
            )
            return yield* stored
          }
        }
      }
    })
}
