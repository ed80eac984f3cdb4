/**
 * Idempotency keys and at-most-once side effects.
 *
 * A key is given by the caller or derived from the conversation, the
 * operation and its business parameters, so the same request after a crash
 * or a lost answer carries the same key. On the wire it travels as message
 * metadata under {@link metadataKey} and as the {@link headerName} header.
 *
 * @since 0.1.0
 */
import type * as Effect from "effect/Effect"
import type { IdempotencyError, IdempotencyLedger, OnceOptions } from "./IdempotencyLedger.js"
import * as key from "./internal/ledger/key.js"
import * as internal from "./internal/ledger/ledger.js"
import * as IdempotencyKey from "./internal/wire/idempotencyKey.js"

export {
  /**
   * @category errors
   * @since 0.1.0
   */
  IdempotencyConflict,
  /**
   * @category errors
   * @since 0.1.0
   */
  IdempotencyError
} from "./internal/ledger/errors.js"

/**
 * The message metadata key that carries the idempotency key.
 *
 * @example
 * ```ts
 * import { AgentExecutor, Idempotency } from "effect-a2a"
 *
 * // inside an agent: the key the caller sent with the message, if any
 * const keyOf = (request: AgentExecutor.AgentRequest): unknown => request.message.metadata?.[Idempotency.metadataKey]
 * ```
 * @category constants
 * @since 0.1.0
 */
export const metadataKey: typeof IdempotencyKey.metadataKey = IdempotencyKey.metadataKey

/**
 * The HTTP header that carries the idempotency key (the IETF
 * `Idempotency-Key` draft's name).
 *
 * @example
 * ```ts
 * import { AgentExecutor, Idempotency } from "effect-a2a"
 *
 * // inside an agent: the key the caller sent as a header (Node lower-cases header names)
 * const headerKeyOf = (request: AgentExecutor.AgentRequest) => request.headers[Idempotency.headerName.toLowerCase()]
 * ```
 * @category constants
 * @since 0.1.0
 */
export const headerName: typeof IdempotencyKey.headerName = IdempotencyKey.headerName

/**
 * The prefix of derived keys; it names the derivation, so a change to it can
 * never make an old key collide with a new one.
 *
 * @example
 * ```ts
 * import { Idempotency } from "effect-a2a"
 *
 * const isDerived = (key: string): boolean => key.startsWith(Idempotency.derivedPrefix)
 * isDerived(Idempotency.deriveKey({ contextId: "ctx-42", operation: "book-flight", params: {} })) // true
 * isDerived(Idempotency.deriveKey({ key: "order-17" })) // false
 * ```
 * @category constants
 * @since 0.1.0
 */
export const derivedPrefix: typeof key.derivedPrefix = key.derivedPrefix

/**
 * JSON with object keys sorted at every depth (RFC 8785 ordering): equal
 * values give equal text whatever the order their fields were built in.
 *
 * @example
 * ```ts
 * import { Idempotency } from "effect-a2a"
 *
 * Idempotency.canonicalJson({ b: 1, a: [true, { d: null, c: "x" }] })
 * // '{"a":[true,{"c":"x","d":null}],"b":1}'
 * ```
 * @category keys
 * @since 0.1.0
 */
export const canonicalJson: (value: unknown) => string = key.canonicalJson

/**
 * A digest of a payload: SHA-256 hex of its canonical JSON. The server
 * compares it to refuse a key reused with a different request.
 *
 * @example
 * ```ts
 * import { Idempotency } from "effect-a2a"
 *
 * Idempotency.fingerprint({ seat: "12A", flight: "LH 400" }) ===
 *   Idempotency.fingerprint({ flight: "LH 400", seat: "12A" }) // true
 * ```
 * @category keys
 * @since 0.1.0
 */
export const fingerprint: (payload: unknown) => string = key.fingerprint

