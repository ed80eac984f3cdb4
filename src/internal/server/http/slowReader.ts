/**
 * The bound on what a stream holds for a reader that does not read.
 *
 * The request handler's stream of a call is fed by a queue of the SDK's,
 * which takes every event its task's bus publishes and grows without end
 * while the reader does not read: each transport writes an event only once
 * its connection has taken the last (HTTP waits for the socket to drain,
 * gRPC for the call), so a client that holds its stream open and never
 * reads it would keep every event of its task in memory, and many such
 * clients would slow the whole server. The events delivered to the queue and
 * those its reader took are counted here; when more than the bound have
 * waited for `stallMillis` straight, the reader is dropped: the handler's
 * stream is ended (which lets go of its queue and its place on the bus),
 * and the reader's next read is a typed end it can act on (subscribe again)
 * instead of events. The handler is not read ahead of its reader, so its
 * own work per event (a save of the task) stays at the reader's pace.
 *
 * @internal
 */
import { UnsupportedOperationError } from "@a2a-js/sdk/errors"
import type { ExecutionEventBus } from "@a2a-js/sdk/server"

/**
 * The most events that may wait for a reader: far more than a reader that
 * keeps up leaves waiting (its socket buffers hold more beyond these), few
 * enough that a stalled one costs little.
 *
 * @internal
 */
export const maxWaitingEvents = 256

/**
 * How long more than {@link maxWaitingEvents} may wait before the reader is
 * dropped: a burst of events is taken by a reader that reads well within it.
 *
 * @internal
 */
export const stallMillis = 2000

/**
 * How long after its drop a reader's HTTP connection may still hold the
 * typed end unwritten before it is destroyed: a client that reads takes it
 * at once, one that never reads would hold its connection forever.
 *
 * @internal
 */
export const unwrittenEndMillis = 5000

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

/** The reader of one call's stream. @internal */
export interface Reader {
  /** Counts the events `bus` delivers (to the call's queue, which listens on it beside), until the stream ends. */
  readonly listen: (bus: ExecutionEventBus) => void
  /** Stops counting: the stream is let go (its reader gone). */
  readonly stop: () => void
  /** Resolves once the reader is dropped. */
  readonly dropped: Promise<void>
  /** `source` (the handler's stream), counting what its reader takes; its next read fails once dropped. */
  readonly reading: <A>(source: AsyncIterator<A>) => AsyncIterableIterator<A>
}

/** @internal */
export const makeReader = (limit: number = maxWaitingEvents, stall: number = stallMillis): Reader => {
  let deliveries = 0
  let taken = 0
  let timer: ReturnType<typeof setTimeout> | undefined
  let state: "reading" | "dropped" | "told" = "reading"
  let source: AsyncIterator<unknown> | undefined
  let drop = () => {}
  const dropped = new Promise<void>((resolve) => {
    drop = resolve
  })
  const unlisten: Array<() => void> = []
  const heard = new WeakSet<ExecutionEventBus>()
  const ended = () => {
    clearTimeout(timer)
    for (const stop of unlisten.splice(0)) stop()
  }
  const delivered = () => {
    deliveries++
    check()
  }
  const check = () => {
    if (state !== "reading") return
    if (deliveries - taken <= limit) {
      clearTimeout(timer)
      timer = undefined
      return
    }
    if (timer !== undefined) return
    timer = setTimeout(() => {
      timer = undefined
      if (state !== "reading" || deliveries - taken <= limit) return
      state = "dropped"
      ended()
      // Waiting on its reader at an event, the handler's stream ends at once, its queue let go.
      void Promise.resolve(source?.return?.(undefined)).catch(() => undefined)
      drop()
    }, stall)
    timer.unref?.()
  }
  const reading = <A>(from: AsyncIterator<A>): AsyncIterableIterator<A> => {
    source = from
    const iterator: AsyncIterableIterator<A> = {
      next: async () => {
        if (state === "reading") {
          const next = await from.next()
          if (state === "reading") {
            if (next.done === true) ended()
            else taken++
            check()
            return next
          }
        }
        if (state === "told") return { done: true, value: undefined }
        state = "told"
        throw droppedReader(limit)
      },
      return: async (value?: unknown) => {
        ended()
        return (await from.return?.(value)) ?? { done: true, value: undefined }
      },
      [Symbol.asyncIterator]: () => iterator
    }
    return iterator
  }
  return {
    listen: (bus) => {
      // The handler looks a call's bus up more than once: each event is counted once all the same.
      if (heard.has(bus)) return
      heard.add(bus)
      bus.on("event", delivered)
      unlisten.push(() => bus.off("event", delivered))
    },
    stop: ended,
    dropped,
    reading
  }
}
