import { describe, expect, it } from "@effect/vitest"
import * as slowReader from "../../../src/internal/server/slowReader.js"

/** A source of numbers, noting whether it was ended. */
const counting = () => {
  const seen = { returned: false }
  const source = (async function*() {
    try {
      for (let i = 0; ; i++) yield i
    } finally {
      seen.returned = true
    }
  })()
  return { source, seen }
}

const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

describe("server/slowReader", () => {
  it("drops a reader that leaves more than the bound waiting for the stall time, with a typed end", async () => {
    const { seen, source } = counting()
    const reader = slowReader.makeReader(4, 20)
    const reading = reader.reading(source)
    expect(await reading.next()).toEqual({ done: false, value: 0 })
    for (let i = 0; i < 10; i++) reader.delivered()
    await sleep(60)
    expect(seen.returned).toBe(true)
    await expect(reading.next()).rejects.toThrow(/fell more than 4 events behind/)
    expect(await reading.next()).toEqual({ done: true, value: undefined })
  })

  it("keeps a reader that takes a burst within the stall time", async () => {
    const { seen, source } = counting()
    const reader = slowReader.makeReader(4, 50)
    const reading = reader.reading(source)
    for (let i = 0; i < 10; i++) reader.delivered()
    for (let i = 0; i < 10; i++) await reading.next()
    await sleep(80)
    expect(seen.returned).toBe(false)
    expect(await reading.next()).toEqual({ done: false, value: 10 })
  })
})