/**
 * What a key is derived from, or the caller's own key.
 *
 * @example
 * ```ts
 * import { Idempotency } from "effect-a2a"
 *
 * // the caller's key when it sent one, else one derived from the booking
 * const keyFor = (callerKey: string | undefined, contextId: string, flight: string): string => {
 *   const source: Idempotency.KeySource = callerKey !== undefined
 *     ? { key: callerKey }
 *     : { contextId, operation: "book-flight", params: { flight } }
 *   return Idempotency.deriveKey(source)
 * }
 * ```
 * @category keys
 * @since 0.1.0
 */
export type KeySource =
  | { readonly key: string }
  | {
    /** The conversation (A2A context id). */
    readonly contextId: string
    /** The operation, e.g. `"book-flight"`. */
    readonly operation: string
    /** The business parameters only: no timestamps, request ids or other per-attempt values. */
    readonly params: unknown
  }

/**
 * The idempotency key of a request: the caller's key unchanged, or
 * {@link derivedPrefix} followed by the SHA-256 hex of the canonical JSON of
 * the context id, the operation and the parameters. The same inputs give the
 * same key in every process.
 *
 * @example
 * ```ts
 * import { Idempotency } from "effect-a2a"
 *
 * const key = Idempotency.deriveKey({
 *   contextId: "ctx-42",
 *   operation: "book-flight",
 *   params: { flight: "LH 400", passenger: "Ana Lima" }
 * })
 * // "idem-v1-" + 64 hex digits
 * Idempotency.deriveKey({ key: "order-17" }) // "order-17"
 * ```
 * @category keys
 * @since 0.1.0
 */
export const deriveKey: (source: KeySource) => string = key.deriveKey

/**
 * Runs a side effect at most once per key and stores its success; a later
 * call with the key, in this or another process sharing the ledger, returns
 * the stored result without running it. Pipeable
 * (`effect.pipe(Idempotency.once(key, options))`) or data-first
 * (`Idempotency.once(effect, key, options)`; the older
 * `Idempotency.once(key, effect, options)` still works).
 *
 * - A typed failure is not stored (unless `failure` gives its schema), so the
 *   work can be tried again, for instance in a new task.
 * - Concurrent calls with one key run it once; the others wait (at most
 *   `waitTimeout`, then `IdempotencyError` `Timeout`) for that result.
 * - The running call holds a lease and renews it. When a run dies or is
 *   interrupted before recording its outcome, later calls fail with
 *   `IdempotencyError` `Interrupted` rather than run the side effect a second
 *   time, unless they pass `takeover: true`.
 *
 * @example
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { Idempotency, IdempotencyLedger } from "effect-a2a"
 *
 * declare const reserveSeat: (flight: string, seat: string) => Effect.Effect<string, Error>
 *
 * const key = Idempotency.deriveKey({ contextId: "ctx-42", operation: "reserve-seat", params: { flight: "LH 400", seat: "12A" } })
 * // piped, or data-first: Idempotency.once(reserveSeat("LH 400", "12A"), key, { success: Schema.String })
 * const reservation = reserveSeat("LH 400", "12A").pipe(
 *   Idempotency.once(key, { success: Schema.String }),
 *   Effect.provide(IdempotencyLedger.layerMemory())
 * )
 * ```
 * @category combinators
 * @since 0.1.0
 */
export const once: {
  <A, I, E>(
    key: string,
    options: OnceOptions<A, I, E>
  ): <R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | IdempotencyError, R | IdempotencyLedger>
  <A, I, E, R>(
    effect: Effect.Effect<A, E, R>,
    key: string,
    options: OnceOptions<A, I, E>
  ): Effect.Effect<A, E | IdempotencyError, R | IdempotencyLedger>
  <A, I, E, R>(
    key: string,
    effect: Effect.Effect<A, E, R>,
    options: OnceOptions<A, I, E>
  ): Effect.Effect<A, E | IdempotencyError, R | IdempotencyLedger>
} = internal.once
