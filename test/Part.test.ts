import { describe, expect, it } from "@effect/vitest"
import { Either, Schema } from "effect"
import * as Part from "../src/Part.js"
import { untyped } from "./fixtures/serverAgents.js"

describe("Part.Json", () => {
  it("decodes JSON values and names the first place a value is not JSON", () => {
    const value = { flight: "4821", seats: ["12A", null], paid: true, total: 10.5, note: undefined }
    expect(Schema.decodeUnknownSync(Part.Json)(value)).toBe(value)
    const cyclic: Record<string, unknown> = {}
    cyclic["self"] = cyclic
    const refused: ReadonlyArray<readonly [unknown, string]> = [
      [{ at: new Date(0) }, "found a Date at value.at"],
      [{ total: 10n }, "found a bigint at value.total"],
      [[1, new Map()], "found a Map at value[1]"],
      [{ ratio: Number.NaN }, "found the number NaN at value.ratio"],
      [cyclic, "found a reference to an enclosing value (a cycle) at value.self"],
      [undefined, "found undefined at value"]
    ]
    for (const [input, found] of refused) {
      const decoded = Schema.decodeUnknownEither(Part.Json)(input)
      expect(Either.isLeft(decoded) && decoded.left.message).toBe(`Expected a JSON value, ${found}`)
      expect(Schema.is(Part.Json)(input)).toBe(false)
    }
  })

  it.prop(
    "what its arbitrary makes is JSON",
    [Part.Json, Part.JsonObject],
    ([value, object]) => Schema.is(Part.Json)(value) && Schema.is(Part.JsonObject)(object)
  )

  it("a JSON object is a plain object of JSON values", () => {
    expect(Schema.is(Part.JsonObject)({ channel: "web" })).toBe(true)
    expect(Schema.is(Part.JsonObject)([])).toBe(false)
    expect(Schema.is(Part.JsonObject)(null)).toBe(false)
    expect(Schema.is(Part.JsonObject)({ at: new Date(0) })).toBe(false)
  })

  it("checks a data part's value when decoding, not when it is made: a value typed any is refused where it leaves", () => {
    const encoded = { _tag: "Data", data: { at: new Date(0) } }
    const decoded = Schema.decodeUnknownEither(Part.Part)(encoded)
    expect(Either.isLeft(decoded) && decoded.left.message).toContain("Expected a JSON value, found a Date at value.at")
    expect(Schema.decodeUnknownSync(Part.Part)({ _tag: "Data", data: { flight: "4821" } })).toEqual(
      Part.DataPart.make({ data: { flight: "4821" } })
    )
    expect(Part.DataPart.make({ data: untyped({ total: 10n }) }).data).toEqual({ total: 10n })
    // Validation can still be asked for.
    expect(() => Part.DataPart.make({ data: untyped({ total: 10n }) }, { disableValidation: false })).toThrow(
      "found a bigint at value.total"
    )
  })
})
