/**
 * The bound on what a stream holds for a reader that does not read.
 *
 * The request handler's stream of a call is fed by a buffer that takes
 * every event its task's channel delivers and grows without end while the
 * reader does not read: each transport writes an event only once its
 * connection has taken the last (HTTP waits for the socket to drain, gRPC
 * for the call), so a client that holds its stream open and never reads it
 * would keep every event of its task in memory, and many such clients would
 * slow the whole server. The events delivered to the call and those its
 * reader took are counted here; when more than the bound have waited for
 * `stallMillis` straight, the reader is dropped: the handler's stream is
 * interrupted (which lets go of its buffer and its place on the channel),
 * and the reader's next read is a typed end it can act on (subscribe again)
 * instead of events. The handler is not read ahead of its reader, so its
 * own work per event stays at the reader's pace.
 *
 * @internal
 */
import { UnsupportedOperationError } from "@a2a-js/sdk/errors"
import type { ExecutionEventBus } from "@a2a-js/sdk/server"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import * as Take from "effect/Take"

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
  /** Counts the events `bus` delivers (to the call's buffer, which listens on it beside), until the stream ends. */
  readonly listen: (bus: ExecutionEventBus) => void
  /** Stops counting: the stream is let go (its reader gone). */
  readonly stop: () => void
  /** Resolves once the reader is dropped. */
  readonly dropped: Promise<void>
  /**
   * `source` (the handler's stream), counting what its reader takes: once
   * the reader is dropped, `source` is interrupted and the stream fails with
   * {@link droppedReader}, after the event its consumer had already taken
   * for the reader, if any (`Stream.toAsyncIterable` takes one ahead).
   */
  readonly stream: <A, E, R>(source: Stream.Stream<A, E, R>) => Stream.Stream<A, E | UnsupportedOperationError, R>
}

/** @internal */
export const makeReader = (limit: number = maxWaitingEvents, stall: number = stallMillis): Reader => {
  let deliveries = 0
  let taken = 0
  let timer: ReturnType<typeof setTimeout> | undefined
  let reading = true
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
    if (!reading) return
    if (deliveries - taken <= limit) {
      clearTimeout(timer)
      timer = undefined
      return
    }
    if (timer !== undefined) return
    timer = setTimeout(() => {
      timer = undefined
      if (!reading || deliveries - taken <= limit) return
      reading = false
      ended()
      drop()
    }, stall)
    timer.unref?.()
  }
  const counted = Effect.sync(() => {
    taken++
    check()
  })
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
    stream: <A, E, R>(source: Stream.Stream<A, E, R>) =>
      Stream.unwrapScoped(Effect.gen(function*() {
        // The handler's stream runs in a fiber of its own, at most a chunk ahead of its reader, so that a drop
        // interrupts it wherever its reader is: it lets go of its buffer and its place on the channel at once.
        const handed = yield* Effect.acquireRelease(
          Queue.bounded<Take.Take<A, E | UnsupportedOperationError>>(1),
          Queue.shutdown
        )
        const running = yield* Effect.forkScoped(Stream.runIntoQueue(source, handed))
        yield* Effect.forkScoped(
          Effect.promise(() => dropped).pipe(
            Effect.zipRight(Fiber.interrupt(running)),
            // What waited for the reader goes: its next read is the typed end.
            Effect.zipRight(Queue.takeAll(handed)),
            Effect.zipRight(Queue.offer(handed, Take.fail(droppedReader(limit))))
          )
        )
        return Stream.tap(Stream.flattenTake(Stream.fromQueue(handed)), () => counted)
      })).pipe(Stream.ensuring(Effect.sync(ended)))
  }
}
