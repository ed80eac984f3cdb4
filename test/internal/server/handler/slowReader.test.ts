import { describe, expect, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import * as slowReader from "../../../../src/internal/server/handler/slowReader.js"

/** A source of numbers, noting whether it was ended. */
const counting = () => {
  const seen = { returned: false }
  const source = Stream.iterate(0, (i) => i + 1).pipe(Stream.ensuring(Effect.sync(() => (seen.returned = true))))
  return { source, seen }
}

/** A bus that delivers `count` events to what listens on it. */
const bus = () => {
  const listeners = new Set<() => void>()
  return {
    on: (_: string, listener: () => void) => listeners.add(listener),
    off: (_: string, listener: () => void) => listeners.delete(listener),
    publish: (count: number) => {
      for (let i = 0; i < count; i++) for (const listener of listeners) listener()
    },
    listeners
  }
}

/** A reader of a counting source, bounded to 4 waiting events for `stall` ms, listening on a bus. */
const started = (stall: number) => {
  const { seen, source } = counting()
  const reader = slowReader.makeReader(4, stall)
  const events = bus()
  reader.listen(events as never)
  // Read as the SDK's transports read the handler's streams (see `sdkHandler.toSdk`).
  const reading = (async function*() {
    yield* Stream.toAsyncIterable(reader.stream(source))
  })()
  return { seen, events, reading }
}

const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

describe("server/slowReader", () => {
  it("drops a reader that leaves more than the bound waiting for the stall time, with a typed end", async () => {
    const { events, reading, seen } = started(20)
    expect(await reading.next()).toEqual({ done: false, value: 0 })
    events.publish(10)
    await sleep(60)
    expect(seen.returned).toBe(true)
    // It no longer listens on the bus.
    expect(events.listeners.size).toBe(0)
    // The one event the reading fiber took ahead of the read, before the drop, is read first.
    expect(await reading.next()).toEqual({ done: false, value: 1 })
    await expect(reading.next()).rejects.toThrow(/fell more than 4 events behind/)
    expect(await reading.next()).toEqual({ done: true, value: undefined })
  })

  it("keeps a reader that takes a burst within the stall time", async () => {
    const { events, reading, seen } = started(50)
    events.publish(10)
    for (let i = 0; i < 10; i++) await reading.next()
    await sleep(80)
    expect(seen.returned).toBe(false)
    expect(await reading.next()).toEqual({ done: false, value: 10 })
  })
})
