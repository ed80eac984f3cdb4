import { describe, expect, it } from "@effect/vitest"
import { PassThrough, Readable } from "node:stream"
import * as internalHttp from "../../../src/internal/server/http.js"

describe("server/http.readBody", () => {
  it("gives the whole body, in one buffer, however it arrives", async () => {
    const body = await internalHttp.readBody(Readable.from([Buffer.from("{\"a\":"), Buffer.from("1}")]), 1024)
    expect(body?.toString("utf8")).toBe("{\"a\":1}")
  })

  it("gives undefined for a body over the limit, counted as it arrives, and drains the rest", async () => {
    const incoming = new PassThrough()
    const body = internalHttp.readBody(incoming, 4)
    incoming.write(Buffer.from("abc"))
    incoming.write(Buffer.from("de"))
    expect(await body).toBeUndefined()
    incoming.end(Buffer.from("more"))
    await new Promise((resolve) => incoming.once("end", resolve))
  })

  it("gives undefined for a body that breaks off", async () => {
    const incoming = new PassThrough()
    const body = internalHttp.readBody(incoming, 1024)
    incoming.write(Buffer.from("{\"a\""))
    incoming.destroy()
    expect(await body).toBeUndefined()
  })
})

describe("server/http.isLegacyVersion", () => {
  it("asks for v0.3 when absent, empty, or in [0.3, 1.0)", () => {
    expect(internalHttp.isLegacyVersion(undefined)).toBe(true)
    expect(internalHttp.isLegacyVersion(" ")).toBe(true)
    expect(internalHttp.isLegacyVersion("0.3")).toBe(true)
    expect(internalHttp.isLegacyVersion("0.9")).toBe(true)
    expect(internalHttp.isLegacyVersion("0.2")).toBe(false)
    expect(internalHttp.isLegacyVersion("1.0")).toBe(false)
    expect(internalHttp.isLegacyVersion("x")).toBe(false)
  })
})
