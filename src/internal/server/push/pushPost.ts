/**
 * One attempt at a push delivery: a POST to the webhook, settled by its
 * status line, and why it failed, typed.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as http from "node:http"
import * as https from "node:https"
import * as net from "node:net"
import { parseRetryAfter } from "../../wire/retryAfter.js"
import * as internalPushTarget from "./pushTarget.js"

/** Why one attempt at a delivery failed. @internal */
export class PushDeliveryError extends Schema.TaggedError<PushDeliveryError>()("PushDeliveryError", {
  reason: Schema.Literal(
    "ServerError",
    "RateLimited",
    "Timeout",
    "Connection",
    "Redirect",
    "Rejected",
    "Refused",
    "InvalidTarget",
    "Unserializable",
    "Overflow"
  ),
  status: Schema.optional(Schema.Number),
  code: Schema.optional(Schema.String),
  retryAfter: Schema.optional(Schema.DurationFromSelf)
}) {
  override get message(): string {
    if (this.reason === "Overflow") return "Overflow: more pushes waiting than maxPending"
    const detail = this.status !== undefined
      ? ` (HTTP ${this.status})`
      : this.code !== undefined
      ? ` (${this.code})`
      : ""
    return `${this.reason}${detail}`
  }
  /** Whether the webhook may answer otherwise later: a 5xx, a 429, a timeout or a broken connection. */
  get retryable(): boolean {
    return this.reason === "ServerError" || this.reason === "RateLimited" || this.reason === "Timeout" ||
      this.reason === "Connection"
  }
}

const retryableCodes = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENETDOWN",
  "EAI_AGAIN"
])

const errorOf = (error: unknown): PushDeliveryError => {
  const code = typeof error === "object" && error !== null && "code" in error && typeof error.code === "string"
    ? error.code
    : undefined
  if (code === internalPushTarget.refusalCode) return new PushDeliveryError({ reason: "Refused", code })
  // "socket hang up" is ECONNRESET.
  if (code !== undefined && retryableCodes.has(code)) return new PushDeliveryError({ reason: "Connection", code })
  return new PushDeliveryError({ reason: "InvalidTarget", ...(code === undefined ? {} : { code }) })
}

const statusError = (response: http.IncomingMessage): PushDeliveryError | undefined => {
  const status = response.statusCode ?? 0
  if (status >= 200 && status < 300) return undefined
  if (status === 429) {
    const header = response.headers["retry-after"]
    const retryAfter = parseRetryAfter(typeof header === "string" ? header : null, Date.now())
    return new PushDeliveryError({ reason: "RateLimited", status, ...(retryAfter === undefined ? {} : { retryAfter }) })
  }
  if (status >= 500) return new PushDeliveryError({ reason: "ServerError", status })
  // Never followed: a redirect could lead past the check of the configured target.
  if (status >= 300 && status < 400) return new PushDeliveryError({ reason: "Redirect", status })
  return new PushDeliveryError({ reason: "Rejected", status })
}

export interface Agents {
  readonly http: http.Agent
  readonly https: https.Agent
}

/** One POST, settled by the answer's status line; the body is drained and not read. */
export const post = (
  agents: Agents,
  lookup: net.LookupFunction | undefined,
  url: URL,
  headers: Record<string, string | number>,
  body: string,
  timeoutMillis: number
): Effect.Effect<void, PushDeliveryError> =>
  Effect.async<void, PushDeliveryError>((resume) => {
    let settled = false
    let timedOut = false
    const settle = (effect: Effect.Effect<void, PushDeliveryError>) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      resume(effect)
    }
    const secure = url.protocol === "https:"
    const request = (secure ? https.request : http.request)(url, {
      method: "POST",
      headers,
      agent: secure ? agents.https : agents.http,
      ...(lookup === undefined ? {} : { lookup })
    }, (response) => {
      // Settled by the status line: a body that breaks off later changes nothing.
      response.on("error", () => undefined)
      response.resume()
      const error = statusError(response)
      settle(error === undefined ? Effect.void : Effect.fail(error))
    })
    // The whole attempt, connection included, unlike the socket's idle `timeout`.
    const timer = setTimeout(() => {
      timedOut = true
      request.destroy()
    }, timeoutMillis)
    request.on("error", (error) =>
      settle(Effect.fail(timedOut ? new PushDeliveryError({ reason: "Timeout" }) : errorOf(error))))
    request.end(body)
    return Effect.sync(() => {
      settled = true
      clearTimeout(timer)
      request.destroy()
    })
  })

/**
 * Node connects to an IP literal without calling `lookup`: such a target is
 * put to `lookup` first, so that a guard given there sees every address.
 */
export const checkLiteral = (lookup: net.LookupFunction, url: URL): Effect.Effect<void, PushDeliveryError> => {
  const hostname = url.hostname.replace(/^\[(.*)\]$/, "$1")
  if (net.isIP(hostname) === 0) return Effect.void
  return Effect.async<void, PushDeliveryError>((resume) => {
    lookup(hostname, {}, (error) => resume(error ? Effect.fail(errorOf(error)) : Effect.void))
  })
}
