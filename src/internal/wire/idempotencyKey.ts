/**
 * Where an idempotency key travels: in the message metadata and in a header,
 * so a server can recognise a repeat.
 *
 * @internal
 */

/** The message metadata key that carries the key. */
export const metadataKey = "effect-a2a/idempotency-key"

/** The HTTP header that carries the key (the IETF `Idempotency-Key` draft's name). */
export const headerName = "Idempotency-Key"
