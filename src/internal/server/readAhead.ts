/**
 * A stream's events read ahead of its reader, at most a bound of them held.
 *
 * Each streaming answer is the request handler's iterator, which the SDK
 * feeds from a queue of its own that grows without end while its reader
 * does not read: a client that holds its stream open and never reads it
 * would keep every event of its task in memory, and many of them would slow
 * the whole server. Here the events are taken from the handler as they come
 * (so the handler's own processing goes on at the run's pace) and held for
 * the reader, up to a bound. A full bound waits for the reader to take one,
 * since a burst of events can fill it before a reader that keeps up had a
 * turn to write; a reader that takes none for `stallMillis` is dropped: what
 * was held is let go, the handler's iterator is ended, and the reader's next
 * read is a typed end it can act on (subscribe again) instead of events. A
 * stalled reader thus costs the bound, and what its task publishes in
 * `stallMillis`, then nothing.
 *
 * @internal
 */
import { UnsupportedOperationError } from "@a2a-js/sdk/errors"

/**
 * The most events held for a reader that has not taken them: far more than
 * a reader that keeps up ever leaves waiting (its socket buffers hold more
 * beyond these), few enough that a stalled one costs little.
 *
 * @internal
 */
export const maxHeldEvents = 256

/**
 * How long a full bound waits for its reader to take an event before the
 * reader is dropped: longer than a reader that reads stalls on a congested
 * link, short enough that a stalled one is let go soon.
 *
 * @internal
 */
export const stallMillis = 2000

/**
 * What a dropped reader reads last: an A2A error, so that every transport
 * sends it with its code and ErrorInfo.
 *
 * @internal
 */
export const droppedReader = (limit: number): UnsupportedOperationError =>
  new UnsupportedOperationError(
    `The stream was ended: its reader fell more than ${limit} events behind. Subscribe to the task to follow it again.`
  )

type Held<A> = { readonly _tag: "Value"; readonly value: A } | { readonly _tag: "Failed"; readonly error: unknown }

/**
 * `source`, read ahead: at most `limit` events wait for the reader. When
 * they are full and the reader takes none for `stall` milliseconds,
 * `dropped` is called (to let go at once of what the stream holds, without
 * waiting for the reader, who may never read again), and the reader's next
 * read fails with {@link droppedReader}.
 *
 * @internal
 */
export const readAhead = <A>(
  source: AsyncIterator<A>,
  dropped: () => void,
  limit: number = maxHeldEvents,
  stall: number = stallMillis
): AsyncIterableIterator<A> => {
  const held: Array<Held<A>> = []
  let ended = false
  let wake: (() => void) | undefined
  let room: (() => void) | undefined
  // Whether the reader took an event within `stall`: false when it took none.
  const taken = () =>
    new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), stall)
      room = () => {
        clearTimeout(timer)
        resolve(true)
      }
    })
  const woken = () => {
    const waiting = wake
    wake = undefined
    waiting?.()
  }
  const stop = () => {
    if (ended) return
    ended = true
    void Promise.resolve().then(() => source.return?.(undefined)).catch(() => undefined)
  }
  const pump = async () => {
    while (!ended) {
      let next: IteratorResult<A>
      try {
        next = await source.next()
      } catch (error) {
        if (!ended) held.push({ _tag: "Failed", error })
        ended = true
        return woken()
      }
      if (ended) return
      if (next.done === true) {
        ended = true
        return woken()
      }
      while (held.length >= limit && !ended) {
        if (!(await taken())) break
      }
      if (ended) return
      if (held.length >= limit) {
        held.length = 0
        held.push({ _tag: "Failed", error: droppedReader(limit) })
        stop()
        dropped()
        return woken()
      }
      held.push({ _tag: "Value", value: next.value })
      woken()
    }
  }
  void pump()
  const iterator: AsyncIterableIterator<A> = {
    next: async () => {
      for (;;) {
        const first = held.shift()
        const waiting = room
        room = undefined
        waiting?.()
        if (first !== undefined) {
          if (first._tag === "Failed") throw first.error
          return { done: false, value: first.value }
        }
        if (ended) return { done: true, value: undefined }
        await new Promise<void>((resolve) => {
          wake = resolve
        })
      }
    },
    return: async () => {
      held.length = 0
      stop()
      woken()
      const waiting = room
      room = undefined
      waiting?.()
      return { done: true, value: undefined }
    },
    [Symbol.asyncIterator]: () => iterator
  }
  return iterator
}
