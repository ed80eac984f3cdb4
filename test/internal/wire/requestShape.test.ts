import { describe, expect, it } from "@effect/vitest"
import * as requestShape from "../../../src/internal/wire/requestShape.js"

describe("requestShape", () => {
  it("v1.0 reads ProtoJSON (proto names, an enum by number, an integer as a string); v0.3 reads its own JSON only", () => {
    const v1 = { message: { message_id: "m", role: 1, parts: [{ text: "hi" }] }, configuration: { historyLength: "3" } }
    expect(requestShape.paramsProblem("SendMessage", v1)).toBeUndefined()
    const legacy = (message: Record<string, unknown>, configuration: Record<string, unknown> = {}) =>
      requestShape.legacyParamsProblem("message/send", {
        message: { messageId: "m", role: "user", parts: [{ kind: "text", text: "hi" }], ...message },
        configuration
      })
    expect(legacy({})).toBeUndefined()
    // A proto name does not stand in for a required field: the v0.3 translation reads camelCase only.
    expect(legacy({ messageId: undefined, message_id: "m" })).toBe("Invalid params: message.messageId is required.")
    expect(legacy({ role: 1 })).toBe("Invalid params: message.role must be one of user, agent.")
    expect(legacy({}, { historyLength: "3" })).toBe(
      "Invalid params: configuration.historyLength must be a 32-bit integer."
    )
    // A part is read by its kind: a text part's url is no content of it.
    expect(legacy({ parts: [{ kind: "text", url: "https://example.com" }] })).toBe(
      "Invalid params: message.parts[0].text is required."
    )
    expect(legacy({ parts: [{ kind: "file", file: { bytes: "aGk=", uri: "https://example.com" } }] })).toBe(
      "Invalid params: message.parts[0].file must have exactly one of bytes, uri."
    )
  })

  it("a method neither table knows is left to the handler", () => {
    expect(requestShape.legacyParamsProblem("SendMessage", { message: 5 })).toBeUndefined()
    expect(requestShape.paramsProblem("message/send", { message: 5 })).toBeUndefined()
  })
})
