import { describe, expect, it } from "@effect/vitest"
import { Effect, FastCheck, Schema } from "effect"
import { execFileSync } from "node:child_process"
import * as Idempotency from "../src/Idempotency.js"
import * as IdempotencyLedger from "../src/IdempotencyLedger.js"

const booking = {
  contextId: "ctx-42",
  operation: "book-flight",
  params: { passenger: "Ana Lima", flight: "LH 400", seats: [1, 2] }
}

/** Rebuilds every object with its keys in reverse insertion order. */
const reorder = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(reorder)
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {}
    for (const key of Object.keys(value).reverse()) {
      Object.defineProperty(out, key, {
        value: reorder((value as Record<string, unknown>)[key]),
        enumerable: true,
        writable: true,
        configurable: true
      })
    }
    return out
  }
  return value
}

describe("Idempotency keys", () => {
  it("names the wire carriers", () => {
    expect(Idempotency.metadataKey).toBe("effect-a2a/idempotency-key")
    expect(Idempotency.headerName).toBe("Idempotency-Key")
  })

  it("derives a key from the context, the operation and the canonical parameters", () => {
    // sha256 of {"contextId":"ctx-42","operation":"book-flight","params":{"flight":"LH 400","passenger":"Ana Lima","seats":[1,2]}}
    expect(Idempotency.deriveKey(booking)).toBe(
      "idem-v1-c2b043cedb951fec0b037035b3260b2a60c0150e688d46e16cc4d5dbbb5cb56b"
    )
  })

  it("derives the same key in another process", () => {
    const script = `import("./src/Idempotency.ts").then((I) => process.stdout.write(I.deriveKey(${
      JSON.stringify(booking)
    })))`
    const other = execFileSync(process.execPath, ["--import", "tsx", "-e", script], {
      cwd: new URL("..", import.meta.url).pathname,
      encoding: "utf8",
      timeout: 30_000
    })
    expect(other).toBe(Idempotency.deriveKey(booking))
  })

  it("any change to the context, the operation or a parameter changes the key", () => {
    const base = Idempotency.deriveKey(booking)
    const variants = [
      { ...booking, contextId: "ctx-43" },
      { ...booking, operation: "cancel-flight" },
      { ...booking, params: { ...booking.params, flight: "LH 401" } },
      { ...booking, params: { ...booking.params, seats: [2, 1] } },
      { ...booking, params: { ...booking.params, seats: ["1", "2"] } }
    ]
    const keys = new Set(variants.map(Idempotency.deriveKey))
    expect(keys.size).toBe(variants.length)
    expect(keys.has(base)).toBe(false)
  })

  it.prop("a caller's key passes through unchanged", [FastCheck.string()], ([key]) => {
    expect(Idempotency.deriveKey({ key })).toBe(key)
  })

  it.prop(
    "the key does not depend on the order of fields",
    [FastCheck.string(), FastCheck.string(), FastCheck.jsonValue()],
    ([contextId, operation, params]) => {
      expect(Idempotency.deriveKey({ contextId, operation, params: reorder(params) })).toBe(
        Idempotency.deriveKey({ contextId, operation, params })
      )
      expect(Idempotency.fingerprint(reorder(params))).toBe(Idempotency.fingerprint(params))
    }
  )
})

describe("Idempotency.canonicalJson", () => {
  it("sorts keys at every depth and writes values as JSON does", () => {
    expect(
      Idempotency.canonicalJson({ b: 1, "10": 2, "2": [undefined, { z: undefined, y: 1e21 }], a: new Date(0) })
    ).toBe("{\"10\":2,\"2\":[null,{\"y\":1e+21}],\"a\":\"1970-01-01T00:00:00.000Z\",\"b\":1}")
    expect(Idempotency.canonicalJson(undefined)).toBe("null")
    expect(() => Idempotency.canonicalJson({ n: 1n })).toThrow(TypeError)
    // Holes and boxed primitives as JSON.stringify writes them; a cycle is a TypeError, not a stack overflow.
    // eslint-disable-next-line no-sparse-arrays
    expect(Idempotency.canonicalJson([, 1])).toBe(JSON.stringify([, 1]))
    expect(Idempotency.canonicalJson(new Array(2))).toBe("[null,null]")
    expect(Idempotency.canonicalJson([new String("ab"), new Number(2), new Boolean(false)])).toBe("[\"ab\",2,false]")
    expect(Idempotency.canonicalJson(new Number(1))).not.toBe(Idempotency.canonicalJson(new Number(2)))
    const cyclic: Record<string, unknown> = {}
    cyclic["self"] = [cyclic]
    expect(() => Idempotency.canonicalJson(cyclic)).toThrow("canonicalJson: a cyclic value cannot be written as JSON")
    // The same object twice, side by side, is no cycle.
    const shared = { a: 1 }
    expect(Idempotency.canonicalJson([shared, shared])).toBe("[{\"a\":1},{\"a\":1}]")
  })

  it.prop("is JSON that parses back to the same value", [FastCheck.jsonValue()], ([value]) => {
    const text = Idempotency.canonicalJson(value)
    expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(value)))
    expect(Idempotency.canonicalJson(JSON.parse(text))).toBe(text)
  })
})

describe("Idempotency.once", () => {
  it.effect("piped, effect first or key first: one run per key, the same result for every form", () =>
    Effect.gen(function*() {
      let runs = 0
      const charge = Effect.sync(() => ++runs)
      const options = { success: Schema.Number }
      const piped = yield* charge.pipe(Idempotency.once("order-1", options))
      const effectFirst = yield* Idempotency.once(charge, "order-1", options)
      const keyFirst = yield* Idempotency.once("order-1", charge, options)
      expect([piped, effectFirst, keyFirst, runs]).toEqual([1, 1, 1, 1])
      expect(yield* Idempotency.once(charge, "order-2", options)).toBe(2)
    }).pipe(Effect.provide(IdempotencyLedger.layerMemory())))
})
