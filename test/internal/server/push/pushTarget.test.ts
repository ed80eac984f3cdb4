import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Http from "node:http"
import * as Net from "node:net"
import { afterEach, vi } from "vitest"
import * as internalPushTarget from "../../../../src/internal/server/push/pushTarget.js"
import { listen } from "../../../fixtures/peers.js"

const strict = internalPushTarget.policyOf(undefined, undefined)
const production = internalPushTarget.policyOf(undefined, "production")
const loopbackAllowed = internalPushTarget.policyOf(["127.0.0.1"], "production")

// Every TCP connection, whatever opens it, goes through \`Socket.prototype.connect\`: the guard decides from the
// URL and DNS alone.
const noConnections = () => {
  const connect = vi.spyOn(Net.Socket.prototype, "connect")
  return () => expect(connect).not.toHaveBeenCalled()
}

afterEach(() => {
  vi.restoreAllMocks()
})

const problemOf = (url: string, policy: internalPushTarget.PushPolicy) =>
  Effect.promise(() => internalPushTarget.targetProblem(url, policy))

describe("targetProblem", () => {
  it.effect("refuses private, link-local, loopback and mapped addresses, names resolving to loopback, other schemes and userinfo, without connecting", () =>
    Effect.gen(function*() {
      const checkNoConnections = noConnections()
      const cases: ReadonlyArray<readonly [string, RegExp]> = [
        ["http://10.0.0.1/h", /^push URL host 10\.0\.0\.1 is a private address; allow it with allowPushTargets$/],
        [
          "http://169.254.169.254/latest/meta-data",
          /^push URL host 169\.254\.169\.254 is a link-local address; allow it with allowPushTargets$/
        ],
        ["http://[::1]:8080/h", /^push URL host ::1 is a loopback address/],
        ["http://[::ffff:127.0.0.1]/", /^push URL host ::ffff:7f00:1 is a loopback address/],
        ["http://[::ffff:7f00:1]/", /is a loopback address/],
        ["http://[::ffff:a9fe:a9fe]/", /is a link-local address/],
        ["http://[64:ff9b::a9fe:a9fe]/", /^push URL host 64:ff9b::a9fe:a9fe is a link-local address/],
        ["http://[64:ff9b::10.1.2.3]/", /is a private address/],
        ["http://[2002:7f00:1::1]/", /is a loopback address/],
        ["http://localhost:9/h", /^push URL host localhost resolves to 127\.0\.0\.1, which is a loopback address/],
        ["http://0x7f.1/", /^push URL host 127\.0\.0\.1 is a loopback address/],
        ["http://2130706433/", /is a loopback address/],
        ["http://0.0.0.0/", /is an unspecified address/],
        ["http://[::]/", /is an unspecified address/],
        ["http://172.20.1.1/", /is a private address/],
        ["http://192.168.1.1/", /is a private address/],
        ["http://100.64.0.1/", /is a private address/],
        ["http://[fe80::1]/", /is a link-local address/],
        ["http://[fd00::1]/", /is a unique-local address/],
        ["http://224.0.0.1/", /is a multicast address/],
        ["http://[ff02::1]/", /is a multicast address/],
        ["http://255.255.255.255/", /is a broadcast or reserved address/],
        ["ftp://example.com/h", /^push URL scheme ftp: is not http or https$/],
        ["file:///etc/passwd", /^push URL scheme file: is not http or https$/],
        ["not a url", /^push URL is not a valid absolute URL$/]
      ]
      for (const [url, expected] of cases) {
        expect(yield* problemOf(url, strict), url).toMatch(expected)
      }
      checkNoConnections()
    }))

  it.effect("names the host and never the credentials, path or query", () =>
    Effect.gen(function*() {
      const withUserinfo = yield* problemOf("http://user:pw@example.com", strict)
      expect(withUserinfo).toMatch(/^push URL for host example\.com carries credentials/)
      expect(withUserinfo).not.toContain("pw")
      expect(withUserinfo).not.toContain("user:")
      const withQuery = yield* problemOf("http://10.0.0.1/hook?token=s3cret#frag", strict)
      expect(withQuery).toBeDefined()
      expect(withQuery).not.toContain("s3cret")
      expect(withQuery).not.toContain("/hook")
    }))

  it.effect("passes public literal addresses without DNS, and allowed ones", () =>
    Effect.gen(function*() {
      const checkNoConnections = noConnections()
      expect(yield* problemOf("http://93.184.216.34/h", strict)).toBeUndefined()
      expect(yield* problemOf("https://[2606:2800:220:1:248:1893:25c8:1946]/h", strict)).toBeUndefined()
      expect(yield* problemOf("http://[64:ff9b::5db8:d822]/h", strict)).toBeUndefined()
      expect(yield* problemOf("http://[2002:5db8:d822::1]/h", strict)).toBeUndefined()
      expect(yield* problemOf("http://127.0.0.1:8080/h", loopbackAllowed)).toBeUndefined()
      expect(yield* problemOf("http://localhost:8080/h", loopbackAllowed)).toBeUndefined()
      const blocks = internalPushTarget.policyOf(["10.0.0.0/8", "::1", "hooks.internal"], undefined)
      expect(yield* problemOf("http://10.9.8.7/h", blocks)).toBeUndefined()
      expect(yield* problemOf("http://[::1]/h", blocks)).toBeUndefined()
      // An allowed name is not resolved: nothing needs to know it.
      expect(yield* problemOf("http://Hooks.Internal./h", blocks)).toBeUndefined()
      expect(yield* problemOf("http://11.0.0.1/h", blocks)).toBeUndefined()
      expect(yield* problemOf("http://172.16.0.1/h", blocks)).toMatch(/is a private address/)
      checkNoConnections()
    }))

  it.effect("requires https in production unless the target is allowed", () =>
    Effect.gen(function*() {
      expect(yield* problemOf("http://93.184.216.34/h", production)).toBe(
        "push URL for host 93.184.216.34 must use https in production; allow it with allowPushTargets"
      )
      expect(yield* problemOf("https://93.184.216.34/h", production)).toBeUndefined()
      expect(yield* problemOf("http://127.0.0.1/h", loopbackAllowed)).toBeUndefined()
      expect(yield* problemOf("http://93.184.216.34/h", strict)).toBeUndefined()
    }))

  it.effect("accepts a name that does not resolve now, without connecting: the delivery guard checks it then", () =>
    Effect.gen(function*() {
      const checkNoConnections = noConnections()
      // `.invalid` never resolves (RFC 6761); `example.com`, which the TCK registers, may or may not here.
      expect(yield* problemOf("https://hooks.example.invalid/a2a/push", strict)).toBeUndefined()
      expect(yield* problemOf("https://example.com/a2a/push", strict)).toBeUndefined()
      expect(yield* problemOf("https://hooks.example.invalid/h", production)).toBeUndefined()
      // With no address to exempt it, plain http is still refused in production.
      expect(yield* problemOf("http://hooks.example.invalid/h", production)).toBe(
        "push URL for host hooks.example.invalid must use https in production; allow it with allowPushTargets"
      )
      checkNoConnections()
    }))

  it("lists the allow entries that match nothing", () => {
    expect(internalPushTarget.invalidEntries(["127.0.0.1", "10.0.0.0/8", "::1", "[::1]", "hooks.internal", "fc00::/7"]))
      .toEqual([])
    expect(internalPushTarget.invalidEntries(["10.0.0.0/33", "x/8", "", "a b", "u@h", "::/129"])).toEqual([
      "10.0.0.0/33",
      "x/8",
      "",
      "a b",
      "u@h",
      "::/129"
    ])
  })
})

