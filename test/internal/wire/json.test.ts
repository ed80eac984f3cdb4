import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import * as json from "../../../src/internal/wire/json.js"

// What the wire cannot carry, and how it is named.
const notJsonLeaf = FastCheck.constantFrom<readonly [unknown, string]>(
  [10n, "a bigint"],
  [() => 1, "a function"],
  [Symbol("s"), "a symbol"],
  [Number.NaN, "the number NaN"],
  [Number.POSITIVE_INFINITY, "the number Infinity"],
  [new Map(), "a Map"],
  [new Date(0), "a Date"],
  [new Uint8Array(1), "a Uint8Array"],
  [new (class Money {})(), "a Money"]
)

const key = FastCheck.stringMatching(/^[a-z]{1,6}$/)
const step = FastCheck.oneof(key, FastCheck.nat({ max: 3 }))

/** `leaf` at `path` inside JSON siblings; the expected path text. */
const placed = FastCheck.tuple(
  FastCheck.array(step, { maxLength: 5 }),
  notJsonLeaf,
  FastCheck.jsonValue({ maxDepth: 2 })
)
  .map(([path, [leaf, found], sibling]) => {
    let value: unknown = leaf
    for (const segment of [...path].reverse()) {
      value = typeof segment === "number"
        ? [...Array.from({ length: segment }, () => sibling), value]
        : { [`${segment}_`]: sibling, [segment]: value }
    }
    const text = path.map((segment) => typeof segment === "number" ? `[${segment}]` : `.${segment}`).join("")
    return { value, path: `data${text}`, found }
  })

describe("json", () => {
  it.prop("any JSON value is JSON data", [FastCheck.jsonValue()], ([value]) => {
    expect(json.notJson(value, "data")).toBeUndefined()
  })

  it.prop("a value that is not JSON data is found where it is, and named", [placed], ([{ found, path, value }]) => {
    expect(json.notJson(value, "data")).toEqual({ path, found })
  })

  it("cycles, depth, unreadable values, keys and absent fields", () => {
    const cyclic: Record<string, unknown> = {}
    cyclic["me"] = [cyclic]
    expect(json.notJson(cyclic, "data")).toEqual({
      path: "data.me[0]",
      found: "a reference to an enclosing value (a cycle)"
    })
    // The same object twice, side by side, is no cycle.
    const shared = { a: 1 }
    expect(json.notJson({ x: shared, y: [shared] }, "data")).toBeUndefined()
    let deep: unknown = null
    for (let i = 0; i < 300; i++) deep = [deep]
    expect(json.notJson(deep, "data")?.found).toBe("values nested deeper than 256 levels")
    const hostile = Object.defineProperty({}, "x", {
      enumerable: true,
      get: () => {
        throw new Error("no")
      }
    })
    expect(json.notJson(hostile, "data")).toEqual({ path: "data.x", found: "a value that could not be read (no)" })
    expect(json.notJson({ "a b": 1n }, "data")).toEqual({ path: `data["a b"]`, found: "a bigint" })
    expect(json.notJson({ optional: undefined, nested: Object.create(null) }, "data")).toBeUndefined()
    expect(json.notJson([undefined], "data")).toEqual({ path: "data[0]", found: "undefined" })
  })
})
