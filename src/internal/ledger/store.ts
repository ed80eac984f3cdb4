/**
 * The storage primitives every ledger layer implements. Each is one atomic
 * step, so the decisions built on them (who runs, who joins, who finishes)
 * are written once, in `ledger.ts`, `expire.ts` and `once.ts`, for every
 * backend.
 *
 * @internal
 */
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"

/** Request-level records (the server) and tool-level records (`once`) never see each other. */
export type Scope = "request" | "tool"

export type State = "running" | "finished"

export interface RowId {
  readonly scope: Scope
  readonly tenant: string
  readonly principal: string
  readonly key: string
}

export interface Row extends RowId {
  readonly fingerprint: string
  readonly taskId: string | null
  readonly state: State
  /** JSON text; null while running. */
  readonly result: string | null
  readonly leaseToken: string | null
  readonly leaseOwner: string | null
  /** Epoch milliseconds. */
  readonly leaseExpiresAt: number | null
  readonly createdAt: number
  readonly finishedAt: number | null
}

export interface FinishGuard {
  /** Only the holder of this lease may finish. */
  readonly token?: string | undefined
  /** Only when the lease expired at or before this time (a sweeper marking it interrupted). */
  readonly expiredAt?: number | undefined
}

export interface Store<E> {
  /**
   * Inserts `row` when no row has its id, or the row there is stale: created
   * before `staleBefore` and not held by a live lease at `now`. True when
   * this call wrote the row.
   */
  readonly insert: (row: Row, staleBefore: number, now: number) => Effect.Effect<boolean, E>
  readonly get: (id: RowId) => Effect.Effect<Option.Option<Row>, E>
  /** Running → finished, under `guard`. True when this call made the change. */
  readonly finish: (
    id: RowId,
    result: string,
    finishedAt: number,
    guard: FinishGuard
  ) => Effect.Effect<boolean, E>
  /** Moves the lease expiry of a running row held by `token`. */
  readonly renew: (id: RowId, token: string, expiresAt: number) => Effect.Effect<boolean, E>
  /** Hands a running row whose lease expired at or before `now` from `oldToken` to a new holder. */
  readonly takeover: (
    id: RowId,
    oldToken: string,
    lease: { readonly token: string; readonly owner: string; readonly expiresAt: number },
    now: number
  ) => Effect.Effect<boolean, E>
  /** Deletes a running row held by `token`. */
  readonly release: (id: RowId, token: string) => Effect.Effect<boolean, E>
  /** Running rows of `scope` whose lease expired at or before `now`, oldest lease first. */
  readonly listExpired: (scope: Scope, now: number, limit: number) => Effect.Effect<ReadonlyArray<Row>, E>
  /** Deletes rows created before `before` that no live lease holds at `now`; returns how many. */
  readonly deleteStale: (before: number, now: number) => Effect.Effect<number, E>
}

export const idString = (id: RowId): string => JSON.stringify([id.scope, id.tenant, id.principal, id.key])

/**
 * Past retention and not held by a live lease: treated as absent, replaced by
 * a new first request, and removed by cleanup.
 */
export const isStale = (row: Row, before: number, now: number): boolean =>
  row.createdAt < before && (row.state === "finished" || (row.leaseExpiresAt ?? 0) <= now)
