/**
 * The ledger's errors, below every part of it and the server that answers
 * with them.
 *
 * @internal
 */
import * as Schema from "effect/Schema"

export const Reason = Schema.Literal(
  "Interrupted",
  "Timeout",
  "NotFound",
  "InvalidResult",
  "InvalidKey",
  "Unavailable",
  "MissingPackage"
)

export type Reason = typeof Reason.Type

export class IdempotencyError extends Schema.TaggedError<IdempotencyError>("effect-a2a/IdempotencyError")(
  "IdempotencyError",
  {
    reason: Reason,
    key: Schema.optional(Schema.String),
    detail: Schema.String,
    cause: Schema.optional(Schema.Defect)
  }
) {
  override get message(): string {
    return `${
      this.key === undefined ? "idempotency ledger" : `idempotency key ${this.key}`
    }: ${this.reason} (${this.detail})`
  }
}

// A2A `InvalidParams`: reusing a key with another request is the caller's fault.
export const conflictCode = -32602

export class IdempotencyConflict extends Schema.TaggedError<IdempotencyConflict>("effect-a2a/IdempotencyConflict")(
  "IdempotencyConflict",
  {
    reason: Schema.Literal("PayloadMismatch"),
    key: Schema.String
  }
) {
  override get message(): string {
    return "idempotency key reused with a different request"
  }
}