/** A server on 127.0.0.1 counting the connections it sees. */
const loopbackServer = Effect.map(listen((_request, response) => response.end("ok")), ({ server, url }) => {
  let connections = 0
  server.on("connection", () => connections++)
  return { port: new URL(url).port, connections: () => connections }
})

const get = (url: string, lookup: Net.LookupFunction) =>
  Effect.async<{ readonly status: number } | { readonly code: string | undefined; readonly message: string }>(
    (resume) => {
      const request = Http.request(url, { lookup, agent: false, timeout: 5_000 }, (response) => {
        response.resume()
        response.on("end", () => resume(Effect.succeed({ status: response.statusCode ?? 0 })))
      })
      request.on("timeout", () => request.destroy(new Error("timed out")))
      request.on(
        "error",
        (error: NodeJS.ErrnoException) => resume(Effect.succeed({ code: error.code, message: error.message }))
      )
      request.end()
    }
  )

describe("guardedLookup", () => {
  it.scoped("lets a request to an allowed loopback address through", () =>
    Effect.gen(function*() {
      const server = yield* loopbackServer
      // The spy the tests above rely on sees a connection when there is one.
      const connect = vi.spyOn(Net.Socket.prototype, "connect")
      const result = yield* get(
        `http://localhost:${server.port}/h`,
        internalPushTarget.guardedLookup(internalPushTarget.policyOf(["127.0.0.0/8", "::1"], undefined))
      )
      expect(result).toEqual({ status: 200 })
      expect(server.connections()).toBe(1)
      expect(connect).toHaveBeenCalled()
    }))

  it.scopedLive("refuses a name resolving to loopback before connecting", () =>
    Effect.gen(function*() {
      const server = yield* loopbackServer
      const result = yield* get(`http://localhost:${server.port}/h`, internalPushTarget.guardedLookup(strict))
      expect(result).toEqual({
        code: "EPUSHTARGET",
        message:
          "push URL host localhost resolves to 127.0.0.1, which is a loopback address; allow it with allowPushTargets"
      })
      // Give a connection that slipped through the time to be seen.
      yield* Effect.sleep("50 millis")
      expect(server.connections()).toBe(0)
    }))

  it.scoped("lets an allowed name through without checking its addresses", () =>
    Effect.gen(function*() {
      const server = yield* loopbackServer
      const result = yield* get(
        `http://localhost:${server.port}/h`,
        internalPushTarget.guardedLookup(internalPushTarget.policyOf(["localhost"], undefined))
      )
      expect(result).toEqual({ status: 200 })
    }))
})
