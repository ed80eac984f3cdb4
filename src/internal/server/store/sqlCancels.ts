/**
 * The {@link CancelFeed} of the SQL task stores: how a server running a task
 * learns that another server sharing its store appended the task's cancel,
 * so that it stops the run at once instead of reading the store on a timer.
 *
 * - PostgreSQL: the append that cancels a task notifies `canceledChannel`
 *   in its own transaction (`sqlRows.ts`), so the notice goes out exactly
 *   when the cancel commits; each store listens on a connection of its own
 *   (`pgListen.ts`). A notice lost while that connection was down is made
 *   up for by reading every watched run's task once it is back. Behind a
 *   pooler that keeps no session (PgBouncer in transaction mode) LISTEN
 *   cannot work: such a deployment needs `replication`, whose nudge stops
 *   the run.
 * - SQLite: no notice crosses processes. One server process per file is the
 *   supported deployment; the servers of one process on one file tell each
 *   other here, in memory. A second process on the same file still sees the
 *   task CANCELED, but its run goes on to its end, side effects included,
 *   and that end is not recorded over the cancel.
 *
 * @internal
 */
import type { ServerCallContext } from "@a2a-js/sdk/server"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as internalPgListen from "./pgListen.js"
import { canceledChannel, cancelKeyOf, scopeOf } from "./sqlRows.js"
import type { CancelFeed, CancelFollower } from "./store.js"
import * as internalTaskStore from "./taskStore.js"

/** A feed, and how an append of this store tells it of a cancel it committed (not needed on PostgreSQL). */
export interface Cancels {
  readonly feed: CancelFeed
  readonly told: ((key: string) => void) | undefined
}

/** The `application_name` of the store's LISTEN connection. */
export const applicationName = "effect-a2a-task-store"

const keyOf = (taskId: string, context: ServerCallContext) => cancelKeyOf(scopeOf(context), taskId)

// The followers of the stores of this process, by SQLite file (its absolute path).
const byFile = new Map<string, Set<CancelFollower>>()

/** The feed of the SQLite file `filename` (absolute): this process's servers on it, and no other process's. */
export const sqlite = (filename: string): Cancels => ({
  feed: {
    follow: (follower) => {
      const followers = byFile.get(filename) ?? new Set()
      byFile.set(filename, followers)
      followers.add(follower)
      return () => {
        followers.delete(follower)
        if (followers.size === 0 && byFile.get(filename) === followers) byFile.delete(filename)
      }
    },
    keyOf
  },
  told: (key) => byFile.get(filename)?.forEach((follower) => follower.canceled(key))
})

/** The feed of the PostgreSQL `url` names, listening for the scope. */
export const postgres = (
  url: string,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- pg ships no types of its own
  driver: any
): Effect.Effect<Cancels, internalTaskStore.Failure, Scope.Scope> => {
  const followers = new Set<CancelFollower>()
  return internalPgListen.listen({
    url,
    channel: canceledChannel,
    applicationName,
    driver,
    who: "The task store",
    whenBack: "the runs here read their tasks again, for a cancel missed meanwhile",
    notified: (payload) => {
      if (payload !== undefined) followers.forEach((follower) => follower.canceled(payload))
    },
    reconnected: () => followers.forEach((follower) => follower.missed())
  }).pipe(
    Effect.mapError(internalTaskStore.fail("Connection", "Could not listen for the PostgreSQL task store's cancels")),
    Effect.as({
      feed: {
        follow: (follower) => {
          followers.add(follower)
          return () => void followers.delete(follower)
        },
        keyOf
      },
      told: undefined
    })
  )
}
