import { describe, expect, it } from "@effect/vitest"
import { FastCheck, Option } from "effect"
import * as ErrorId from "../../../src/internal/wire/errorId.js"

const hex12 = FastCheck.stringMatching(/^[0-9a-f]{12}$/)

describe("the error-id format", () => {
  it("makes ids of its own pattern, each new", () => {
    const ids = Array.from({ length: 200 }, ErrorId.make)
    for (const id of ids) expect(id).toMatch(ErrorId.pattern)
    expect(new Set(ids).size).toBe(ids.length)
  })

  it.prop("reads back every text it writes", [hex12], ([id]) => {
    expect(ErrorId.extract(ErrorId.failureText(id))).toEqual(Option.some(id))
    expect(ErrorId.extract(ErrorId.withErrorId("payment declined", id))).toEqual(Option.some(id))
    expect(ErrorId.isInternalErrorText(ErrorId.internalErrorText(id))).toBe(true)
    expect(ErrorId.holds(ErrorId.failureText(id), id)).toBe(true)
  })

  it.prop("finds an id only whole", [hex12, FastCheck.stringMatching(/^[0-9a-fA-F]$/)], ([id, more]) => {
    expect(ErrorId.holds(`(error_id: ${id}${more})`, id)).toBe(false)
    expect(ErrorId.holds(`(error_id: ${id}) and (error_id: ${id}${more})`, id)).toBe(true)
    expect(ErrorId.holds(`(error_id: ${id.slice(0, 11)})`, id)).toBe(false)
    expect(ErrorId.isInternalErrorText(`${ErrorId.internalErrorText(id)} and more`)).toBe(false)
    expect(ErrorId.isInternalErrorText(ErrorId.failureText(id))).toBe(false)
  })
})
