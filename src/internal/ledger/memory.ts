/**
 * The in-memory store: one `Map` per layer. Every primitive runs in a single
 * synchronous step, which is what makes it atomic.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { idString, isStale, type Row, type RowId, type Store } from "./store.js"

export const make = (): Store<never> => {
  const rows = new Map<string, Row>()
  const running = (id: RowId): Row | undefined => {
    const row = rows.get(idString(id))
    return row?.state === "running" ? row : undefined
  }
  const update = (row: Row, patch: Partial<Row>): true => {
    rows.set(idString(row), { ...row, ...patch })
    return true
  }
  return {
    insert: (row, staleBefore, now) =>
      Effect.sync(() => {
        const existing = rows.get(idString(row))
        if (existing !== undefined && !isStale(existing, staleBefore, now)) return false
        rows.set(idString(row), row)
        return true
      }),
    get: (id) => Effect.sync(() => Option.fromNullable(rows.get(idString(id)))),
    finish: (id, result, finishedAt, guard) =>
      Effect.sync(() => {
        const row = running(id)
        if (row === undefined) return false
        if (guard.token !== undefined && row.leaseToken !== guard.token) return false
        if (guard.expiredAt !== undefined && (row.leaseExpiresAt ?? 0) > guard.expiredAt) return false
        return update(row, { state: "finished", result, finishedAt, leaseToken: null, leaseExpiresAt: null })
      }),
    renew: (id, token, expiresAt) =>
      Effect.sync(() => {
        const row = running(id)
        return row !== undefined && row.leaseToken === token && update(row, { leaseExpiresAt: expiresAt })
      }),
    takeover: (id, oldToken, lease, now) =>
      Effect.sync(() => {
        const row = running(id)
        return row !== undefined && row.leaseToken === oldToken && (row.leaseExpiresAt ?? 0) <= now &&
          update(row, { leaseToken: lease.token, leaseOwner: lease.owner, leaseExpiresAt: lease.expiresAt })
      }),
    release: (id, token) =>
      Effect.sync(() => {
        const row = running(id)
        return row !== undefined && row.leaseToken === token && rows.delete(idString(id))
      }),
    listExpired: (scope, now, limit) =>
      Effect.sync(() =>
        Array.from(rows.values())
          .filter((row) => row.scope === scope && row.state === "running" && (row.leaseExpiresAt ?? 0) <= now)
          .sort((a, b) => (a.leaseExpiresAt ?? 0) - (b.leaseExpiresAt ?? 0))
          .slice(0, limit)
      ),
    deleteStale: (before, now) =>
      Effect.sync(() => {
        let deleted = 0
        for (const [id, row] of rows) {
          if (isStale(row, before, now)) {
            rows.delete(id)
            deleted++
          }
        }
        return deleted
      })
  }
}
