/**
 * The push sender's keyed serial queues (events per task, deliveries per
 * task and config): per key, what waits is handled one at a time, in
 * order, by one fiber, which ends, and the key's queue with it, once the
 * queue is empty. What waits is coalesced and bounded in count, so that a
 * slow webhook or store holds a bounded memory; the item in hand never is.
 *
 * @internal
 */
import * as Effect from "effect/Effect"

/** A status update's kind: `running` is made moot by any later status update; `final` is never dropped. @internal */
export type Status = "none" | "running" | "final"

/** @internal */
export interface Options<A extends { readonly status: Status }> {
  /** Forks a fiber of the sender. */
  readonly run: (effect: Effect.Effect<void>) => void
  readonly handle: (item: A, key: string) => Effect.Effect<void>
  /** The most items that wait per key, past which the oldest that is not final goes. */
  readonly maxPending: number
  /** What is dropped unhandled: running updates a later status update made moot, or (`overflow`) the oldest past the bound. */
  readonly dropped: (items: ReadonlyArray<A>, overflow: boolean, key: string) => Effect.Effect<void>
}

/** Queues an item under its key; never blocks. @internal */
export const make = <A extends { readonly status: Status }>(options: Options<A>): (key: string, item: A) => void => {
  const queues = new Map<string, Array<A>>()
  const drain = (key: string, queue: Array<A>): Effect.Effect<void> =>
    Effect.suspend(() => {
      const next = queue.shift()
      if (next === undefined) {
        queues.delete(key)
        return Effect.void
      }
      return Effect.zipRight(options.handle(next, key), drain(key, queue))
    })
  return (key, item) => {
    const queue = queues.get(key)
    if (queue === undefined) {
      const fresh = [item]
      queues.set(key, fresh)
      options.run(drain(key, fresh))
      return
    }
    if (item.status !== "none") {
      // A later status tells the receiver all an earlier running one would: those not yet handled go.
      const moot: Array<A> = []
      for (let i = queue.length - 1; i >= 0; i--) {
        if (queue[i]?.status === "running") moot.unshift(...queue.splice(i, 1))
      }
      if (moot.length > 0) options.run(options.dropped(moot, false, key))
    }
    queue.push(item)
    if (queue.length > options.maxPending) {
      const oldest = queue.findIndex((waiting) => waiting.status !== "final")
      if (oldest >= 0) options.run(options.dropped(queue.splice(oldest, 1), true, key))
    }
  }
}
