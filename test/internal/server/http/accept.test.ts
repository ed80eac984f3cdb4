import { describe, expect, it } from "@effect/vitest"
import * as internalAccept from "../../../../src/internal/server/http/accept.js"

const json = "application/json"
const a2a = "application/a2a+json"

describe("server/accept.jsonType", () => {
  it("gives the type the client names, or the higher weighted of the two", () => {
    expect(internalAccept.jsonType(json)).toBe(json)
    expect(internalAccept.jsonType(a2a)).toBe(a2a)
    expect(internalAccept.jsonType("Application/JSON; charset=utf-8")).toBe(json)
    expect(internalAccept.jsonType(`${a2a};q=0.5, ${json}`)).toBe(json)
    expect(internalAccept.jsonType(`${json};q=0.2, ${a2a};q=0.9`)).toBe(a2a)
    expect(internalAccept.jsonType(`text/html, ${json};q=0.1`)).toBe(json)
  })

  it("between two named with one weight, the first listed; a named one over a wildcard of the same weight", () => {
    // The SDK's REST client sends this.
    expect(internalAccept.jsonType(`${a2a}, ${json}`)).toBe(a2a)
    expect(internalAccept.jsonType(`${json}, ${a2a}`)).toBe(json)
    expect(internalAccept.jsonType(`*/*, ${a2a}`)).toBe(a2a)
    expect(internalAccept.jsonType(`application/*, ${json}`)).toBe(json)
  })

  it("the most precise range decides a type's weight: one refused with q=0 is not sent", () => {
    expect(internalAccept.jsonType(`${json};q=0, */*`)).toBe(a2a)
    expect(internalAccept.jsonType(`${a2a};q=0, application/*`)).toBe(json)
    expect(internalAccept.jsonType(`application/*;q=0.1, ${a2a};q=0.5`)).toBe(a2a)
  })

  it("no preference, neither accepted, or nothing readable: application/json", () => {
    expect(internalAccept.noPreference).toBe(json)
    for (
      const accept of [
        undefined,
        "",
        " ",
        "*/*",
        "application/*",
        "text/event-stream",
        "text/html;q=0.9",
        `${json};q=0, ${a2a};q=0`,
        "nonsense",
        `${a2a};q=2`,
        `${a2a};q=abc`,
        "a/b/c"
      ]
    ) {
      expect(internalAccept.jsonType(accept), String(accept)).toBe(json)
    }
  })
})
