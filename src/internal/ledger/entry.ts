/**
 * Entries as callers see them and rows as stores keep them: the ids a caller
 * may use, and the conversions between the two.
 *
 * @internal
 */
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Ledger from "../../IdempotencyLedger.js"
import { IdempotencyError } from "./errors.js"
import type { Row, RowId } from "./store.js"
import { storedTextProblem } from "./storedText.js"

export const anonymous: Ledger.Identity = { tenant: "", user: "" }

export const BeginOutcome = Data.taggedEnum<Ledger.BeginOutcome>()

// PostgreSQL's index holds about 2700 bytes of a row's key columns.
const maxIdBytes = 2000

const invalidId = (id: RowId): string | undefined => {
  const parts = [id.key, id.tenant, id.principal]
  for (const part of parts) {
    const problem = storedTextProblem(part)
    if (problem !== undefined) return `a key and its identity ${problem}`
  }
  const bytes = parts.reduce((sum, part) => sum + Buffer.byteLength(part, "utf8"), 0)
  if (bytes > maxIdBytes) {
    return `a key and its identity must be at most ${maxIdBytes} bytes of UTF-8 together (got ${bytes})`
  }
  return undefined
}

/**
 * `id` as a caller gave it, refused when a SQL ledger could not keep it
 * apart from others (NUL, a lone surrogate, too long for an index): every
 * ledger refuses it alike. Rows read back from a store are not checked:
 * SQLite and memory ledgers of earlier versions kept such keys, and those
 * entries must still expire.
 */
export const checkedId = (id: RowId): Effect.Effect<RowId, IdempotencyError> => {
  const detail = invalidId(id)
  return detail === undefined
    ? Effect.succeed(id)
    : Effect.fail(new IdempotencyError({ reason: "InvalidKey", key: id.key, detail }))
}

export const requestRow = (ref: Ledger.EntryRef): RowId => ({
  scope: "request",
  tenant: ref.identity.tenant,
  principal: ref.identity.user,
  key: ref.key
})

export const requestId = (ref: Ledger.EntryRef): Effect.Effect<RowId, IdempotencyError> => checkedId(requestRow(ref))

const parseResult = (text: string | null): Option.Option<unknown> => {
  if (text === null) return Option.none()
  try {
    return Option.some(JSON.parse(text))
  } catch {
    return Option.none()
  }
}

export const toEntry = (row: Row): Ledger.Entry => ({
  key: row.key,
  identity: { tenant: row.tenant, user: row.principal },
  fingerprint: row.fingerprint,
  taskId: row.taskId ?? "",
  state: row.state,
  result: parseResult(row.result),
  leaseOwner: Option.fromNullable(row.leaseOwner),
  leaseExpiresAt: Option.fromNullable(row.leaseExpiresAt),
  createdAt: row.createdAt,
  finishedAt: Option.fromNullable(row.finishedAt)
})

export const runningRow = (
  id: RowId,
  fingerprint: string,
  taskId: string | null,
  lease: Ledger.Lease,
  now: number
): Row => ({
  ...id,
  fingerprint,
  taskId,
  state: "running",
  result: null,
  leaseToken: lease.token,
  leaseOwner: lease.owner,
  leaseExpiresAt: lease.expiresAt,
  createdAt: now,
  finishedAt: null
})

/** A request-level result as stored: JSON, or a typed error for what JSON cannot hold. */
export const resultText = (key: string, result: unknown): Effect.Effect<string, IdempotencyError> =>
  Effect.try({
    try: () => JSON.stringify(result) ?? "null",
    catch: (cause) =>
      new IdempotencyError({ reason: "InvalidResult", key, detail: "the result could not be written as JSON", cause })
  })
