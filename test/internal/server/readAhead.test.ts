import { describe, expect, it } from "@effect/vitest"
import { readAhead } from "../../../src/internal/server/readAhead.js"

/** A source of `count` numbers, noting how far it was read and whether it was ended. */
const counting = (count: number, paced = true) => {
  const seen = { read: 0, returned: false }
  const source = (async function*() {
    try {
      for (let i = 0; i < count; i++) {
        seen.read = i + 1
        yield i
        if (paced) await new Promise((resolve) => setImmediate(resolve))
      }
    } finally {
      seen.returned = true
    }
  })()
  return { source, seen }
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 50))

describe("server/readAhead", () => {
  it("gives a reader that keeps up every event, in order, then the end", async () => {
    const { source } = counting(20)
    const read: Array<number> = []
    for await (const value of readAhead(source, () => undefined, 4)) read.push(value)
    expect(read).toEqual(Array.from({ length: 20 }, (_, i) => i))
  })

  it("reads ahead of a reader that waits, and drops it once more than the bound wait", async () => {
    const { seen, source } = counting(1000)
    let dropped = 0
    const ahead = readAhead(source, () => dropped++, 8, 20)
    expect(await ahead.next()).toEqual({ done: false, value: 0 })
    await settle()
    // The source was read on without the reader, up to the bound; the reader took none for the time, so it was
    // ended: not read to its end.
    expect(seen.read).toBeLessThan(20)
    expect(seen.returned).toBe(true)
    expect(dropped).toBe(1)
    // The reader's next read is the typed end: nothing of what was held is kept for it.
    await expect(ahead.next()).rejects.toThrow(/fell more than 8 events behind/)
    expect(await ahead.next()).toEqual({ done: true, value: undefined })
  })

  it("a burst larger than the bound waits for a reader that reads, however slowly", async () => {
    // Every event there at once, as a task's queue holds them when its stream opens late.
    const { source } = counting(200, false)
    let dropped = 0
    const read: Array<number> = []
    for await (const value of readAhead(source, () => dropped++, 8, 100)) {
      read.push(value)
      if (value % 50 === 0) await new Promise((resolve) => setTimeout(resolve, 30))
    }
    expect(read).toHaveLength(200)
    expect(dropped).toBe(0)
  })

  it("a reader that leaves ends the source", async () => {
    const { seen, source } = counting(1000)
    const ahead = readAhead(source, () => undefined, 100)
    await ahead.next()
    await ahead.return!()
    await settle()
    expect(seen.returned).toBe(true)
    expect(seen.read).toBeLessThan(100)
  })

  it("a source's failure reaches the reader after what came before it", async () => {
    const source = (async function*() {
      yield 1
      throw new Error("broke")
    })()
    const ahead = readAhead(source, () => undefined, 8)
    expect(await ahead.next()).toEqual({ done: false, value: 1 })
    await expect(ahead.next()).rejects.toThrow("broke")
  })
})
