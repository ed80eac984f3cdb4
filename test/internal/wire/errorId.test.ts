import { describe, expect, it } from "@effect/vitest"
import { FastCheck, Option } from "effect"
import * as ErrorId from "../../../src/internal/wire/errorId.js"

const hex12 = FastCheck.stringMatching(/^[0-9a-f]{12}$/)
const hex8 = FastCheck.stringMatching(/^[0-9a-f]{8}$/)

/**
 * What each known peer writes into a FAILED status, verbatim: ADK Java
 * (`AgentExecutor.failureText`, the suffix with `ADK_DEBUG_ERRORS`), ADK
 * Python (`failure_summary` in `a2a/executor/utils.py`, the suffix with
 * `ADK_A2A_DEBUG_ERRORS=1`), and ours.
 */
const peerTexts: ReadonlyArray<readonly [string, string, string]> = [
  ["ADK Java", "Agent execution failed. (error_id: 3f9c0a7b12de)", "3f9c0a7b12de"],
  [
    "ADK Java, debug",
    "Agent execution failed. (error_id: 3f9c0a7b12de): java.sql.SQLTransientConnectionException: HikariPool-1 - Connection is not available",
    "3f9c0a7b12de"
  ],
  ["ADK Python", "Agent execution failed. (error_id: 5e1d0c9a)", "5e1d0c9a"],
  ["ADK Python, debug", "Agent execution failed. (error_id: 5e1d0c9a): ValueError: card 4111 declined", "5e1d0c9a"],
  ["ours", "Agent execution failed. (error_id: 0a1b2c3d4e5f)", "0a1b2c3d4e5f"],
  ["ours, debug", "Agent execution failed. (error_id: 0a1b2c3d4e5f): PaymentError: card 4111 declined", "0a1b2c3d4e5f"]
]

describe("the error-id format", () => {
  it("makes ids of its own pattern, each new", () => {
    const ids = Array.from({ length: 200 }, ErrorId.make)
    for (const id of ids) expect(id).toMatch(ErrorId.pattern)
    expect(new Set(ids).size).toBe(ids.length)
  })

  it.prop("reads back every text it writes, with ids of either length", [FastCheck.oneof(hex12, hex8)], ([id]) => {
    expect(ErrorId.extract(ErrorId.failureText(id))).toEqual(Option.some(id))
    expect(ErrorId.extract(ErrorId.withErrorId("payment declined", id))).toEqual(Option.some(id))
    expect(ErrorId.holds(ErrorId.failureText(id), id)).toBe(true)
  })

  it.prop("knows its own internal error text", [hex12], ([id]) => {
    expect(ErrorId.isInternalErrorText(ErrorId.internalErrorText(id))).toBe(true)
  })

  it.each(peerTexts)("reads the id in the failure text of %s", (_, text, id) => {
    expect(ErrorId.extract(text)).toEqual(Option.some(id))
    expect(ErrorId.holds(text, id)).toBe(true)
    expect(id).toMatch(ErrorId.pattern)
  })

  it("a text with two ids, of either length, has none", () => {
    const [java, python] = [peerTexts[0]![1], peerTexts[2]![1]]
    // ADK Python's debug suffix quoting the failure text of the agent it called.
    expect(ErrorId.extract(`${python}: RuntimeError: ${java}`)).toEqual(Option.none())
    expect(ErrorId.extract(`${python} ${python.replace("5e1d0c9a", "6f2e1dab")}`)).toEqual(Option.none())
  })

  it("reads only ids of eight or twelve digits", () => {
    for (const length of [7, 9, 10, 11, 13, 16]) {
      const id = "0123456789abcdef".slice(0, length)
      expect(ErrorId.extract(`Agent execution failed. (error_id: ${id})`), id).toEqual(Option.none())
      expect(id).not.toMatch(ErrorId.pattern)
    }
    expect(ErrorId.extract("Agent execution failed. (error_id: 5E1D0C9A)")).toEqual(Option.none())
  })

  it.prop("finds an id in a log line's marker, whole", [FastCheck.oneof(hex12, hex8)], ([id]) => {
    expect(ErrorId.holds(`Runner failed to execute [${ErrorId.logMarker(id)}]`, id)).toBe(true)
    expect(ErrorId.holds(`Error handling A2A request [error_id=${id}]: boom`, id)).toBe(true)
    expect(ErrorId.holds(`Runner failed to execute [error_id=${id}0]`, id)).toBe(false)
  })

  it.prop("finds an id only whole", [hex12, FastCheck.stringMatching(/^[0-9a-fA-F]$/)], ([id, more]) => {
    expect(ErrorId.holds(`(error_id: ${id}${more})`, id)).toBe(false)
    expect(ErrorId.holds(`(error_id: ${id}) and (error_id: ${id}${more})`, id)).toBe(true)
    expect(ErrorId.holds(`(error_id: ${id.slice(0, 11)})`, id)).toBe(false)
    // The first eight digits of a twelve-digit id are not an id of their own.
    expect(ErrorId.holds(`(error_id: ${id})`, id.slice(0, 8))).toBe(false)
    expect(ErrorId.extract(`(error_id: ${id})`)).toEqual(Option.some(id))
    expect(ErrorId.isInternalErrorText(`${ErrorId.internalErrorText(id)} and more`)).toBe(false)
    expect(ErrorId.isInternalErrorText(ErrorId.failureText(id))).toBe(false)
  })
})
