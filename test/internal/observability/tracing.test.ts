import * as Headers from "@effect/platform/Headers"
import * as HttpTraceContext from "@effect/platform/HttpTraceContext"
import { describe, expect, it } from "@effect/vitest"
import { Exit, FastCheck, Option } from "effect"
import * as tracing from "../../../src/internal/observability/tracing.js"

const hex = (length: number) => FastCheck.stringMatching(new RegExp(`^[0-9a-fA-F]{${length}}$`))
// Valid and broken trace headers, and headers that carry none.
const traceValue = FastCheck.oneof(
  FastCheck.tuple(hex(32), hex(16), FastCheck.constantFrom("00", "01")).map(([t, s, f]) => `00-${t}-${s}-${f}`),
  FastCheck.tuple(hex(32), hex(16)).map(([t, s]) => `${t}-${s}-1`),
  hex(32),
  FastCheck.string({ maxLength: 20 })
)
const name = FastCheck.constantFrom(
  "traceparent",
  "Traceparent",
  "b3",
  "B3",
  "x-b3-traceid",
  "X-B3-TraceId",
  "x-b3-spanid",
  "x-b3-sampled",
  "content-type",
  "A2A-Version"
)
const value = FastCheck.oneof(
  traceValue,
  FastCheck.array(traceValue, { minLength: 1, maxLength: 2 }),
  FastCheck.constant(undefined)
)

describe("internal/observability/tracing", () => {
  it.prop(
    "parentOfHeaders names the first valid of W3C, B3 and X-B3 over Headers.fromInput, as HttpTraceContext reads them",
    [FastCheck.dictionary(name, value, { maxKeys: 6 })],
    ([headers]) => {
      const all = Headers.fromInput(headers)
      const first = [HttpTraceContext.w3c, HttpTraceContext.b3, HttpTraceContext.xb3]
        .map((decode) => Option.flatMap(decode(all), tracing.validParent))
        .find(Option.isSome)
      expect(tracing.parentOfHeaders(headers)).toEqual(first ?? Option.none())
    }
  )

  it("a trace header with invalid ids is ignored; a 64-bit B3 trace id is padded", () => {
    const span = "b7ad6b7169203331"
    for (
      const traceparent of [
        `00-${"0".repeat(32)}-${span}-01`,
        `00-0AF7651916CD43DD8448EB211C80319C-${span}-01`,
        `00-0af7651916cd43dd8448eb211c80319c-${"0".repeat(16)}-01`
      ]
    ) expect(tracing.parentOfHeaders({ traceparent })).toEqual(Option.none())
    expect(tracing.parentOfHeaders({ b3: "not a trace id-x" })).toEqual(Option.none())
    // An invalid traceparent does not hide a valid B3 header.
    const behind = tracing.parentOfHeaders({
      traceparent: `00-${"0".repeat(32)}-${span}-01`,
      b3: `0af7651916cd43dd8448eb211c80319c-${span}-1`
    })
    expect(Option.map(behind, (parent) => parent.traceId)).toEqual(Option.some("0af7651916cd43dd8448eb211c80319c"))
    const b3 = tracing.parentOfHeaders({ b3: `8448eb211c80319c-${span}-1` })
    expect(Option.map(b3, (parent) => [parent.traceId, parent.spanId])).toEqual(
      Option.some([`${"0".repeat(16)}8448eb211c80319c`, span])
    )
  })

  it("reads Node's lower-case headers in place: a traceparent names the caller's span", () => {
    const parent = tracing.parentOfHeaders({
      "content-type": "application/json",
      traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    })
    expect(Option.map(parent, ({ spanId, traceId }) => ({ spanId, traceId }))).toEqual(
      Option.some({ traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331" })
    )
  })

  it("an unexported span keeps its caller's trace and a fresh span id, and records how it ended", () => {
    const caller = tracing.parentOfHeaders({ traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00" })
    const span = new tracing.UnexportedSpan("run", caller, "server")
    expect(span.traceId).toBe("0af7651916cd43dd8448eb211c80319c")
    expect(span.spanId).toMatch(/^[0-9a-f]{16}$/)
    expect(span.spanId).not.toBe("b7ad6b7169203331")
    expect(span.sampled).toBe(false)
    expect(span.status._tag).toBe("Started")
    span.end(5n, Exit.void)
    expect(span.status._tag).toBe("Ended")
    const own = new tracing.UnexportedSpan("run", Option.none(), "server")
    expect(own.traceId).toMatch(/^[0-9a-f]{32}$/)
    expect(own.traceId).not.toBe(new tracing.UnexportedSpan("run", Option.none(), "server").traceId)
  })
})
